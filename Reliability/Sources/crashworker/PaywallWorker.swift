import PaywallTracker
import TrackerCore
import TrackerCoreTestKit  // SplitMix64

/// Records paywall presentations (start, shown, end with every outcome) into
/// `FileKeyValueStorage`; one persist point after each call.
enum PaywallWorker {
    static func run(directory: String, url: String, seed: UInt64, steps count: Int, drain: Bool) async {
        var rng = SplitMix64(seed: seed)
        let printer = Diagnostics.consolePrinter(prefix: "rocalytics-sdk")
        let tracker = PaywallPresentationTracker(
            configuration: PaywallTrackerConfiguration(
                sink: HTTPSink<PaywallSnapshot>(url: url + "/paywall", timeoutMs: 10_000),
                context: .value(
                    RunContextInput(
                        appVersion: "1.0.0", build: "7", platform: .ios, osVersion: "18.1",
                        locale: "en-US", timezone: "Europe/Paris")),
                storage: FileKeyValueStorage(directory: directory),
                retry: RetryPolicy(initialDelayMs: 20, factor: 2, maxDelayMs: 200), attemptTimeoutMs: 10_000,
                // The suite runs beside compilers on two cores, where one fsync can take seconds: a
                // generous bound keeps the receipt-kill test about the rule (stored before sent), not
                // about the default 1 s bound, past which a snapshot goes out unstored by design.
                persistTimeoutMs: 60_000,
                onDiagnostic: { d in
                    Out.line("D \(d.code)")
                    printer(d)
                }))
        await tracker.idle()
        Out.line(WorkerLine.ready)
        if drain { return }
        let outcomes: [PaywallPresentationEnd] = [
            .dismissed, .cancelled, .restored, .error("store unavailable"),
            .purchased(PaywallTransactionInfo(originalTransactionIdentifier: "2000000\(rng.below(100_000))", productId: "pro_yearly")),
        ]
        var live: (any PaywallPresentationHandle)?
        var shown = false
        for n in 1...max(1, count) {
            if let handle = live {
                if !shown && rng.below(3) != 0 {
                    handle.shown()
                    shown = true
                } else {
                    handle.end(outcomes[rng.below(outcomes.count)])
                    live = nil
                }
            } else {
                let info =
                    rng.below(2) == 0
                    ? PaywallPresentationInfo(
                        moment: "after_onboarding", paywallId: "pw_\(rng.below(5))", renderMode: .elements,
                        billing: .store, surface: .present)
                    : PaywallPresentationInfo(
                        provider: .external, externalPaywallId: "rc_offering_\(rng.below(5))",
                        placement: "settings", providerName: "RevenueCat")
                live = tracker.start(info)
                shown = false
            }
            await tracker.idle()
            Out.line("P \(n)")
        }
    }
}
