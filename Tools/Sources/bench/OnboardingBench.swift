import Foundation
import OnboardingTracker
import TrackerCore

/// A scheduler whose timers never fire and whose background steps run detached (the bench
/// measures recording calls, not delivery).
private final class BenchScheduler: TrackerScheduler, @unchecked Sendable {
    private let next = Locked<UInt64>(1)
    func schedule(afterMs: Int64, _ work: @escaping @Sendable () -> Void) -> TimerToken {
        TimerToken(
            id: next.withLock {
                $0 += 1
                return $0
            })
    }
    func cancel(_ token: TimerToken) {}
    func spawn(_ work: @escaping @Sendable () async -> Void) { Task.detached { await work() } }
}

/// Records the size of each body it is given.
private final class SizeSink: OnboardingSink, @unchecked Sendable {
    let destination: String? = nil
    let sizes = Locked<[Int]>([])
    let sema = DispatchSemaphore(value: 0)
    func send(_ payload: OnboardingRunSnapshot) async throws -> SinkResult {
        sizes.withLock { $0.append(payload.wireBytes().count) }
        sema.signal()
        return .accepted
    }
}

private struct BenchClock: TrackerClock {
    let ms = Locked<Int64>(1_768_032_000_000)
    func nowMs() -> Int64 {
        ms.withLock {
            $0 += 1
            return $0
        }
    }
}

/// Counts the snapshots it is given (encodes nothing: the debounce-0 case measures the recording call).
private final class CountSink: OnboardingSink, @unchecked Sendable {
    let destination: String? = nil
    let count = Locked(0)
    func send(_ payload: OnboardingRunSnapshot) async throws -> SinkResult {
        count.withLock { $0 += 1 }
        return .accepted
    }
}

/// Onboarding tracker: the cost of a recording call over a 500-entry run (enter, then exit with
/// two answers), at the first and at the last 50 entries, and the bytes encoded per send.
func onboardingBenchCases() -> [BenchCase] {
    [
        BenchCase(name: "onboarding.record.500-entries") {
            let manifest = [ManifestStepInput(stepKey: "question"), ManifestStepInput(stepKey: "review")]
            let context = RunContextInput(
                appVersion: "2.4.0", build: "412", platform: .ios, osVersion: "18.1", locale: "en-US", timezone: "America/New_York")
            var samples = StepSamples()
            var sendBytes: [Double] = []
            let rounds = 30
            for round in 0..<rounds {
                let sink = SizeSink()
                let tracker = OnboardingRunTracker(
                    configuration: OnboardingRunConfiguration(
                        sink: sink, context: .value(context), debounceMs: 500, onDiagnostic: { _ in },
                        clock: BenchClock(), scheduler: BenchScheduler(), registry: HandoffRegistry()))
                let run = tracker.start(StartOptions(onboarding: OnboardingInput(key: "main", version: "3"), manifest: manifest))
                // The first round warms up: not counted.
                recordSteps(run, count: 500, edge: 50, counted: round > 0, into: &samples)
                run.background()  // one send of the full 500-entry run
                sink.sema.wait()
                sendBytes.append(Double(sink.sizes.value.last ?? 0))
                tracker.dispose()
            }
            var out: [String: Double] = [:]
            out.merge(Stats.summary(samples.first, prefix: "call_first50_ns")) { $1 }
            out.merge(Stats.summary(samples.last, prefix: "call_last50_ns")) { $1 }
            out.merge(Stats.summary(samples.all, prefix: "call_all_ns")) { $1 }
            out["last50_over_first50_median"] = Stats.percentile(samples.last.sorted(), 0.5) / Stats.percentile(samples.first.sorted(), 0.5)
            out["run_total_1000_calls_us"] = Stats.percentile(samples.totals.sorted(), 0.5) / 1000
            out["bytes_per_send_500_entries"] = sendBytes.last ?? 0
            return out
        },
        // With `debounceMs <= 0` every change builds a snapshot at once (no storage: it goes straight
        // to delivery). The cost of a recording call over a 200-entry run, as above.
        BenchCase(name: "onboarding.record.debounce0.200-entries") {
            let manifest = [ManifestStepInput(stepKey: "question"), ManifestStepInput(stepKey: "review")]
            let context = RunContextInput(
                appVersion: "2.4.0", build: "412", platform: .ios, osVersion: "18.1", locale: "en-US", timezone: "America/New_York")
            var samples = StepSamples()
            let rounds = 10
            for round in 0..<rounds {
                let tracker = OnboardingRunTracker(
                    configuration: OnboardingRunConfiguration(
                        sink: CountSink(), context: .value(context), debounceMs: 0, onDiagnostic: { _ in },
                        clock: BenchClock(), scheduler: BenchScheduler(), registry: HandoffRegistry()))
                let run = tracker.start(StartOptions(onboarding: OnboardingInput(key: "main", version: "3"), manifest: manifest))
                recordSteps(run, count: 200, edge: 20, counted: round > 0, into: &samples)
                tracker.dispose()
            }
            var out: [String: Double] = [:]
            out.merge(Stats.summary(samples.first, prefix: "call_first20_ns")) { $1 }
            out.merge(Stats.summary(samples.last, prefix: "call_last20_ns")) { $1 }
            out.merge(Stats.summary(samples.all, prefix: "call_all_ns")) { $1 }
            out["run_total_400_calls_us"] = Stats.percentile(samples.totals.sorted(), 0.5) / 1000
            return out
        },
    ]
}

/// The recording-call timings of the onboarding cases: the first and last `edge` steps, all of
/// them, and each run's total.
private struct StepSamples {
    var first: [Double] = []
    var last: [Double] = []
    var all: [Double] = []
    var totals: [Double] = []
}

/// Times `count` steps (an `enterStep` and an `exitStep` with two answers each) on `run`, adding
/// them to `samples` when `counted`.
private func recordSteps(_ run: OnboardingRun, count: Int, edge: Int, counted: Bool, into samples: inout StepSamples) {
    var total = 0.0
    for i in 0..<count {
        let key = i % 2 == 0 ? "question" : "review"
        let answers: [AnswerInput] = [
            .single(questionKey: "choice", value: "option_\(i % 7)"),
            .numeric(questionKey: "minutes", value: Double(i), unit: "minute"),
        ]
        let a = timeNs { run.enterStep(key) }
        let b = timeNs { run.exitStep(key, answers: answers) }
        total += a + b
        guard counted else { continue }
        if i < edge { samples.first += [a, b] }
        if i >= count - edge { samples.last += [a, b] }
        samples.all += [a, b]
    }
    if counted { samples.totals.append(total) }
}
