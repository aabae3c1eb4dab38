import Testing
import TrackerCore
import TrackerCoreTestKit

@testable import OnboardingTracker

// The recording rules as pure mutating functions on RunState (issue 36 item 4), driven directly:
// no tracker, lock, clock, storage or delivery. The scenario tests (S1…) still drive them through
// the tracker unchanged.
//
// New scenarios:
// S220 enterStep: a step outside the manifest is reported without repeating it and changes
//      nothing; the open step again is `already-on-step`; a new entry closes the open one at
//      "now" (never before the last entry's time); the entry limit truncates the run once, and a
//      truncated run only closes its open entry.
// S221 exitStep: a key that is neither the current nor the previous entry is reported ("?" when
//      not in the manifest); answers go to the previous entry without exiting the current one;
//      invalid answers and answers past 50 questions are each reported once per call; exiting
//      the open entry makes its exit provisional.
// S222 setProperties: a patch that changes nothing is no change; invalid and excess keys are
//      reported once each; a truncated run records no property and says so.
// S223 complete: nothing without an entry (`no-steps`); otherwise completed at "now" with the
//      last entry exited then.
// S224 the restore rule: the open entry exits at the last activity, a new entry of the same step
//      opens at the resume time; a run at the entry limit is truncated instead.
// S225 the disposal phase: live, then handing over until the leftover is taken (once) and the
//      drain done, then released exactly once; a tracker disposed and dropped by the app is kept
//      by its registry only until then.
@Suite struct RunRecordingTests {
    static func run(entries: [String] = [], keys: [String] = ["welcome", "goal", "plan"]) -> RunState {
        var r = RunState(
            runId: LifecycleMachineTests.runA, onboarding: .init(key: "main", version: "3"), studio: nil,
            context: .init(appVersion: "2.4.0", build: nil, platform: .ios, osVersion: nil, locale: "en-US", timezone: "UTC"),
            manifest: .init(steps: keys.map { .init(stepKey: $0) }), manifestKeys: Set(keys), lastActiveAt: T0)
        for (i, k) in entries.enumerated() {
            _ = r.enterStep(k, nowMs: T0 + Int64(i) * 1000)
        }
        return r
    }

    static func codes(_ o: RecordingOutcome) -> [String] { o.diagnostics.map(\.code.rawValue) }

    @Test func S220_enterStep() {
        var r = Self.run()
        let unknown = r.enterStep("secret-value", nowMs: T0)
        #expect(Self.codes(unknown) == ["unknown-step"] && !unknown.changed && r.steps.isEmpty)
        #expect(!unknown.diagnostics[0].message.contains("secret-value"))

        let first = r.enterStep("welcome", nowMs: T0)
        #expect(first.changed && first.entered == "welcome" && first.diagnostics.isEmpty)
        let same = r.enterStep("welcome", nowMs: T0 + 5)
        #expect(Self.codes(same) == ["already-on-step"] && !same.changed)
        // "now" before the last entry's time: the new entry starts at that time, not before.
        let second = r.enterStep("goal", nowMs: T0 - 500)
        #expect(second.entered == "goal" && r.steps.count == 2)
        #expect(r.steps[0].exitedAt == T0 && r.steps[1].enteredAt == T0 && r.lastActiveAt == T0)
        #expect(r.steps[1].exitedAt == nil && !r.provisionalExit)

        var full = Self.run()
        for i in 0..<maxEntries { _ = full.enterStep(i % 2 == 0 ? "welcome" : "goal", nowMs: T0 + Int64(i)) }
        #expect(full.steps.count == maxEntries && !full.truncated)
        let over = full.enterStep("plan", nowMs: T0 + 10_000)
        #expect(Self.codes(over) == ["truncated"] && over.changed && over.entered == nil && full.truncated)
        #expect(full.steps.count == maxEntries && full.steps.last?.exitedAt == T0 + 10_000)
        let again = full.enterStep("welcome", nowMs: T0 + 20_000)
        #expect(Self.codes(again) == ["truncated"] && !again.changed, "the open entry was closed already")
    }

    @Test func S221_exitStep() {
        var r = Self.run(entries: ["welcome", "goal"])
        let elsewhere = r.exitStep("not-a-step", answers: [], nowMs: T0 + 5000)
        #expect(Self.codes(elsewhere) == ["not-current-step"] && elsewhere.diagnostics[0].message.contains("\"?\""))
        let plan = r.exitStep("plan", answers: [], nowMs: T0 + 5000)
        #expect(Self.codes(plan) == ["not-current-step"] && !plan.changed)

        // The previous entry: answers recorded, the current entry stays open.
        let late = r.exitStep("welcome", answers: [.single(questionKey: "q1", value: "a")], nowMs: T0 + 5000)
        #expect(late.changed && late.diagnostics.isEmpty && r.steps[0].answers.count == 1 && r.steps[1].exitedAt == nil)

        var answers: [AnswerInput] = (0..<52).map { .single(questionKey: "q\($0)", value: "a") }
        answers.append(.single(questionKey: "Bad Key", value: "a"))
        answers.append(.numeric(questionKey: "n", value: .nan))
        let exit = r.exitStep("goal", answers: answers, nowMs: T0 + 6000)
        #expect(Self.codes(exit) == ["invalid-answer", "too-many-answers"])
        #expect(exit.diagnostics[0].message.hasPrefix("2 answers") && exit.diagnostics[1].message.hasPrefix("2 answers"))
        #expect(r.steps[1].answers.count == 50 && r.steps[1].exitedAt == T0 + 6000 && r.provisionalExit && exit.changed)
    }

