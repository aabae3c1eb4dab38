import Testing
import TrackerCore
import TrackerCoreTestKit

/// The snapshot outbox (issue 36 item 3; before, the coalescing persist-before-send writer of
/// issue 14 item 4) and the delivery machine's attempt ids (issue 14, planted bug "attempt ids
/// never incremented").
///
/// Scenario ids: S200–S206 (write-then-send through the outbox runtime), S207–S208 (a late answer
/// of a timed-out attempt), S211–S217 and S219 (the outbox machine on its own, no I/O; the stored form), S218 (the outbox thread),
/// S265–S266 (a request while a write composes).
@Suite struct SnapshotOutboxTests {
    final class Fixture: Sendable {
        let clock = ManualClock()
        let storage: FaultInjectingStorage
        let errors = Locked<[String]>([])
        let persister: SnapshotOutbox
        /// The state a write stores (the "latest state").
        let value = Locked(0)
        /// Hand-overs so far: (request number, result).
        let handed = Locked<[(Int, PersistResult)]>([])

        init(timeoutMs: Int64 = 1000, faults: (inout FaultInjectingStorage.Faults) -> Void = { _ in }) {
            storage = FaultInjectingStorage(clock: clock)
            storage.update(faults)
            let errors = self.errors
            persister = SnapshotOutbox(
                storage: storage, key: "k", scheduler: clock, policy: .writeThenSend(timeoutMs: timeoutMs), reportsEveryFailure: true
            ) { e in errors.withLock { $0.append(e) } }
        }

        /// Sets the state to `v` and requests a write, with a hand-over numbered `v`.
        func change(_ v: Int) {
            value.withLock { $0 = v }
            let value = self.value
            let handed = self.handed
            persister.request(compose: { OutboxWrite(.value(["v": .number(Double(value.value))]), records: nil) }) { r in
                handed.withLock { $0.append((v, r)) }
            }
        }

        var stored: String? { storage.stored("k") }
        var handedIds: [Int] { handed.value.map(\.0) }
    }

    @Test func S200_handsOverOnlyOnceTheWriteHasLanded() async {
        let f = Fixture(timeoutMs: 0) { $0.holdWrites = true }
        f.change(1)
        await f.clock.advance(byMs: 60_000)
        #expect(f.handed.value.isEmpty)
        #expect(f.stored == nil)
        f.storage.releaseWrites()
        await f.clock.settle()
        #expect(f.stored == #"{"v":1}"#)
        #expect(f.handed.value.map(\.1) == [.landed])
        #expect(f.clock.pendingTimerCount == 0)
    }

    @Test func S201_requestsWhileAWriteWaitsAreCoalescedLatestWins() async {
        let f = Fixture(timeoutMs: 0) { $0.holdWrites = true }
        f.change(1)  // starts, held in the storage
        await f.clock.settle()
        for v in 2...100 { f.change(v) }  // all join one queued write
        await f.clock.settle()
        #expect(f.storage.writeCount == 1)
        f.storage.releaseWrites()
        await f.clock.settle()
        #expect(f.storage.writeCount == 2)
        #expect(f.stored == #"{"v":100}"#)
        #expect(f.handedIds == Array(1...100))
        #expect(f.handed.value.allSatisfy { $0.1 == .landed })
        #expect(f.persister.counts == (requests: 100, writes: 2))
    }

    @Test func S202_aRequestDuringARunningWriteWaitsForTheNextOne() async {
        let f = Fixture(timeoutMs: 0) { $0.writeDelayMs = 100 }
        f.change(1)
        await f.clock.advance(byMs: 50)  // write 1 composed {"v":1} and runs until 100
        f.change(2)
        await f.clock.advance(byMs: 50)
        #expect(f.stored == #"{"v":1}"#)
        #expect(f.handedIds == [1], "2 was not in the write that landed")
        await f.clock.advance(byMs: 99)
        #expect(f.handedIds == [1])
        await f.clock.advance(byMs: 1)
        #expect(f.stored == #"{"v":2}"#)
        #expect(f.handedIds == [1, 2])
    }

