// Paywall tracking without the Rocalytics client: a custom sink that posts each snapshot to the
// app's own backend. Compiled and run by this package's tests (Examples/CustomSinkPaywallTests.swift).
import Foundation
import PaywallTracker
import TrackerCore

/// Facts the app reads from the device (UIDevice, Bundle, Locale) and passes in.
struct DeviceFacts: Sendable {
    var appVersion: String
    var build: String
    var platform: Platform  // .ios or .android, from the device
    var osVersion: String
    var locale: String  // the device locale as a BCP 47 tag, e.g. Locale.current.identifier(.bcp47)
}

/// Posts the exact wire bytes of each snapshot to the app's backend and reads its verdict
/// (`{"outcome": "accepted" | "ignored" | "rejected", "reason"?: string}`). A throw, or an
/// answer without an outcome, is transient and retried with backoff.
final class BackendPaywallSink: Sink {
    let destination: String? = "https://backend.example.com/paywall-presentations"
    private let post: @Sendable (_ body: [UInt8]) async throws -> JSONValue?

    init(post: @escaping @Sendable (_ body: [UInt8]) async throws -> JSONValue?) {
        self.post = post
    }

    func send(_ snapshot: PaywallSnapshot) async throws -> SinkResult {
        SinkResult.normalizing(try await post(snapshot.wireBytes()))
    }
}

// Once, at app startup. Pass the tracker to the paywall host as its observer.
func setUpPaywallTracking(
    device: DeviceFacts, storage: any KeyValueStorage, post: @escaping @Sendable ([UInt8]) async throws -> JSONValue?,
    clock: any TrackerClock = SystemClock(), scheduler: any TrackerScheduler = SystemScheduler.shared,
    onDiagnostic: @escaping DiagnosticHandler = Diagnostics.consolePrinter()
) -> PaywallPresentationTracker {
    PaywallPresentationTracker(
        configuration: PaywallTrackerConfiguration(
            sink: BackendPaywallSink(post: post),
            context: .provider {
                RunContextInput(
                    appVersion: device.appVersion, build: device.build,
                    platform: device.platform,  // from the device, never hard-coded
                    osVersion: device.osVersion,
                    locale: device.locale,  // the device locale
                    timezone: TimeZone.current.identifier  // the system time zone
                )
            },
            storage: storage,  // e.g. FileKeyValueStorage: an unsent snapshot survives the app being killed
            clock: clock, scheduler: scheduler, onDiagnostic: onDiagnostic))
}

// In the paywall host: one presentation that resolved to a paywall and ended in a purchase.
func presentUpgradePaywall(observer: any PaywallObserver, originalTransactionIdentifier: String, productId: String) {
    let info = PaywallPresentationInfo(
        moment: "settings_upgrade", paywallId: "pw-1", audienceId: nil,
        renderMode: .custom, billing: .store, surface: .present)
    guard let presentation = observer.start(info) else { return }  // refused: a diagnostic says why
    presentation.shown()
    // Report the purchase with its join key: the SAME originalTransactionIdentifier the app passes
    // to Rocalytics' purchase call (iOS); on Android pass purchaseToken too.
    presentation.end(.purchased(PaywallTransactionInfo(originalTransactionIdentifier: originalTransactionIdentifier, productId: productId)))
    // A restore or a web redemption is not a new purchase: `presentation.end(.restored)`.
}

// A paywall the Studio does not serve (contract v1.1): a third-party service's placement.
func presentExternalPaywall(observer: any PaywallObserver) {
    let info = PaywallPresentationInfo(
        provider: .external, externalPaywallId: "sw_annual_v2",
        placement: "onboarding_end", providerName: "Superwall")
    let presentation = observer.start(info)
    presentation?.shown()
    presentation?.end(.dismissed)
}
