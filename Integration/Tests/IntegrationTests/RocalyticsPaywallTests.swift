import Foundation
import IntegrationExamples
import PaywallTracker
import RocalyticsClient
import RocalyticsClientTestSupport
import Testing
import TrackerCore
import TrackerCoreTestKit

// Paywall → Rocalytics paywall sink → client → CurlTransport → a loopback collector, wired as
// the README's paywall example (the seed's `examples/native-paywall.ts`) does:
// `Integration/Examples/RocalyticsPaywall.swift`, the tracker configured with
// `createRocalyticsPaywallSink(rocalytics)`.
//
// New scenarios:
// - INT3: a Studio paywall (contract v1) ending in a purchase: start, shown and end go to
//   `/paywall-presentations` as bare v1 snapshots with the Rocalytics headers, and the client's
//   purchase event carries the presentation's join key (`original_transaction_identifier`).
// - INT4: a third-party paywall (contract v1.1, `provider: external`) goes through the same sink
//   as v1.1 snapshots (seq rising, the end last).

/// The device facts the app passes in.
let device = AppDevice(appVersion: "2.4.0", build: "412", platform: .ios, osVersion: "18.1", locale: "en-US")

@Suite struct RocalyticsPaywallTests {
    @Test(.timeLimit(.minutes(2))) func INT3_aStudioPaywallEndingInAPurchaseCarriesTheJoinKey() async throws {
        let collector = try Collector()
        defer { collector.stop() }
        let dir = try TempDirectory("int3")
        defer { dir.remove() }
        let clock = ManualClock()
        let log = DiagnosticLog()
        let rocalytics = startRocalytics(
            .init(
                platform: .custom(FixturePlatform.ios()), baseURL: collector.baseURL, clock: clock, scheduler: clock,
                onDiagnostic: log.handler, installPing: false))
        await rocalytics.ready()
        let rocaId = try #require(rocalytics.rocaId)
        let tracker = setUpPaywallTracking(rocalytics, storage: FileKeyValueStorage(directory: dir.path), device: device) {
            $0.clock = clock
            $0.scheduler = clock
            $0.onDiagnostic = log.handler
        }
        defer { tracker.dispose() }

        let observer: any PaywallObserver = tracker
        let presentation = try #require(
            observer.start(
                PaywallPresentationInfo(
                    moment: "settings_upgrade", paywallId: "pw-1", renderMode: .custom, billing: .store, surface: .present)))
        await collector.waitFor { $0.filter { $0.path == "/functions/v1/paywall-presentations" }.count == 1 }
        await clock.advance(byMs: 350)
        presentation.shown()
        await collector.waitFor { $0.filter { $0.path == "/functions/v1/paywall-presentations" }.count == 2 }
        await clock.advance(byMs: 20_000)
        try await onPaywallPurchase(
            rocalytics, presentation: presentation, productId: "pro_yearly",
            originalTransactionIdentifier: "2000000841136630", price: 59.99, currency: "EUR")
        let received = await collector.waitFor { r in
            r.filter { $0.path == "/functions/v1/paywall-presentations" }.contains { $0.json["status"] == "ended" }
        }

        let posts = received.filter { $0.path == "/functions/v1/paywall-presentations" }
        #expect(posts.map { $0.json["status"] } == ["in_progress", "in_progress", "ended"])
        #expect(posts.map { $0.json["seq"] } == [1, 2, 3])
        for p in posts {
            #expect(p.request.header("X-Roca-ID") == rocaId && p.request.header("X-Platform") == "ios")
            #expect(p.request.header("Content-Type") == "application/json")
            #expect(p.json["schema_version"] == 1 && p.json["paywall"]?["provider"] == nil, "contract v1")
            for key in ["roca_id", "application_id", "snapshot"] { #expect(p.json[key] == nil, "the bare snapshot") }
            #expect(ContractChecker.paywallPresentation(p.json).isEmpty, "\(ContractChecker.paywallPresentation(p.json))")
            // The bytes are the snapshot's own: decoding and encoding them again gives them back.
            #expect(try PaywallPresentationSnapshot(json: p.json).wireBytes() == p.request.body)
            PayloadCapture.record(p.request.body, schema: .paywallPresentationV1)
        }
        let ended = try #require(posts.last?.json)
        #expect(ended["outcome"]?["status"] == "purchased")
        let joinKey = ended["outcome"]?["transaction"]?["original_transaction_identifier"]

        // The client's purchase event carries the same join key.
        let purchase = try #require(collector.received.first { $0.eventName == "purchase" })
        #expect(joinKey == "2000000841136630")
        #expect(purchase.json["properties"]?["original_transaction_identifier"] == joinKey)
        #expect(purchase.json["deduplication_id"] == .string("\(rocaId)-purchase-2000000841136630"))
        #expect(purchase.json["properties"]?["product_id"] == ended["outcome"]?["transaction"]?["product_id"])
        #expect(log.all.isEmpty, "\(log.all)")
    }

    @Test(.timeLimit(.minutes(2))) func INT4_aThirdPartyPaywallGoesThroughTheSameSinkAsV1_1() async throws {
        let collector = try Collector()
        defer { collector.stop() }
        let dir = try TempDirectory("int4")
        defer { dir.remove() }
        let clock = ManualClock()
        let log = DiagnosticLog()
        let rocalytics = startRocalytics(
            .init(
                platform: .custom(FixturePlatform.ios()), baseURL: collector.baseURL, clock: clock, scheduler: clock,
                onDiagnostic: log.handler, installPing: false))
        let tracker = setUpPaywallTracking(rocalytics, storage: FileKeyValueStorage(directory: dir.path), device: device) {
            $0.clock = clock
            $0.scheduler = clock
            $0.onDiagnostic = log.handler
        }
        defer { tracker.dispose() }

        presentSuperwallPaywall(tracker)
        let received = await collector.waitFor { r in
            r.filter { $0.path == "/functions/v1/paywall-presentations" }.contains { $0.json["status"] == "ended" }
        }
        let posts = received.filter { $0.path == "/functions/v1/paywall-presentations" }
        // Seq rises and the end comes last; an earlier snapshot may be superseded (latest wins)
        // while it waits for its write or while the one before it is in flight.
        let seqs = posts.compactMap { $0.json["seq"]?.intValue }
        #expect(!seqs.isEmpty && seqs == seqs.sorted() && Set(seqs).count == seqs.count && seqs.last == 3, "\(seqs)")
        for p in posts {
            #expect(p.json["schema_version"] == 1.1)
            #expect(p.json["paywall"]?["provider"] == "external" && p.json["paywall"]?["placement"] == "onboarding_end")
            #expect(ContractChecker.paywallPresentation(p.json).isEmpty, "\(ContractChecker.paywallPresentation(p.json))")
            #expect(try PaywallPresentationSnapshotV1_1(json: p.json).wireBytes() == p.request.body)
            PayloadCapture.record(p.request.body, schema: .paywallPresentationV1_1)
        }
        #expect(posts.last?.json["outcome"]?["status"] == "dismissed")
        #expect(log.all.isEmpty, "\(log.all)")
    }
}
