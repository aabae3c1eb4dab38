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
                retry: RetryPolicy(initialDelay: 0.02, factor: 2, maxDelay: 0.2), attemptTimeout: 10,
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

/// A file storage whose writes each wait `delayMs` before they start: a slow flash, or a disk busy
/// with another process's syncs.
final class SlowWriteStorage: KeyValueStorage {
    let inner: FileKeyValueStorage
    let delayMs: UInt64
    init(_ inner: FileKeyValueStorage, delayMs: UInt64) {
        self.inner = inner
        self.delayMs = delayMs
    }
    func getItem(_ key: String) async throws -> String? { try await inner.getItem(key) }
    func setItem(_ key: String, _ value: String) async throws {
        try? await Task.sleep(nanoseconds: delayMs * 1_000_000)
        try await inner.setItem(key, value)
    }
    func removeItem(_ key: String) async throws {
        try? await Task.sleep(nanoseconds: delayMs * 1_000_000)
        try await inner.removeItem(key)
    }
}

/// `paywall-end`: one presentation started, shown and ended with a purchase, with writes that
/// take 1.5 s each; prints `ENDED <presentation id>` once `end()` returned, then waits to be
/// killed (the harness kills it while the write of the ended snapshot is still pending).
enum PaywallEndWorker {
    static func run(directory: String, url: String) async {
        let printer = Diagnostics.consolePrinter(prefix: "rocalytics-sdk")
        let tracker = PaywallPresentationTracker(
            configuration: PaywallTrackerConfiguration(
                sink: HTTPSink<PaywallSnapshot>(url: url + "/paywall", timeoutMs: 10_000),
                context: .value(
                    RunContextInput(
                        appVersion: "1.0.0", build: "7", platform: .ios, osVersion: "18.1",
                        locale: "en-US", timezone: "Europe/Paris")),
                storage: SlowWriteStorage(FileKeyValueStorage(directory: directory), delayMs: 1500),
                onDiagnostic: { d in
                    Out.line("D \(d.code)")
                    printer(d)
                }))
        await tracker.idle()
        Out.line(WorkerLine.ready)
        guard
            let p = tracker.start(
                PaywallPresentationInfo(
                    moment: "after_onboarding", paywallId: "pw_1", renderMode: .elements, billing: .store, surface: .present))
        else { return }
        p.shown()
        p.end(.purchased(PaywallTransactionInfo(originalTransactionIdentifier: "2000000777", productId: "pro_yearly")))
        Out.line("ENDED \((p as? PaywallPresentation)?.id ?? "")")
    }
}
