import Testing
import TrackerCore
import TrackerCoreTestKit

@testable import OnboardingTracker

// `resumeOrStart(_:resumeTimeout:)` (issue 37 item 5), which replaces the README's race of
// `resume(expected:)` against a timer.
//
// New scenarios:
// S226 a killed run is resumed when the stored state is read within the timeout (the read takes
//      2 s of a 3 s bound): the same run id, its position restored, no new run.
// S227 a read slower than the timeout: a new run starts when the bound passes (3 s), not when the
//      read lands (5 s); the late read resumes nothing (the new run goes on recording).
// S228 options of another onboarding: `resume-mismatch` and a new run; without storage, a new run
//      at once; on a disposed tracker, one `disposed` diagnostic and an inert run.

/// Calls `resumeOrStart` on `h`'s tracker as the app would, advancing the manual clock until it
/// returns (bounded: a broken wait fails with a message).
func resumeOrStartT(_ h: Harness, _ options: StartOptions = OPTIONS, timeout: Double = 3) async -> OnboardingRun? {
    let box = Locked<OnboardingRun?>(nil)
    let tracker = h.tracker
    h.world.clock.spawnAsCaller {
        let r = await tracker.resumeOrStart(options, resumeTimeout: timeout)
        box.withLock { $0 = r }
    }
    for _ in 0..<600 {
        await h.world.settle()
        if let v = box.value { return v }
        await h.tick(100)
    }
    Issue.record("resumeOrStart() did not return")
    return nil
}

@Suite struct ResumeOrStartTests {
    /// A run killed on "goal" in a first process; returns it.
    static func killedRun(_ w: World) async -> OnboardingRun {
        let a = Harness(w)
        let run = a.start()
        run.enterStep("welcome")
        run.exitStep("welcome")
        run.enterStep("goal")
        await a.tick(1000)
        await a.idle()
        await w.nextLaunch()
        return run
    }

    @Test func S226_resumesWhenTheReadLandsInTime() async {
        let w = World()
        let killed = await Self.killedRun(w)
        var f = FaultInjectingStorage.Faults()
        f.getDelayMs = 2000
        let b = Harness(w, faults: f)
        let began = w.clock.nowMs()
        let run = await resumeOrStartT(b)
        let took = w.clock.nowMs() - began
        #expect(run?.runId == killed.runId, "a new run was started instead of resuming")
        #expect(run?.currentStepKey == "goal")
        #expect(took >= 2000 && took < 2200, "took \(took) ms")
        #expect(b.log.all.isEmpty, "\(b.codes)")
    }

    @Test func S227_startsWhenTheTimeoutPassesFirst() async {
        let w = World()
        let killed = await Self.killedRun(w)
        var f = FaultInjectingStorage.Faults()
        f.getDelayMs = 5000
        let b = Harness(w, faults: f)
        let began = w.clock.nowMs()
        let run = await resumeOrStartT(b)
        let took = w.clock.nowMs() - began
        #expect(run != nil && run?.runId != killed.runId)
        #expect(took >= 3000 && took < 3200, "took \(took) ms")
        run?.enterStep("welcome")
        await b.tick(10_000)
        // The late read resumes nothing: the new run still records.
        run?.enterStep("goal")
        await b.tick(1000)
        #expect(b.count("run-inactive") == 0 && b.count("run-replaced") == 0, "\(b.codes)")
        #expect(b.sink.payloads.filter { $0.runId == run?.runId }.map(\.seq).last == 2)
    }

    @Test func S228_mismatchNoStorageAndDisposed() async {
        let w = World()
        let killed = await Self.killedRun(w)
        let b = Harness(w)
        let other = StartOptions(onboarding: OnboardingInput(key: "other", version: "1"), manifest: MANIFEST)
        let run = await resumeOrStartT(b, other)
        #expect(run != nil && run?.runId != killed.runId)
        #expect(b.codes.contains("resume-mismatch"))

        let c = Harness(World(), storage: false)
        let began = c.world.clock.nowMs()
        let fresh = await resumeOrStartT(c)
        #expect(fresh != nil && c.world.clock.nowMs() == began && c.log.all.isEmpty, "\(c.codes)")
        fresh?.enterStep("welcome")
        await c.tick(1000)
        #expect(c.sink.payloads.count == 1)

        let d = Harness(World())
        d.tracker.dispose()
        let inert = await resumeOrStartT(d)
        inert?.enterStep("welcome")
        #expect(d.codes == ["disposed"], "one diagnostic for the call, none for the inert run: \(d.codes)")
    }
}
