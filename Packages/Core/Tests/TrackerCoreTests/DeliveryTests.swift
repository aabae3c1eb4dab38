import Testing
import TrackerCore
import TrackerCoreTestKit

/// Scenarios S53–S63 of the onboarding tracker spec (section E: the per-run delivery queue),
/// plus the state machine on its own.
@Suite struct DeliveryTests {
    struct Body: Sendable, Hashable {
        let seq: Int
        var v: String = "x"
    }

    final class Fixture: Sendable {
        let clock = ManualClock()
        let sink: RecordingSink<Body>
        let settled = Locked<[(Int, SinkOutcome)]>([])
        let delivery: DeliveryRuntime<Body>

        init(
            sink: RecordingSink<Body> = RecordingSink(always: .accepted),
            retry: RetryPolicy = RetryPolicy(initialDelay: 1, factor: 2, maxDelay: 4)
        ) {
            self.sink = sink
            let settled = self.settled
            delivery = DeliveryRuntime(
                sink: sink, scheduler: clock, retry: retry, attemptTimeoutMs: 30_000,
                onSettled: { item, result in settled.withLock { $0.append((item.seq, result.outcome)) } })
        }

        func enqueue(_ seq: Int, _ v: String = "x") { delivery.enqueue(Outbound(seq: seq, payload: Body(seq: seq, v: v))) }
        var seqs: [Int] { sink.received.map(\.seq) }
    }

    @Test(arguments: [SinkOutcome.accepted, .ignored, .rejected])
    func S53_settledOutcomesAreFinal(outcome: SinkOutcome) async {
        let f = Fixture(sink: RecordingSink(always: SinkResult(outcome)))
        f.enqueue(1)
        await f.clock.advance(byMs: 60_000)
        #expect(f.sink.callCount == 1)
        #expect(f.settled.withLock { $0.map(\.0) } == [1])
        #expect(f.settled.withLock { $0.map(\.1) } == [outcome])
        #expect(f.delivery.pending == nil)
        f.enqueue(1)
        await f.clock.advance(byMs: 60_000)
        #expect(f.sink.callCount == 1)
    }

    enum TransientKind: String, CaseIterable, Sendable { case throwsError, rejectedPromise, explicitTransient, noResult, unknownOutcome }

    @Test(arguments: TransientKind.allCases)
    func S54_transientKindsBackOff1s2s4s(kind: TransientKind) async {
        let sink = RecordingSink<Body> { n, _ in
            guard n <= 3 else { return .result(.accepted) }
            switch kind {
            case .throwsError, .rejectedPromise: return .fail("boom")
            case .explicitTransient: return .result(.transient)
            case .noResult: return .result(SinkResult.normalizing(nil))
            case .unknownOutcome: return .result(SinkResult.normalizing(["outcome": "maybe"]))
            }
        }
        let f = Fixture(sink: sink)
        f.enqueue(7)
        await f.clock.advance(byMs: 0)
        #expect(f.sink.callCount == 1)
        await f.clock.advance(byMs: 999)
        #expect(f.sink.callCount == 1)
        await f.clock.advance(byMs: 1)
        #expect(f.sink.callCount == 2)
        await f.clock.advance(byMs: 2000)
        #expect(f.sink.callCount == 3)
        await f.clock.advance(byMs: 4000)
        #expect(f.sink.callCount == 4)
        #expect(Set(f.sink.received).count == 1)
        #expect(f.delivery.pending == nil)
    }

    @Test func S55_backoffCap() async {
        let f = Fixture(sink: RecordingSink(always: .transient))
        f.enqueue(1)
        await f.clock.advance(byMs: 0)
        await f.clock.advance(byMs: 7000)  // 1 s, 2 s, 4 s → calls at 1000, 3000, 7000
        let before = f.sink.callCount
        #expect(before == 4)
        await f.clock.advance(byMs: 4000)  // capped at 4 s
        #expect(f.sink.callCount == before + 1)
    }

    @Test func S56_latestWinsDuringABackoff() async {
        let f = Fixture(sink: RecordingSink(always: .transient))
        f.enqueue(1)
        await f.clock.advance(byMs: 0)
        f.enqueue(2)
        f.enqueue(3)
        f.sink.respond(always: .accepted)
        await f.clock.advance(byMs: 1000)
        #expect(f.seqs == [1, 3])
        #expect(f.delivery.pending == nil)
    }

    @Test func S57_anOlderSeqNeverReplacesANewerPendingOne() async {
        let f = Fixture(sink: RecordingSink { _, _ in .never })
        f.enqueue(5)
        f.enqueue(4)
        await f.clock.settle()
        #expect(f.delivery.pending?.seq == 5)
    }

    @Test func S58_oneInFlightAndTheStaleSnapshotIsNotRetried() async {
        let f = Fixture(sink: RecordingSink { _, _ in .hold })
        f.enqueue(1)
        await f.clock.advance(byMs: 0)
        f.enqueue(2)
        await f.clock.advance(byMs: 0)
        #expect(f.sink.callCount == 1)
        f.sink.respond(always: .accepted)
        f.sink.releaseHeld(with: .result(.transient))
        await f.clock.advance(byMs: 1000)
        #expect(f.seqs == [1, 2])
        await f.clock.advance(byMs: 60_000)
        #expect(f.seqs == [1, 2])
    }

