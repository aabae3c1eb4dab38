import Foundation
import Testing
import TrackerCore
import TrackerCoreTestKit

@testable import OnboardingTracker

// Scenarios added after onboarding-tracker.md §12 (issues 14 and 15): where the port behaved
// differently from the reference SDK on the same calls, and the test kit those tests rely on.
//
// S169 slow storage no longer starves the sink (every staged snapshot is handed over at its
//      write or its timeout, even when a newer one was built meanwhile)
// S170 a superseded snapshot is handed to delivery once its write lands (seq 1 and seq 2 go out)
// S171 a tracker released after dispose() before its read ran does not hold its successor
// S172 re-entering the open last step of a truncated run is `already-on-step`, the entry stays open
// S173 a completed run after a newer start(): `run-completed`, and background() still flushes it
// S174 the slow-read `storage` diagnostic from idle() and from a disposed tracker's drain
// S175 the debounce window opens at the first recorded change, a property set before any entry
// S176 no `truncated` for a truncated run's exitStep whose answers are all invalid
// S177 dispose() gives the runs' last attempts in run-creation order
// S178 test kit: held steps start from the executor in spawn order; steps spawned by executor
//      work are never held
// S179 the byte budget counts the next seq's digits (a change at seq 9, 99, 999)
// S180 a full disk mid-run: snapshots within the stored seq reservation still go out, and the
//      resumed run continues past the reservation (no seq sent with two bodies)
// S181 a read-only directory: a resumed run's snapshots past the stored reservation are held,
//      never sent, so the next launch's resume cannot reuse their seqs
// S182 held snapshots go out once storage takes a write again
// S183 the reservation runs out within one session: the rest is held, reported once
// S184 a snapshot held for storage stays held in the tracker a reconfigure hands it to
// S185 (in RecordingScenarioTests) one diagnostic per call and code, with the count, for dropped
//      properties and answers (100,000 properties: one `too-many-properties`, not 99,980)
// S199 (in RecordingScenarioTests) that diagnostic names the first 10 dropped entries, then "and N more"
// Issue 29 (a differential run against the reference SDK):
// S196 two reconfigures in a row: the middle tracker, released before it took over, still passes
//      on the run's unsent completion, which the third tracker sends once
// S197 writes that never complete: every snapshot goes out within persistTimeoutMs, the
//      completion included (none is held past the stored seq reservation)
// S198 behind a released predecessor, the successor's read waits (bounded) for the predecessor's
//      read: a slow read is reported, and resume() returns once both reads landed
// Issue 34 (a planted bug the suite missed):
// S209 a disposed and released tracker is let go once its leftover is passed on and its drain
//      done, with and without storage (S196 and S198 only check that it lives long enough)

/// A truncated run whose last entry (`experience`) is still open: the budget was crossed by
/// answers given to the second-to-last entry.
func truncatedWithOpenLastEntry(_ h: Harness) -> OnboardingRun {
    let run = h.start()
    let big = String(repeating: "😀", count: 1000)  // 4,000 bytes
    run.enterStep("welcome")
    run.exitStep("welcome", answers: (0..<50).map { .text(questionKey: "a\($0)", value: big) })  // ~200 KB
    run.enterStep("goal")
    run.exitStep("goal", answers: (0..<10).map { .text(questionKey: "b\($0)", value: big) })  // ~240 KB
    run.enterStep("experience")
    run.exitStep("goal", answers: (10..<20).map { .text(questionKey: "b\($0)", value: big) })  // crosses
    return run
}

@Suite struct ReferenceParityScenarios {
    @Test func S169_slowStorageDoesNotStarveTheSink() async {
        var f = FaultInjectingStorage.Faults()
        f.writesNeverFinish = true
        let h = Harness(World(), faults: f)
        let run = h.start()
        var counts: [Int] = []
        for i in 0..<6 {
            run.enterStep(i % 2 == 0 ? "welcome" : "goal")
            await h.tick(900)
            counts.append(h.sink.bodies.count)
        }
        await h.tick(1000)
        // Each snapshot leaves persistTimeoutMs (1,000 ms) after it was built: seq n at n × 900 + 100.
        #expect(counts == [0, 1, 2, 3, 4, 5])
        #expect(h.sink.seqs == [1, 2, 3, 4, 5, 6])
        #expect(h.sink.bodies.map { $0["sent_at"]!.stringValue! } == (0..<6).map { Timestamp.format(ms: T0 + Int64($0) * 900) })
    }