    @Test func S222_setProperties() {
        var r = Self.run(entries: ["welcome"])
        let set = r.setProperties(["plan": "pro", "BAD KEY": 1])
        #expect(set.changed && Self.codes(set) == ["invalid-property"] && r.properties.count == 1)
        let same = r.setProperties(["plan": "pro"])
        #expect(!same.changed && same.diagnostics.isEmpty)
        let many = r.setProperties(RunProperties((0..<25).map { ("p\($0)", PropertyValue.number(Double($0))) }))
        #expect(many.changed && Self.codes(many) == ["too-many-properties"] && r.properties.count == 20)
        #expect(many.diagnostics[0].message.hasPrefix("6 properties"))

        r.truncated = true
        let refused = r.setProperties(["plan": "basic"])
        #expect(!refused.changed && Self.codes(refused) == ["truncated"])
        #expect(r.properties.wireJSON().objectValue?["plan"] == "pro")
    }

    @Test func S223_complete() {
        var empty = Self.run()
        let none = empty.complete(nowMs: T0)
        #expect(Self.codes(none) == ["no-steps"] && !none.changed && !empty.completed)

        var r = Self.run(entries: ["welcome", "goal"])
        let done = r.complete(nowMs: T0 + 9000)
        #expect(done.changed && done.diagnostics.isEmpty && r.completed && r.completedAt == T0 + 9000)
        #expect(r.steps[1].exitedAt == T0 + 9000 && !r.provisionalExit)
    }

    @Test func S224_theRestoreRule() {
        var r = Self.run(entries: ["welcome", "goal"])
        r.lastActiveAt = T0 + 4000
        let restored = r.restore(at: T0 + 60_000)
        #expect(restored.entered == "goal" && restored.diagnostics.isEmpty)
        #expect(r.steps.count == 3 && r.steps[1].exitedAt == T0 + 4000 && r.steps[2].enteredAt == T0 + 60_000)
        #expect(r.lastActiveAt == T0 + 60_000 && r.steps[2].exitedAt == nil)

        var full = Self.run()
        for i in 0..<maxEntries { _ = full.enterStep(i % 2 == 0 ? "welcome" : "goal", nowMs: T0 + Int64(i)) }
        let truncated = full.restore(at: T0 + 60_000)
        #expect(Self.codes(truncated) == ["truncated"] && truncated.entered == nil && full.truncated)
        #expect(full.steps.count == maxEntries && full.steps.last?.exitedAt != nil)
    }

    @Test func S225_theDisposalPhase() async {
        var phase = DisposalPhase.live
        var taken = phase.takeLeftover()
        var released = phase.release()
        #expect(!phase.leftoverPending && taken == nil && !released)
        let left = Deferred<Leftover>()
        phase = .handingOver(leftover: left, drained: false)
        released = phase.release()
        #expect(phase.leftoverPending && !released)
        taken = phase.takeLeftover()
        #expect(taken === left)
        taken = phase.takeLeftover()
        #expect(taken == nil && !phase.leftoverPending)
        released = phase.release()
        #expect(!released, "the drain is not done")
        phase.drained()
        released = phase.release()
        #expect(released && phase.isReleased)
        released = phase.release()
        #expect(!released, "released once")

        // A tracker disposed and dropped at once is kept by its registry until its duties are over.
        let w = World()
        let registry = w.registry
        weak var weakTracker: OnboardingRunTracker?
        do {
            let config = OnboardingRunConfiguration(
                sink: HarnessSink(destination: DESTINATION, clock: w.clock), context: .value(CONTEXT),
                storage: InMemoryKeyValueStorage(), debounceMs: 0, onDiagnostic: { _ in }, clock: w.clock, scheduler: w.scheduler,
                uuid: harnessUUID, registry: registry)
            let t = OnboardingRunTracker(configuration: config)
            weakTracker = t
            let run = t.start(OPTIONS)
            run.enterStep("welcome")
            t.dispose()
            #expect(registry.keptCount == 1)
        }
        await w.advance(60_000)
        #expect(registry.keptCount == 0 && weakTracker == nil, "the disposed tracker is still kept")
    }
}
