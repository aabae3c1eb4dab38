import Foundation
import RocalyticsClient
import RocalyticsClientExamples
import RocalyticsClientTestSupport
import Testing
import TrackerCore
import TrackerCoreTestKit

/// The README's examples, run against a loopback server through the real libcurl transport.
@Suite struct ExampleTests {
    func server() throws -> LoopbackHTTPServer {
        try LoopbackHTTPServer { r in
            if r.path.hasSuffix("/identify") { return .respond(status: 200, body: "{}") }
            if r.path.hasSuffix("/paywall-presentations") { return .respond(status: 200, body: #"{"outcome":"accepted"}"#) }
            return .respond(status: 204, body: [UInt8]())
        }
    }

    @Test func clientExampleRunsOverCurl() async throws {
        let server = try server()
        defer { server.stop() }
        let clock = ManualClock()
        let log = DiagnosticLog()
        let store = InMemorySecureStore()
        let rocalytics = startRocalytics(
            .init(
                platform: .custom(FixturePlatform.ios(store: store)), baseURL: server.baseURL, clock: clock, scheduler: clock,
                onDiagnostic: log.handler, attributionBaseURL: server.baseURL + "/"))
        await rocalytics.ready()
        #expect(rocalytics.rocaId == ID)
        try await onSignedIn(rocalytics, userId: "user-42", revenueCatId: nil)
        let eventId = try await onPurchase(
            rocalytics, product: ["productIdentifier": "pro_yearly"], transaction: ["originalTransactionIdentifier": "2000000841136630"],
            price: 0, currency: "EUR", isTrial: true)
        #expect(eventId == "purchase-2000000841136630")
        // Step 4 (the tracker's configuration) runs in the Integration package; its sink is this one.
        let sink = createRocalyticsOnboardingSink(rocalytics)
        #expect(sink.destination == server.baseURL + "/functions/v1/onboarding-response")
        #expect(try await sink.send(COMPLETED) == .accepted)

        let requests = await server.waitForRequests(count: 7)
        #expect(
            requests.map(\.path) == [
                "/functions/v1/identify", "/functions/v1/track", "/install", "/functions/v1/identify",
                "/functions/v1/track", "/functions/v1/onboarding-response", "/functions/v1/track",
            ])
        for r in requests {
            #expect(r.method == "POST")
            #expect(r.header("Content-Type") == "application/json")
            #expect(r.header("X-Roca-ID") == ID)
            #expect(r.header("X-Application-ID") == "com.example.app")
            #expect(r.header("X-Platform") == "ios")
            #expect(r.header("User-Agent") == nil)
            #expect(r.header("Authorization") == nil)
        }
        #expect(requests[0].bodyText == IDENT_IOS)
        #expect(requests[1].bodyText == A1_INSTALL)
        #expect(requests[2].body.isEmpty)
        #expect(requests[3].bodyText == #"{"user_id":"user-42"}"#)
        #expect(
            requests[4].bodyText
                == TRACK(
                    "purchase", "\(ID)-purchase-2000000841136630",
                    #"{"is_trial":true,"original_transaction_identifier":"2000000841136630","product_id":"pro_yearly","price":0,"currency_code":"EUR","experimental":{"product":{"productIdentifier":"pro_yearly"},"transaction":{"originalTransactionIdentifier":"2000000841136630"}}}"#,
                    DC_IOS))
        #expect(json(requests[5].bodyText)["sent_at"] == "2026-01-10T08:00:40.004Z")
        #expect(requests[6].bodyText == TRACK("onboarding_completed", "\(ID)-onboarding_completed-\(RUN1)", "{}", DC_IOS))
        #expect(log.all.isEmpty)
        captureOnboardingBodies(requests.map { HTTPRequest(url: server.baseURL + $0.path, body: $0.body) })
    }

    @Test func G88_theReadmeRecordingOptOutAndDiagnosticsExamplesRun() async throws {
        let h = ClientFixture(store: RETURNING())
        onSignedInFromSynchronousCode(h.client, userId: "user-42")
        onPurchaseRecorded(
            h.client, originalTransactionIdentifier: "t-1", productId: "pro_monthly", price: 9.99, currency: "EUR", isTrial: false)
        await h.client.ready()
        await h.clock.settle()
        expectRequest(h.requests[1], "\(API)/identify", body: #"{"user_id":"user-42"}"#)
        expectRequest(h.requests[2], "\(API)/track", body: D30_BODY)
        setRocalyticsAllowed(h.client, false)
        #expect(h.client.isOptedOut)
        onPurchaseRecorded(h.client, originalTransactionIdentifier: "t-2", productId: "p", price: 1, currency: "EUR", isTrial: false)
        await h.clock.advance(byMs: 60_000)
        #expect(h.requests.count == 3)
        setRocalyticsAllowed(h.client, true)
        #expect(!h.client.isOptedOut)

        let status = await SDKStatus()
        let config = rocalyticsConfiguration(reportingTo: status)
        config.onDiagnostic(Diagnostic(code: "init-failed", message: "test"))
        var shown: DiagnosticCode?
        for _ in 0..<100_000 {
            shown = await status.lastDiagnostic
            if shown != nil { break }
            await Task.yield()
        }
        #expect(shown == "init-failed", "the diagnostic never reached the main actor")
    }

    @Test func nativePaywallExampleRunsOverCurl() async throws {
        let server = try server()
        defer { server.stop() }
        let clock = ManualClock()
        let rocalytics = startRocalytics(
            .init(
                platform: .custom(FixturePlatform.android()), baseURL: server.baseURL, clock: clock, scheduler: clock,
                onDiagnostic: { _ in }, installPing: false))
        let sink = setUpPaywallTracking(rocalytics)
        #expect(sink.destination == server.baseURL + "/functions/v1/paywall-presentations")
        let context = paywallContext(
            ExampleDevice(
                appVersion: "2.4.0", build: "412", platform: .android, osVersion: "15", locale: "en-US", timezone: "America/New_York"))
        let file = PackagePaths.repositoryRoot(#filePath) + "/Packages/Core/Contracts/examples/paywall-presentation-v1_1/native-start.json"
        var snapshot = try PaywallPresentationSnapshotV1_1(
            json: try WireJSON.decode(Array(try #require(FileManager.default.contents(atPath: file)))))
        snapshot.context = PaywallPresentationSnapshot.Context(
            appVersion: context.appVersion, build: context.build, platform: context.platform, osVersion: context.osVersion,
            locale: context.locale, timezone: context.timezone, libraryVersion: "0.1.0")
        #expect(try await sink.send(snapshot) == .accepted)
        let requests = await server.waitForRequests(count: 3)
        let post = try #require(requests.last)
        #expect(post.path == "/functions/v1/paywall-presentations")
        #expect(post.body == snapshot.wireBytes())
        #expect(post.header("X-Platform") == "android")
        #expect(post.header("X-Roca-ID") == ID)
        PayloadCapture.record(post.body, schema: .paywallPresentationV1_1)
        #expect(ContractChecker.paywallPresentation(try WireJSON.decode(post.body)).isEmpty)
    }
}