    @Test func S170_aSupersededSnapshotIsHandedOverWhenItsWriteLands() async {
        let h = Harness(World())
        let run = h.start()
        run.enterStep("welcome")
        run.enterStep("goal")
        await h.tick(0)
        #expect(h.sink.seqs == [1, 2])
        #expect(h.sink.bodies.map { keys($0) } == [["welcome"], ["welcome", "goal"]])
    }

    @Test func S171_aReleasedDisposedTrackerDoesNotHoldItsSuccessor() async {
        for destinationChange in [false, true] {
            let w = World()
            let a = Harness(w)
            let run = a.start()
            run.enterStep("welcome")
            await a.tick(1000)
            await w.nextLaunch()
            // configure(); configure(): the first tracker is disposed and released before its read ran.
            do {
                let storage = FaultInjectingStorage(backing: w.backing, clock: w.clock)
                let sink = HarnessSink(destination: destinationChange ? PRODUCTION : DESTINATION, clock: w.clock)
                let config = OnboardingRunConfiguration(
                    sink: sink, context: .value(CONTEXT), storage: storage, debounceMs: 0, onDiagnostic: { _ in },
                    clock: w.clock, scheduler: w.scheduler, uuid: harnessUUID, registry: w.registry)
                let first = OnboardingRunTracker(configuration: config)
                first.dispose()
            }
            let b = Harness(w, destination: destinationChange ? PRODUCTION : DESTINATION)
            let began = w.clock.nowMs()
            if !destinationChange {
                let r = await resumeT(b)
                #expect(r?.runId == run.runId)
                // Well within the README's 3 s resumeWithin race (it was 5 s: storageReadTimeoutMs).
                #expect(w.clock.nowMs() - began < 1000)
            } else {
                // The discard of the run stored for the other destination is written at once,
                // so a later launch on the original destination has nothing to resume.
                await b.tick(500)
                #expect(b.storedJSON?["current"] == nil || b.storedJSON?["current"] == .null)
                await w.nextLaunch()
                let c = Harness(w)
                #expect(await resumeT(c) == nil)
            }
        }
    }

    @Test func S172_reEnteringTheOpenLastStepOfATruncatedRun() async {
        let h = Harness(World())
        let run = truncatedWithOpenLastEntry(h)
        await h.tick(1000)
        #expect(h.sink.last?["truncated"] == true)
        #expect(steps(h.sink.last).last?["exited_at"] == .null)
        let truncatedBefore = h.count("truncated")
        run.enterStep("experience")
        #expect(h.count("already-on-step") == 1)
        #expect(h.count("truncated") == truncatedBefore)
        await h.tick(1000)
        run.exitStep("experience")
        run.complete()
        await h.tick(0)
        // The later exitStep set the exit time (T0 + 2 s), not the refused re-entry (T0 + 1 s).
        #expect(steps(h.sink.last).last?["exited_at"]?.stringValue == ts("08:00:02.000"))
    }

    @Test func S173_aCompletedRunAfterANewerStart() async {
        let h = Harness(World(), storage: false)
        h.sink.always(.transient)
        let run = h.start()
        run.enterStep("welcome")
        await h.tick(0)
        run.complete()
        await h.tick(0)
        #expect(h.sink.statuses == ["in_progress", "completed"])
        _ = h.start()
        #expect(h.count("run-replaced") == 0)
        run.enterStep("goal")
        run.setProperties(["plan": "a"])
        run.complete()
        #expect(h.count("run-completed") == 3)
        #expect(h.count("run-inactive") == 0)
        // background() still skips the retry backoff of its unsent completion, silently.
        let codes = h.codes.count
        run.background()
        await h.tick(0)
        #expect(h.sink.statuses == ["in_progress", "completed", "completed"])
        #expect(h.codes.count == codes)
    }

