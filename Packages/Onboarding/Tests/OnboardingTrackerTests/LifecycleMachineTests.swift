import Testing
import TrackerCore

@testable import OnboardingTracker

// The tracker's lifecycles as pure machines (issue 16 item 3), driven directly: no tracker, no
// storage, no clock.
//
// New scenarios:
// S186 parsing the stored value: a failed read, another format, not JSON, not recognised,
//      malformed parts, and a clean state of format 1.
// S187 a stored state for another destination (or after a refused hand-over) is discarded and
//      reported once, and the store is rewritten; what it held is still recorded as stored.
// S188 stored outboxes: a settled one is dropped (rewrite), one not newer than the tracker's is
//      skipped, one is held while the predecessor's attempts are unanswered, else delivered.
// S189 the stored run: kept for resume() before a session, sent (when dirty) and rewritten after
//      a start, ignored when the predecessor handed over a run; a completed one never resumes.
// S190 the hand-over phase: accepted or refused, pending until the predecessor's leftover is
//      answered; a refused leftover with unsent snapshots is reported once.
// S191 an accepted leftover: settled seqs merge, a newer unsent snapshot is taken, a settled one
//      dropped (rewrite), one storage does not cover held for storage, the rest delivered; a
//      disposed tracker keeps them held.
// S192 the session phase: awaiting (with or without a resumable run) until start() or resume(),
//      then started, which has no resumable run.
// S193 the live run's verdict on a handle: it records only while it is the current run of the
//      current generation; a newer run makes it inactive, a completed one says so (live or not),
//      and disposal ends every handle.
// S194 the debounce window: no window with debounceMs <= 0 (stage at once, or write without an
//      entry); the first change opens one timer, later ones only write; the timer stages the
//      unsent change once; a stale timer or a late token is ignored or cancelled; a flush closes it.
// S195 a start replaces a run in progress (its unsent change staged first, then reported) and
//      closes the window; dispose stages the unsent change while still live, then records nothing.
@Suite struct LifecycleMachineTests {
    static let runA = "0190a8c4-4b2e-7c1a-9f3d-2e5b6c7d8e9f"
    static let runB = "0190a8c4-4b2e-7c1a-9f3d-2e5b6c7d8ea0"

    static func run(_ id: String = runA, entries: Int = 1, dirty: Bool = false, completed: Bool = false, lastSeq: Int = 2) -> RunState {
        var r = RunState(
            runId: id, onboarding: .init(key: "main", version: "3"), studio: nil,
            context: .init(appVersion: "2.4.0", build: nil, platform: .ios, osVersion: nil, locale: "en-US", timezone: "UTC"),
            manifest: .init(steps: [.init(stepKey: "welcome")]), manifestKeys: ["welcome"], lastActiveAt: T0)
        for i in 0..<entries { r.append(EntryState(stepKey: "welcome", enteredAt: T0 + Int64(i))) }
        r.dirty = dirty
        r.completed = completed
        r.lastSeq = lastSeq
        return r
    }

    static func item(_ id: String = runA, seq: Int) -> Item {
        var r = run(id)
        r.lastSeq = seq - 1
        return Item(seq: seq, payload: r.snapshot(seq: seq, sentAt: T0 + 10))
    }

    /// A stored value of format 1 with `current` and `outboxes`.
    static func stored(destination: String? = DESTINATION, current: RunState?, outboxes: [Item] = []) -> String {
        var o = JSONObject()
        o.appendUnchecked("format", 1)
        if let destination { o.appendUnchecked("destination", .string(destination)) }
        if var current {
            o.appendUnchecked("current", current.storedJSON(seqReserved: current.lastSeq))
        } else {
            o.appendUnchecked("current", .null)
        }
        var ob = JSONObject()
        for i in outboxes { ob.appendUnchecked(i.payload.runId, .object(["seq": .number(Double(i.seq)), "body": i.payload.wireJSON()])) }
        o.appendUnchecked("outboxes", .object(ob))
        return WireJSON.encodeString(.object(o))
    }

    static func contents(_ p: StoredReadMachine.Parsed) -> StoredReadMachine.Contents? {
        if case .contents(let c) = p { return c }
        return nil
    }

