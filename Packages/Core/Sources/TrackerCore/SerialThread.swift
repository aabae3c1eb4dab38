import CTrackerCurlShim

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// A thread of its own that runs blocking work (an `fsync`, say) one closure at a time, in order,
/// on every OS version: never on one of the few threads of Swift's shared concurrency pool, and
/// never on ``BackgroundIOThread`` (whose appends must not wait behind it).
///
/// The thread starts with the first closure and runs for the life of the process, sleeping while
/// it has nothing to do (utility quality of service on Apple platforms, nice 5 on Linux).
public final class SerialThread: @unchecked Sendable {
    private let name: String
    private let condition = NativeCondition()
    // Guarded by `condition`.
    private var work: [@Sendable () -> Void] = []
    private var started = false
    private var sleeping = false
    private var thread: pthread_t?

    /// Creates a thread named `name` (started with its first closure).
    public init(name: String) {
        self.name = name
    }

    /// Whether the calling code runs on this thread.
    public var isCurrent: Bool {
        condition.lock()
        defer { condition.unlock() }
        guard let thread else { return false }
        return pthread_equal(thread, pthread_self()) != 0
    }

    /// Runs `body` on the thread after the closures queued before it.
    public func run(_ body: @escaping @Sendable () -> Void) {
        condition.lock()
        work.append(body)
        if !started {
            started = true
            NativeThread.start(utility: true) { [self] in loop() }
        } else if sleeping {
            condition.signal()
        }
        condition.unlock()
    }

    private func loop() {
        ctracker_name_current_thread(name)
        _ = ctracker_nice_current_thread(5)
        condition.lock()
        thread = pthread_self()
        condition.unlock()
        while true {
            condition.lock()
            while work.isEmpty {
                sleeping = true
                condition.wait()
                sleeping = false
            }
            let batch = work
            work = []
            condition.unlock()
            for body in batch { body() }
        }
    }
}
