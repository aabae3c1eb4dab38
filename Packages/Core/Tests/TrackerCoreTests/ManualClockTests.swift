import Testing
import TrackerCore
import TrackerCoreTestKit

@Suite struct ManualClockTests {
    @Test func settleWaitsForSpawnedChains() async {
        let clock = ManualClock()
        let log = Locked<[String]>([])
        clock.spawn {
            log.withLock { $0.append("a") }
            await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
                clock.spawn {
                    log.withLock { $0.append("b") }
                    c.resume()
                }
            }
            log.withLock { $0.append("c") }
        }
        await clock.settle()
        #expect(log.withLock { $0 } == ["a", "b", "c"])
    }

    @Test func timersFireInDueOrderAtTheirOwnTime() async {
        let clock = ManualClock(startMs: 1000)
        let log = Locked<[String]>([])
        clock.schedule(afterMs: 200) { log.withLock { $0.append("200@\(clock.nowMs())") } }
        clock.schedule(afterMs: 100) {
            log.withLock { $0.append("100@\(clock.nowMs())") }
            clock.schedule(afterMs: 50) { log.withLock { $0.append("150@\(clock.nowMs())") } }
        }
        let cancelled = clock.schedule(afterMs: 120) { log.withLock { $0.append("cancelled") } }
        clock.cancel(cancelled)
        await clock.advance(byMs: 199)
        #expect(log.withLock { $0 } == ["100@1100", "150@1150"])
        #expect(clock.nowMs() == 1199)
        await clock.advance(byMs: 1)
        #expect(log.withLock { $0 } == ["100@1100", "150@1150", "200@1200"])
        #expect(clock.pendingTimerCount == 0)
    }

    @Test func zeroDelayTimerRunsOnlyWhenTimeIsAdvanced() async {
        let clock = ManualClock()
        let fired = Locked(false)
        clock.schedule(afterMs: 0) { fired.withLock { $0 = true } }
        await clock.settle()
        #expect(fired.withLock { $0 } == false)
        await clock.advance(byMs: 0)
        #expect(fired.withLock { $0 } == true)
    }
}
