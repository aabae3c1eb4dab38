import Foundation
import Testing
import TrackerCore

@testable import ScoreTracker

@Suite struct LifecycleScenarios {
    func times(_ h: Harness) -> [Int64] { h.tx.eventRequests.map { ($0.at - T0) / 1000 } }

    /// SC79's steps; returns the bound client and its source.
    func sc79(_ h: Harness) async -> (ScoreClient, LC) {
        let c = h.client(granted: true)
        let lc = LC(clock: h.clock, state: .foreground)
        c.pv()
        c.bindToAppLifecycle(source: lc)
        await h.settle()
        await h.at(T0 + 10 * SEC)
        c.pv()
        await h.at(T0 + 40 * SEC)
        c.pv()
        await h.at(T0 + 60 * SEC)
        return (c, lc)
    }

    @Test func SC79_foregroundFlushAnd30sPeriod() async {
        let h = Harness()
        _ = await sc79(h)
        #expect(times(h) == [0, 30, 60])
        #expect(h.tx.eventRequests.map(\.ids) == [[E(1)], [E(2)], [E(3)]])
    }

    @Test func SC80_background() async {
        let h = Harness()
        let (c, lc) = await sc79(h)
        await h.at(T0 + 61 * SEC)
        c.pv()
        await h.at(T0 + 70 * SEC)
        await lc.emit(.background)
        #expect(times(h) == [0, 30, 60, 70])
        #expect(lc.begins == [T0 + 70 * SEC] && lc.ends == [T0 + 70 * SEC])
        await h.at(T0 + 71 * SEC)
        c.pv()
        await h.at(T0 + 199 * SEC)
        #expect(times(h) == [0, 30, 60, 70])
        await h.at(T0 + 200 * SEC)
        await lc.emit(.foreground)
        await h.at(T0 + 201 * SEC)
        c.pv()
        await h.at(T0 + 230 * SEC)
        #expect(times(h) == [0, 30, 60, 70, 200, 230])
    }

    func boundedBackground(budget: Double?, givesUpAt: Int64, lateStatus: Int = 500) async {
        let h = Harness()
        let c = h.client(granted: true)
        let lc = LC(clock: h.clock, state: .foreground)
        if let budget { c.bindToAppLifecycle(source: lc, backgroundBudgetSeconds: budget) } else { c.bindToAppLifecycle(source: lc) }
        await h.settle()
        h.tx.answerAll(.hang)
        await h.at(T0 + SEC)
        c.pv()
        await h.at(T0 + 2 * SEC)
        await lc.emit(.background)
        #expect(times(h) == [2])
        await h.at(T0 + (givesUpAt - 1) * SEC)
        #expect(lc.ends.isEmpty)
        await h.at(T0 + givesUpAt * SEC)
        #expect(lc.ends == [T0 + givesUpAt * SEC])
        let at = Timestamp.format(ms: T0 + givesUpAt * SEC)
        #expect(c.inspect().lastFlush == .init(at: at, ok: false, sent: 0, consecutiveFailures: 1))
        #expect(c.inspect().queue.depth == 1)
        h.tx.answerAll(.status(200))
        // The late answer no longer changes the abandoned flush's outcome. Decided for issue 14
        // (item 1), where the spec's "answers that arrive later are ignored" let a late 2xx's
        // events be sent twice: a late 2xx still removes its events; any other answer leaves them
        // queued for the next flush (here, the foreground's at T0+60 s).
        h.tx.releaseHung(status: lateStatus)
        await h.settle()
        #expect(c.inspect().queue.depth == (lateStatus == 200 ? 0 : 1))
        #expect(c.inspect().lastFlush.ok == false)
        await h.at(T0 + 60 * SEC)
        await lc.emit(.foreground)
        if lateStatus == 200 {
            #expect(h.tx.eventRequests.count == 1)  // delivered once, never sent again
        } else {
            #expect(h.tx.eventRequests.last?.at == T0 + 60 * SEC)
            #expect(h.tx.eventRequests.last?.ids == [E(1)])
        }
        #expect(c.inspect().queue.depth == 0)
    }

    @Test func SC81_backgroundFlushBoundedLosesNothing() async {
        await boundedBackground(budget: nil, givesUpAt: 7)
        await boundedBackground(budget: nil, givesUpAt: 7, lateStatus: 200)
    }

    @Test func SC82_boundInBackgroundNetwork() async {
        let h = Harness()
        let c = h.client(granted: true)
        let lc = LC(clock: h.clock, state: .background)
        c.pv()
        c.bindToAppLifecycle(source: lc)
        await h.settle()
        #expect(h.tx.records.isEmpty)
        await h.at(T0 + 10 * SEC)
        await lc.emit(.networkAvailable)
        c.pv()
        await h.at(T0 + 20 * SEC)
        await lc.emit(.foreground)
        await h.at(T0 + 21 * SEC)
        c.pv()
        await h.at(T0 + 50 * SEC)
        #expect(times(h) == [10, 20, 50])
    }

