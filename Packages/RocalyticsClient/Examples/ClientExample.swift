// The README's `examples/client.ts`, in Swift. Compiled and run by the test suite
// (`ExampleTests`), against a loopback server through the real libcurl transport.
//
// Step 4 joins the client to the onboarding tracker, which lives in the Onboarding package: this
// package does not depend on it, so step 4 is compiled where OnboardingTracker can be imported.
// The `Integration` package compiles this very file with it and runs all four steps
// (`Integration/Tests/IntegrationTests/RocalyticsOnboardingTests.swift`).

import RocalyticsClient
import TrackerCore

#if canImport(OnboardingTracker)
    import OnboardingTracker
#endif

/// 1. One client per app, created once at startup. It starts itself: it reads (or mints) the
///    device's roca id, identifies the device, and sends `install` once per device. Every method
///    waits for that. On Apple platforms the default options are all an app needs; elsewhere
///    `options.platform` is `.custom(YourPlatformServices())`.
public func startRocalytics(_ options: RocalyticsConfiguration = .init()) -> RocalyticsClient {
    RocalyticsClient(configuration: options)
}

/// 2. Identifiers, whenever the app learns them. `nil` values are dropped.
public func onSignedIn(_ rocalytics: RocalyticsClient, userId: String, revenueCatId: String?) async throws {
    try await rocalytics.identify(userId: userId, revenueCatId: revenueCatId)
}

/// 3. A purchase. Pass the purchase SDK's product and transaction objects as they are
///    (`JSONValue(encoding:)` converts an `Encodable` one): they are forwarded whole, and the
///    product id is read from `product.productIdentifier` unless you pass `productId`.
///    Returns the id Rocalytics uses when it forwards the conversion, to deduplicate it against
///    one the app sends to an ad network itself.
public func onPurchase(
    _ rocalytics: RocalyticsClient, product: JSONValue, transaction: JSONValue,
    price: Double, currency: String, isTrial: Bool
) async throws -> String? {
    let originalTransactionIdentifier = transaction["originalTransactionIdentifier"]?.stringValue ?? ""
    try await rocalytics.trackPurchase(
        originalTransactionIdentifier: originalTransactionIdentifier, price: price, currency: currency,
        isTrial: isTrial, product: product, transaction: transaction)
    return getEventId("purchase", ["original_transaction_identifier": .string(originalTransactionIdentifier)])
}

/// 2b. From synchronous code (a sign-in callback): the recording form never throws and never
///     waits. The identify is stored on the device and sent in the background, retried until the
///     server answers, even after the app is killed.
public func onSignedInFromSynchronousCode(_ rocalytics: RocalyticsClient, userId: String) {
    rocalytics.recordIdentify(userId: userId)
}

/// 3b. A purchase that must not be lost: recorded (same request, same deduplication id as
///     `trackPurchase`), stored, and retried after a network failure or a kill. On iOS 17.2 and
///     later, `rocalytics.recordPurchase(transaction, product: product)` reads these values from
///     StoreKit 2.
public func onPurchaseRecorded(
    _ rocalytics: RocalyticsClient, originalTransactionIdentifier: String, productId: String, price: Double,
    currency: String, isTrial: Bool
) {
    rocalytics.recordPurchase(
        originalTransactionIdentifier: originalTransactionIdentifier, productId: productId, price: price,
        currency: currency, isTrial: isTrial)
}

/// 5. A privacy switch, kept across launches: opted out, nothing is sent (start-up requests
///    included) and what was recorded but not sent is dropped.
public func setRocalyticsAllowed(_ rocalytics: RocalyticsClient, _ allowed: Bool) {
    if allowed { rocalytics.optIn() } else { rocalytics.optOut() }
}

/// 6. Diagnostics arrive on any thread: hop to the main actor before touching UI state.
@MainActor public final class SDKStatus {
    /// The code of the latest diagnostic.
    public private(set) var lastDiagnostic: DiagnosticCode?
    /// An empty status.
    public init() {}
    /// Shows `diagnostic`.
    public func show(_ diagnostic: Diagnostic) { lastDiagnostic = diagnostic.code }
}

/// A configuration whose diagnostics go to `status`, on the main actor.
public func rocalyticsConfiguration(reportingTo status: SDKStatus) -> RocalyticsConfiguration {
    RocalyticsConfiguration(onDiagnostic: { diagnostic in
        Task { @MainActor in status.show(diagnostic) }
    })
}

#if canImport(OnboardingTracker)
    /// 4. Onboarding progress, reported through the run tracker and delivered to Rocalytics: each
    ///    snapshot goes to the client's onboarding endpoint, and a completed run sends
    ///    `onboarding_completed` once. `customize` lets tests inject a clock and a scheduler.
    public func setUpOnboardingTracking(
        _ rocalytics: RocalyticsClient, storage: any KeyValueStorage, context: ContextSource,
        customize: (inout OnboardingRunConfiguration) -> Void = { _ in }
    ) {
        var config = OnboardingRunConfiguration(sink: createRocalyticsOnboardingSink(rocalytics), context: context, storage: storage)
        customize(&config)
        OnboardingRun.configure(config)
    }
#endif
