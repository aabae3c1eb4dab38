import OnboardingTracker
import PaywallTracker
import RocalyticsClient
import Testing
import TrackerCore

// New scenario:
// - INT8: the Swift spellings of the Rocalytics sinks fit the trackers' configurations as the
//   seed's factories do: `.rocalytics(client)` where the sink is expected, and the initializers.

@Suite struct SinkSpellingIntegrationTests {
    @Test func INT8_theSwiftSpellingsFitTheTrackersConfigurations() async {
        let client = RocalyticsClient(configuration: .init(platform: .none, onDiagnostic: { _ in }))
        let context = ContextSource.value(runContext)
        let paywallContext = ContextSource.value(
            RunContextInput(
                appVersion: "2.4.0", build: "412", platform: .ios, osVersion: "18.1", locale: "en-US", timezone: "Europe/Paris"))
        let onboarding = [
            OnboardingRunConfiguration(sink: createRocalyticsOnboardingSink(client), context: context),
            OnboardingRunConfiguration(sink: .rocalytics(client), context: context),
            OnboardingRunConfiguration(sink: RocalyticsOnboardingSink(client: client), context: context),
        ]
        let paywall = [
            PaywallTrackerConfiguration(sink: createRocalyticsPaywallSink(client), context: paywallContext),
            PaywallTrackerConfiguration(sink: .rocalytics(client), context: paywallContext),
            PaywallTrackerConfiguration(sink: RocalyticsPaywallSink(client: client), context: paywallContext),
        ]
        #expect(onboarding.map(\.sink.destination) == Array(repeating: client.onboardingRunDestination, count: 3))
        #expect(paywall.map(\.sink.destination) == Array(repeating: client.paywallPresentationDestination, count: 3))
        await client.ready()
    }
}
