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
    public func withLock<R>(_ body: (inout Value) throws -> R) rethrows -> R {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return try body(&storage)
    }

    /// A copy of the current value.
    public var value: Value { withLock { $0 } }
}