    /// S265: a request made while a write composes its value (a record on another thread, between
    /// the compose reading the state and the write starting) queues the next write: before, it
    /// joined the write already composed and its change was never stored (found by G112 under TSan,
    /// where the window is wide).
    @Test func S265_aRequestWhileAWriteComposesQueuesTheNextWrite() async {
        let f = Fixture(timeoutMs: 0)
        let composed = Locked(0)
        f.value.withLock { $0 = 1 }
        let value = f.value
        let persister = f.persister
        persister.request(compose: {
            let v = value.value
            // The first compose: another change and its request arrive now, after the state was read.
            let first = composed.withLock { n -> Bool in
                n += 1
                return n == 1
            }
            if first {
                value.withLock { $0 = 2 }
                persister.request(compose: { OutboxWrite(.value(["v": .number(Double(value.value))]), records: nil) })
            }
            return OutboxWrite(.value(["v": .number(Double(v))]), records: nil)
        })
        await f.clock.settle()
        await persister.idle()
        #expect(f.stored == #"{"v":2}"#, "the change requested during the compose is stored")
        #expect(f.persister.counts == (requests: 2, writes: 2))
    }

    @Test func S203_aFailedWriteHandsOverAsFailed() async {
        let f = Fixture { $0.failNextWrites = 1 }
        f.change(1)
        await f.clock.settle()
        #expect(f.handed.value.map(\.1) == [.failed])
        #expect(f.errors.value.count == 1)
        #expect(f.stored == nil)
        f.change(2)
        await f.clock.settle()
        #expect(f.handed.value.map(\.1) == [.failed, .landed])
        #expect(f.stored == #"{"v":2}"#)
        #expect(f.clock.pendingTimerCount == 0)
    }

    @Test func S204_aHungWriteHandsOverAfterTheTimeoutOnce() async {
        let f = Fixture(timeoutMs: 1000) { $0.holdWrites = true }
        f.change(1)
        await f.clock.advance(byMs: 999)
        #expect(f.handed.value.isEmpty)
        await f.clock.advance(byMs: 1)
        #expect(f.handed.value.map(\.1) == [.timedOut])
        f.storage.releaseWrites()
        await f.clock.settle()
        #expect(f.handed.value.map(\.1) == [.timedOut], "the late landing does not hand over again")
        #expect(f.stored == #"{"v":1}"#)
    }

    @Test func S205_slowWritesNeverHandOverBeforeTheirState() async {
        let f = Fixture(timeoutMs: 0) { $0.writeDelayMs = 150 }
        // A change every 40 ms while each write takes 150 ms: at each hand-over the stored state
        // already holds that change (or a later one).
        let violations = Locked<[Int]>([])
        let storage = f.storage
        for v in 1...30 {
            f.value.withLock { $0 = v }
            let value = f.value
            f.persister.request(compose: { OutboxWrite(.value(["v": .number(Double(value.value))]), records: nil) }) { _ in
                let stored = storage.stored("k").flatMap { try? WireJSON.decode($0) }?["v"]?.intValue ?? 0
                if stored < v { violations.withLock { $0.append(v) } }
            }
            await f.clock.advance(byMs: 40)
        }
        await f.clock.advance(byMs: 1000)
        #expect(violations.value.isEmpty, "handed over before stored: \(violations.value)")
        #expect(f.stored == #"{"v":30}"#)
        #expect(f.storage.writeCount < 15, "writes were not coalesced: \(f.storage.writeCount)")
    }

    @Test func S206_aRequestWithoutHandOverArmsNoTimer() async {
        let f = Fixture(timeoutMs: 1000) { $0.holdWrites = true }
        f.persister.request(compose: { OutboxWrite(.remove, records: [:]) })
        await f.clock.settle()
        #expect(f.clock.pendingTimerCount == 0)
        f.storage.releaseWrites()
        await f.clock.settle()
        #expect(f.persister.counts == (requests: 1, writes: 1))
    }
}

