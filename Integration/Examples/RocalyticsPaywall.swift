// The README's `examples/native-paywall.ts`, in Swift: the paywall tracker delivering to
// Rocalytics through the client's paywall sink, and a purchase reported to both with its join
// key. Compiled and run by `IntegrationTests` (RocalyticsPaywallTests) against a loopback server
// through the real libcurl transport.

import Foundation
import PaywallTracker
import RocalyticsClient
import TrackerCore

/// What the app reads from the device (UIDevice, Bundle, Locale) and passes in.
public struct AppDevice: Sendable {
    /// The marketing version (`app_version`).
    public var appVersion: String
    /// The build number (`build`).
    public var build: String
    /// `ios` or `android`, from the device.
    public var platform: Platform
    /// The OS version (`os_version`).
    public var osVersion: String
    /// The device locale as a BCP 47 tag.
    public var locale: String

    /// Creates the device facts.
    public init(appVersion: String, build: String, platform: Platform, osVersion: String, locale: String) {
        self.appVersion = appVersion
        self.build = build
        self.platform = platform
        self.osVersion = osVersion
        self.locale = locale
    }
}

/// Once, at app startup. Pass the tracker to the paywall host as its observer. `customize` lets
/// tests inject a clock and a scheduler.
public func setUpPaywallTracking(
    _ rocalytics: RocalyticsClient, storage: any KeyValueStorage, device: AppDevice,
    customize: (inout PaywallTrackerConfiguration) -> Void = { _ in }
) -> PaywallPresentationTracker {
    var config = PaywallTrackerConfiguration(
        sink: createRocalyticsPaywallSink(rocalytics),
        context: .provider {
            RunContextInput(
                appVersion: device.appVersion, build: device.build, platform: device.platform,
                osVersion: device.osVersion, locale: device.locale,
                timezone: TimeZone.current.identifier)
        },
        storage: storage  // e.g. FileKeyValueStorage: an unsent snapshot survives the app being killed
    )
    customize(&config)
    return PaywallPresentationTracker(configuration: config)
}

/// In a custom paywall screen, once the store confirmed the purchase: report it to Rocalytics and
/// end the presentation with its join key, the SAME `originalTransactionIdentifier` (iOS).
public func onPaywallPurchase(
    _ rocalytics: RocalyticsClient, presentation: any PaywallPresentationHandle,
    productId: String, originalTransactionIdentifier: String, price: Double, currency: String
) async throws {
    presentation.end(
        .purchased(
            PaywallTransactionInfo(
                originalTransactionIdentifier: originalTransactionIdentifier, productId: productId)))
    try await rocalytics.trackPurchase(
        originalTransactionIdentifier: originalTransactionIdentifier, productId: productId, price: price,
        currency: currency)
}

/// A paywall the Studio does not serve (contract v1.1) goes through the same sink.
public func presentSuperwallPaywall(_ observer: any PaywallObserver) {
    let presentation = observer.start(
        PaywallPresentationInfo(
            provider: .external, externalPaywallId: "sw_annual_v2", placement: "onboarding_end", providerName: "Superwall"))
    presentation?.shown()
    presentation?.end(.dismissed)
}
