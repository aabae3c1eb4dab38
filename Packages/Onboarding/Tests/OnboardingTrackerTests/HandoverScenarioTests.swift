import Foundation
import Testing
import TrackerCore
import TrackerCoreTestKit

@testable import OnboardingTracker

// Further scenarios of onboarding-tracker.md §12: storage (G), resume (H), reconfigure and
// hand-over (I), destinations (J), limits (K) and known limits (N).

/// Every body `sinks` received for `runId`.
func bodies(of runId: String, in harnesses: [Harness]) -> [JSONValue] {
    harnesses.flatMap { $0.sink.bodies.filter { $0["run_id"]?.stringValue == runId } }
}

/// No `(run_id, seq)` pair was sent with two different bodies.
func noSeqReused(_ harnesses: [Harness], sourceLocation: SourceLocation = #_sourceLocation) {
    var seen: [String: [UInt8]] = [:]
    for p in harnesses.flatMap({ $0.sink.payloads }) {
        let k = "\(p.runId)#\(p.seq)"
        if let b = seen[k] { #expect(b == p.bytes, "seq \(p.seq) of \(p.runId) sent with two bodies", sourceLocation: sourceLocation) }
        seen[k] = p.bytes
    }
}

/// Starts `tracker.idle()` (or any call) on the clock and reports when it returned.
final class Pending: @unchecked Sendable {
    private let done = Locked(false)
    var isDone: Bool { done.value }
    init(_ w: World, _ work: @escaping @Sendable () async -> Void) {
        let done = self.done
        w.clock.spawnAsCaller {
            await work()
            done.withLock { $0 = true }
        }
    }
}

@Suite struct HandoverScenarios {
    // MARK: G. Storage

    @Test func S75_theSeqIsStoredBeforeTheBodyLeaves() async {
        let w = World()
        let a = Harness(w)
        let run = a.start()
        run.enterStep("welcome")
        await a.tick(10_000)
        a.storage!.update { $0.holdWrites = true }
        run.enterStep("goal")
        await a.tick(100)
        await w.nextLaunch()
        let b = Harness(w)
        #expect(await resumeT(b)?.runId == run.runId)
        await b.tick(0)
        #expect(a.sink.seqs == [1])
        #expect(b.sink.seqs == [2 + seqReservation])  // past the stored reservation (issue 14 item 5)
        noSeqReused([a, b])
    }

    @Test func S76_storedButNotYetSentIsNotLost() async {
        let w = World()
        let a = Harness(w)
        let run = a.start()
        run.enterStep("welcome")
        await a.tick(10_000)
        // Arm the kill: A dies the moment its next write lands.
        a.storage!.onWriteLanded.withLock { $0 = { [a] _, _ in a.kill() } }
        run.enterStep("goal")
        await a.tick(1000)
        #expect(a.sink.seqs == [1])
        await w.nextLaunch()
        let b = Harness(w)
        b.start()
        await b.tick(0)
        let old = bodies(of: run.runId, in: [b])
        #expect(old.count == 1)
        #expect(keys(old.first) == ["welcome", "goal"])
        noSeqReused([a, b])
    }

    @Test func S90_badStoredValuesAreStorageProblemsNotDestinationChanges() async {
        for text in ["[1,2]", #"{"format":1,"current":"nope","outboxes":{}}"#] {
            let w = World()
            try? await w.backing.setItem(KEY, text)
            let h = Harness(w, destination: PRODUCTION)
            await h.tick(0)
            #expect(h.codes.contains("storage"), "\(text)")
            #expect(!h.codes.contains("destination-changed"), "\(text)")
        }
    }

    @Test func S89_aRunStartedBeforeTheReadAbandonsTheStoredOne() async {
        let w = World()
        let a = Harness(w) { $0.debounceMs = 5000 }
        let old = a.start()
        old.enterStep("welcome")
        old.background()
        await a.tick(1000)
        old.enterStep("goal")
        await a.idle()
        await w.nextLaunch()
        let b = Harness(w)
        let fresh = b.start()
        fresh.enterStep("welcome")
        fresh.complete()
        await b.idle()
        #expect(await resumeT(b) == nil)
        await b.tick(0)
        let sent = bodies(of: old.runId, in: [b])
        #expect(sent.count == 1)
        #expect(keys(sent.first) == ["welcome", "goal"])
        await b.idle()
        #expect(b.storedJSON == nil || b.storedJSON?["current"] == .null)
    }

    // MARK: H. resume()

    /// 501 (or `count`) alternating entries, `experience` first, one second apart.
    func alternate(_ h: Harness, _ run: OnboardingRun, count: Int) async {
        for i in 0..<count {
            run.enterStep(i % 2 == 0 ? "experience" : "goal")
            await h.tick(1000)
        }
    }

    @Test func S95_aTruncatedRunResumesWithoutANewEntry() async {
        let w = World()
        let a = Harness(w)
        let run = a.start()
        await alternate(a, run, count: 501)
        let L = a.sink.last!
        #expect(L["truncated"] == true)
        await a.idle()
        await w.relaunch(atSeconds: 3600)
        let b = Harness(w)
        let r = await resumeT(b)
        await b.tick(0)
        let n = b.sink.last!
        #expect(n["steps"] == L["steps"] && n["truncated"] == true)
        #expect(n["seq"]!.intValue! == L["seq"]!.intValue! + 1 + seqReservation)  // past the stored reservation (issue 14 item 5)
        r?.complete()
        await b.tick(0)
        let c = b.sink.last!
        #expect(c["status"] == "completed")
        #expect(steps(c)[499]["exited_at"] == steps(L)[499]["exited_at"])
        #expect(MockCollector.ingest(c, size: WireJSON.encode(c).count, stored: n) == "accepted")
        #expect(MockCollector.ingest(n, size: WireJSON.encode(n).count, stored: L) == "accepted")
    }

    @Test func S96_restoredAtExactly500Entries() async {
        let w = World()
        let a = Harness(w)
        let run = a.start()
        await alternate(a, run, count: 500)
        #expect(a.sink.last?["truncated"] == nil)
        await a.idle()
        await w.relaunch(atSeconds: 3600)
        let b = Harness(w)
        _ = await resumeT(b)
        await b.tick(0)
        let n = b.sink.last!
        #expect(steps(n).count == 500 && n["truncated"] == true)
        #expect(steps(n)[499]["exited_at"] == .string(ts("08:08:19.000")))
    }

    @Test func S105_currentStepKeyOfAResumedTruncatedRun() async {
        let w = World()
        let a = Harness(w)
        let run = a.start()
        await alternate(a, run, count: 501)
        run.enterStep("summary")
        await a.tick(1000)
        let L = a.sink.last!
        #expect(L["truncated"] == true)
        await a.idle()
        await w.nextLaunch()
        let b = Harness(w)
        let r = await resumeT(b)
        await b.tick(0)
        #expect(r?.currentStepKey == "goal")
        #expect(r?.currentStepKey == keys(L).last)
        #expect(steps(b.sink.last).count == steps(L).count)
    }

    // MARK: I. Reconfigure and hand-over

    @Test func S115_aHangingWriteDoesNotHangTheSuccessor() async {
        let w = World()
        try? await w.backing.setItem("test:hanging-configure", #"{"format":1,"current":null,"outboxes":{}}"#)
        let storage = FaultInjectingStorage(backing: w.backing, clock: w.clock)
        let sink = HarnessSink(destination: nil, clock: w.clock)
        let diags = DiagnosticLog()
        let config = OnboardingRunConfiguration(
            sink: sink, context: .value(CONTEXT), storage: storage, storageKey: "test:hanging-configure", debounceMs: 0,
            persistTimeoutMs: 1000, storageReadTimeoutMs: 1000, onDiagnostic: diags.handler,
            clock: w.clock, scheduler: w.scheduler, uuid: harnessUUID, registry: w.registry)
        storage.update { $0.holdWrites = true }
        let a = OnboardingRunTracker(configuration: config)
        let run = a.start(OPTIONS)
        run.enterStep("welcome")
        run.complete()
        await w.advance(1000)
        a.dispose()
        let b = OnboardingRunTracker(configuration: config)
        // Clear the flag: new writes go through; the ones already hanging never finish.
        storage.update { $0.holdWrites = false }
        let resumed = Locked<OnboardingRun??>(nil)
        let r = Pending(w) {
            let x = await b.resume()
            resumed.withLock { $0 = .some(x) }
        }
        let i = Pending(w) { await b.idle() }
        await w.advance(1000)
        #expect(r.isDone && resumed.value! == nil)
        #expect(i.isDone)
        #expect(diags.codes.contains("storage"))
        #expect(sink.statuses.contains("completed"))
        b.dispose()
    }

    @Test func S116_reconfigureWithFreshAdapterObjectsOverOneStore() async {
        for delay: Int64 in [0, 50] {
            for firstAccepts in [true, false] {
                let w = World()
                var f = FaultInjectingStorage.Faults()
                f.writeDelayMs = delay
                f.getDelayMs = delay
                let dest = "https://collector.example.com"
                let a = Harness(w, faults: f, destination: dest)
                a.sink.always(firstAccepts ? .accepted : .transient)
                let run = a.start()
                run.enterStep("welcome")
                await a.tick(1000)
                run.complete()
                a.tracker.dispose()
                let b = Harness(w, faults: f, destination: dest)
                let r = Pending(w) { #expect(await b.tracker.resume() == nil) }
                await b.tick(10_000)
                #expect(r.isDone)
                await b.tick(60_000)
                let all = bodies(of: run.runId, in: [a, b])
                #expect(!all.contains { $0["status"] == "in_progress" && $0["seq"]!.intValue! >= 2 })
                let completedB = b.sink.statuses.filter { $0 == "completed" }.count
                #expect(completedB == (firstAccepts ? 0 : 1), "delay \(delay) accepts \(firstAccepts)")
                if firstAccepts { #expect(a.sink.statuses.filter { $0 == "completed" }.count == 1) }
            }
        }
    }

    /// A: start old; `welcome`; tick(1000); idle(); slow writes; complete(); dispose().
    func completedAndDisposed(_ w: World, delay: Int64, lastAttempt: SinkResult) async -> (Harness, String) {
        let a = Harness(w) { $0.storageReadTimeoutMs = 1000 }
        a.sink.answer { p, _ in .result(p.isCompleted ? lastAttempt : .accepted) }
        let old = a.start()
        old.enterStep("welcome")
        await a.tick(1000)
        await a.idle()
        if delay > 0 { a.slowWrites(delay) }
        old.complete()
        a.tracker.dispose()
        return (a, old.runId)
    }

    func completions(of runId: String, _ a: Harness, acceptedByA: Bool, _ others: [Harness]) -> Int {
        (acceptedByA ? bodies(of: runId, in: [a]).filter { $0["status"] == "completed" }.count : 0)
            + bodies(of: runId, in: others).filter { $0["status"] == "completed" }.count
    }

    @Test func S118_aLateWriteOfTheOldTrackerCannotHideTheNewRun() async {
        for delay: Int64 in [500, 30_000] {
            let w = World()
            _ = await completedAndDisposed(w, delay: delay, lastAttempt: .accepted)
            let b = Harness(w) { $0.storageReadTimeoutMs = 1000 }
            let fresh = b.start()
            fresh.enterStep("welcome")
            await b.tick(5000)
            await b.tick(30_000)
            await w.nextLaunch()
            #expect(b.storedJSON?["current"]?["runId"]?.stringValue == fresh.runId, "delay \(delay)")
            let n = Harness(w)
            #expect(await resumeT(n)?.runId == fresh.runId, "delay \(delay)")
        }
    }

    @Test func S119_theOldCompletionIsDeliveredExactlyOnce() async {
        for delay: Int64 in [0, 30_000] {
            for accepted in [true, false] {
                for writesAgain in [true, false] {
                    let w = World()
                    let (a, old) = await completedAndDisposed(w, delay: delay, lastAttempt: accepted ? .accepted : .transient)
                    let b = Harness(w) { $0.storageReadTimeoutMs = 1000 }
                    let fresh = b.start()
                    fresh.enterStep("welcome")
                    await b.tick(5000)
                    await b.tick(30_000)
                    if writesAgain {
                        fresh.enterStep("goal")
                        await b.tick(1000)
                        await b.idle()
                    }
                    await w.nextLaunch()
                    let n = Harness(w)
                    await n.tick(60_000)
                    let label = "delay \(delay) accepted \(accepted) writesAgain \(writesAgain)"
                    #expect(completions(of: old, a, acceptedByA: accepted, [b, n]) == 1, "\(label)")
                    #expect(bodies(of: old, in: [b]).contains { $0["status"] == "completed" } == !accepted, "\(label)")
                }
            }
        }
    }

    /// S120 and S126: A completes (seq 2) with writes 30 s late; `idles` trackers are created and
    /// disposed in between; the last one resumes nothing; neither it nor the next launch sends an
    /// in-progress body of the old run; exactly one completed delivery in total.
    func completedRunIsNotResumed(idles: Int) async {
        for accepted in [true, false] {
            let w = World()
            let (a, old) = await completedAndDisposed(w, delay: 30_000, lastAttempt: accepted ? .accepted : .transient)
            var others: [Harness] = []
            for _ in 0..<idles {
                let i = Harness(w) { $0.storageReadTimeoutMs = 1000 }
                i.tracker.dispose()
                others.append(i)
            }
            let b = Harness(w) { $0.storageReadTimeoutMs = 1000 }
            others.append(b)
            #expect(await resumeT(b) == nil)
            await b.tick(60_000)
            await b.idle()
            await w.nextLaunch()
            let n = Harness(w)
            others.append(n)
            #expect(await resumeT(n) == nil)
            await n.tick(60_000)
            let label = "idles \(idles) accepted \(accepted)"
            #expect(!bodies(of: old, in: others).contains { $0["status"] == "in_progress" }, "\(label)")
            #expect(completions(of: old, a, acceptedByA: accepted, others) == 1, "\(label)")
        }
    }

    @Test func S120_aRunTheOldTrackerCompletedIsNotResumed() async { await completedRunIsNotResumed(idles: 0) }

    @Test func S126_throughIdleTrackersACompletedRun() async {
        await completedRunIsNotResumed(idles: 1)
        await completedRunIsNotResumed(idles: 2)
    }

    @Test func S123_killedWhileTheOldLastAttemptIsUnanswered() async {
        for delay: Int64 in [0, 5000] {
            for startsRun in [true, false] {
                let w = World()
                let a = Harness(w) { $0.storageReadTimeoutMs = 1000 }
                a.sink.answer { p, _ in p.isCompleted ? .after(20_000, .accepted) : .result(.accepted) }
                let old = a.start()
                old.enterStep("welcome")
                await a.tick(1000)
                await a.idle()
                if delay > 0 { a.slowWrites(delay) }
                old.complete()
                a.tracker.dispose()
                let b = Harness(w) { $0.storageReadTimeoutMs = 1000 }
                var fresh: OnboardingRun?
                if startsRun {
                    fresh = b.start()
                    fresh?.enterStep("welcome")
                }
                await b.tick(6000)
                await w.nextLaunch()  // kills A and B
                let n = Harness(w)
                let label = "delay \(delay) startsRun \(startsRun)"
                #expect(await resumeT(n)?.runId == fresh?.runId, "\(label)")
                await n.tick(60_000)
                #expect(bodies(of: old.runId, in: [n]).filter { $0["status"] == "completed" }.count == 1, "\(label)")
            }
        }
    }

    @Test func S124_anIdleTrackerPassesOnLateWrites() async {
        let w = World()
        let a = Harness(w)
        let run = a.start()
        run.enterStep("welcome")
        await a.tick(1000)
        await a.idle()
        a.slowWrites(30_000)
        run.enterStep("goal")
        await a.tick(2000)
        a.tracker.dispose()
        let b = Harness(w)
        b.tracker.dispose()
        await b.tick(5000)
        let c = Harness(w)
        #expect(await resumeT(c)?.runId == run.runId)
        await c.tick(60_000)
        await c.idle()
        await w.nextLaunch()
        let n = Harness(w)
        #expect(await resumeT(n)?.runId == run.runId)
        await n.tick(0)
        #expect(keys(n.sink.last) == ["welcome", "goal", "goal", "goal"])
    }

    @Test func S125_throughOneOrTwoIdleTrackersARunInProgress() async {
        for withStorage in [false, true] {
            for idles in [1, 2] {
                let w = World()
                let a = Harness(w, storage: withStorage)
                let run = a.start()
                run.enterStep("welcome")
                await a.tick(1000)
                await a.idle()
                a.slowWrites(30_000)
                run.enterStep("goal")
                await a.tick(2000)
                #expect(a.sink.seqs.last == 2)
                a.tracker.dispose()
                for _ in 0..<idles { Harness(w, storage: withStorage).tracker.dispose() }
                let b = Harness(w, storage: withStorage)
                let label = "storage \(withStorage) idles \(idles)"
                #expect(await resumeT(b)?.runId == run.runId, "\(label)")
                await b.tick(5000)
                #expect(b.sink.seqs == [3], "\(label)")
                #expect(keys(b.sink.last) == ["welcome", "goal", "goal"], "\(label)")
                if withStorage {
                    await b.tick(60_000)
                    await b.idle()
                    await w.nextLaunch()
                    let n = Harness(w)
                    #expect(await resumeT(n)?.runId == run.runId, "\(label)")
                    await n.tick(0)
                    // Past the stored reservation (issue 14 item 5).
                    #expect(n.sink.last?["seq"]?.intValue == 4 + seqReservation, "\(label)")
                }
            }
        }
    }

    // MARK: J. Destinations

    /// Leftovers(w, dest) of §12 J: run D completed (its completion unsent), run O in progress
    /// with a change whose write is `w` ms late.
    func leftovers(_ world: World, writeDelay: Int64, destination: String? = STAGING) async -> (Harness, d: String, o: String) {
        let a = Harness(world, destination: destination) { $0.storageReadTimeoutMs = 1000 }
        a.sink.answer { p, _ in .result(p.isCompleted ? .transient : .accepted) }
        let d = a.start()
        d.enterStep("welcome")
        d.complete()
        await a.tick(1000)
        let o = a.start()
        o.enterStep("welcome")
        await a.tick(1000)
        await a.idle()
        if writeDelay > 0 { a.slowWrites(writeDelay) }
        o.enterStep("goal")
        await a.tick(0)
        return (a, d.runId, o.runId)
    }

    @Test func S131_switchingToAnotherDestinationHandsNothingOver() async {
        for delay: Int64 in [0, 30_000] {
            let w = World()
            let (a, d, o) = await leftovers(w, writeDelay: delay)
            a.tracker.dispose()
            let b = Harness(w, destination: PRODUCTION) { $0.storageReadTimeoutMs = 1000 }
            #expect(await resumeT(b) == nil)
            await b.tick(60_000)
            #expect(bodies(of: d, in: [b]).isEmpty && bodies(of: o, in: [b]).isEmpty, "delay \(delay)")
            #expect(b.count("destination-changed") == 1, "delay \(delay)")
            await b.idle()
            #expect(!(b.stored ?? "").contains(d) && !(b.stored ?? "").contains(o), "delay \(delay)")
            await w.nextLaunch()
            let n = Harness(w, destination: PRODUCTION)
            #expect(await resumeT(n) == nil)
            await n.tick(60_000)
            #expect(bodies(of: d, in: [n]).isEmpty && bodies(of: o, in: [n]).isEmpty, "delay \(delay)")
        }
    }

    @Test func S132_aNewRunOnTheNewDestination() async {
        let w = World()
        let (a, _, _) = await leftovers(w, writeDelay: 30_000)
        a.tracker.dispose()
        let b = Harness(w, destination: PRODUCTION) { $0.storageReadTimeoutMs = 1000 }
        let fresh = b.start()
        fresh.enterStep("welcome")
        await b.tick(60_000)
        #expect(Set(b.sink.bodies.map { $0["run_id"]!.stringValue! }) == [fresh.runId])
        await b.idle()
        await w.nextLaunch()
        let n = Harness(w, destination: PRODUCTION)
        #expect(await resumeT(n)?.runId == fresh.runId)
    }

    @Test func S134_throughAnIdleTracker() async {
        let w = World()
        let (a, d, o) = await leftovers(w, writeDelay: 30_000)
        a.tracker.dispose()
        Harness(w, destination: PRODUCTION) { $0.storageReadTimeoutMs = 1000 }.tracker.dispose()
        let c = Harness(w, destination: PRODUCTION) { $0.storageReadTimeoutMs = 1000 }
        #expect(await resumeT(c) == nil)
        await c.tick(60_000)
        #expect(bodies(of: d, in: [c]).isEmpty && bodies(of: o, in: [c]).isEmpty)
        await c.idle()
        await w.nextLaunch()
        let n = Harness(w, destination: PRODUCTION)
        await n.tick(60_000)
        #expect(bodies(of: d, in: [n]).isEmpty && bodies(of: o, in: [n]).isEmpty)
    }

    @Test func S135_sinksWithoutDestinationAreDifferentUnlessIdentical() async {
        let w = World()
        let (a, d, o) = await leftovers(w, writeDelay: 0, destination: nil)
        a.tracker.dispose()
        let b = Harness(w, destination: nil)
        await b.tick(60_000)
        #expect(bodies(of: d, in: [b]).isEmpty && bodies(of: o, in: [b]).isEmpty)
        #expect(b.codes.contains("destination-changed"))
    }

    @Test func S142_onlyStoredStateLeft() async {
        let w = World()
        let earlier = Harness(w, destination: STAGING)
        earlier.sink.always(.transient)
        let run = earlier.start()
        run.enterStep("welcome")
        run.complete()
        await earlier.tick(1000)
        await earlier.idle()
        await w.nextLaunch()
        let a = Harness(w, destination: STAGING)
        a.tracker.dispose()
        let b = Harness(w, destination: PRODUCTION)
        #expect(b.count("destination-changed") == 0)
        await b.tick(60_000)
        #expect(b.count("destination-changed") == 1)
        #expect(bodies(of: run.runId, in: [a, b]).isEmpty)
    }

    // MARK: K. Limits

    /// Records text answers (at most 45 per entry, alternating `goal`/`experience` entries) until
    /// the completion form is `target` bytes minus one last answer; returns that last answer's
    /// question key and the value length that lands exactly on `target`.
    func fill(_ h: Harness, _ run: OnboardingRun, to target: Int) -> (key: String, length: Int) {
        var step = "goal"
        var perEntry = 0
        var i = 0
        run.enterStep(step)
        func overhead(_ q: String) -> Int {
            WireJSON.encode(["question_key": .string(q), "kind": "text", "value": ""]).count + (perEntry > 0 ? 1 : 0)
        }
        while true {
            if perEntry == 45 {
                step = step == "goal" ? "experience" : "goal"
                run.enterStep(step)
                perEntry = 0
            }
            let q = "q\(i)"
            let room = target - h.tracker.debugMeasure()!.incremental
            let o = overhead(q)
            if room - o <= 1000 { return (q, room - o) }
            // Leave room for one more answer (another question key and its comma).
            let length = min(1000, room - o - overhead("q\(i + 1)") - 1)
            run.exitStep(step, answers: [.text(questionKey: q, value: String(repeating: "x", count: length))])
            perEntry += 1
            i += 1
        }
    }

    @Test func S146_theBudgetIsExactly261120Bytes() async {
        for extra in [0, 1] {
            let h = Harness(World(), storage: false) { $0.debounceMs = 600_000 }
            let run = h.start()
            let (q, length) = fill(h, run, to: recordingBudget)
            #expect(length >= 0)
            let step = h.tracker.debugCurrentKey()!
            run.exitStep(step, answers: [.text(questionKey: q, value: String(repeating: "x", count: length + extra))])
            run.complete()
            await h.tick(0)
            let c = h.sink.payloads.last!
            let padded = steps(c.json).last!["answers"]!.arrayValue!.contains { $0["question_key"]?.stringValue == q }
            if extra == 0 {
                #expect(padded && c.json["truncated"] == nil)
                #expect(c.bytes.count == recordingBudget)  // the completion form, measured with the next seq
                #expect(!h.codes.contains("truncated"))
            } else {
                #expect(!padded && c.json["truncated"] == true)
                #expect(h.codes.contains("truncated"))
            }
        }
    }

    @Test func S148_seqGainingDigitsStaysWithin256KiB() async {
        let h = Harness(World(), storage: false) { $0.debounceMs = 600_000 }
        let run = h.start()
        run.enterStep("welcome")
        for _ in 0..<950 {
            run.background()
            await h.tick(0)
        }
        #expect(h.sink.seqs.last == 950)
        let (q, length) = fill(h, run, to: recordingBudget)
        let step = h.tracker.debugCurrentKey()!
        run.exitStep(step, answers: [.text(questionKey: q, value: String(repeating: "x", count: length))])
        #expect(h.tracker.debugMeasure()!.incremental == recordingBudget)  // with the 3-digit seq 951
        while (h.sink.seqs.last ?? 0) < 1001 {
            run.background()
            await h.tick(0)
        }
        run.exitStep(step, answers: [.text(questionKey: "one_more", value: "x")])
        run.complete()
        await h.tick(0)
        let c = h.sink.payloads.last!
        #expect(c.seq >= 1002 && c.isCompleted && c.json["truncated"] == true)
        #expect(h.sink.payloads.allSatisfy { $0.bytes.count <= 262_144 })
        for p in h.sink.payloads.suffix(5) { #expect(Conformance.problems(p).isEmpty) }
    }

    // MARK: N. Further README statements

    @Test func S161_idleIsBoundedByAboutTwiceStorageReadTimeout() async {
        // (a) The read never answers: idle() resolves at 1,000 ms; resume() is still pending.
        do {
            var f = FaultInjectingStorage.Faults()
            f.getsNeverAnswer = true
            let h = Harness(World(), faults: f) { $0.storageReadTimeoutMs = 1000 }
            let t = h.tracker
            let r = Pending(h.world) { _ = await t.resume() }
            let i = Pending(h.world) { await t.idle() }
            await h.tick(999)
            #expect(!i.isDone)
            await h.tick(1)
            #expect(i.isDone && !r.isDone)
            await h.tick(1000)
            #expect(!r.isDone)
        }
        // (b) The read answers after 900 ms and writes never finish: resolved at 1,900 ms.
        do {
            var f = FaultInjectingStorage.Faults()
            f.getDelayMs = 900
            f.writesNeverFinish = true
            let h = Harness(World(), faults: f) { $0.storageReadTimeoutMs = 1000 }
            h.start().enterStep("welcome")
            let t = h.tracker
            let i = Pending(h.world) { await t.idle() }
            await h.tick(899)
            #expect(!i.isDone)
            await h.tick(1000)
            #expect(!i.isDone)
            await h.tick(1)
            #expect(i.isDone)
        }
    }

    @Test func S162_knownLimit1TheOtherWaysAnUnsentSnapshotIsLost() async {
        enum Case: CaseIterable { case futureFormat, readFailsTwice, writesNeverFinish, noStorageDisposed }
        for kase in Case.allCases {
            let w = World()
            let future = #"{"format":2}"#
            var f = FaultInjectingStorage.Faults()
            switch kase {
            case .futureFormat: try? await w.backing.setItem(KEY, future)
            case .readFailsTwice: f.failNextGets = 2
            case .writesNeverFinish: f.writesNeverFinish = true
            case .noStorageDisposed: break
            }
            let a = Harness(w, storage: kase != .noStorageDisposed, faults: f)
            a.sink.always(.transient)
            let run = a.start()
            run.enterStep("welcome")
            run.complete()
            await a.tick(1000)
            if kase == .noStorageDisposed { a.tracker.dispose() }
            await w.nextLaunch()
            let n = Harness(w, storage: kase != .noStorageDisposed)
            await n.tick(60_000)
            #expect(bodies(of: run.runId, in: [n]).isEmpty, "\(kase)")
            if kase == .futureFormat { #expect(w.backing.snapshot[KEY] == future) }
        }
    }
}
