import Foundation
import Testing
import TrackerCore

@testable import ScoreTracker

@Suite struct BatchingScenarios {
    @Test func SC72_hundredEventsPerRequest() async {
        let h = Harness()
        let c = h.client(granted: true)
        for n in 1...250 { c.track("e\(n)") }
        await h.flush(c)
        let r = h.tx.eventRequests
        #expect(r.map { $0.events.count } == [100, 100, 50])
        #expect(r.flatMap(\.ids) == (1...250).map(E))
        #expect(Set(r.map { $0.json["sentAt"]?.stringValue ?? "" }).count == 1)
        #expect(c.inspect().queue.depth == 0)
        #expect(c.inspect().lastFlush.ok == true && c.inspect().lastFlush.sent == 250)
    }

    @Test func SC73_512KiBPerRequest() async {
        let h = Harness()
        let c = h.client(granted: true)
        for _ in 1...3 { c.track("big", properties: ["blob": String(repeating: "x", count: 200_000)]) }
        await h.flush(c)
        let r = h.tx.eventRequests
        #expect(r.map { $0.events.count } == [2, 1])
        #expect(r.allSatisfy { ($0.request.body?.count ?? 0) <= 524_288 })
    }

    @Test func SC74_eventTooLargeForAnyRequest() async {
        let h = Harness()
        let c = h.client(granted: true)
        c.track("huge", properties: ["blob": String(repeating: "x", count: 524_288)])
        await h.flush(c)
        #expect(c.inspect().queue.invalid == 1)
        #expect(c.inspect().queue.depth == 0)
        #expect(h.tx.records.isEmpty)
    }

    @Test func SC75_413HalvesTheBatch() async throws {
        let h = Harness()
        let c = h.client(granted: true)
        h.tx.script { r, _ in
            let n = ((try? WireJSON.decode(r.body ?? []))?["events"]?.arrayValue?.count) ?? 0
            return n > 25 ? .status(413) : .status(200)
        }
        for n in 1...100 { c.track("e\(n)") }
        try #require(await flushed(c)).get()
        await h.settle()
        #expect(h.tx.eventRequests.map { $0.events.count } == [100, 50, 25, 25, 25, 25])
        let i = c.inspect()
        #expect(i.queue.depth == 0)
        #expect(i.lastFlush.ok == true && i.lastFlush.sent == 100 && i.lastFlush.consecutiveFailures == 0)
        h.tx.answerAll(.status(200))
        for n in 1...100 { c.track("f\(n)") }
        await h.flush(c)
        #expect(h.tx.eventRequests[6].events.count == 100)
    }

    @Test func SC76_413ForASingleEvent() async {
        let h = Harness()
        let c = h.client(granted: true)
        h.tx.script { r, _ in
            String(decoding: r.body ?? [], as: UTF8.self).contains(E(2)) ? .status(413) : .status(200)
        }
        c.pv()
        c.pv()
        c.pv()
        var threw: Error?
        if case .failure(let e)? = await flushed(c) { threw = e }
        await h.settle()
        #expect(h.tx.batches == [[E(1), E(2), E(3)], [E(1)], [E(2)], [E(3)]])
        let i = c.inspect()
        #expect(i.queue.depth == 1)
        #expect(i.lastFlush.ok == false && i.lastFlush.sent == 2 && i.lastFlush.consecutiveFailures == 1)
        #expect((threw as? ScoreError)?.code == "flushFailed")
    }

    @Test func SC77_failureKeepsEventsAndCounts() async {
        let h = Harness()
        let c = h.client(granted: true)
        h.tx.script { _, i in i == 0 ? .status(200) : .status(500) }
        for n in 1...120 { c.track("e\(n)") }
        var threw: Error?
        if case .failure(let e)? = await flushed(c) { threw = e }
        await h.settle()
        #expect(h.tx.eventRequests.count == 2)
        #expect((threw as? ScoreError)?.code == "flushFailed")
        var i = c.inspect()
        #expect(i.queue.depth == 20)
        #expect(i.lastFlush.ok == false && i.lastFlush.sent == 100 && i.lastFlush.consecutiveFailures == 1)
        h.tx.answerAll(.status(503))
        await h.flush(c)
        #expect(c.inspect().lastFlush.consecutiveFailures == 2)
        h.tx.answerAll(.error)
        await h.flush(c)
        #expect(c.inspect().lastFlush.consecutiveFailures == 3)
        h.tx.answerAll(.status(200))
        await h.flush(c)
        i = c.inspect()
        #expect(i.lastFlush.consecutiveFailures == 0 && i.lastFlush.sent == 20 && i.queue.depth == 0)
    }

    @Test func SC78_a2xxRemovesExactlyTheSentEvents() async {
        let h = Harness()
        let c = h.client(granted: true)
        c.pv()
        c.pv()
        h.tx.script { _, i in i == 0 ? .hang : .status(200) }
        let f = await h.startFlush(c)
        #expect(h.tx.records.count == 1)
        c.pv()
        await h.settle()
        h.tx.releaseHung()
        await h.settle()
        _ = await bounded(f, "the flush")
        #expect(c.inspect().queue.depth == 1)
        await h.flush(c)
        #expect(h.tx.batches.last == [E(3)])
    }
}
