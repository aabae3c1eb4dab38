import Testing
import TrackerCore
import TrackerCoreTestKit

@testable import OnboardingTracker

/// The opt-in lifecycle binding (issue 18), driven by Core's `AppLifecycleMonitor` over a fake
/// OS side and a main-thread hop the test can hold.
///
/// New scenarios:
/// - LC13: entering the background backgrounds the current run and sends it inside a background task, ended once sent.
/// - LC14: a send that fails keeps its snapshot (nothing lost); the background task ends at the budget.
/// - LC15: with the main thread held, the run is still backgrounded and sent at once; the OS task waits for the main thread.
/// - LC16: without a run (or after unbind), nothing is recorded and no diagnostic is reported.
/// - LC21: behind a write that never finishes, an earlier run's completion in backoff is sent at once.
@Suite struct LifecycleBindingTests {
    @Test func LC13_backgroundSendsTheRunInsideABackgroundTask() async {
        let w = World()
        let h = Harness(w) { $0.debounceMs = 60_000 }
        let system = FakeLifecycleSystem()
        h.tracker.bindToAppLifecycle(monitor: AppLifecycleMonitor(system: system, hop: HeldMainHop()))
        let run = h.start()
        run.enterStep("welcome")
        await h.tick(1000)
        let before = h.sink.payloads.count
        system.post(.didEnterBackground)
        #expect(system.begunTasks == ["onboarding.send"])
        await h.tick(0)
        #expect(h.sink.payloads.count == before + 1)
        #expect(h.sink.last?["run_id"]?.stringValue == run.runId)
        #expect(system.runningTasks == 0)
        #expect(system.endedTasks.count == 1)
        #expect(h.codes.isEmpty)
    }

    @Test func LC14_aFailedSendKeepsItsSnapshotAndTheTaskEndsAtTheBudget() async {
        let w = World()
        let h = Harness(w) { $0.debounceMs = 60_000 }
        let system = FakeLifecycleSystem()
        h.tracker.bindToAppLifecycle(monitor: AppLifecycleMonitor(system: system, hop: HeldMainHop()), backgroundBudgetSeconds: 3)
        let run = h.start()
        run.enterStep("welcome")
        await h.tick(1000)
        h.sink.answer { _, _ in .hang }
        system.post(.didEnterBackground)
        await expectTaskEndsAtBudget(h, system, run, budgetMs: 3000)
    }

    @Test func LC15_aHeldMainThreadDelaysOnlyTheOSCall() async {
        let w = World()
        let h = Harness(w) { $0.debounceMs = 60_000 }
        let system = FakeLifecycleSystem()
        let hop = HeldMainHop()
        h.tracker.bindToAppLifecycle(monitor: AppLifecycleMonitor(system: system, hop: hop))
        let run = h.start()
        run.enterStep("welcome")
        await h.tick(1000)
        let before = h.sink.payloads.count
        hop.hold()
        system.post(.didEnterBackground)
        run.enterStep("goal")  // recording goes on while the main thread is held
        await h.tick(0)
        #expect(h.sink.payloads.count > before)
        #expect(system.begunTasks.isEmpty)
        hop.release()
        #expect(system.runningTasks == 0)  // the work was done before the OS task could begin
    }

    @Test func LC16_noRunNoDiagnosticAndUnbind() async {
        let w = World()
        let h = Harness(w)
        let system = FakeLifecycleSystem()
        let binding = h.tracker.bindToAppLifecycle(monitor: AppLifecycleMonitor(system: system, hop: HeldMainHop()))
        system.post(.didEnterBackground)
        await h.tick(0)
        h.tracker.appDidEnterBackground()
        await h.tick(0)
        #expect(h.codes.isEmpty)
        #expect(h.sink.payloads.isEmpty)
        binding.unbind()
        #expect(!system.isObserving)
        let run = h.start()
        run.enterStep("welcome")
        await h.tick(1000)
        let sent = h.sink.payloads.count
        system.post(.didEnterBackground)
        await h.tick(0)
        #expect(h.sink.payloads.count == sent)
    }

    /// A write that never finishes holds neither the background send nor the task past its
    /// budget (Paywall's P75 found it did there). The current run's `background()` flushes its
    /// own delivery; an earlier run's completion in retry backoff was flushed only after `idle()`,
    /// which waits up to `storageReadTimeoutMs` for the hung write, so not before the budget ran
    /// out (and, its write hung, it was not stored either). Now every delivery is flushed at once;
    /// the task still waits for the writes, and ends at its budget.
    @Test func LC21_aHungWriteDoesNotHoldTheBackgroundSend() async {
        var f = FaultInjectingStorage.Faults()
        f.writesNeverFinish = true
        let h = Harness(World(), faults: f) { $0.retry = RetryPolicy(initialDelay: 1, factor: 4, maxDelay: 60) }
        h.sink.answer { p, _ in p.isCompleted ? .result(.transient) : .result(.accepted) }
        let system = FakeLifecycleSystem()
        h.tracker.bindToAppLifecycle(monitor: AppLifecycleMonitor(system: system, hop: HeldMainHop()), backgroundBudgetSeconds: 5)
        let first = h.start()
        first.enterStep("welcome")
        first.complete()
        await h.tick(1000)  // handed over at persistTimeoutMs: transient, retries at +1 s, then +4 s
        await h.tick(5000)
        // seq 1 (accepted), then the completion: transient three times; the next retry at +16 s.
        #expect(h.sink.recorder.callTimes == [T0 + 1000, T0 + 1000, T0 + 2000, T0 + 6000])
        let next = h.start()
        next.enterStep("welcome")
        system.post(.didEnterBackground)
        #expect(system.begunTasks == ["onboarding.send"])
        await h.tick(0)
        #expect(h.sink.recorder.callTimes.count == 5, "the first run's completion was not sent again at once")
        #expect(h.sink.recorder.callTimes.last == T0 + 6000)
        #expect(h.sink.last?["run_id"]?.stringValue == first.runId)
        await h.tick(1000)  // the next run's snapshots, handed over at persistTimeoutMs
        #expect(h.sink.last?["run_id"]?.stringValue == next.runId)
        #expect(h.sink.last?["status"] == "in_progress")
        // The hung write holds the task until its budget, not beyond.
        await expectTaskEndsAtBudget(h, system, first, budgetMs: 4000)
    }

    /// The background task runs until `budgetMs` after the background, then ends, and `run`'s
    /// snapshot is still to be delivered (nothing lost).
    private func expectTaskEndsAtBudget(
        _ h: Harness, _ system: FakeLifecycleSystem, _ run: OnboardingRun, budgetMs: Int64,
        sourceLocation: SourceLocation = #_sourceLocation
    ) async {
        await h.tick(budgetMs - 1)
        #expect(system.runningTasks == 1, sourceLocation: sourceLocation)
        await h.tick(1)
        #expect(system.runningTasks == 0, sourceLocation: sourceLocation)
        let pending = h.tracker.state.withLock { s in s.deliveries[run.runId]?.pending != nil }
        #expect(pending, sourceLocation: sourceLocation)
    }
}
