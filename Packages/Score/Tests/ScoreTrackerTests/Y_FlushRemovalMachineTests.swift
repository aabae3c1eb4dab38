import Testing

@testable import ScoreTracker

// The flush's last phase, waiting for its delivered events' removal to be written, inside
// `FlushMachine` (issue 35 item 6), and the queue writer's tickets it waits on, driven without
// I/O, clock or client:
//   SC280 — a flush that delivered events records its outcome, then answers its callers once the
//           writer is through its removal's ticket; a removal already written, or none queued,
//           completes at once; an abandoned flush waits the same way.
//   SC281 — the wait stops on a writer failure, a timeout or the background time running out;
//           a failure before the flush completes means no wait, unless the writer wrote again
//           since; a waiting flush ignores the sending phases' events.
//   SC282 — the writer's tickets: operations numbered in queue order, a ticket covers the ones
//           queued so far, a failed append puts the taken ones back without renumbering.
@Suite struct FlushRemovalMachineTests {
    typealias M = FlushMachine

    /// A flush that sent without persisting or a token, its writer having written `written`.
    static func sending(written: Int = 0) -> M {
        var m = M.start(needsPersist: false, hasProvider: false, batchLimit: 100).0
        _ = m.handle(.written(through: written))
        return m
    }

    @Test func SC280_aDeliveringFlushAnswersOnceItsRemovalIsWritten() {
        var m = Self.sending(written: 3)
        #expect(m.handle(.batchAnswered(status: 200, events: 2)) == [.deliverBatch, .sendNextBatch])
        #expect(m.handle(.removalQueued(ticket: 5)).isEmpty)
        #expect(m.handle(.batchAnswered(status: 200, events: 1)) == [.deliverBatch, .sendNextBatch])
        #expect(m.handle(.removalQueued(ticket: 7)).isEmpty)
        #expect(m.handle(.written(through: 5)).isEmpty, "progress while sending answers nobody")
        #expect(m.handle(.batchesExhausted) == [.link])
        #expect(m.handle(.linkFinished) == [.awaitRemoval(ok: true)])
        #expect(m.phase == .awaitingRemoval(ticket: 7, ok: true))
        #expect(m.isAwaitingRemoval && !m.isCompleted)
        #expect(m.handle(.written(through: 6)).isEmpty, "the second batch's removal is not written yet")
        #expect(m.handle(.written(through: 7)) == [.answer(ok: true)])
        #expect(m.phase == .completed(ok: true))
        #expect(m.handle(.written(through: 8)).isEmpty)
        #expect(m.handle(.stopWaitingForRemoval).isEmpty)

        // Written before the flush is done: it completes at once.
        var early = Self.sending(written: 3)
        _ = early.handle(.batchAnswered(status: 200, events: 2))
        _ = early.handle(.removalQueued(ticket: 4))
        _ = early.handle(.written(through: 4))
        _ = early.handle(.batchesExhausted)
        #expect(early.handle(.linkFinished) == [.complete(ok: true)])

        // Nothing delivered, nothing to wait for (a failed request).
        var failed = Self.sending(written: 3)
        #expect(failed.handle(.batchAnswered(status: 500, events: 2)) == [.link])
        #expect(failed.handle(.linkFinished) == [.complete(ok: false)])

        // An abandoned flush that delivered a batch waits for its removal too, as failed.
        var abandoned = Self.sending()
        _ = abandoned.handle(.batchAnswered(status: 200, events: 1))
        _ = abandoned.handle(.removalQueued(ticket: 2))
        #expect(abandoned.handle(.abandon) == [.awaitRemoval(ok: false)])
        #expect(abandoned.handle(.written(through: 2)) == [.answer(ok: false)])
    }

    @Test func SC281_theWaitStopsOnFailureTimeoutOrBackgroundExpiry() {
        var m = Self.sending()
        _ = m.handle(.batchAnswered(status: 200, events: 1))
        _ = m.handle(.removalQueued(ticket: 3))
        _ = m.handle(.batchesExhausted)
        #expect(m.handle(.linkFinished) == [.awaitRemoval(ok: true)])
        // A waiting flush is done sending: the sending phases' events do nothing.
        #expect(m.handle(.abandon).isEmpty)
        #expect(m.handle(.batchAnswered(status: 200, events: 1)).isEmpty)
        #expect(m.handle(.removalQueued(ticket: 9)).isEmpty)
        #expect(m.handle(.linkFinished).isEmpty)
        #expect(m.phase == .awaitingRemoval(ticket: 3, ok: true))
        #expect(m.handle(.stopWaitingForRemoval) == [.answer(ok: true)])
        #expect(m.phase == .completed(ok: true))

        // The writer failed while the flush was sending: no wait (the removal cannot be written).
        var failing = Self.sending()
        _ = failing.handle(.batchAnswered(status: 200, events: 1))
        _ = failing.handle(.removalQueued(ticket: 3))
        #expect(failing.handle(.stopWaitingForRemoval).isEmpty)
        _ = failing.handle(.batchesExhausted)
        #expect(failing.handle(.linkFinished) == [.complete(ok: true)])

        // … unless it wrote again since: then the removal is waited for again.
        var recovered = Self.sending()
        _ = recovered.handle(.batchAnswered(status: 200, events: 1))
        _ = recovered.handle(.removalQueued(ticket: 3))
        _ = recovered.handle(.stopWaitingForRemoval)
        _ = recovered.handle(.written(through: 1))
        _ = recovered.handle(.batchesExhausted)
        #expect(recovered.handle(.linkFinished) == [.awaitRemoval(ok: true)])
        #expect(recovered.handle(.written(through: 3)) == [.answer(ok: true)])
    }

    @Test func SC282_theWritersTickets() {
        var w = QueueWriterMachine(napsUs: [])
        #expect(w.ticket(backlog: 0) == 0 && w.written == 0)
        let claimed = w.claim(hasWork: true)
        #expect(claimed)
        #expect(w.ticket(backlog: 3) == 3, "three operations queued: done once three are written")
        w.took(3)
        #expect(w.ticket(backlog: 2) == 5, "two more queued behind the three taken")
        let through3 = w.wrote(3)
        #expect(through3 == 3)
        #expect(w.ticket(backlog: 2) == 5)
        w.took(2)
        // The append fails: the two taken go back to the backlog's front, numbered the same.
        let (first, _) = w.appendFailed(retryMs: 100, retryMaxMs: 30_000)
        #expect(first && w.failing)
        #expect(w.ticket(backlog: 2) == 5)
        w.retryTimerFired()
        let reclaimed = w.claim(hasWork: true)
        #expect(reclaimed)
        w.took(2)
        let through5 = w.wrote(2)
        #expect(through5 == 5)
        w.appended()
        #expect(!w.failing && w.ticket(backlog: 0) == 5)
        w.took(0)
        #expect(w.ticket(backlog: 1) == 6)
    }
}
