import TrackerCore

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// A value behind a `pthread_mutex_t`. Used instead of `Synchronization.Mutex` because
/// ThreadSanitizer intercepts pthread mutexes (a futex-based lock is invisible to it and makes
/// `make test-tsan` report every locked access as a race).
final class LockedState<Value>: @unchecked Sendable {
    private let mutex: UnsafeMutablePointer<pthread_mutex_t>
    private var value: Value

    init(_ value: Value) {
        self.value = value
        mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
        mutex.initialize(to: pthread_mutex_t())
        pthread_mutex_init(mutex, nil)
    }

    #if os(Linux)
    /// Every hold of this lock is short (a few microseconds at most), while putting a thread to
    /// sleep and waking it costs tens of microseconds (measured on a 2-vCPU Linux VM: a recording
    /// call that met the background writer in the lock took 15–30 µs): spin on `trylock` for up to
    /// 30 µs before blocking.
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

    deinit {
        pthread_mutex_destroy(mutex)
        mutex.deinitialize(count: 1)
        mutex.deallocate()
    }

    /// Runs `body` with exclusive access to the value.
    @inline(__always)
    func withLock<R>(_ body: (inout Value) throws -> R) rethrows -> R {
        #if os(Linux)
        if pthread_mutex_trylock(mutex) != 0 { lockContended() }
        #else
        pthread_mutex_lock(mutex)
        #endif
        defer { pthread_mutex_unlock(mutex) }
        return try body(&value)
    }
}