    @Test func S174_theSlowReadIsReportedFromEveryBoundedWait() async {
        // idle()
        do {
            var f = FaultInjectingStorage.Faults()
            f.getsNeverAnswer = true
            let w = World()
            let h = Harness(w, faults: f)
            let i = Pending(w) { await h.tracker.idle() }
            await w.advance(4999)
            #expect(!i.isDone && h.count("storage") == 0)
            await w.advance(1)
            #expect(i.isDone)
            #expect(h.diags("storage").count == 1)
            #expect(h.diags("storage").first?.message.contains("5000 ms") == true)
            // Once per tracker: resume() and a second idle() do not report it again.
            _ = Pending(w) { _ = await h.tracker.resume() }
            _ = Pending(w) { await h.tracker.idle() }
            await w.advance(10_000)
            #expect(h.count("storage") == 1)
        }
        // A disposed tracker's drain.
        do {
            var f = FaultInjectingStorage.Faults()
            f.getsNeverAnswer = true
            let w = World()
            let h = Harness(w, faults: f)
            await w.settle()
            h.tracker.dispose()
            await w.advance(5000)
            #expect(h.diags("storage").count == 1)
            #expect(h.diags("storage").first?.message.contains("5000 ms") == true)
        }
    }

    @Test func S175_theDebounceWindowOpensAtTheFirstRecordedChange() async {
        let h = Harness(World(), storage: false) { $0.debounceMs = 500 }
        let run = h.start()
        run.setProperties(["plan": "a"])
        await h.tick(300)
        run.enterStep("welcome")
        await h.tick(199)
        #expect(h.sink.bodies.isEmpty)
        await h.tick(1)
        #expect(h.sink.bodies.count == 1)
        #expect(h.sink.last?["properties"]?["plan"] == "a")
        #expect(keys(h.sink.last) == ["welcome"])
        await h.tick(10_000)
        #expect(h.sink.bodies.count == 1)
        // A window that ends with no entry builds nothing; the next change opens a new one.
        let h2 = Harness(World(), storage: false) { $0.debounceMs = 500 }
        let run2 = h2.start()
        run2.setProperties(["plan": "a"])
        await h2.tick(600)
        run2.enterStep("welcome")
        await h2.tick(499)
        #expect(h2.sink.bodies.isEmpty)
        await h2.tick(1)
        #expect(h2.sink.bodies.count == 1)
    }

    @Test func S176_noTruncatedForInvalidAnswersAlone() async {
        let h = Harness(World())
        let run = truncatedWithOpenLastEntry(h)
        await h.tick(0)
        let truncated = h.count("truncated")
        #expect(truncated == 1)
        run.exitStep("experience", answers: [.numeric(questionKey: "n", value: .nan), .text(questionKey: "BAD KEY", value: "x")])
        #expect(h.count("invalid-answer") == 1)  // one per call, with the count
        #expect(h.diags("invalid-answer").first?.message.hasPrefix("2 answers") == true)
        #expect(h.count("truncated") == truncated)
        // A valid answer is still refused with `truncated`.
        run.exitStep("experience", answers: [.numeric(questionKey: "n", value: .nan), .single(questionKey: "s", value: "x")])
        #expect(h.count("truncated") == truncated + 1)
    }

    @Test func S177_disposeGivesTheLastAttemptsInRunCreationOrder() async {
        let h = Harness(World(), storage: false)
        h.sink.always(.transient)
        var ids: [String] = []
        for _ in 0..<8 {
            let r = h.start()
            r.enterStep("welcome")
            ids.append(r.runId)
            await h.tick(0)
        }
        let before = h.sink.bodies.count
        #expect(before == 8)
        h.tracker.dispose()
        await h.tick(0)
        #expect(h.sink.bodies.dropFirst(before).map { $0["run_id"]!.stringValue! } == ids)
    }

