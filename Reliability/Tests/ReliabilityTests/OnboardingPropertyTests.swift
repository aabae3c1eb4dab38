import Foundation
import OnboardingTracker
import Testing
import TrackerCore
import TrackerCoreTestKit

/// The diagnostic codes of onboarding-tracker.md §4.
let onboardingCodes: Set<String> = [
    "not-configured", "invalid-start", "invalid-uuid", "draft-version", "studio-variant-dropped", "invalid-property",
    "too-many-properties", "invalid-answer", "too-many-answers", "truncated", "unknown-step", "already-on-step",
    "not-current-step", "no-steps", "run-replaced", "run-inactive", "run-completed", "rejected", "storage",
    "destination-changed", "internal-error", "resume-mismatch", "disposed",
]

/// Hostile and odd input (issue 8, part 2): random sequences of every public call with random
/// keys, strings and numbers, in any order, on the manual clock.
@Suite struct OnboardingPropertyTests {
    @Test(arguments: Soak.seeds("onboarding-properties")) func randomCallSequencesNeverThrowAndEverySnapshotConforms(seed: UInt64) async {
        var rng = SplitMix64(seed: seed)
        let sequences = Soak.scale(400, soak: 8_000)
        var captured = 0
        var sent = 0
        for n in 0..<sequences {
            let r = await runSequence(&rng, capture: captured < 80)
            captured += r.captured
            sent += r.sent
            for p in r.problems.prefix(5) { Issue.record("seed=\(seed) sequence \(n): \(p)") }
            if !r.problems.isEmpty { break }
        }
        print("[reliability] onboarding properties: \(sequences) sequences, \(sent) snapshots checked")
    }

    struct Outcome {
        var problems: [String] = []
        var sent = 0
        var captured = 0
    }

