import TrackerCore

/// The onboarding tracker's sink for Rocalytics: delivers each `OnboardingRunSnapshot` (Core's
/// generated contract v1 type, what the onboarding tracker's sink takes) through
/// ``RocalyticsClient/sendOnboardingRun(_:)``, with destination
/// ``RocalyticsClient/onboardingRunDestination``.
///
/// Pass it to the onboarding tracker's configuration (the Onboarding package):
///
/// ```swift
/// OnboardingRun.configure(OnboardingRunConfiguration(
///     sink: createRocalyticsOnboardingSink(rocalytics), context: context, storage: storage))
/// ```
///
/// `.rocalytics(rocalytics)` and `RocalyticsOnboardingSink(rocalytics)` are the same sink.
public func createRocalyticsOnboardingSink(_ client: RocalyticsClient) -> RocalyticsOnboardingSink<OnboardingRunSnapshot> {
    RocalyticsOnboardingSink(client: client)
}

/// The paywall tracker's sink for Rocalytics: delivers each `PaywallPresentationSnapshotV1_1`
/// (what the paywall tracker's sink takes: it writes exactly the v1 snapshot for a presentation
/// without a provider, and v1.1 for a native or external paywall) through
/// ``RocalyticsClient/sendPaywallPresentation(_:)``, with destination
/// ``RocalyticsClient/paywallPresentationDestination``.
///
/// Pass it to the paywall tracker's configuration (the Paywall package):
///
/// ```swift
/// PaywallPresentationTracker(configuration: PaywallTrackerConfiguration(
///     sink: createRocalyticsPaywallSink(rocalytics), context: context, storage: storage))
/// ```
///
/// `.rocalytics(rocalytics)` and `RocalyticsPaywallSink(rocalytics)` are the same sink. Use
/// ``createRocalyticsPaywallSink(_:for:)`` for another snapshot type, such as the v1-only
/// `PaywallPresentationSnapshot`.
public func createRocalyticsPaywallSink(_ client: RocalyticsClient) -> RocalyticsPaywallSink<PaywallPresentationSnapshotV1_1> {
    RocalyticsPaywallSink(client: client)
}

/// The paywall sink for Rocalytics, for any snapshot type with a wire form (the generated v1
/// `PaywallPresentationSnapshot` or v1.1 `PaywallPresentationSnapshotV1_1`): POSTs the bare
/// snapshot to ``RocalyticsClient/paywallPresentationDestination``.
public func createRocalyticsPaywallSink<Payload: WireEncodable>(_ client: RocalyticsClient, for payload: Payload.Type)
    -> RocalyticsPaywallSink<Payload>
{
    RocalyticsPaywallSink(client: client)
}

extension RocalyticsOnboardingSink where Payload == OnboardingRunSnapshot {
    /// The onboarding tracker's sink for Rocalytics; the same as ``init(client:)``.
    @available(*, deprecated, renamed: "init(client:)")
    public convenience init(_ client: RocalyticsClient) {
        self.init(client: client)
    }
}

extension RocalyticsPaywallSink where Payload == PaywallPresentationSnapshotV1_1 {
    /// The paywall tracker's sink for Rocalytics; the same as ``init(client:)``.
    @available(*, deprecated, renamed: "init(client:)")
    public convenience init(_ client: RocalyticsClient) {
        self.init(client: client)
    }
}

extension Sink where Self == RocalyticsOnboardingSink<OnboardingRunSnapshot> {
    /// The onboarding tracker's sink for Rocalytics, spelled where a sink is expected:
    /// `OnboardingRunConfiguration(sink: .rocalytics(client), context: …)`. The same as
    /// ``createRocalyticsOnboardingSink(_:)``.
    public static func rocalytics(_ client: RocalyticsClient) -> RocalyticsOnboardingSink<OnboardingRunSnapshot> {
        RocalyticsOnboardingSink(client: client)
    }
}

extension Sink where Self == RocalyticsPaywallSink<PaywallPresentationSnapshotV1_1> {
    /// The paywall tracker's sink for Rocalytics, spelled where a sink is expected:
    /// `PaywallTrackerConfiguration(sink: .rocalytics(client), context: …)`. The same as
    /// ``createRocalyticsPaywallSink(_:)``.
    public static func rocalytics(_ client: RocalyticsClient) -> RocalyticsPaywallSink<PaywallPresentationSnapshotV1_1> {
        RocalyticsPaywallSink(client: client)
    }
}

/// A tracker sink that delivers onboarding-run snapshots to Rocalytics through
/// ``RocalyticsClient/sendOnboardingRun(_:)``. Its destination is the client's
/// ``RocalyticsClient/onboardingRunDestination``, so a sink built anew on each configure keeps
/// the same destination.
public final class RocalyticsOnboardingSink<Payload: WireEncodable>: Sink {
    /// The client that delivers.
    public let client: RocalyticsClient
    /// ``RocalyticsClient/onboardingRunDestination``.
    public var destination: String? { client.onboardingRunDestination }

    /// A sink over `client`.
    public init(client: RocalyticsClient) { self.client = client }

    /// ``RocalyticsClient/sendOnboardingRun(_:)``; never throws.
    public func send(_ payload: Payload) async throws -> SinkResult {
        await client.sendOnboardingRun(payload)
    }
}

/// A paywall tracker sink that delivers presentation snapshots to Rocalytics through
/// ``RocalyticsClient/sendPaywallPresentation(_:)``, with destination
/// ``RocalyticsClient/paywallPresentationDestination``.
public final class RocalyticsPaywallSink<Payload: WireEncodable>: Sink {
    /// The client that delivers.
    public let client: RocalyticsClient
    /// ``RocalyticsClient/paywallPresentationDestination``.
    public var destination: String? { client.paywallPresentationDestination }

    /// A sink over `client`.
    public init(client: RocalyticsClient) { self.client = client }

    /// ``RocalyticsClient/sendPaywallPresentation(_:)``; never throws.
    public func send(_ payload: Payload) async throws -> SinkResult {
        await client.sendPaywallPresentation(payload)
    }
}