    @Test func S178_heldStepsStartInOrderFromTheExecutor() async {
        for _ in 0..<20 {
            let clock = ManualClock(holdsOutsideWork: true)
            let order = Locked<[String]>([])
            clock.spawn {
                order.withLock { $0.append("first") }
                // Work spawned by a running step is never held, and runs after every step
                // released with the first one.
                clock.spawn { order.withLock { $0.append("spawned by first") } }
            }
            for i in 0..<50 { clock.spawn { order.withLock { $0.append("held \(i)") } } }
            await clock.settle()
            #expect(order.value == ["first"] + (0..<50).map { "held \($0)" } + ["spawned by first"])
        }
        // A step that spawns after an await (inside async code on the executor) is not held either.
        let clock = ManualClock(holdsOutsideWork: true)
        let ran = Locked(false)
        clock.spawn {
            await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in clock.schedule(afterMs: 10) { c.resume() } }
            clock.spawn { ran.withLock { $0 = true } }
        }
        await clock.advance(byMs: 10)
        #expect(ran.value)
        // Outside steps wait for the test; inside withOutsideWorkReleased they run.
        let outside = Locked(0)
        clock.spawn { outside.withLock { $0 += 1 } }
        #expect(outside.value == 0)
        await clock.withOutsideWorkReleased {
            await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
                clock.spawn {
                    outside.withLock { $0 += 1 }
                    c.resume()
                }
            }
        }
        await clock.settle()
        #expect(outside.value == 2)
    }

    @Test func S179_theBudgetCountsTheNextSeqsDigits() async {
        // The measure is taken with the next seq (lastSeq + 1): at seq 9, 99 and 999 that one has
        // a digit more than the current one. A change recorded there is measured exactly.
        let h = Harness(World(), storage: false)
        let run = h.start()
        run.enterStep("welcome")
        await h.tick(0)
        for seq in [8, 9, 10, 98, 99, 100, 998, 999, 1000] {
            h.tracker.state.withLock { $0.current!.lastSeq = seq - 1 }
            run.setProperties(["n": .number(Double(seq))])  // builds seq `seq`
            await h.tick(0)
            #expect(h.sink.seqs.last == seq)
            let m = h.tracker.debugMeasure()!
            #expect(m.incremental == m.encoded, "at seq \(seq)")
        }
    }

    // MARK: issue 14 item 5: the seq reservation

    @Test func S180_aFullDiskMidRunNeverLetsAResumedRunReuseASeq() async {
        let w = World()
        let a = Harness(w)
        let run = a.start()
        run.enterStep("welcome")
        await a.tick(1000)
        #expect(a.storedJSON?["current"]?["seqReserved"]?.intValue == 1 + seqReservation)
        a.storage!.update { $0.writesAlwaysFail = true }  // ENOSPC from now on
        run.enterStep("goal")
        await a.tick(1000)
        run.enterStep("experience")
        await a.tick(1000)
        // Sent although not stored: within the reservation the last landed write made.
        #expect(a.sink.seqs == [1, 2, 3])
        #expect(a.count("storage") > 0)
        await w.nextLaunch()
        let b = Harness(w)
        #expect(await resumeT(b)?.runId == run.runId)
        await b.tick(0)
        #expect(b.sink.seqs == [2 + seqReservation])
        noSeqReused([a, b])
    }

    @Test func S181_aReadOnlyDirectoryHoldsWhatItCannotReserve() async {
        let w = World()
        let a = Harness(w)
        let run = a.start()
        run.enterStep("welcome")
        await a.tick(1000)
        await w.nextLaunch()
        var f = FaultInjectingStorage.Faults()
        f.writesAlwaysFail = true  // read-only: reads work
        let b = Harness(w, faults: f)
        let r = await resumeT(b)
        #expect(r?.runId == run.runId)
        r?.enterStep("goal")
        await b.tick(1000)
        // Seq 18 and 19 are past the stored reservation (17): held, not sent.
        #expect(b.sink.bodies.isEmpty)
        #expect(b.diags("storage").filter { $0.message.contains("held") }.count == 1)
        // A run started now has nothing stored that could resume it: it is sent.
        let fresh = b.start()
        fresh.enterStep("welcome")
        await b.tick(1000)
        #expect(b.sink.bodies.map { $0["run_id"]!.stringValue! } == [fresh.runId])
        await w.nextLaunch()
        let c = Harness(w)
        #expect(await resumeT(c)?.runId == run.runId)
        await c.tick(0)
        #expect(c.sink.seqs == [2 + seqReservation])
        noSeqReused([a, b, c])
    }

    @Test func S182_heldSnapshotsGoOutOnceStorageTakesAWriteAgain() async {
        let w = World()
        let a = Harness(w)
        let run = a.start()
        run.enterStep("welcome")
        await a.tick(1000)
        await w.nextLaunch()
        let b = Harness(w)
        b.storage!.update { $0.writesAlwaysFail = true }
        let r = await resumeT(b)
        await b.tick(1000)
        #expect(b.sink.bodies.isEmpty)
        b.storage!.update { $0.writesAlwaysFail = false }  // space returns
        r?.enterStep("goal")
        await b.tick(1000)
        #expect(b.sink.seqs == [2 + seqReservation, 3 + seqReservation])
        #expect(b.storedJSON?["current"]?["lastSeq"]?.intValue == 3 + seqReservation)
        noSeqReused([a, b])
    }

    @Test func S183_theReservationRunsOutWithinASession() async {
        let w = World()
        let a = Harness(w)
        let run = a.start()
        run.enterStep("welcome")
        await a.tick(1000)
        a.storage!.update { $0.writesAlwaysFail = true }
        for i in 0..<20 {
            run.enterStep(i % 2 == 0 ? "goal" : "welcome")
            await a.tick(1000)
        }
        // Seqs 2...17 are within the reservation; 18...21 are held.
        #expect(a.sink.seqs == Array(1...(1 + seqReservation)))
        #expect(a.diags("storage").filter { $0.message.contains("held") }.count == 1)
        a.storage!.update { $0.writesAlwaysFail = false }
        run.enterStep("experience")
        await a.tick(1000)
        #expect(a.sink.seqs == Array(1...(1 + seqReservation)) + [21, 22])
        await w.nextLaunch()
        let b = Harness(w)
        _ = await resumeT(b)
        await b.tick(0)
        #expect(b.sink.seqs == [22 + seqReservation + 1])
        noSeqReused([a, b])
    }

    @Test func S184_aSnapshotHeldForStorageStaysHeldInTheSuccessor() async {
        let w = World()
        let first = Harness(w)
        let run = first.start()
        run.enterStep("welcome")
        await first.tick(1000)
        await w.nextLaunch()
        var f = FaultInjectingStorage.Faults()
        f.writesAlwaysFail = true
        let a = Harness(w, faults: f)
        #expect(await resumeT(a)?.runId == run.runId)
        await a.tick(1000)
        #expect(a.sink.bodies.isEmpty)  // seq 18 held: past the stored reservation (17)
        a.tracker.dispose()
        let b = Harness(w, faults: f)  // same process: takes the hand-over
        await b.tick(15_000)
        #expect(b.sink.bodies.isEmpty)
        b.storage!.update { $0.writesAlwaysFail = false }  // space returns
        #expect(await resumeT(b)?.runId == run.runId)
        await b.tick(1000)
        #expect(b.sink.seqs.last == 3 + seqReservation)
        await w.nextLaunch()
        let c = Harness(w)
        #expect(await resumeT(c)?.runId == run.runId)
        await c.tick(0)
        #expect(c.sink.seqs.last! > b.sink.seqs.last!)
        noSeqReused([first, a, b, c])
    }

    // MARK: Issue 29

    /// `configure(A)`, a run whose completion's last attempt answers transient late, then
    /// `configure(B)` and at once `configure(C)`: B is disposed and released while A's last
    /// attempt is still unanswered (it never took over). B still passes on what A left (spec 7.3
    /// S6), and C sends the completion exactly once. Also with A released (no run handle kept)
    /// and with storage.
    @Test func S196_aReleasedMiddleTrackerStillPassesOnTheUnsentCompletion() async {
        for withStorage in [false, true] {
            for keepRunHandle in [true, false] {
                let w = World()
                let sink = HarnessSink(destination: DESTINATION, clock: w.clock)
                // The first completion attempt answers transient after 5 s; everything else is accepted.
                let firstCompletion = Locked(true)
                sink.answer { p, _ in
                    guard p.isCompleted else { return .result(.accepted) }
                    let first = firstCompletion.withLock { f -> Bool in
                        defer { f = false }
                        return f
                    }
                    return first ? .after(5000, .transient) : .result(.accepted)
                }
                let log = DiagnosticLog()
                let storage: (any KeyValueStorage)? = withStorage ? InMemoryKeyValueStorage() : nil
                let config = OnboardingRunConfiguration(
                    sink: sink, context: .value(CONTEXT), storage: storage, debounceMs: 0, onDiagnostic: log.handler,
                    clock: w.clock, scheduler: w.scheduler, uuid: harnessUUID, registry: w.registry)
                var a: OnboardingRunTracker? = OnboardingRunTracker(configuration: config)
                var run: OnboardingRun? = a!.start(OPTIONS)
                let runId = run!.runId
                run!.enterStep("welcome")
                await w.advance(1000)
                run!.complete()
                await w.advance(1000)  // the completion's attempt is in flight
                if !keepRunHandle { run = nil }
                // configure(B): A is disposed and released, as the facade does.
                a!.dispose()
                a = nil
                var b: OnboardingRunTracker? = OnboardingRunTracker(configuration: config)
                // configure(C) at once: B is disposed and released before A's last attempt is answered.
                b!.dispose()
                b = nil
                let c = OnboardingRunTracker(configuration: config)
                await w.advance(60_000)
                let label = "storage \(withStorage) handle \(keepRunHandle)"
                let completions = sink.payloads.filter { $0.runId == runId && $0.isCompleted }
                #expect(completions.count == 2, "A's transient attempt, then C's: \(completions.map(\.seq)) \(label)")
                #expect(Set(completions.map(\.bytes)).count == 1, "\(label)")
                #expect(log.all.isEmpty, "\(log.codes) \(label)")
                c.dispose()
                _ = run
            }
        }
    }

    /// Writes that never complete: each snapshot waits `persistTimeoutMs` for its write, then goes
    /// out, as in the reference. Before, every snapshot past the reservation of the hung write
    /// (seq 17) was held for good, the completion included.
    @Test func S197_writesThatNeverCompleteHoldNoSnapshot() async {
        var f = FaultInjectingStorage.Faults()
        f.writesNeverFinish = true
        let h = Harness(World(), faults: f)
        let run = h.start()
        for i in 0..<24 {
            run.enterStep(i % 2 == 0 ? "welcome" : "goal")
            await h.tick(999)
            #expect(h.sink.seqs.count == i, "seq \(i + 1) went out before persistTimeoutMs")
            await h.tick(1)
            #expect(h.sink.seqs == Array(1...(i + 1)), "seq \(i + 1) is not out within persistTimeoutMs")
        }
        run.complete()
        await h.tick(1000)
        #expect(h.sink.seqs == Array(1...25))
        #expect(h.sink.last?["status"] == "completed")
        #expect(!h.log.all.contains { $0.message.contains("held") }, "\(h.codes)")
    }

    /// `configure(A)`, a run whose completion's first attempt answers transient late, then
    /// `configure(B)` and at once `configure(C)`, as in S196: A and B are disposed and released by
    /// the app. Each keeps itself alive only until what it leaves is passed on (and, with storage,
    /// its drain is done): past every bound, neither is still alive. Before, a disposed tracker
    /// without storage (no drain) was never let go: each `configure()` leaked one.
    @Test func S209_aDisposedTrackerIsReleasedOnceItsLeftoverIsPassedOn() async {
        for withStorage in [false, true] {
            let w = World()
            let sink = HarnessSink(destination: DESTINATION, clock: w.clock)
            let firstCompletion = Locked(true)
            sink.answer { p, _ in
                guard p.isCompleted else { return .result(.accepted) }
                let first = firstCompletion.withLock { f -> Bool in
                    defer { f = false }
                    return f
                }
                return first ? .after(5000, .transient) : .result(.accepted)
            }
            let log = DiagnosticLog()
            let storage: (any KeyValueStorage)? = withStorage ? InMemoryKeyValueStorage() : nil
            let config = OnboardingRunConfiguration(
                sink: sink, context: .value(CONTEXT), storage: storage, debounceMs: 0, onDiagnostic: log.handler,
                clock: w.clock, scheduler: w.scheduler, uuid: harnessUUID, registry: w.registry)
            weak var weakA: OnboardingRunTracker?
            weak var weakB: OnboardingRunTracker?
            var a: OnboardingRunTracker? = OnboardingRunTracker(configuration: config)
            weakA = a
            var run: OnboardingRun? = a!.start(OPTIONS)
            let runId = run!.runId
            run!.enterStep("welcome")
            await w.advance(1000)
            run!.complete()
            await w.advance(1000)  // the completion's attempt is in flight
            run = nil
            a!.dispose()
            a = nil
            var b: OnboardingRunTracker? = OnboardingRunTracker(configuration: config)
            weakB = b
            b!.dispose()
            b = nil
            let c = OnboardingRunTracker(configuration: config)
            // Past the late answer, the backoff, every read bound and C's send of the completion.
            await w.advance(60_000)
            let label = "storage \(withStorage)"
            #expect(sink.payloads.filter { $0.runId == runId && $0.isCompleted }.count == 2, "\(label)")
            #expect(weakA == nil, "the first disposed tracker is still alive: \(label)")
            #expect(weakB == nil, "the released middle tracker is still alive: \(label)")
            #expect(log.all.isEmpty, "\(log.codes) \(label)")
            c.dispose()
        }
    }

    /// A first tracker, disposed and released at once (`configure(); configure()`), whose read
    /// takes 3 s, as does its successor's: the successor reads only after the predecessor's read
    /// (its drain, bounded by `storageReadTimeoutMs`), as in the reference, so its `resume()`
    /// returns at 6 s and the read slower than 5 s is reported. Before, the released tracker
    /// skipped its read: `resume()` returned at 3 s and nothing was reported.
    @Test func S198_aSlowReadBehindAReleasedPredecessor() async {
        let w = World()
        let a = Harness(w)
        let run = a.start()
        run.enterStep("welcome")
        await a.tick(1000)
        await a.idle()
        await w.nextLaunch()
        var f = FaultInjectingStorage.Faults()
        f.getDelayMs = 3000
        do {
            let config = OnboardingRunConfiguration(
                sink: HarnessSink(destination: DESTINATION, clock: w.clock), context: .value(CONTEXT),
                storage: FaultInjectingStorage(backing: w.backing, clock: w.clock, faults: f), debounceMs: 0,
                onDiagnostic: { _ in }, clock: w.clock, scheduler: w.scheduler, uuid: harnessUUID, registry: w.registry)
            let first = OnboardingRunTracker(configuration: config)
            first.dispose()
        }
        let b = Harness(w, faults: f)
        let began = w.clock.nowMs()
        let r = await resumeT(b)
        #expect(r?.runId == run.runId)
        let took = w.clock.nowMs() - began
        #expect(took >= 6000 && took < 6200, "resume() took \(took) ms")
        #expect(b.diags("storage").count == 1)
        #expect(b.diags("storage").first?.message.contains("5000 ms") == true)
    }
}
