// The production scheduler's timers (issue 19 item 3: nothing wakes when idle). A cancelled
// timer is a cancelled Dispatch source: it does not wake a thread at its deadline.
//
// New scenarios: I4 a timer fires once, I5 cancelling a timer cancels its Dispatch source and
// its work never runs.
import Dispatch
import Testing
import TrackerCoreTestKit

@testable import TrackerCore

@Suite struct SystemSchedulerTests {
    @Test func I4_aTimerFiresOnce() async {
        let scheduler = SystemScheduler()
        let runs = Locked(0)
        let fired = await boundedWait(what: "the timer", onTimeout: { false }) { once in
            let token = scheduler.schedule(afterMs: 0) {
                runs.withLock { $0 += 1 }
                once.resume(returning: true)
            }
            _ = token
        }
        #expect(fired)
        #expect(runs.value == 1)
    }

    @Test func I5_cancellingATimerCancelsItsSource() async {
        let scheduler = SystemScheduler()
        let ran = Locked(false)
        let token = scheduler.schedule(afterMs: 3_600_000) { ran.withLock { $0 = true } }
        let source = scheduler.timerSource(token)
        #expect(source != nil)
        #expect(source?.isCancelled == false)
        scheduler.cancel(token)
        #expect(source?.isCancelled == true)
        #expect(scheduler.timerSource(token) == nil)
        // Cancelling again (or after it fired) does nothing.
        scheduler.cancel(token)
        #expect(!ran.value)
    }
}