    @Test func SC83_optionsAndUnbinding() async {
        do {
            let h = Harness()
            let c = h.client(granted: true)
            let lc = LC(clock: h.clock, state: .foreground)
            c.pv()
            c.bindToAppLifecycle(source: lc, autoFlushEverySeconds: nil)
            await h.settle()
            #expect(times(h) == [0])
            await h.at(T0 + 10 * SEC)
            c.pv()
            await h.at(T0 + 300 * SEC)
            #expect(times(h) == [0])
        }
        await boundedBackground(budget: 2, givesUpAt: 4)
        do {
            let h = Harness()
            let c = h.client(granted: true)
            let lc = LC(clock: h.clock, state: .foreground)
            c.pv()
            let binding = c.bindToAppLifecycle(source: lc)
            await h.settle()
            binding.unbind()
            let before = h.tx.records.count
            c.pv()
            await lc.emit(.background)
            await lc.emit(.foreground)
            await lc.emit(.networkAvailable)
            await h.advance(300 * SEC)
            #expect(h.tx.records.count == before)
        }
    }

    @Test func SC84_manualControl() async {
        let h = Harness()
        let c = h.client(granted: true)
        h.tx.script { _, _ in
            c.pv()
            return .status(200)
        }
        c.pv()
        await h.settle()
        c.onForeground()
        c.startAutoFlush(everySeconds: 10)
        await h.settle()
        await h.at(T0 + 25 * SEC)
        c.onBackground()
        await h.settle()
        await h.at(T0 + 59 * SEC)
        #expect(times(h) == [0, 10, 20, 25])
        await h.at(T0 + 60 * SEC)
        c.onForeground()
        await h.settle()
        await h.at(T0 + 75 * SEC)
        c.stopAutoFlush()
        await h.at(T0 + 119 * SEC)
        #expect(times(h) == [0, 10, 20, 25, 60, 70])
        await h.at(T0 + 120 * SEC)
        c.onNetworkAvailable()
        await h.settle()
        #expect(times(h) == [0, 10, 20, 25, 60, 70, 120])
    }

    @Test func SC85_overlappingFlushesJoin() async {
        let h = Harness()
        let c = h.client(granted: true)
        let p = Provider(h.clock) { _ in .after(1_000, "tok") }
        c.setTokenProvider { try await p.call() }
        h.tx.answerAll(.delayed(2_000, 200))
        c.pv()
        await h.settle()
        let returned = TimeLog()
        var tasks: [Task<Void, Never>] = []
        for _ in 0..<3 {
            tasks.append(
                h.clock.executor.startTask { [clock = h.clock] in
                    try? await c.flush()
                    returned.add(clock.nowMs())
                })
        }
        await h.settle()
        c.onNetworkAvailable()
        c.onForeground()
        await h.at(T0 + 500)
        c.pv()
        await h.at(T0 + 3_000)
        for t in tasks { _ = await bounded(t, "a joined flush") }
        #expect(p.calls == 1)
        #expect(h.tx.eventRequests.count == 1)
        #expect(h.tx.eventRequests[0].ids == [E(1)] && h.tx.eventRequests[0].at == T0 + 1_000)
        #expect(returned.all == [T0 + 3_000, T0 + 3_000, T0 + 3_000])
        h.tx.answerAll(.status(200))
        let f = await h.startFlush(c)
        await h.advance(1_000)
        _ = await bounded(f, "the flush")
        #expect(h.tx.eventRequests.last?.ids == [E(2)])
    }

    @Test func SC86_sessionRotation() async {
        let h = Harness()
        let c = h.client(granted: true)
        let lc = LC(clock: h.clock, state: .foreground)
        c.bindToAppLifecycle(source: lc)
        await h.settle()
        await lc.emit(.background)
        await h.at(T0 + 29 * 60 * SEC + 59 * SEC)
        await lc.emit(.foreground)
        c.pv()
        await h.at(T0 + 30 * 60 * SEC)
        await lc.emit(.background)
        await h.at(T0 + 60 * 60 * SEC)
        await lc.emit(.foreground)
        c.pv()
        await h.flush(c)
        let pvs = h.tx.eventRequests.flatMap(\.events).filter { $0["name"] == "poll_vote" }
        #expect(pvs.map { $0["sessionId"]?.stringValue } == [S(1), S(2)])
        #expect(c.inspect().identity.sessionId == S(2))
    }
}

final class TimeLog: Sendable {
    private let items = Locked<[Int64]>([])
    func add(_ t: Int64) { items.withLock { $0.append(t) } }
    var all: [Int64] { items.withLock { $0 } }
}