/// Where the outbox's writes run with the system scheduler (issue 36 item 3).
@Suite struct OutboxThreadTests {
    /// Records, at each write, whether it runs on the outbox thread.
    final class ThreadProbe: KeyValueStorage {
        let onOutboxThread = Locked<[Bool]>([])
        func getItem(_ key: String) async throws -> String? { nil }
        func setItem(_ key: String, _ value: String) async throws {
            onOutboxThread.withLock { $0.append(BackgroundIOThread.outbox.isCurrent) }
        }
        func removeItem(_ key: String) async throws {
            onOutboxThread.withLock { $0.append(BackgroundIOThread.outbox.isCurrent) }
        }
    }

    /// S218: a write runs on the outbox's own thread (`tracker.outbox`): not on Swift's shared
    /// pool, not on the I/O thread where Score syncs its log.
    @Test func S218_writesRunOnTheOutboxThread() async {
        let probe = ThreadProbe()
        let outbox = SnapshotOutbox(
            storage: probe, key: "k", scheduler: SystemScheduler.shared, policy: .sendAndWrite, reportsEveryFailure: false
        ) { _ in }
        outbox.request(compose: { OutboxWrite(.text("{}"), records: [:]) })
        outbox.request(compose: { OutboxWrite(.remove, records: [:]) })
        let done = await boundedWait(what: "the outbox's writes", onTimeout: { false }) { once in
            Task {
                await outbox.idle()
                once.resume(returning: true)
            }
        }
        #expect(done, "the writes never finished")
        #expect(!probe.onOutboxThread.value.isEmpty)
        #expect(probe.onOutboxThread.value.allSatisfy { $0 }, "\(probe.onOutboxThread.value)")
    }
}

/// The outbox's rules without I/O (issue 36 item 3): its machine driven event by event.
@Suite struct OutboxMachineTests {
    typealias M = OutboxMachine

    /// S211: write-then-send: the staged snapshot waits for the first write that started after it,
    /// and a request while that write is queued joins it (one write, two hand-overs).
    @Test func S211_writeThenSendHandsOverAfterTheWriteThatStartedAfterIt() {
        var m = M(policy: .writeThenSend(timeoutMs: 0), reportsEveryFailure: true)
        #expect(m.handle(.request(ticket: 1)) == [.enqueueWrite])
        #expect(m.handle(.request(ticket: 2)).isEmpty, "joins the queued write")
        #expect(m.handle(.writeStarted(records: ["a": 1])).isEmpty)
        // Started: a new request queues the next write and waits for it.
        #expect(m.handle(.request(ticket: 3)) == [.enqueueWrite])
        #expect(m.handle(.writeFinished(landed: true)) == [.handOver(ticket: 1, .landed), .handOver(ticket: 2, .landed)])
        #expect(m.stored == ["a": 1])
        #expect(m.handle(.writeStarted(records: ["a": 2])).isEmpty)
        #expect(m.handle(.writeFinished(landed: false)) == [.reportFailure, .handOver(ticket: 3, .failed)])
        #expect(m.stored == ["a": 1], "a failed write changes nothing stored")
        #expect((m.requests, m.writes) == (3, 2))
    }

    /// S266: a request after the write began composing queues the next write, and the write's
    /// start leaves that queued write (and its ticket) alone.
    @Test func S266_aRequestAfterComposingBeganQueuesTheNextWrite() {
        var m = M(policy: .writeThenSend(timeoutMs: 0), reportsEveryFailure: true)
        #expect(m.handle(.request(ticket: 1)) == [.enqueueWrite])
        #expect(m.handle(.composing).isEmpty)
        #expect(m.handle(.request(ticket: 2)) == [.enqueueWrite], "the composing write may miss it")
        #expect(m.handle(.writeStarted(records: ["a": 1])).isEmpty)
        #expect(m.queued == [2] && m.running == [1])
        #expect(m.handle(.writeFinished(landed: true)) == [.handOver(ticket: 1, .landed)])
        #expect(m.handle(.composing).isEmpty)
        #expect(m.handle(.writeStarted(records: ["a": 2])).isEmpty)
        #expect(m.handle(.writeFinished(landed: true)) == [.handOver(ticket: 2, .landed)])
        #expect((m.requests, m.writes) == (2, 2))
    }