    /// A compact description of actions, for comparing.
    static func describe(_ actions: [StoredReadMachine.Action]) -> [String] {
        actions.map { a in
            switch a {
            case .diagnose(let code, _): "diagnose \(code)"
            case .persistenceOff: "persistence-off"
            case .storedRun(let m): "stored \(m.runId.map { String($0.suffix(2)) } ?? "none") \(m.reserved)"
            case .destinationChangedReported: "destination-changed-reported"
            case .adoptOutbox(let id, let item, let deliver): "adopt \(id.suffix(2)) \(item.seq) \(deliver ? "deliver" : "hold")"
            case .keepResumable(let r): "resumable \(r.runId.suffix(2))"
            case .stage(let r): "stage \(r.runId.suffix(2))"
            case .write: "write"
            }
        }
    }

    @Test func S186_parsingTheStoredValue() throws {
        if case .unreadable = StoredReadMachine.parse(.failed) {} else { Issue.record("a failed read is unreadable") }
        let empty = try #require(Self.contents(StoredReadMachine.parse(.ok(nil))))
        #expect(empty.current == nil && empty.outboxes.isEmpty && empty.problems.isEmpty && !empty.rewrite)
        if case .foreignFormat(let f) = StoredReadMachine.parse(.ok(#"{"format":2}"#)) {
            #expect(f == 2)
        } else {
            Issue.record("format 2 is foreign")
        }
        let notJSON = try #require(Self.contents(StoredReadMachine.parse(.ok("{nope"))))
        #expect(notJSON.rewrite && notJSON.problems == ["the stored state is not JSON; it is discarded"])
        let unknown = try #require(Self.contents(StoredReadMachine.parse(.ok("[1]"))))
        #expect(unknown.rewrite && unknown.problems == ["the stored state is not recognised; it is discarded"])
        let malformed = try #require(Self.contents(StoredReadMachine.parse(.ok(#"{"format":1,"current":{"runId":"x"},"outboxes":[]}"#))))
        #expect(malformed.rewrite && malformed.current == nil)
        #expect(malformed.problems == ["malformed stored parts were dropped: current.runId is invalid; outboxes is not an object"])
        // A clean state round-trips through the stored form: the run and the outbox come back.
        let clean = try #require(
            Self.contents(StoredReadMachine.parse(.ok(Self.stored(current: Self.run(), outboxes: [Self.item(seq: 2)])))))
        #expect(!clean.rewrite && clean.problems.isEmpty && clean.destination == DESTINATION)
        #expect(clean.current?.runId == Self.runA && clean.current?.steps.count == 1 && clean.current?.lastSeq == 2)
        #expect(clean.outboxes[Self.runA]?.seq == 2 && clean.outboxes[Self.runA]?.payload == Self.item(seq: 2).payload)
        // An outbox whose body is not its run's snapshot is dropped.
        let wrong = #"{"format":1,"current":null,"outboxes":{"\#(Self.runB)":{"seq":1,"body":{"run_id":"\#(Self.runA)"}}}}"#
        let dropped = try #require(Self.contents(StoredReadMachine.parse(.ok(wrong))))
        #expect(dropped.outboxes.isEmpty && dropped.rewrite)
    }

