import Foundation
import Testing
import TrackerCore
import TrackerCoreTestKit

@testable import ScoreTracker

@Suite struct EnvelopeScenarios {
    @Test func SC1_sdkNameAndVersion() async throws {
        let h = Harness()
        let c = h.client()
        #if os(Linux)
            #expect(ScoreClient.sdkName == "score-tracker-linux")
        #endif
        let changelog = try String(contentsOfFile: PackagePaths.packageRoot(#filePath) + "/CHANGELOG.md", encoding: .utf8)
        #expect(ScoreClient.sdkVersion == ChangelogCheck.topRelease(of: changelog))
        #expect(c.inspect().sdk.name == ScoreClient.sdkName)
        #expect(c.inspect().sdk.version == ScoreClient.sdkVersion)
        await h.settle()
        #expect(h.tx.records.isEmpty)
    }

    @available(*, deprecated)
    @Test func SC2_deprecatedSdkVersionIgnored() async {
        let h = Harness()
        let c = ScoreClient(
            publishableKey: "pk_test_1", siteId: "urc-ios", endpoint: "https://score.test", appVersion: "4.2.0",
            os: "iOS 18.1", device: "iPhone", locale: "en-GB", sdkVersion: "0.0.1", store: h.store,
            transport: h.tx, clock: h.clock, scheduler: h.clock, idSource: h.ids)
        c.grantAllConsent()
        c.pv()
        await h.flush(c)
        #expect(h.tx.eventRequests.count == 1)
        #expect(h.tx.eventRequests[0].envelopeTexts[0].contains(#""sdk":\#(SDKJSON)}"#))
        #expect(!h.tx.bodies.contains { $0.contains("0.0.1") })
    }

    /// Deprecated: it compiles the integration guide's spellings (`GuideSnippets`), which are.
    @available(*, deprecated)
    @Test func SC3_guideCallShapesEndpointString() async {
        let h = Harness()
        let c = ScoreClient(
            configuration: ScoreConfiguration(
                publishableKey: "pk_test_1", siteId: "urc-ios", endpoint: "https://score.test/", store: h.store,
                transport: h.tx, clock: h.clock, scheduler: h.clock, idSource: h.ids))
        c.grantAllConsent()
        c.pv()
        await h.flush(c)
        #expect(h.tx.records.map(\.url) == ["https://score.test/api/events"])
        #expect(h.tx.eventRequests[0].envelopeTexts[0].contains(#""context":{}"#))
        #expect(c.inspect().endpoint == "https://score.test")
        // The guide's three constructor shapes compile with literal values.
        _ = GuideSnippets.constructors
    }

    @Test func SC4_typedTrackWholeRequest() async {
        let h = Harness()
        let c = h.client(granted: true)
        c.pv()
        await h.flush(c)
        let r = h.tx.records
        #expect(r.count == 1)
        #expect(r[0].request.method == "POST")
        #expect(r[0].header("Content-Type") == "application/json")
        #expect(r[0].header("X-Publishable-Key") == "pk_test_1")
        #expect(r[0].header("Authorization") == nil)
        #expect(r[0].bodyText == #"{"sentAt":"2026-03-01T12:00:00.000Z","events":["# + pvEnvelope(1) + "]}")
        let i = c.inspect()
        #expect(i.queue.depth == 0)
        #expect(i.lastFlush == .init(at: "2026-03-01T12:00:00.000Z", ok: true, sent: 1, consecutiveFailures: 0))
    }

    @Test func SC5_namedTrackAndScreen() async {
        let h = Harness()
        let c = h.client(granted: true)
        c.track("custom_badge_tap", properties: ["badgeId": "b1"], requires: [.analytics])
        c.screen("match_centre")
        await h.flush(c)
        let env = h.tx.eventRequests[0].envelopeTexts
        #expect(env.count == 2)
        #expect(
            env[0]
                == #"{"type":"track","name":"custom_badge_tap","eventId":"\#(E(1))","timestamp":"2026-03-01T12:00:00.000Z","anonymousId":"\#(A(1))","sessionId":"\#(S(1))","siteId":"urc-ios","props":{"badgeId":"b1"},"context":\#(CTX),"sdk":\#(SDKJSON)}"#
        )
        #expect(
            env[1]
                == #"{"type":"screen","name":"match_centre","eventId":"\#(E(2))","timestamp":"2026-03-01T12:00:00.000Z","anonymousId":"\#(A(1))","sessionId":"\#(S(1))","siteId":"urc-ios","props":{},"context":\#(CTX),"sdk":\#(SDKJSON)}"#
        )
        for e in env { #expect(!e.contains("userId") && !e.contains("traits") && !e.contains("_backfill")) }
    }

    @Test func SC6_serialisation() async {
        let h = Harness()
        let c = h.client(granted: true)
        await h.at(T0 + 1234)
        await h.clock.set(ms: T0 + 1234)
        c.track(
            "fmt",
            properties: [
                "b": 1, "a": ["z": true, "y": NSNull()], "B": "x/y", "list": [["b": 1, "a": 2], 3],
                "é": 1.5, "Ａ": "line\nbreak", "😀": 1e21,
            ])
        await h.flush(c)
        let r = h.tx.eventRequests[0]
        #expect(r.bodyText.hasPrefix(#"{"sentAt":"2026-03-01T12:00:01.234Z""#))
        #expect(r.bodyText.contains(#""timestamp":"2026-03-01T12:00:01.234Z""#))
        #expect(
            r.bodyText.contains(
                #""props":{"B":"x/y","a":{"y":null,"z":true},"b":1,"list":[{"a":2,"b":1},3],"é":1.5,"Ａ":"line\nbreak","😀":1e+21}"#))
    }

    @Test func SC7_invalidInputDroppedAndCounted() async {
        let h = Harness()
        let c = h.client(granted: true)
        c.track("")
        c.track(String(repeating: "e\u{301}", count: 65))
        c.track(String(repeating: "e\u{301}", count: 64))
        // Issue 37 item 9 changed this part of SC7: a value that is not JSON (`Double.nan`, a
        // `Date` on Linux) drops only its key (SC188, SC193); props nested too deep still drop the call.
        var deep: [String: Any] = ["leaf": 1]
        for _ in 0..<70 { deep = ["d": deep] }
        c.track("d", properties: deep)
        c.track("n", properties: ["v": Double.nan])
        c.screen("")
        let i = c.inspect()
        #expect(i.queue.invalid == 4)
        #expect(i.queue.depth == 2)
        #expect(i.consent.droppedByConsent == 0)
        await h.flush(c)
        #expect(h.tx.batches == [[E(1), E(2)]])
        #expect(h.tx.eventRequests.first?.events.last?["props"] == .object(JSONObject()))
        #expect(h.diagnostics.all.allSatisfy { $0.code == "invalid-event" || $0.code == "invalid-property" })
    }
}