    /// S212: the timeout hands over once; the write finishing later does not hand over again.
    @Test func S212_theTimeoutHandsOverOnce() {
        var m = M(policy: .writeThenSend(timeoutMs: 1000), reportsEveryFailure: true)
        #expect(m.handle(.request(ticket: 1)) == [.armTimer(ticket: 1, afterMs: 1000), .enqueueWrite])
        _ = m.handle(.writeStarted(records: nil))
        #expect(m.handle(.timerFired(ticket: 1)) == [.handOver(ticket: 1, .timedOut)])
        #expect(m.handle(.timerFired(ticket: 1)).isEmpty)
        #expect(m.handle(.writeFinished(landed: true)).isEmpty)
        // A write that finishes first cancels the timer.
        _ = m.handle(.request(ticket: 2))
        _ = m.handle(.writeStarted(records: nil))
        #expect(m.handle(.writeFinished(landed: true)) == [.cancelTimer(ticket: 2), .handOver(ticket: 2, .landed)])
        #expect(m.handle(.timerFired(ticket: 2)).isEmpty)
    }

    /// S213: send-and-write: handed over when staged, before the write is even queued.
    @Test func S213_sendAndWriteHandsOverAtOnce() {
        var m = M(policy: .sendAndWrite, reportsEveryFailure: false)
        #expect(m.handle(.request(ticket: 1)) == [.handOver(ticket: 1, .sentBeforeWrite), .enqueueWrite])
        #expect(m.handle(.request(ticket: 2)) == [.handOver(ticket: 2, .sentBeforeWrite)])
        _ = m.handle(.writeStarted(records: ["p": 2]))
        #expect(m.handle(.writeFinished(landed: true)).isEmpty)
        #expect(m.timed.isEmpty)
    }

    /// S214: a run of failures is reported once; a landed write ends it.
    @Test func S214_aRunOfFailuresIsReportedOnce() {
        var m = M(policy: .sendAndWrite, reportsEveryFailure: false)
        var reports = 0
        func write(_ landed: Bool) {
            _ = m.handle(.request(ticket: nil))
            _ = m.handle(.writeStarted(records: ["p": 1]))
            reports += m.handle(.writeFinished(landed: landed)).filter { $0 == .reportFailure }.count
        }
        for _ in 0..<19 { write(false) }
        #expect(reports == 1)
        write(true)
        write(false)
        write(false)
        #expect(reports == 2)
        var every = M(policy: .writeThenSend(timeoutMs: 0), reportsEveryFailure: true)
        _ = every.handle(.request(ticket: nil))
        _ = every.handle(.writeStarted(records: nil))
        _ = every.handle(.writeFinished(landed: false))
        _ = every.handle(.request(ticket: nil))
        _ = every.handle(.writeStarted(records: nil))
        #expect(every.handle(.writeFinished(landed: false)) == [.reportFailure])
    }

    /// S215: the ledger: a snapshot is unstored when neither the last landed write nor the write
    /// under way records it (a failed write left it out).
    @Test func S215_theLedgerTellsWhatIsUnstored() {
        var m = M(policy: .sendAndWrite, reportsEveryFailure: false)
        #expect(m.isUnstored(key: "p", seq: 1))
        _ = m.handle(.request(ticket: nil))
        _ = m.handle(.writeStarted(records: ["p": 1]))
        #expect(!m.isUnstored(key: "p", seq: 1), "being written")
        #expect(m.isUnstored(key: "p", seq: 2))
        _ = m.handle(.writeFinished(landed: false))
        #expect(m.isUnstored(key: "p", seq: 1), "its write failed")
        _ = m.handle(.request(ticket: nil))
        _ = m.handle(.writeStarted(records: ["p": 1]))
        _ = m.handle(.writeFinished(landed: true))
        #expect(!m.isUnstored(key: "p", seq: 1))
        // A skipped write (records nil) keeps what is stored.
        _ = m.handle(.request(ticket: nil))
        _ = m.handle(.writeStarted(records: nil))
        _ = m.handle(.writeFinished(landed: true))
        #expect(m.stored == ["p": 1])
    }

