import Testing
import TrackerCore
import TrackerCoreTestKit

@testable import RocalyticsClient

/// SV13: the signal the Apple platform sends on `protectedDataDidBecomeAvailable` and
/// `didBecomeActive` wakes every start-up waiting for it, once per wait.
@Suite struct ProtectedDataSignalTests {
    @Test func SV13_theProtectedDataSignalWakesEveryWaiterOnce() async {
        let signal = ProtectedDataSignal()
        let clock = ManualClock()
        let woke = Locked(0)
        for _ in 0..<2 { clock.spawn { if await signal.wait() { woke.withLock { $0 += 1 } } } }
        await clock.settle()
        #expect(signal.waiting == 2)
        #expect(woke.value == 0)
        signal.signal()
        await clock.settle()
        #expect(woke.value == 2)
        #expect(signal.waiting == 0)
        signal.signal()  // nobody waits: nothing happens
        #expect(woke.value == 2)
    }
}
