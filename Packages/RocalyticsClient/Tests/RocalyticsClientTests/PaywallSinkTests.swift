import Foundation
import RocalyticsClient
import RocalyticsClientTestSupport
import Testing
import TrackerCore
import TrackerCoreTestKit

func paywallExample(_ name: String, v1_1: Bool = false) throws -> JSONValue {
    let dir = v1_1 ? "paywall-presentation-v1_1" : "paywall-presentation"
    let path = PackagePaths.repositoryRoot(#filePath) + "/Packages/Core/Contracts/examples/\(dir)/\(name).json"
    return try WireJSON.decode(Array(FileManager.default.contents(atPath: path) ?? Data()))
}

/// The Rocalytics paywall sink (paywall.md §12; scenarios 47-50 there).
@Suite struct PaywallSinkTests {
    @Test func P47_requestShape() async throws {
        let h = ClientFixture(
            store: RETURNING(),
            transport: RecordingTransport { r in
                r.url.hasSuffix("/paywall-presentations")
                    ? HTTPResponse(status: 200, body: Array(#"{"outcome":"accepted"}"#.utf8))
                    : try await RecordingTransport.rocalyticsReplies(r)
            })
        let sink = createRocalyticsPaywallSink(h.client, for: PaywallPresentationSnapshot.self)
        for name in [
            "purchased-android-1-start-in-progress", "purchased-android-2-shown-in-progress", "purchased-android-3-ended-purchased",
        ] {
            #expect(try await sink.send(PaywallPresentationSnapshot(json: try paywallExample(name))) == .accepted)
        }
        let posts = h.requests.filter { $0.url == "\(API)/paywall-presentations" }
        #expect(posts.count == 3)
        for p in posts {
            #expect(p.headers == H("ios"))
            let body = try WireJSON.decode(p.body!)
            for key in ["roca_id", "application_id", "snapshot"] { #expect(body[key] == nil) }
            #expect(ContractChecker.paywallPresentation(body).isEmpty)
            PayloadCapture.record(p.body!, schema: .paywallPresentationV1)
        }
    }

    @Test func P48_outcomeTable() {
        let rows: [(Int, String?, SinkOutcome)] = [
            (200, #"{"outcome":"accepted"}"#, .accepted), (200, #"{"outcome":"ignored"}"#, .ignored),
            (400, #"{"outcome":"rejected","reason":"schema"}"#, .rejected), (200, nil, .transient), (204, nil, .transient),
            (500, #"{"outcome":"accepted"}"#, .transient),
        ]
        for (status, body, outcome) in rows {
            #expect(paywallIngestOutcome(status: status, body: body.map(json)).outcome == outcome, "\(status) \(body ?? "none")")
        }
        #expect(paywallIngestOutcome(status: 400, body: json(#"{"outcome":"rejected","reason":"schema"}"#)).reason == "schema")
        #expect(paywallIngestOutcome(status: 204, body: nil).reason == "status 204")
    }

    @Test func P49_inertClientAndNetworkError() async throws {
        let inert = ClientFixture(choice: RocalyticsPlatformChoice.none)
        let snapshot = try PaywallPresentationSnapshot(json: try paywallExample("purchased-android-1-start-in-progress"))
        #expect(await inert.client.sendPaywallPresentation(snapshot) == SinkResult(.transient, reason: "the Rocalytics client is inert"))
        let offline = ClientFixture(
            store: RETURNING(),
            transport: RecordingTransport { r in
                if r.url.hasSuffix("/identify") { return HTTPResponse(status: 200) }
                throw HTTPError(.connectionFailed, "offline")
            })
        #expect(
            try await createRocalyticsPaywallSink(offline.client, for: PaywallPresentationSnapshot.self).send(snapshot).outcome
                == .transient)
    }

    @Test func P50_destination() async {
        let custom = RocalyticsClient(
            configuration: .init(platform: .none, transport: RecordingTransport.rocalytics(), onDiagnostic: { _ in }))
        #expect(
            createRocalyticsPaywallSink(custom).destination
                == "https://rocalytics-api.rocapine.io/functions/v1/paywall-presentations (custom fetch)")
        let plain = RocalyticsClient(configuration: .init(platform: .none, onDiagnostic: { _ in }))
        #expect(createRocalyticsPaywallSink(plain).destination == "https://rocalytics-api.rocapine.io/functions/v1/paywall-presentations")
        await custom.ready()
        await plain.ready()
    }
}

@Suite struct VersionTests {
    @Test func versionConstantMatchesChangelog() throws {
        let changelog = try String(contentsOfFile: PackagePaths.packageRoot(#filePath) + "/CHANGELOG.md", encoding: .utf8)
        #expect(ChangelogCheck.topRelease(of: changelog) == RocalyticsClientVersion.current)
        #expect(changelog.contains("## [Unreleased]"))
    }
}
