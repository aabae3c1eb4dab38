import Foundation
import Testing
import TrackerCore
import TrackerCoreTestKit

/// `SerialThread` (issue 35): closures run in order, on the thread of their own, one at a time;
/// a closure blocked there (a slow `fsync`) holds neither the caller nor the I/O thread.
@Suite struct SerialThreadTests {
    @Test func closuresRunInOrderOnTheThreadOfTheirOwn() async {
        let thread = SerialThread(name: "test.serial")
        #expect(!thread.isCurrent)
        let seen = Locked<[(Int, Bool)]>([])
        let all: Bool = await boundedWait(what: "the serial thread's closures", onTimeout: { false }) { done in
            for n in 0..<50 {
                thread.run {
                    seen.withLock { $0.append((n, thread.isCurrent)) }
                    if n == 49 { done.resume(returning: true) }
                }
            }
        }
        #expect(all)
        let order = seen.withLock { $0 }
        #expect(order.map(\.0) == Array(0..<50))
        #expect(order.allSatisfy { $0.1 })
    }

    @Test func aBlockedClosureHoldsOnlyItsOwnThread() async {
        let thread = SerialThread(name: "test.serial.blocked")
        let gate = DispatchSemaphore(value: 0)
        thread.run { _ = gate.wait(timeout: .now() + 20) }
        // The caller goes on at once, and so does other work.
        let other: Bool = await boundedWait(what: "work beside a blocked serial thread", onTimeout: { false }) { done in
            DispatchQueue.global().async { done.resume(returning: true) }
        }
        #expect(other)
        let after: Bool = await boundedWait(what: "the closure after the blocked one", onTimeout: { false }) { done in
            thread.run { done.resume(returning: true) }
            gate.signal()
        }
        #expect(after)
    }
}
