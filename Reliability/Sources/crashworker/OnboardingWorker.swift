import OnboardingTracker
import TrackerCore
import TrackerCoreTestKit  // SplitMix64

/// Records onboarding runs into `FileKeyValueStorage`; one persist point after each call.
enum OnboardingWorker {
    static let steps = (0..<6).map { "step_\($0)" }
    static let options = StartOptions(
        onboarding: OnboardingInput(key: "crash_flow", version: "1"),
        manifest: steps.map { ManifestStepInput(stepKey: $0) })

    static func run(directory: String, url: String, seed: UInt64, steps count: Int, drain: Bool) async {
        var rng = SplitMix64(seed: seed)
        let printer = Diagnostics.consolePrinter()
        let tracker = OnboardingRunTracker(
            configuration: OnboardingRunConfiguration(
                sink: HTTPSink<OnboardingRunSnapshot>(url: url + "/onboarding", timeoutMs: 10_000),
                context: .value(
                    RunContextInput(
                        appVersion: "1.0.0", build: "7", platform: .ios, osVersion: "18.1",
                        locale: "en-US", timezone: "Europe/Paris")),
                storage: FileKeyValueStorage(directory: directory),
                debounceMs: 0, persistTimeoutMs: 600_000, storageReadTimeoutMs: 600_000,
                retry: RetryPolicy(initialDelay: 0.02, factor: 2, maxDelay: 0.2), attemptTimeoutMs: 10_000,
                onDiagnostic: { d in
                    Out.line("D \(d.code)")
                    printer(d)
                }))
        var run: OnboardingRun
        if let resumed = await tracker.resume(expected: options) {
            run = resumed
            Out.line("R \(resumed.runId) \(resumed.currentStepKey ?? "-")")
        } else {
            run = tracker.start(options)
            Out.line("S \(run.runId)")
        }
        await tracker.idle()
        Out.line(WorkerLine.ready)
        if drain { return }
        var position = run.currentStepKey.flatMap { Self.steps.firstIndex(of: $0) } ?? -1
        for n in 1...max(1, count) {
            var action = rng.below(10)
            if action != 8 && action >= 4 && action <= 7 && position < 0 { action = 0 }
            if (action <= 3 || action == 9) && position == Self.steps.count - 1 { action = 8 }
            switch action {
            case 0...3:
                position = min(position + 1, Self.steps.count - 1)
                run.enterStep(Self.steps[position])
            case 4, 5:
                if position >= 0 {
                    run.exitStep(
                        Self.steps[position],
                        answers: [
                            .single(questionKey: "q\(position)", value: "opt_\(rng.below(4))"),
                            .numeric(questionKey: "n\(position)", value: Double(rng.below(1000)), unit: "kg"),
                        ])
                }
            case 6:
                run.setProperties(["attempt": .number(Double(n)), "source": "crash"])
            case 7:
                run.background()
            case 8 where position >= 0:
                run.complete()
                run = tracker.start(options)
                position = -1
                Out.line("S \(run.runId)")
            default:
                position = min(position + 1, Self.steps.count - 1)
                run.enterStep(Self.steps[position])
            }
            await tracker.idle()
            Out.line("P \(n)")
        }
    }
}
