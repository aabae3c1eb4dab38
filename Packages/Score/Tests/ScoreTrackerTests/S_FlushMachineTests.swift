import Testing

@testable import ScoreTracker

// The flush lifecycle as a pure state machine (issue 16), tested directly: no client, no I/O,
// no clock.
//
// New scenarios:
// SC139 start: persist first when needed, then the token provider when set, else send at once.
// SC140 the token step: the provider's answer or the timeout moves on, whichever comes first;
//       the later one does nothing.
// SC141 batches: a 2xx delivers and sends the next; a 413 for several events halves the batch
//       and sends again; a 413 for one event fails the flush, skips it and goes on; any other
//       answer fails the flush and goes to the link step.
// SC142 no event left: the link step, then completion (ok unless something failed).
// SC143 abandon completes at once as failed, from any phase; a completed flush ignores events.
// SC144 events that do not belong to the current phase are ignored.
@Suite struct FlushMachineTests {
    typealias M = FlushMachine

    @Test func SC139_start() {
        let (persisting, a1) = M.start(needsPersist: true, hasProvider: true, batchLimit: 100)
        #expect(persisting.phase == .waitingPersist && a1.isEmpty)
        var m = persisting
        #expect(m.handle(.persisted(hasProvider: false)) == [.sendNextBatch])
        #expect(m.phase == .sending)

        let (token, a2) = M.start(needsPersist: false, hasProvider: true, batchLimit: 100)
        #expect(token.phase == .waitingToken && a2 == [.consultToken])

        let (direct, a3) = M.start(needsPersist: false, hasProvider: false, batchLimit: 100)
        #expect(direct.phase == .sending && a3 == [.sendNextBatch])
        #expect(direct.batchLimit == 100)

        var later = persisting
        // The provider set while persisting counts: it is looked at when persisting ends.
        #expect(later.handle(.persisted(hasProvider: true)) == [.consultToken])
        #expect(later.phase == .waitingToken)
        #expect(M.start(needsPersist: false, hasProvider: false, batchLimit: 0).0.batchLimit == 1)
    }

    @Test func SC140_tokenStep() {
        var answered = M.start(needsPersist: false, hasProvider: true, batchLimit: 100).0
        #expect(answered.handle(.tokenSettled) == [.cancelTokenTimer, .sendNextBatch])
        #expect(answered.phase == .sending)
        #expect(answered.handle(.tokenTimedOut).isEmpty)

        var timedOut = M.start(needsPersist: false, hasProvider: true, batchLimit: 100).0
        #expect(timedOut.handle(.tokenTimedOut) == [.sendNextBatch])
        #expect(timedOut.handle(.tokenSettled).isEmpty)
        #expect(timedOut.phase == .sending)
    }

    @Test func SC141_batches() {
        var m = M.start(needsPersist: false, hasProvider: false, batchLimit: 100).0
        #expect(m.handle(.batchAnswered(status: 200, events: 100)) == [.deliverBatch, .sendNextBatch])
        #expect(m.handle(.batchAnswered(status: 204, events: 3)) == [.deliverBatch, .sendNextBatch])
        #expect(!m.failed)
        #expect(m.handle(.batchAnswered(status: 413, events: 9)) == [.sendNextBatch])
        #expect(m.batchLimit == 4)
        #expect(!m.failed)
        #expect(m.handle(.batchAnswered(status: 413, events: 1)) == [.skipRejectedEvent, .sendNextBatch])
        #expect(m.failed && m.phase == .sending)
        #expect(m.batchLimit == 4)

        for status in [500, 503, 429, 400, -1] {
            var f = M.start(needsPersist: false, hasProvider: false, batchLimit: 100).0
            #expect(f.handle(.batchAnswered(status: status, events: 5)) == [.link])
            #expect(f.failed && f.phase == .linking)
            #expect(f.handle(.linkFinished) == [.complete(ok: false)])
            #expect(f.phase == .completed(ok: false))
        }
    }

    @Test func SC142_linkAndCompletion() {
        var ok = M.start(needsPersist: false, hasProvider: false, batchLimit: 100).0
        _ = ok.handle(.batchAnswered(status: 200, events: 2))
        #expect(ok.handle(.batchesExhausted) == [.link])
        #expect(ok.phase == .linking)
        #expect(ok.handle(.linkFinished) == [.complete(ok: true)])
        #expect(ok.isCompleted && ok.phase == .completed(ok: true))

        var rejected = M.start(needsPersist: false, hasProvider: false, batchLimit: 100).0
        _ = rejected.handle(.batchAnswered(status: 413, events: 1))
        _ = rejected.handle(.batchesExhausted)
        #expect(rejected.handle(.linkFinished) == [.complete(ok: false)])
    }

    @Test func SC143_abandon() {
        let starts: [M] = [
            M.start(needsPersist: true, hasProvider: false, batchLimit: 100).0,
            M.start(needsPersist: false, hasProvider: true, batchLimit: 100).0,
            M.start(needsPersist: false, hasProvider: false, batchLimit: 100).0,
        ]
        for start in starts {
            var m = start
            #expect(m.handle(.abandon) == [.complete(ok: false)])
            #expect(m.phase == .completed(ok: false))
            #expect(m.handle(.abandon).isEmpty)
            #expect(m.handle(.persisted(hasProvider: false)).isEmpty)
            #expect(m.handle(.tokenSettled).isEmpty)
            #expect(m.handle(.batchAnswered(status: 200, events: 1)).isEmpty)
            #expect(m.handle(.batchesExhausted).isEmpty)
            #expect(m.handle(.linkFinished).isEmpty)
        }
        var linking = M.start(needsPersist: false, hasProvider: false, batchLimit: 100).0
        _ = linking.handle(.batchesExhausted)
        #expect(linking.handle(.abandon) == [.complete(ok: false)])
    }

    @Test func SC144_outOfPhaseEventsAreIgnored() {
        var persisting = M.start(needsPersist: true, hasProvider: false, batchLimit: 100).0
        #expect(persisting.handle(.tokenSettled).isEmpty)
        #expect(persisting.handle(.batchAnswered(status: 200, events: 1)).isEmpty)
        #expect(persisting.handle(.batchesExhausted).isEmpty)
        #expect(persisting.handle(.linkFinished).isEmpty)
        #expect(persisting.phase == .waitingPersist)

        var sending = M.start(needsPersist: false, hasProvider: false, batchLimit: 100).0
        #expect(sending.handle(.persisted(hasProvider: true)).isEmpty)
        #expect(sending.handle(.linkFinished).isEmpty)
        #expect(sending.phase == .sending)

        var linking = sending
        _ = linking.handle(.batchesExhausted)
        #expect(linking.handle(.batchAnswered(status: 200, events: 1)).isEmpty)
        #expect(linking.handle(.batchesExhausted).isEmpty)
        #expect(linking.phase == .linking)
    }
}
