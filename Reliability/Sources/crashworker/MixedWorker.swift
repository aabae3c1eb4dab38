import OnboardingTracker
import PaywallTracker
import ScoreTracker
import TrackerCore
import TrackerCoreTestKit  // SplitMix64

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// `mixed` (issue 36's slow-fsync kill campaign): one app process that runs Score, the onboarding
/// tracker and the paywall tracker at once on one data folder, at a user's pace (a few ms between
/// calls, no `idle()`), as an app would. It prints `PE <presentation id>` when `end()` of a
/// paywall presentation returned and `OC <run id>` when `complete()` of an onboarding run
/// returned; the harness kills it at a random moment and counts which of them reached the
/// collector. In `drain` mode it records nothing: the trackers deliver what they stored.
enum MixedWorker {
    static func run(directory: String, url: String, seed: UInt64, steps count: Int, drain: Bool) async {
        var rng = SplitMix64(seed: seed)
        let context = RunContextInput(
            appVersion: "1.0.0", build: "7", platform: .ios, osVersion: "18.1", locale: "en-US", timezone: "Europe/Paris")
        let report: DiagnosticHandler = { d in Out.line("D \(d.code)") }
        let score = ScoreClient(
            configuration: ScoreConfiguration(
                publishableKey: Secrets.publishableKey, siteId: "crash-site", endpoint: url + "/score",
                appVersion: "1.0.0", os: "Linux", initialConsent: .all,
                store: FileScoreStore(directory: directory + "/score"), onDiagnostic: report))
        score.setToken(Secrets.token)
        let onboarding = OnboardingRunTracker(
            configuration: OnboardingRunConfiguration(
                sink: HTTPSink<OnboardingRunSnapshot>(url: url + "/onboarding", timeoutMs: 10_000), context: .value(context),
                storage: FileKeyValueStorage(directory: directory), debounceMs: 0,
                retry: RetryPolicy(initialDelay: 0.02, factor: 2, maxDelay: 0.2), attemptTimeoutMs: 10_000,
                onDiagnostic: report))
        let paywall = PaywallPresentationTracker(
            configuration: PaywallTrackerConfiguration(
                sink: HTTPSink<PaywallSnapshot>(url: url + "/paywall", timeoutMs: 10_000), context: .value(context),
                storage: FileKeyValueStorage(directory: directory),
                retry: RetryPolicy(initialDelay: 0.02, factor: 2, maxDelay: 0.2), attemptTimeout: 10,
                onDiagnostic: report))
        Out.line(WorkerLine.ready)
        if drain {
            while true {
                try? await score.flush()
                try? await Task.sleep(for: .milliseconds(50))
            }
        }
        let steps = OnboardingWorker.steps
        let options = OnboardingWorker.options
        var run = onboarding.start(options)
        var position = -1
        var live: (any PaywallPresentationHandle)?
        var shown = false
        for n in 1...max(1, count) {
            // Score: the app's own events, a few per action, and a flush now and then.
            for _ in 0...rng.below(3) { score.track("mixed_event", properties: ["n": n]) }
            if rng.below(4) == 0 { Task { try? await score.flush() } }
            switch rng.below(3) {
            case 0:
                if position == steps.count - 1 {
                    run.complete()
                    Out.line("OC \(run.runId)")
                    run = onboarding.start(options)
                    position = -1
                } else {
                    position += 1
                    run.enterStep(steps[position])
                }
            case 1 where position >= 0:
                run.exitStep(steps[position], answers: [.single(questionKey: "q\(position)", value: "opt_\(rng.below(4))")])
            default:
                if let handle = live {
                    if !shown {
                        handle.shown()
                        shown = true
                    } else {
                        handle.end(
                            rng.below(2) == 0
                                ? .dismissed
                                : .purchased(
                                    PaywallTransactionInfo(originalTransactionIdentifier: "3000000\(n)", productId: "pro_yearly")))
                        Out.line("PE \((handle as? PaywallPresentation)?.id ?? "")")
                        live = nil
                    }
                } else {
                    live = paywall.start(
                        PaywallPresentationInfo(
                            moment: "after_onboarding", paywallId: "pw_\(rng.below(5))", renderMode: .elements, billing: .store,
                            surface: .present))
                    shown = false
                }
            }
            Out.line("P \(n)")
            try? await Task.sleep(for: .milliseconds(5 + rng.below(20)))
        }
    }
}