    @Test func S59_attemptTimeout() async {
        let f = Fixture(sink: RecordingSink { _, _ in .never })
        f.enqueue(1)
        await f.clock.advance(byMs: 30_000)
        f.sink.respond(always: .accepted)
        await f.clock.advance(byMs: 1000)
        #expect(f.sink.callCount == 2)
        #expect(f.delivery.pending == nil)
    }

    @Test func S60_flushSkipsTheBackoff() async {
        let f = Fixture(sink: RecordingSink(always: .transient))
        f.enqueue(1)
        await f.clock.advance(byMs: 0)
        f.delivery.flush()
        await f.clock.settle()
        #expect(f.sink.callCount == 2)
    }

    @Test func S61_neverFailsIntoTheCaller() async {
        let f = Fixture(sink: RecordingSink { _, _ in .fail("synchronous failure") })
        f.enqueue(1)
        f.delivery.flush()
        await f.clock.advance(byMs: 10_000)
        #expect(f.delivery.pending?.seq == 1)
    }

    @Test func S62_close() async {
        let f = Fixture(sink: RecordingSink(always: .transient), retry: RetryPolicy(initialDelay: 1))
        f.enqueue(1)
        await f.clock.advance(byMs: 0)
        #expect(f.sink.callCount == 1)
        f.delivery.close()
        await f.clock.advance(byMs: 0)
        #expect(f.sink.callCount == 2)
        await f.clock.advance(byMs: 60_000)
        #expect(f.sink.callCount == 2)
        #expect(f.clock.pendingTimerCount == 0)
        f.enqueue(2)
        await f.clock.advance(byMs: 0)
        #expect(f.seqs == [1, 1, 2])
        #expect(f.delivery.pending?.seq == 2)
    }

    @Test func S63_idleAfterClose() async {
        let sink = RecordingSink<Body> { _, _ in .hold }
        let f = Fixture(sink: sink)
        await f.delivery.idle()  // nothing in flight: resolves at once
        f.enqueue(1)
        f.delivery.close()
        let resolved = Locked(false)
        f.clock.spawn {
            await f.delivery.idle()
            resolved.withLock { $0 = true }
        }
        f.enqueue(2)
        await f.clock.settle()
        // Seq 1 answers transient after 1000 ms; seq 2 is then attempted.
        f.clock.schedule(afterMs: 1000) { sink.releaseHeld(with: .result(.transient)) }
        await f.clock.advance(byMs: 1000)
        #expect(f.seqs == [1, 2])
        #expect(resolved.withLock { $0 } == false)
        f.clock.schedule(afterMs: 1000) { sink.releaseHeld(with: .result(.accepted)) }
        await f.clock.advance(byMs: 1000)
        #expect(resolved.withLock { $0 } == true)
        #expect(f.delivery.pending == nil)
    }

    /// S210 (issue 36, the paywall tracker's dispose): `closeUnattempted` gives a snapshot that
    /// never had an attempt its one attempt, behind the one in flight, and gives none to a
    /// snapshot already tried (in backoff): no retry timer either way.
    @Test func S210_closeUnattemptedTriesOnlyWhatWasNeverTried() async {
        let sink = RecordingSink<Body> { _, _ in .hold }
        let f = Fixture(sink: sink)
        f.enqueue(1)
        f.enqueue(2)
        f.enqueue(3)  // queued behind seq 1's attempt: never tried
        f.delivery.closeUnattempted()
        await f.clock.settle()
        #expect(f.seqs == [1])
        sink.releaseHeld(with: .result(.transient))
        await f.clock.settle()
        #expect(f.seqs == [1, 3], "seq 3 had no attempt and got one")
        sink.releaseHeld(with: .result(.transient))
        await f.clock.advance(byMs: 60_000)
        #expect(f.seqs == [1, 3], "a retry after closeUnattempted")
        #expect(f.clock.pendingTimerCount == 0)

        // In backoff: the snapshot was tried, so it gets no final attempt.
        let g = Fixture(sink: RecordingSink(always: .transient))
        g.enqueue(1)
        await g.clock.settle()
        #expect(g.seqs == [1])
        g.delivery.closeUnattempted()
        await g.clock.advance(byMs: 60_000)
        #expect(g.seqs == [1], "a snapshot already tried got a final attempt")
        #expect(g.clock.pendingTimerCount == 0)
        #expect(g.delivery.pending?.seq == 1)
    }

    // MARK: The machine on its own

    @Test func machineTimeoutThenLateAnswerIsIgnored() {
        var m = DeliveryMachine<Body>(retry: RetryPolicy(), attemptTimeoutMs: 30_000)
        var actions = m.handle(.enqueue(Outbound(seq: 1, payload: Body(seq: 1))))
        guard case .send(let attempt, _)? = actions.last else {
            Issue.record("expected a send")
            return
        }
        actions = m.handle(.attemptTimedOut(attempt: attempt))
        #expect(actions.contains { if case .scheduleRetry(1000) = $0 { true } else { false } })
        actions = m.handle(.answered(attempt: attempt, .accepted))
        #expect(actions.isEmpty)
        #expect(m.pending?.seq == 1)
        #expect(m.settledSeq == 0)
    }

    @Test func retryPolicyDefaults() {
        let p = RetryPolicy()
        #expect((1...9).map { p.delayMs(afterFailures: $0) } == [1000, 2000, 4000, 8000, 16_000, 32_000, 60_000, 60_000, 60_000])
        #expect(p.delayMs(afterFailures: 10_000) == 60_000)
    }
}