    func runSequence(_ rng: inout SplitMix64, capture: Bool) async -> Outcome {
        var out = Outcome()
        let clock = ManualClock()
        let sink = RecordingSink<OnboardingRunSnapshot>(destination: "https://collector.example/onboarding") { i, _ in
            i % 7 == 3 ? .result(.transient) : i % 11 == 5 ? .result(SinkResult(.rejected, reason: "nope")) : .result(.accepted)
        }
        let diags = DiagnosticLog()
        let storage = InMemoryKeyValueStorage()
        let registry = HandoffRegistry()
        func makeTracker() -> OnboardingRunTracker {
            OnboardingRunTracker(
                configuration: OnboardingRunConfiguration(
                    sink: sink,
                    context: .value(
                        RunContextInput(
                            appVersion: "1.0", build: nil, platform: .ios, osVersion: "18",
                            locale: "en-US", timezone: "Europe/Paris")),
                    storage: storage, debounceMs: Int64(rng.below(3)) * 250, onDiagnostic: diags.handler,
                    clock: clock, scheduler: clock, registry: registry))
        }
        var tracker = makeTracker()
        let manifestKeys = ["welcome", "goal", "age", "plan", "paywall"]
        func options(_ rng: inout SplitMix64) -> (StartOptions, valid: Bool) {
            if rng.chance(85) {
                var props = RunProperties()
                for _ in 0..<rng.below(3) { props.entries.append((key: rng.hostileKey(), value: .string(rng.hostileString()))) }
                return (
                    StartOptions(
                        onboarding: OnboardingInput(key: "main", version: "3"),
                        manifest: manifestKeys.map { ManifestStepInput(stepKey: $0) }, properties: props), true
                )
            }
            // Invalid: empty manifest, duplicate keys, or a hostile key.
            let manifest: [ManifestStepInput] = rng.pick([
                [], [ManifestStepInput(stepKey: "a"), ManifestStepInput(stepKey: "a")],
                [ManifestStepInput(stepKey: "")],
            ])
            return (StartOptions(onboarding: OnboardingInput(key: rng.hostileString(), version: ""), manifest: manifest), false)
        }
        var runs: [OnboardingRun] = [tracker.start(options(&rng).0)]
        let calls = 5 + rng.below(40)
        for _ in 0..<calls {
            let run = rng.pick(runs)
            let before = diags.all.count
            var mustRefuse = false
            switch rng.below(16) {
            case 0, 1, 2:
                let key = rng.chance(80) ? rng.pick(manifestKeys) : rng.hostileString()
                run.enterStep(key)
            case 3, 4:
                let key = rng.chance(80) ? (run.currentStepKey ?? rng.pick(manifestKeys)) : rng.hostileString()
                var answers: [AnswerInput] = []
                for _ in 0..<rng.below(4) {
                    switch rng.below(4) {
                    case 0: answers.append(.single(questionKey: rng.hostileKey(), value: rng.hostileString()))
                    case 1:
                        answers.append(.multi(questionKey: rng.hostileKey(), value: (0..<rng.below(60)).map { _ in rng.hostileString() }))
                    case 2:
                        let v = rng.hostileNumber()
                        answers.append(.numeric(questionKey: rng.hostileKey(), value: v, unit: rng.chance(50) ? rng.hostileString() : nil))
                    default: answers.append(.text(questionKey: rng.hostileKey(), value: rng.hostileString()))
                    }
                }
                run.exitStep(key, answers: rng.chance(10) ? nil : answers)
            case 5, 6:
                var props = RunProperties()
                for _ in 0..<rng.below(25) {
                    let v: PropertyValue
                    switch rng.below(4) {
                    case 0: v = .string(rng.hostileString())
                    case 1: v = .number(rng.hostileNumber())
                    case 2: v = .bool(rng.chance(50))
                    default: v = .null
                    }
                    props.entries.append((key: rng.hostileKey(), value: v))
                }
                run.setProperties(props)
            case 7: run.complete()
            case 8: run.background()
            case 9:
                let (o, valid) = options(&rng)
                runs.append(tracker.start(o))
                mustRefuse = !valid
            case 10:
                if rng.chance(30) { tracker.dispose() }
            case 11:
                if rng.chance(30) {
                    tracker.dispose()
                    tracker = makeTracker()
                    let t = tracker
                    let expected = rng.chance(50) ? options(&rng).0 : nil
                    if let r = await onClock(clock, { await t.resume(expected: expected) }) ?? nil { runs.append(r) }
                }
            case 12:
                await clock.advance(byMs: Int64(rng.below(3_000)))
            case 13:
                let t = tracker
                if await onClock(
                    clock,
                    {
                        await t.idle()
                        return true
                    }) == nil
                {
                    out.problems.append("idle() never finished")
                }
            case 14:
                // NaN as the only answer: always refused with invalid-answer (when the run records).
                run.exitStep(run.currentStepKey ?? "welcome", answers: [.numeric(questionKey: "n", value: .nan)])
            default:
                run.setProperties(["bad key with spaces": .number(.infinity)])
            }
            if mustRefuse && diags.all.count == before { out.problems.append("a refused call reported nothing") }
        }
        tracker.dispose()
        await clock.settle()
        for _ in 0..<8 { await clock.advance(byMs: 60_000) }
        await clock.settle()

        for d in diags.all where !onboardingCodes.contains(d.code.rawValue) {
            out.problems.append("diagnostic code \(d.code) is not in the spec's list")
        }
        for p in sink.received {
            out.sent += 1
            let violations = ContractChecker.onboardingRun(p.wireJSON())
            if !violations.isEmpty { out.problems.append("run \(p.runId) seq \(p.seq): \(violations[0])") }
            if (try? WireJSON.decode(p.wireBytes())) != p.wireJSON() { out.problems.append("bytes and JSON of seq \(p.seq) differ") }
        }
        if capture, let last = sink.received.last {
            PayloadCapture.record(last.wireBytes(), schema: .onboardingRunV1)
            out.captured += 1
        }
        return out
    }
}