    /// S217: the seq reservation the onboarding tracker keeps in the ledger: a snapshot may leave
    /// only when neither the stored state nor the write under way holds its run past its seq;
    /// `storedIs` replaces what is stored (read at launch, or from a predecessor).
    @Test func S217_coversChecksTheStoredAndTheWrittenReservation() {
        var m = M(policy: .writeThenSend(timeoutMs: 1000), reportsEveryFailure: true)
        #expect(m.covers(key: "run", seq: 99), "nothing known constrains a send")
        _ = m.handle(.storedIs(["run": 16]))
        #expect(m.covers(key: "run", seq: 16))
        #expect(!m.covers(key: "run", seq: 17))
        #expect(m.covers(key: "other", seq: 500))
        _ = m.handle(.request(ticket: nil))
        _ = m.handle(.writeStarted(records: ["run": 20]))
        #expect(!m.covers(key: "run", seq: 17), "the stored state still reserves only 16")
        _ = m.handle(.writeFinished(landed: true))
        #expect(m.covers(key: "run", seq: 20))
        _ = m.handle(.request(ticket: nil))
        _ = m.handle(.writeStarted(records: [:]))  // the run completed: no run stored
        #expect(!m.covers(key: "run", seq: 21))
        _ = m.handle(.writeFinished(landed: true))
        #expect(m.covers(key: "run", seq: 21))
        _ = m.handle(.storedIs(["run": 3]))
        #expect(m.stored == ["run": 3])
    }

    /// S219: a snapshot storage does not cover is held (the newest per key) until a landed write
    /// covers it; one covered already goes at once; a newer one leaving drops an older held one.
    @Test func S219_heldUntilALandedWriteCoversIt() {
        var m = M(policy: .writeThenSend(timeoutMs: 1000), reportsEveryFailure: true)
        _ = m.handle(.storedIs(["run": 16]))
        #expect(m.handle(.hold(key: "run", seq: 16, ticket: 1)) == [.handOver(ticket: 1, .landed)], "covered: at once")
        #expect(m.handle(.hold(key: "run", seq: 17, ticket: 2)).isEmpty)
        #expect(m.handle(.hold(key: "run", seq: 18, ticket: 3)) == [.drop(ticket: 2)], "only the newest is kept")
        #expect(m.handle(.hold(key: "run", seq: 17, ticket: 4)) == [.drop(ticket: 4)])
        // A failed write releases nothing; one that lands but does not cover neither.
        _ = m.handle(.request(ticket: nil))
        _ = m.handle(.writeStarted(records: ["run": 17]))
        #expect(m.handle(.writeFinished(landed: false)) == [.reportFailure])
        _ = m.handle(.request(ticket: nil))
        _ = m.handle(.writeStarted(records: ["run": 17]))
        #expect(m.handle(.writeFinished(landed: true)).isEmpty)
        _ = m.handle(.request(ticket: 5))
        _ = m.handle(.writeStarted(records: ["run": 34]))
        let released: [M.Action] = [.handOver(ticket: 3, .landed), .cancelTimer(ticket: 5), .handOver(ticket: 5, .landed)]
        #expect(m.handle(.writeFinished(landed: true)) == released, "released before the write's own hand-overs")
        #expect(m.held.isEmpty)
        // A newer snapshot leaving drops the older held one.
        _ = m.handle(.storedIs(["run": 40]))
        _ = m.handle(.hold(key: "run", seq: 41, ticket: 6))
        #expect(m.handle(.dropHeld(key: "run", olderThan: 41)).isEmpty)
        #expect(m.handle(.dropHeld(key: "run", olderThan: 42)) == [.drop(ticket: 6)])
    }

