#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// A reference-typed, lock-protected value that closures can share.
///
/// Built on a `pthread_mutex_t` rather than `Synchronization.Mutex`: ThreadSanitizer understands
/// pthread mutexes, so `make test-tsan` sees the ordering they give and reports only real races
/// (it reports every access guarded by a futex-based `Mutex` as a race). Like `Mutex`, the value
/// is only ever touched while the lock is held.
public final class Locked<Value>: @unchecked Sendable {
    private let mutex: UnsafeMutablePointer<pthread_mutex_t>
    private var storage: Value

    /// Creates the box holding `value`.
    public init(_ value: Value) {
        storage = value
        mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
        mutex.initialize(to: pthread_mutex_t())
        pthread_mutex_init(mutex, nil)
    }

    deinit {
        pthread_mutex_destroy(mutex)
        mutex.deinitialize(count: 1)
        mutex.deallocate()
    }

    /// Runs `body` with exclusive access to the value. `body` must not call back into this box.
    @discardableResult
    @inline(__always)
    public func withLock<R>(_ body: (inout Value) throws -> R) rethrows -> R {
        #if os(Linux)
            if pthread_mutex_trylock(mutex) != 0 { lockContended() }
        #else
            pthread_mutex_lock(mutex)
        #endif
        defer { pthread_mutex_unlock(mutex) }
        if MemoryLayout<Value>.size == 0 {
            // A value that takes no room (a `Locked<()>` used as a plain lock): `body` gets a
            // copy, never the stored property itself. ThreadSanitizer counts an `inout` access to
            // a stored property as a write at its address, and an empty one's address is the
            // object's first word, which every thread reads (the object's type) before it takes
            // the mutex: two threads taking such a box were reported as a race (seen in
            // `make test-tsan`, on `FileScoreStore`'s lock; `LockedTests`). A copy of nothing
            // loses nothing.
            var none = storage
            return try body(&none)
        }
        return try body(&storage)
    }

    #if os(Linux)
        /// Every hold of a box is short (a few microseconds at most), while putting a thread to sleep
        /// and waking it costs tens of microseconds (measured on a 2-vCPU Linux VM: a Score recording
        /// call that met the background writer in its lock took 15–30 µs): spin on `trylock` for up
        /// to 30 µs before blocking. (Moved here from Score's former `LockedState`.)
        @inline(never)
        private func lockContended() {
            let deadline = MonotonicClock.nowNs() &+ 30_000
            var round = 0
            while true {
                for _ in 0..<16 where pthread_mutex_trylock(mutex) == 0 { return }
                round += 1
                if round & 7 == 0, MonotonicClock.nowNs() > deadline { break }
            }
            pthread_mutex_lock(mutex)
        }
    #endif

    /// A copy of the current value.
    public var value: Value { withLock { $0 } }
}