    @Test func S187_anotherDestinationIsDiscardedAndReportedOnce() throws {
        let parsed = StoredReadMachine.parse(.ok(Self.stored(destination: STAGING, current: Self.run(), outboxes: [Self.item(seq: 2)])))
        let ctx = StoredReadMachine.Context(destination: DESTINATION)
        #expect(
            Self.describe(StoredReadMachine.decide(parsed, ctx))
                == ["stored 9f 2", "destination-changed-reported", "diagnose destination-changed", "write"])
        var reported = ctx
        reported.destinationChangedReported = true
        #expect(Self.describe(StoredReadMachine.decide(parsed, reported)) == ["stored 9f 2", "write"])
        // After a refused hand-over even a matching stamp is discarded.
        let same = StoredReadMachine.parse(.ok(Self.stored(current: Self.run())))
        var refused = ctx
        refused.handoffRefused = true
        #expect(
            Self.describe(StoredReadMachine.decide(same, refused)) == [
                "stored 9f 2", "destination-changed-reported", "diagnose destination-changed", "write",
            ])
        // The unreadable and foreign cases only turn persistence off.
        #expect(Self.describe(StoredReadMachine.decide(.unreadable, ctx)) == ["persistence-off", "diagnose storage"])
        #expect(Self.describe(StoredReadMachine.decide(.foreignFormat(3), ctx)) == ["persistence-off", "diagnose storage"])
    }

    @Test func S188_storedOutboxes() throws {
        let parsed = StoredReadMachine.parse(.ok(Self.stored(current: nil, outboxes: [Self.item(seq: 3), Self.item(Self.runB, seq: 5)])))
        var ctx = StoredReadMachine.Context(destination: DESTINATION)
        #expect(Self.describe(StoredReadMachine.decide(parsed, ctx)) == ["stored none 0", "adopt 9f 3 deliver", "adopt a0 5 deliver"])
        ctx.predecessorDone = false
        #expect(Self.describe(StoredReadMachine.decide(parsed, ctx)) == ["stored none 0", "adopt 9f 3 hold", "adopt a0 5 hold"])
        ctx.predecessorDone = true
        ctx.settled = [Self.runA: 3]
        ctx.outboxSeqs = [Self.runB: 5]
        #expect(Self.describe(StoredReadMachine.decide(parsed, ctx)) == ["stored none 0", "write"])
    }

    @Test func S189_theStoredRun() throws {
        let dirty = StoredReadMachine.parse(.ok(Self.stored(current: Self.run(dirty: true))))
        var ctx = StoredReadMachine.Context(destination: DESTINATION)
        #expect(Self.describe(StoredReadMachine.decide(dirty, ctx)) == ["stored 9f 2", "resumable 9f"])
        ctx.sessionStarted = true
        ctx.hasCurrent = true
        #expect(Self.describe(StoredReadMachine.decide(dirty, ctx)) == ["stored 9f 2", "stage 9f", "write"])
        let clean = StoredReadMachine.parse(.ok(Self.stored(current: Self.run())))
        #expect(Self.describe(StoredReadMachine.decide(clean, ctx)) == ["stored 9f 2", "write"])
        var handed = StoredReadMachine.Context(destination: DESTINATION)
        handed.handedNothing = false
        #expect(Self.describe(StoredReadMachine.decide(dirty, handed)) == ["stored 9f 2"])
        let completed = StoredReadMachine.parse(.ok(Self.stored(current: Self.run(completed: true))))
        #expect(
            Self.describe(StoredReadMachine.decide(completed, StoredReadMachine.Context(destination: DESTINATION))) == ["stored none 0"])
    }

    static func describe(_ actions: [HandoverMachine.Action]) -> [String] {
        actions.map { a in
            switch a {
            case .diagnose(let code, _): "diagnose \(code)"
            case .destinationChangedReported: "destination-changed-reported"
            case .settled(let id, let seq): "settled \(id.suffix(2)) \(seq)"
            case .take(let id, let item): "take \(id.suffix(2)) \(item.seq)"
            case .drop(let id): "drop \(id.suffix(2))"
            case .deliver(let id, let item): "deliver \(id.suffix(2)) \(item.seq)"
            case .holdForStorage(let id, let item): "hold-for-storage \(id.suffix(2)) \(item.seq)"
            case .clearHeld: "clear-held"
            case .write: "write"
            }
        }
    }

    @Test func S190_theHandoverPhase() {
        let none = HandoverMachine.Phase.none
        #expect(none.predecessorDone && !none.isRefused)
        if case .nothing = none.handedRun {} else { Issue.record("no predecessor hands nothing over") }
        let accepted = HandoverMachine.Phase.accepted(.run(Self.run()), leftoverPending: true)
        #expect(!accepted.predecessorDone && !accepted.isRefused)
        #expect(accepted.leftoverAdopted.predecessorDone)
        if case .run(let r) = accepted.leftoverAdopted.handedRun {
            #expect(r.runId == Self.runA)
        } else {
            Issue.record("the handed run stays")
        }
        let refused = HandoverMachine.Phase.refused(leftoverPending: true)
        #expect(refused.isRefused && !refused.predecessorDone && refused.leftoverAdopted.predecessorDone)
        if case .nothing = refused.handedRun {} else { Issue.record("a refused hand-over hands nothing over") }
        let left = Leftover(unsent: [Self.runA: Self.item(seq: 2)], settled: [:])
        let ctx = HandoverMachine.Context()
        #expect(
            Self.describe(HandoverMachine.leftoverAnswered(left, accepted: false, ctx)) == [
                "destination-changed-reported", "diagnose destination-changed",
            ])
        var reported = ctx
        reported.destinationChangedReported = true
        #expect(HandoverMachine.leftoverAnswered(left, accepted: false, reported).isEmpty)
        #expect(HandoverMachine.leftoverAnswered(Leftover(unsent: [:], settled: [:]), accepted: false, ctx).isEmpty)
    }

    @Test func S191_anAcceptedLeftover() {
        let left = Leftover(unsent: [Self.runA: Self.item(seq: 4), Self.runB: Self.item(Self.runB, seq: 2)], settled: [Self.runB: 3])
        var ctx = HandoverMachine.Context()
        ctx.outboxes = [Self.runA: Self.item(seq: 3)]
        ctx.held = [Self.runA]
        // runB's snapshot 2 is settled by the predecessor (3): dropped, and the state rewritten.
        #expect(
            Self.describe(HandoverMachine.leftoverAnswered(left, accepted: true, ctx))
                == ["settled a0 3", "take 9f 4", "take a0 2", "deliver 9f 4", "drop a0", "clear-held", "write"])
        // Our own newer outbox wins over the predecessor's; storage that reserved only seq 3,
        // and whose last write failed, holds seq 5 for a write.
        ctx.outboxes = [Self.runA: Self.item(seq: 5)]
        ctx.hasStore = true
        ctx.writeFailed = true
        ctx.storedRun = StoredRunMark(runId: Self.runA, reserved: 3)
        #expect(
            Self.describe(
                HandoverMachine.leftoverAnswered(Leftover(unsent: [Self.runA: Self.item(seq: 4)], settled: [:]), accepted: true, ctx))
                == ["hold-for-storage 9f 5", "clear-held"])
        // No write failed (one may still be under way): nothing is held (issue 29, S197).
        ctx.writeFailed = false
        #expect(
            Self.describe(HandoverMachine.leftoverAnswered(Leftover(unsent: [:], settled: [:]), accepted: true, ctx)) == [
                "deliver 9f 5", "clear-held",
            ])
        ctx.writeFailed = true
        ctx.storedRun = StoredRunMark(runId: Self.runA, reserved: 19)
        ctx.writing = StoredRunMark(runId: Self.runB, reserved: 1)
        #expect(
            Self.describe(HandoverMachine.leftoverAnswered(Leftover(unsent: [:], settled: [:]), accepted: true, ctx)) == [
                "deliver 9f 5", "clear-held",
            ])
        ctx.disposed = true
        #expect(Self.describe(HandoverMachine.leftoverAnswered(Leftover(unsent: [:], settled: [:]), accepted: true, ctx)).isEmpty)
        #expect(!HandoverMachine.mayLeave(Self.item(seq: 5), storedRun: nil, writing: StoredRunMark(runId: Self.runA, reserved: 4)))
        #expect(HandoverMachine.mayLeave(Self.item(seq: 5), storedRun: StoredRunMark.none, writing: nil))
    }

    @Test func S192_theSessionPhase() {
        let fresh = SessionPhase.awaiting(resumable: nil)
        #expect(!fresh.started && fresh.resumable == nil)
        let waiting = SessionPhase.awaiting(resumable: Self.run())
        #expect(!waiting.started && waiting.resumable?.runId == Self.runA)
        #expect(SessionPhase.started.started && SessionPhase.started.resumable == nil)
    }

    @Test func S193_theLiveRunsVerdictOnAHandle() {
        var m = RunMachine()
        #expect(m.verdict(runId: Self.runA, generation: 0, handleCompleted: false) == .inactive)
        #expect(m.verdict(runId: Self.runA, generation: 0, handleCompleted: true) == .completed(live: false))
        #expect(m.handle(.begin).isEmpty && m.generation == 1)
        m.current = Self.run()
        #expect(m.verdict(runId: Self.runA, generation: 1, handleCompleted: false) == .record)
        #expect(m.verdict(runId: Self.runA, generation: 0, handleCompleted: false) == .inactive)
        #expect(m.verdict(runId: Self.runB, generation: 1, handleCompleted: false) == .inactive)
        m.current?.completed = true
        #expect(m.verdict(runId: Self.runA, generation: 1, handleCompleted: false) == .completed(live: true))
        #expect(m.handle(.begin).isEmpty && m.generation == 2)  // a completed run is not reported replaced
        m.current = Self.run(Self.runB)
        #expect(m.verdict(runId: Self.runA, generation: 1, handleCompleted: true) == .completed(live: false))
        #expect(m.handle(.disposing).isEmpty && !m.disposed)
        #expect(m.handle(.disposed).isEmpty && m.disposed)
        #expect(m.verdict(runId: Self.runB, generation: 2, handleCompleted: false) == .disposed)
    }

    @Test func S194_theDebounceWindow() {
        var m = RunMachine()
        _ = m.handle(.begin)
        m.current = Self.run(entries: 0)
        #expect(m.handle(.changed(debounceMs: 0, hasEntries: false)) == [.write])
        #expect(m.handle(.changed(debounceMs: -1, hasEntries: true)) == [.stage])
        #expect(m.window == .closed)
        #expect(m.handle(.changed(debounceMs: 500, hasEntries: false)) == [.scheduleTimer(afterMs: 500, generation: 1), .write])
        #expect(m.handle(.changed(debounceMs: 500, hasEntries: true)) == [.write])
        let token = TimerToken(id: 7)
        #expect(m.handle(.timerScheduled(token, generation: 1)).isEmpty)
        #expect(m.window == .open(generation: 1, timer: token))
        // The window ends with no entry: nothing is built, and the next change opens a new one.
        #expect(m.handle(.timerFired(generation: 1)).isEmpty && m.window == .closed)
        m.current = Self.run(dirty: true)
        #expect(m.handle(.changed(debounceMs: 500, hasEntries: true)) == [.scheduleTimer(afterMs: 500, generation: 1), .write])
        #expect(m.handle(.timerFired(generation: 0)).isEmpty)  // a timer of an older generation
        #expect(m.handle(.timerFired(generation: 1)) == [.stage] && m.window == .closed)
        #expect(m.handle(.timerFired(generation: 1)).isEmpty)  // once
        // A token that comes back after its window closed is cancelled.
        #expect(m.handle(.timerScheduled(TimerToken(id: 8), generation: 1)) == [.cancelTimer(TimerToken(id: 8))])
        // complete()/background() build now: the window closes and its timer is cancelled.
        _ = m.handle(.changed(debounceMs: 500, hasEntries: true))
        _ = m.handle(.timerScheduled(TimerToken(id: 9), generation: 1))
        #expect(m.handle(.flushed) == [.cancelTimer(TimerToken(id: 9))] && m.window == .closed)
        #expect(m.handle(.flushed).isEmpty)
    }

    @Test func S195_aStartReplacesTheRunAndDisposeEndsIt() {
        var m = RunMachine()
        _ = m.handle(.begin)
        m.current = Self.run(dirty: true)
        _ = m.handle(.changed(debounceMs: 500, hasEntries: true))
        _ = m.handle(.timerScheduled(TimerToken(id: 1), generation: 1))
        #expect(m.handle(.begin) == [.stage, .reportReplaced(runId: Self.runA), .cancelTimer(TimerToken(id: 1))])
        #expect(m.generation == 2 && m.window == .closed)
        // The old generation's timer, had it fired anyway, builds nothing.
        #expect(m.handle(.timerFired(generation: 1)).isEmpty)
        m.current = Self.run(Self.runB)
        #expect(m.handle(.begin) == [.reportReplaced(runId: Self.runB)])  // nothing unsent: only reported
        m.current = Self.run(dirty: true)
        _ = m.handle(.changed(debounceMs: 500, hasEntries: true))
        _ = m.handle(.timerScheduled(TimerToken(id: 2), generation: 3))
        #expect(m.handle(.disposing) == [.stage, .cancelTimer(TimerToken(id: 2))] && !m.disposed)
        #expect(m.handle(.disposed).isEmpty && m.disposed)
        #expect(m.handle(.disposing).isEmpty && m.handle(.begin).isEmpty && m.generation == 3)
        #expect(m.handle(.changed(debounceMs: 500, hasEntries: true)).isEmpty)
        #expect(m.handle(.changed(debounceMs: 0, hasEntries: true)).isEmpty)
    }
}
