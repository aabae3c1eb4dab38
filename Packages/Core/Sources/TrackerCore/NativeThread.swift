import CTrackerCurlShim

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// Threads and a condition variable straight on POSIX threads, so that Core needs no more of
/// Foundation than `FoundationEssentials` on Linux (full Foundation brings ICU, about 6.5 MB of
/// a process's resident memory, for nothing the trackers use).
enum NativeThread {
    private final class Start {
        let body: () -> Void
        init(_ body: @escaping () -> Void) { self.body = body }
    }

    /// How much of the processor a thread asks for.
    enum Priority {
        case normal
        /// Utility quality of service on Apple platforms (callers on Linux lower their own nice
        /// value as they see fit).
        case utility
        /// Background quality of service on Apple platforms, nice 19 on Linux: runs when nothing
        /// else wants the processor.
        case lowest
    }

    /// Starts a detached thread that runs `body`; `utility` asks for the utility quality of
    /// service on Apple platforms.
    static func start(utility: Bool = false, _ body: @escaping @Sendable () -> Void) {
        let status = spawn(utility ? .utility : .normal, body)
        precondition(status == 0, "pthread_create failed (\(status))")
    }

    /// Starts a detached thread at `priority` that runs `body`; `pthread_create`'s status (not
    /// 0: no thread, `body` is not run).
    static func spawn(_ priority: Priority, _ body: @escaping @Sendable () -> Void) -> Int32 {
        #if canImport(Darwin)
            let context = Unmanaged.passRetained(Start(body)).toOpaque()
        #else
            let lowest = priority == .lowest
            let context = Unmanaged.passRetained(
                Start {
                    if lowest { _ = ctracker_nice_current_thread(19) }
                    body()
                }
            ).toOpaque()
        #endif
        var attr = pthread_attr_t()
        pthread_attr_init(&attr)
        defer { pthread_attr_destroy(&attr) }
        pthread_attr_setdetachstate(&attr, Int32(PTHREAD_CREATE_DETACHED))
        #if canImport(Darwin)
            switch priority {
            case .normal: break
            case .utility: pthread_attr_set_qos_class_np(&attr, QOS_CLASS_UTILITY, 0)
            case .lowest: pthread_attr_set_qos_class_np(&attr, QOS_CLASS_BACKGROUND, 0)
            }
            var thread: pthread_t?
            let status = pthread_create(
                &thread, &attr,
                { context in
                    Unmanaged<Start>.fromOpaque(context).takeRetainedValue().body()
                    return nil
                }, context)
        #else
            var thread = pthread_t()
            let status = pthread_create(
                &thread, &attr,
                { context in
                    Unmanaged<Start>.fromOpaque(context!).takeRetainedValue().body()
                    return nil
                }, context)
        #endif
        if status != 0 { Unmanaged<Start>.fromOpaque(context).release() }
        return status
    }
}

/// A mutex with one condition variable; timed waits use the monotonic clock.
final class NativeCondition: @unchecked Sendable {
    private let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
    private let cond = UnsafeMutablePointer<pthread_cond_t>.allocate(capacity: 1)

    init() {
        pthread_mutex_init(mutex, nil)
        #if canImport(Darwin)
            pthread_cond_init(cond, nil)
        #else
            var attr = pthread_condattr_t()
            pthread_condattr_init(&attr)
            pthread_condattr_setclock(&attr, CLOCK_MONOTONIC)
            pthread_cond_init(cond, &attr)
            pthread_condattr_destroy(&attr)
        #endif
    }

    deinit {
        pthread_cond_destroy(cond)
        pthread_mutex_destroy(mutex)
        cond.deallocate()
        mutex.deallocate()
    }

    func lock() { pthread_mutex_lock(mutex) }
    func unlock() { pthread_mutex_unlock(mutex) }
    func signal() { pthread_cond_signal(cond) }

    /// Waits (the mutex held) until signalled.
    func wait() { pthread_cond_wait(cond, mutex) }

    /// Waits (the mutex held) until signalled or `ns` nanoseconds have passed.
    func wait(ns: UInt64) {
        #if canImport(Darwin)
            var rel = timespec(tv_sec: Int(ns / 1_000_000_000), tv_nsec: Int(ns % 1_000_000_000))
            pthread_cond_timedwait_relative_np(cond, mutex, &rel)
        #else
            var now = timespec()
            clock_gettime(CLOCK_MONOTONIC, &now)
            let total = UInt64(now.tv_nsec) + ns % 1_000_000_000
            var deadline = timespec()
            deadline.tv_sec = now.tv_sec + Int(ns / 1_000_000_000) + Int(total / 1_000_000_000)
            deadline.tv_nsec = Int(total % 1_000_000_000)
            pthread_cond_timedwait(cond, mutex, &deadline)
        #endif
    }
}
