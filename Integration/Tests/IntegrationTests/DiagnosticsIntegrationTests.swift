import OnboardingTracker
import PaywallTracker
import RocalyticsClient
import ScoreTracker
import Testing
import TrackerCore
import TrackerCoreTestKit

// New scenario (issue 37 item 8):
// - INT9: one process-wide handler (`Diagnostics.setHandler`) receives the diagnostics of all four
//   surfaces left on their default handlers, each with typed code, its surface and a severity.

@Suite(.serialized) struct DiagnosticsIntegrationTests {
    @Test func INT9_oneHandlerForEverySurfaceWithTypedCodesAndSurfaces() async {
        let log = DiagnosticLog()
        Diagnostics.setHandler(log.handler)
        defer { Diagnostics.setHandler(nil) }
        let clock = ManualClock()

        // Rocalytics client without platform services: inert, and says why.
        let client = RocalyticsClient(configuration: .init(platform: .none))
        await client.ready()
        // Onboarding: a run started without steps in its manifest is refused.
        let onboarding = OnboardingRunTracker(
            configuration: OnboardingRunConfiguration(
                sink: RecordingSink<OnboardingRunSnapshot>(), context: .value(runContext), clock: clock, scheduler: clock))
        _ = onboarding.start(StartOptions(onboarding: OnboardingInput(key: "", version: "1"), manifest: []))
        // Paywall: invalid presentation info.
        let paywall = PaywallPresentationTracker(
            configuration: PaywallTrackerConfiguration(
                sink: RecordingSink<PaywallPresentationSnapshotV1_1>(), context: .value(runContext), clock: clock, scheduler: clock))
        _ = paywall.start(
            PaywallPresentationInfo(moment: "", paywallId: "pw-1", renderMode: .custom, billing: .store, surface: .present))
        // Score: an invalid event name.
        let score = ScoreClient(
            configuration: ScoreConfiguration(
                publishableKey: "pk_test_1", siteId: "urc-ios", endpoint: "http://127.0.0.1:9", appVersion: "4.2.0", os: "ios",
                store: InMemoryScoreStore(), clock: clock, scheduler: clock))
        score.grantAllConsent()
        score.track("", properties: [:])

        let mine = log.all.filter { $0.surface != .unspecified }
        let byCode = Dictionary(mine.map { ($0.code, $0.surface) }, uniquingKeysWith: { a, _ in a })
        #expect(byCode[.nativeModulesUnavailable] == .rocalyticsClient)
        #expect(byCode[.invalidStart] == .onboarding)
        #expect(byCode[.invalidInfo] == .paywall)
        #expect(byCode[.invalidEvent] == .score)
        #expect(mine.first { $0.code == .nativeModulesUnavailable }?.severity == .error)
        #expect(mine.first { $0.code == .invalidInfo }?.severity == .warning)
        onboarding.dispose()
        paywall.dispose()
    }
}
