// The client's DocC article, "Deliver onboarding runs and paywalls" (it joins the client and both
// trackers, so it is compiled here).

import OnboardingTracker
import PaywallTracker
import RocalyticsClient
import TrackerCore

/// The two trackers delivering to `rocalytics`, each on its default store and the system context.
public func deliverToRocalytics(_ rocalytics: RocalyticsClient) -> PaywallPresentationTracker {
    OnboardingRun.configure(
        OnboardingRunConfiguration(
            sink: createRocalyticsOnboardingSink(rocalytics), context: .system, storage: StandardFileStorage()))
    let paywalls = PaywallPresentationTracker(
        configuration: PaywallTrackerConfiguration(
            sink: createRocalyticsPaywallSink(rocalytics), context: .system, storage: StandardFileStorage()))
    return paywalls
}
