// The README's `examples/native-paywall.ts`, in Swift. Compiled and run by the test suite.
//
// The paywall tracker lives in the Paywall package, which this package does not depend on: the
// app passes the sink and the context built here to its tracker, and the tracker to the paywall
// host as its observer.

import RocalyticsClient
import TrackerCore

/// What the app knows about the device.
public struct ExampleDevice: Sendable {
    /// `app_version`.
    public var appVersion: String
    /// `build`.
    public var build: String
    /// `ios` or `android`.
    public var platform: PaywallPresentationSnapshot.Platform
    /// `os_version`.
    public var osVersion: String
    /// The device locale, e.g. `en-US`.
    public var locale: String
    /// IANA time zone, e.g. `TimeZone.current.identifier`.
    public var timezone: String

    /// Creates the device facts.
    public init(
        appVersion: String, build: String, platform: PaywallPresentationSnapshot.Platform, osVersion: String, locale: String,
        timezone: String
    ) {
        self.appVersion = appVersion
        self.build = build
        self.platform = platform
        self.osVersion = osVersion
        self.locale = locale
        self.timezone = timezone
    }
}

/// Once, at app startup: the sink every presentation snapshot goes to. Give it, with
/// ``paywallContext(_:)``, to the paywall tracker (contract v1.1 covers native and external
/// paywalls: `provider: .native` with its `externalPaywallId`). The paywall tracker wired to it is
/// `Integration/Examples/RocalyticsPaywall.swift`.
public func setUpPaywallTracking(_ rocalytics: RocalyticsClient) -> RocalyticsPaywallSink<PaywallPresentationSnapshotV1_1> {
    createRocalyticsPaywallSink(rocalytics)
}

/// The presentation context, from the device facts (the paywall tracker adds its own
/// `library_version`).
public func paywallContext(_ device: ExampleDevice) -> PaywallPresentationSnapshot.Context {
    PaywallPresentationSnapshot.Context(
        appVersion: device.appVersion, build: device.build, platform: device.platform,
        osVersion: device.osVersion, locale: device.locale, timezone: device.timezone,
        libraryVersion: RocalyticsClientVersion.current)
}

// In a custom paywall screen, report the purchase with its join key: the SAME
// `originalTransactionIdentifier` passed to `trackPurchase` (iOS), or the `purchaseToken`
// (Android). A restore or a web redemption is not a new purchase: report `restored: true`.
// The client never sends a price.
