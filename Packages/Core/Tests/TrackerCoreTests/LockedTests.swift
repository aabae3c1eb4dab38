import Dispatch
import Testing
import TrackerCore

/// `Locked`: one holder at a time, whatever the value's size. A box with no value (`Locked<()>`,
/// a plain lock, as `FileScoreStore` keeps) taken by several threads at once was reported as a
/// race by ThreadSanitizer: the value, taking no room, was counted at the object's first word,
/// which each thread reads before it takes the mutex. The body now gets a copy of an empty value,
/// and `make test-tsan` runs these under ThreadSanitizer (it reported the first in 3 of 3 runs
/// before).
@Suite struct LockedTests {
    /// A counter that only the box's holder touches (no lock of its own).
    final class Unguarded: @unchecked Sendable {
        var count = 0
    }

    @Test func aBoxWithNoValueLetsOneThreadInAtATime() {
        let lock = Locked(())
        let counter = Unguarded()
        DispatchQueue.concurrentPerform(iterations: 4) { _ in
            for _ in 0..<100_000 {
                lock.withLock { _ in counter.count += 1 }
            }
        }
        #expect(lock.withLock { _ in counter.count } == 400_000)
    }

    @Test func aBoxKeepsItsValueAcrossThreads() {
        let box = Locked([Int]())
        DispatchQueue.concurrentPerform(iterations: 4) { i in
            for k in 0..<1_000 { box.withLock { $0.append(i * 1_000 + k) } }
        }
        #expect(box.value.sorted() == Array(0..<4_000))
        // A value with a class inside: released with the box.
        final class Tracked: Sendable {
            let released: Locked<Bool>
            init(_ released: Locked<Bool>) { self.released = released }
            deinit { released.withLock { $0 = true } }
        }
        let released = Locked(false)
        do {
            let holder = Locked<Tracked?>(Tracked(released))
            #expect(holder.withLock { $0 != nil })
        }
        #expect(released.value)
    }
}
