// The snippets of the DocC article "Getting started with the paywall tracker", compiled here
// (`make check-readme` checks that each snippet of the article is part of a compiled file).

import PaywallTracker
import TrackerCore

/// "Create the tracker".
func gettingStartedCreate() -> PaywallPresentationTracker {
    let tracker = PaywallPresentationTracker(
        configuration: PaywallTrackerConfiguration(
            sink: HTTPSink<PaywallPresentationSnapshotV1_1>(url: "https://collector.example.com/v1/paywall-presentations"),
            context: .system,  // app version, build, OS version, locale and time zone, read at each start
            storage: StandardFileStorage()))
    return tracker
}

/// "Report a presentation".
func gettingStartedPresent(_ tracker: PaywallPresentationTracker, originalTransactionIdentifier: String, productId: String) {
    let info = PaywallPresentationInfo(
        moment: "settings_upgrade", paywallId: "pw-1", audienceId: nil,
        renderMode: .custom, billing: .store, surface: .present)
    guard let presentation = tracker.start(info) else { return }  // refused: a diagnostic says why
    presentation.shown()
    presentation.end(
        .purchased(
            PaywallTransactionInfo(originalTransactionIdentifier: originalTransactionIdentifier, productId: productId)))
}
