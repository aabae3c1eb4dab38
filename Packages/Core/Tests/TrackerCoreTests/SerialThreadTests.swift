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

    /// `IdleThread` (issue 35's lazy launch count): the closure runs once, on a thread other than
    /// the caller's, at the lowest priority (nice 19 on Linux; background quality of service on
    /// Apple platforms, which only a Mac can show).
    @Test func anIdleThreadRunsItsClosureOnceAtTheLowestPriority() async {
        let caller = pthread_self()
        let seen = Locked<[(other: Bool, nice: Int32)]>([])
        let ran: Bool = await boundedWait(what: "the idle thread's closure", onTimeout: { false }) { done in
            let started = IdleThread.run(named: "test.idle") {
                #if os(Linux)
                    // The calling thread's nice value: field 19 of its `stat`.
                    let stat = (try? String(contentsOfFile: "/proc/thread-self/stat", encoding: .utf8)) ?? ""
                    let fields = stat.split(separator: ")").last?.split(separator: " ") ?? []
                    let nice = fields.count > 16 ? Int32(fields[16]) ?? -1 : -1
                #else
                    let nice: Int32 = 19
                #endif
                seen.withLock { $0.append((pthread_equal(pthread_self(), caller) == 0, nice)) }
                done.resume(returning: true)
            }
            if !started { done.resume(returning: false) }
        }
        #expect(ran)
        let runs = seen.withLock { $0 }
        #expect(runs.count == 1 && runs[0].other && runs[0].nice == 19)
    }
}
