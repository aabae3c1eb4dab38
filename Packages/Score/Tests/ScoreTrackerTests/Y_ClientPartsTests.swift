import Testing

@testable import ScoreTracker

// The client state's parts that carry their own transitions (issue 35 item 6: `ClientState` at
// most 30 fields, its data grouped with the machine that uses it), driven without a client:
//   SC285 — the writer's backlog: removals join the one still waiting to be written (one record
//           per write), counted as dead records; taking the backlog starts a new join and
//           numbers the operations; a failed append puts them back first, in order.
//   SC286 — the token provider runs once at a time (a later run's answer does not end an
//           earlier claim's run), a `nil` answer keeps the last token; the identity writer runs
//           once at a time and writes again after a change meanwhile; the flush outcome counts
//           failures in a row.
@Suite struct ClientPartsTests {
    static func ids(_ op: WriteOp) -> [CompactEventId]? {
        if case .remove(let ids) = op { ids } else { nil }
    }

    @Test func SC285_theWritersBacklog() {
        var w = QueueWriterMachine(napsUs: [])
        let a = QueuedEvent(
            eventId: E(1), name: "a", timestampMs: T0, anonymousEpoch: 0, hasUserId: false, critical: false,
            notice: false, requires: 1, encoded: [1])
        w.queue(.add(a))
        w.queueRemoval([CompactEventId(E(7))])
        w.queueRemoval([CompactEventId(E(8)), CompactEventId(E(9))])
        #expect(w.backlog.count == 2, "the second removal joined the first")
        #expect(Self.ids(w.backlog[1]) == [E(7), E(8), E(9)].map(CompactEventId.init))
        #expect(w.deadRecords == 4, "three removed events and one removal record")
        #expect(w.ticket(backlog: w.backlog.count) == 2)

        let taken = w.takeBacklog()
        #expect(taken.count == 2 && w.backlog.isEmpty && w.taken == 2)
        // A removal after the take starts a record of its own.
        w.queueRemoval([CompactEventId(E(10))])
        #expect(w.backlog.count == 1 && w.deadRecords == 6)
        #expect(w.ticket(backlog: w.backlog.count) == 3)

        // The append of the two taken fails: they go back first, in order, numbered the same.
        _ = w.appendFailed(retryMs: 100, retryMaxMs: 30_000)
        w.putBack(taken)
        #expect(w.backlog.count == 3 && w.taken == 0 && w.written == 0)
        #expect(Self.ids(w.backlog[2]) == [CompactEventId(E(10))])
        // Put back, the last removal is no longer joined to (it may already be in an append).
        w.queueRemoval([CompactEventId(E(11))])
        #expect(w.backlog.count == 4)
        w.clearBacklog()
        #expect(w.backlog.isEmpty)
    }

    @Test func SC286_tokenIdentityWriterAndOutcome() {
        var t = TokenSource()
        let none = t.claim()
        #expect(none == nil, "no provider, nothing to run")
        t.provider = { "tok" }
        let first = t.claim()
        #expect(first == 1)
        let joined = t.claim()
        #expect(joined == nil, "single-flight: a second flush joins the run")
        t.finished(generation: 1, token: "t1")
        #expect(t.token == "t1" && !t.running)
        let second = t.claim()
        #expect(second == 2)
        t.finished(generation: 1, token: nil)  // an older run's late answer
        #expect(t.running && t.token == "t1")
        t.finished(generation: 2, token: nil)
        #expect(!t.running && t.token == "t1", "no token: the last one stays")

        var i = IdentityWriterMachine()
        var steps: [Bool] = []
        steps.append(i.claim())  // nothing changed
        i.changed()
        steps.append(i.claim())  // starts the writer
        steps.append(i.claim())  // one writer at a time
        steps.append(i.take())  // writes
        i.changed()  // changed while it writes
        steps.append(i.take())  // writes again
        steps.append(i.take())  // done: the writer ends
        steps.append(i.claim())
        #expect(steps == [false, true, false, true, true, false, false])
        #expect(!i.running && !i.dirty)

        var o = FlushOutcome()
        o.record(ok: false, sent: 0, at: 1)
        o.record(ok: false, sent: 2, at: 2)
        #expect(o.consecutiveFailures == 2 && o.ok == false && o.sent == 2 && o.at == 2)
        o.record(ok: true, sent: 3, at: 3)
        #expect(o.consecutiveFailures == 0 && o.ok == true)
    }
}