    /// S216: the stored form built from wire bytes is the bytes `WireJSON` writes for the same map
    /// (what the trackers stored before, as a JSON tree), so a stored value stays readable.
    @Test func S216_theStoredFormIsTheSameBytesAsTheJSONTree() throws {
        let bodies: [(String, Int, JSONValue)] = [
            ("0192f1a2-7c3d-7e4f-8a5b-6c7d8e9f0a1b", 2, ["seq": 2, "s": "é \u{1F600} \"q\"", "n": .null, "a": [1.5, true]]),
            ("k\"ey/\u{7}", 13, ["seq": 13, "x": ["deep": [:]]]),
        ]
        var tree = JSONObject()
        for (k, seq, body) in bodies { tree.appendUnchecked(k, ["seq": .number(Double(seq)), "body": body]) }
        let text = OutboxEntries.encode(bodies.map { ($0.0, $0.1, WireJSON.encode($0.2)) })
        #expect(text == WireJSON.encodeString(.object(tree)))
        #expect(try WireJSON.decode(text) == .object(tree))
        #expect(OutboxEntries.encode([]) == "{}")
    }
}

/// A sink answer that arrives after its attempt timed out must never settle the retry.
@Suite struct LateAnswerTests {
    struct Body: Sendable, Equatable { let seq: Int }

    /// The machine alone: attempt 1 times out, the retry (attempt 2) is in flight, then attempt 1's
    /// answer arrives.
    @Test func S207_machineIgnoresALateAnswerWhileTheRetryIsInFlight() {
        var m = DeliveryMachine<Body>(retry: RetryPolicy(initialDelay: 1), attemptTimeoutMs: 30_000)
        var actions = m.handle(.enqueue(Outbound(seq: 1, payload: Body(seq: 1))))
        guard case .send(let first, _)? = actions.last else {
            Issue.record("expected a send")
            return
        }
        _ = m.handle(.attemptTimedOut(attempt: first))
        actions = m.handle(.retryTimerFired)
        guard case .send(let retry, _)? = actions.last else {
            Issue.record("expected the retry")
            return
        }
        #expect(retry != first, "each attempt has its own id")
        actions = m.handle(.answered(attempt: first, SinkResult(.accepted)))
        #expect(actions.isEmpty)
        #expect(m.settledSeq == 0)
        #expect(m.inFlight?.attempt == retry)
        #expect(m.pending?.seq == 1)
        // The retry's own answer settles it.
        actions = m.handle(.answered(attempt: retry, SinkResult(.transient)))
        #expect(m.settledSeq == 0)
        #expect(m.retryScheduled)
    }

    /// Through the runtime: the first call answers `accepted` only after its attempt timed out,
    /// while the retry is still open; the retry then answers transient, so the snapshot must
    /// still be pending and be retried.
    @Test func S208_runtimeIgnoresALateAnswerFromATimedOutAttempt() async {
        let clock = ManualClock()
        let sink = RecordingSink<Body> { n, _ in n == 1 ? .hold : n == 2 ? .never : .result(.accepted) }
        let settled = Locked<[(Int, SinkOutcome)]>([])
        let delivery = DeliveryRuntime(
            sink: sink, scheduler: clock, retry: RetryPolicy(initialDelay: 1), attemptTimeoutMs: 30_000,
            onSettled: { item, r in settled.withLock { $0.append((item.seq, r.outcome)) } })
        delivery.enqueue(Outbound(seq: 1, payload: Body(seq: 1)))
        await clock.advance(byMs: 30_000)  // attempt 1 times out
        await clock.advance(byMs: 1000)  // the retry goes out and never answers
        #expect(sink.callCount == 2)
        sink.releaseHeld(with: .result(SinkResult(.accepted)))  // attempt 1's late answer
        await clock.settle()
        #expect(settled.value.isEmpty, "a late answer settled the retry: \(settled.value)")
        #expect(delivery.pending?.seq == 1)
        #expect(delivery.isBusy)
        // The retry times out in its turn; the next attempt is accepted and settles.
        await clock.advance(byMs: 30_000 + 2000)
        #expect(sink.callCount == 3)
        #expect(settled.value.map(\.0) == [1])
        #expect(delivery.pending == nil)
    }
}
