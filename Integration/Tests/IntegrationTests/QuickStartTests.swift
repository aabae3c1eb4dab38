import Foundation
import IntegrationExamples
import RocalyticsClientTestSupport
import RocalyticsKit
import ScoreTracker
import Testing
import TrackerCore
import TrackerCoreTestKit

// New scenario (issue 37, "done when"):
// - INT10: the README's "Add to an iOS app" section (`Integration/Examples/AddToAnApp.swift`, shown
//   verbatim) run as an app runs it: `Rocalytics.start()` and a `ScoreClient` with their default
//   stores (in a private `XDG_DATA_HOME`), then the onboarding, the paywall, the purchase and a
//   Score event reach a loopback collector. The only thing set before is what a Linux test must
//   set: the client's platform services and base URL, a fixed run context (Linux is not an app
//   platform) and the manual clock, through a first `Rocalytics.start(_:lifecycle:)`, which the
//   README's `Rocalytics.start()` then returns.

extension RocalyticsOnboardingTests {  // serialized with the other tests of the app-wide onboarding tracker
    @Test(.timeLimit(.minutes(2))) func INT10_theReadmeTopSectionRunsAsAnAppRunsIt() async throws {
        let collector = try Collector()
        defer { collector.stop() }
        let data = try TempDirectory("int10")
        defer { data.remove() }
        setenv("XDG_DATA_HOME", data.path, 1)
        let clock = ManualClock()
        let log = DiagnosticLog()
        let prepared = Rocalytics.start(
            RocalyticsSetup(
                client: RocalyticsConfiguration(
                    platform: .custom(FixturePlatform.ios()), baseURL: collector.baseURL, clock: clock, scheduler: clock,
                    onDiagnostic: log.handler, installPing: false),
                context: .value(runContext),
                onboarding: {
                    $0.clock = clock
                    $0.scheduler = clock
                    $0.onDiagnostic = log.handler
                    $0.registry = HandoffRegistry()
                },
                paywall: {
                    $0.clock = clock
                    $0.scheduler = clock
                    $0.onDiagnostic = log.handler
                }),
            lifecycle: nil)
        defer { prepared.stop() }
        await prepared.client.ready()

        // The README's section, as the app runs it.
        let (rocalytics, score) = startAnalytics(scoreEndpoint: collector.baseURL)
        #expect(rocalytics === prepared, "Rocalytics.start() made a second set-up")
        let done = Locked(false)
        Task {
            await recordTheJourney(rocalytics, score)
            done.withLock { $0 = true }
        }
        // resumeOrStart reads the default store (no run stored): move the clock until it returns.
        for _ in 0..<3_000 where !done.value {
            await clock.settle()
            await clock.advance(byMs: 10)
            await Task.yield()
        }
        #expect(done.value, "the README's recording calls never returned")
        await clock.advance(byMs: 2_000)
        try await score.flush()

        let received = await collector.waitFor { r in
            r.contains { $0.path == "/functions/v1/onboarding-response" && $0.json["status"] == "completed" }
                && r.contains { $0.path == "/functions/v1/paywall-presentations" && $0.json["status"] == "ended" }
                && r.contains { $0.path == "/functions/v1/track" && Self.isPurchase($0) }
                && r.contains { $0.path == "/api/events" }
        }
        let purchase = try #require(received.first { $0.path == "/functions/v1/track" && Self.isPurchase($0) })
        #expect(purchase.json["properties"]?["currency_code"] == "EUR")
        #expect(log.all.filter { $0.severity == .error }.isEmpty, "\(log.all)")
        // The default stores are where the README says, private to the app.
        #expect(FileManager.default.fileExists(atPath: data.path + "/Rocalytics/trackers"))
        let mode = try FileManager.default.attributesOfItem(atPath: data.path + "/Rocalytics/trackers")[.posixPermissions] as? Int
        #expect(mode == 0o700)
    }

    static func isPurchase(_ r: Received) -> Bool {
        r.json["properties"]?["original_transaction_identifier"] == "2000000123"
    }
}
