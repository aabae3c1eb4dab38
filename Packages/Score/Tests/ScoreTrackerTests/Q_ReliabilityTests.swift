import Foundation
import Synchronization
import Testing
import TrackerCore
import TrackerCoreTestKit
@testable import ScoreTracker

// Regression scenarios of issue 14 (Score), new ids:
//   SC120 — a late 2xx for a batch of an abandoned background flush removes its events; the next
//           flush does not send them again (no duplicate), and a late failure leaves them queued.
//   SC121 — an oversized `identify(userId:)` is dropped with one diagnostic and never stored.
//   SC122 — an oversized identity value already stored is discarded at load with a diagnostic.
//   SC123 — an event answered 413 alone by `maxRejectedAlone` flushes is dropped (not retried forever).
//   SC124 — events recorded while the disk is full stay pending and are written once space returns.
//   SC125 — appends continue while the queue log's fsync runs (sync outside the store's lock).
//   SC126 — a read-only queue directory: stored events are still sent, removals kept in memory,
//           one diagnostic.
//   SC127 — one diagnostic per call, with the count, for every per-key validation path.
//   SC128 — the envelope and body fields derived from the spec's table (not from golden files).
@Suite struct ReliabilityScenarios {
    // MARK: SC120

    /// The repro of issue 14 item 1 on the manual clock: queued events, `onBackground()`, the first
    /// batch answered after the 5 s budget, then `flush()`.
    @Test func SC120_lateSuccessOfAnAbandonedFlushIsNotSentTwice() async {
        let h = Harness()
        let c = h.client(maxQueueSize: 100_000, granted: true)
        for _ in 0..<300 { c.pv() }
        await h.settle()
        // The first request is answered 200 after 6 s; every later one at once.
        h.tx.script { _, i in i == 0 ? .delayed(6 * SEC, 200) : .status(200) }
        c.onBackground()
        await h.settle()
        await h.advance(5 * SEC + 100)
        #expect(c.inspect().lastFlush.ok == false) // abandoned at 5 s
        await h.flush(c)
        await h.advance(2 * SEC) // the late 2xx arrives
        await h.flush(c)
        let sent = h.tx.batches.flatMap { $0 }
        #expect(sent.count == 300)
        #expect(Set(sent).count == 300, "an event was sent twice")
        #expect(c.inspect().queue.depth == 0)
    }

    @Test func SC120_lateFailureOfAnAbandonedFlushKeepsTheEvents() async {
        let h = Harness()
        let c = h.client(granted: true)
        for _ in 0..<150 { c.pv() }
        await h.settle()
        h.tx.script { _, i in i == 0 ? .delayed(6 * SEC, 500) : .status(200) }
        c.onBackground()
        await h.settle()
        await h.advance(5 * SEC + 100)
        await h.flush(c) // sends the 50 not in flight
        #expect(c.inspect().queue.depth == 100)
        await h.advance(2 * SEC) // the late 500
        #expect(c.inspect().queue.depth == 100)
        await h.flush(c)
        #expect(c.inspect().queue.depth == 0)
        let sent = h.tx.batches.flatMap { $0 }
        // The 100 of the failed request were sent twice (once answered 500), the rest once.
        #expect(Set(sent).count == 150)
        #expect(sent.count == 250)
    }
}
