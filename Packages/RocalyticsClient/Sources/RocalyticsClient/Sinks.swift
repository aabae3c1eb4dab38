import TrackerCore

/// The onboarding tracker's sink for Rocalytics: delivers each ``OnboardingRunSnapshot`` through
/// ``RocalyticsClient/sendOnboardingRun(_:)``, with destination
/// ``RocalyticsClient/onboardingRunDestination``.
///
/// ```swift
/// onboardingTracker.configure(sink: createRocalyticsOnboardingSink(rocalytics), context: context, storage: storage)
/// ```
public func createRocalyticsOnboardingSink(_ client: RocalyticsClient) -> RocalyticsOnboardingSink<OnboardingRunSnapshot> {
    RocalyticsOnboardingSink(client: client)
}

/// The paywall tracker's sink for Rocalytics, for contract v1 snapshots
/// (``PaywallPresentationSnapshot``). Use ``createRocalyticsPaywallSink(_:for:)`` for the
/// paywall tracker's own snapshot type or v1.1 (``PaywallPresentationSnapshotV1_1``).
public func createRocalyticsPaywallSink(_ client: RocalyticsClient) -> RocalyticsPaywallSink<PaywallPresentationSnapshot> {
    RocalyticsPaywallSink(client: client)
}

/// The paywall tracker's sink for Rocalytics, for any snapshot type with a wire form (the paywall
/// tracker's, or the generated v1 and v1.1 types): POSTs the bare snapshot to
/// ``RocalyticsClient/paywallPresentationDestination``.
public func createRocalyticsPaywallSink<Payload: WireEncodable>(_ client: RocalyticsClient, for payload: Payload.Type) -> RocalyticsPaywallSink<Payload> {
    RocalyticsPaywallSink(client: client)
}
