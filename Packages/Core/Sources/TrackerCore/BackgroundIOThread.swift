import CTrackerCurlShim

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// A thread of its own for the trackers' blocking file I/O, usable as a `TaskExecutor`.
///
/// A task started with this executor as its preference (``SystemScheduler/spawnIO(_:)``) runs
/// here, and so do the nonisolated `async` functions it awaits: a `write` or an `fsync` blocks
/// this thread, never one of the few threads of Swift's shared concurrency pool.
///
/// ``pause(microseconds:)`` suspends such a task without blocking the thread, so that a writer
/// can wait a little for more work before it goes idle. The thread wakes itself for it (a timed
/// wait), so a recording call that adds work meanwhile wakes nobody: it only appends under the
/// writer's lock. Other tasks' jobs run while one sleeps.
///
/// The thread starts with the first job and runs for the life of the process, sleeping while it
/// has nothing to do. On Apple platforms it runs at the utility quality of service; on Linux at a
/// nice value of 5, so that it yields to the app's own threads on a busy CPU.
public final class BackgroundIOThread: @unchecked Sendable {
    /// The process-wide I/O thread (`tracker.io`).
    public static let shared = BackgroundIOThread(name: "tracker.io")
    /// The thread of the snapshot outboxes' writes (`tracker.outbox`, ``SnapshotOutbox``): a
    /// write of the onboarding or paywall state never waits behind Score's log syncs.
    public static let outbox = BackgroundIOThread(name: "tracker.outbox")

    private struct Timer {
        var deadlineNs: UInt64
        var continuation: CheckedContinuation<Void, Never>
    }

    private let name: String
    private let condition = NativeCondition()
    // Guarded by `condition`.
    private var jobs: [UnownedJob] = []
    private var timers: [Timer] = []
    private var sleeping = false
    private var started = false
    private var thread: pthread_t?

    /// Creates an I/O thread named `name` (started with its first job).
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

    /// Suspends the calling task for about `microseconds`, then resumes it on this thread.
    /// Call it from a task running here (see ``isCurrent``); elsewhere it resumes at once.
    public func pause(microseconds: Int) async {
        guard isCurrent else { return }
        let deadline = MonotonicClock.nowNs() &+ UInt64(max(0, microseconds)) &* 1_000
        await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
            condition.lock()
            timers.append(Timer(deadlineNs: deadline, continuation: c))
            // The thread itself is running this call: it computes its next wake-up before it
            // waits again, so there is nobody to signal.
            condition.unlock()
        }
    }

    private func add(_ job: UnownedJob) {
        condition.lock()
        jobs.append(job)
        if !started {
            started = true
            NativeThread.start(utility: true) { [self] in run() }
        } else if sleeping {
            condition.signal()
        }
        condition.unlock()
    }

    private func run() {
        ctracker_name_current_thread(name)
        _ = ctracker_nice_current_thread(5)
        condition.lock()
        thread = pthread_self()
        condition.unlock()
        while true {
            condition.lock()
            var due: [CheckedContinuation<Void, Never>] = []
            while true {
                let now = MonotonicClock.nowNs()
                if !timers.isEmpty {
                    timers.removeAll { t in
                        guard t.deadlineNs <= now else { return false }
                        due.append(t.continuation)
                        return true
                    }
                }
                if !jobs.isEmpty || !due.isEmpty { break }
                sleeping = true
                if let next = timers.map(\.deadlineNs).min() {
                    condition.wait(ns: next &- now)
                } else {
                    condition.wait()
                }
                sleeping = false
            }
            let batch = jobs
            jobs = []
            condition.unlock()
            // A resumed task's next job is enqueued here (its preferred executor).
            for c in due { c.resume() }
            run(batch)
        }
    }

    private func run(_ batch: [UnownedJob]) {
        guard #available(macOS 15.0, iOS 18.0, watchOS 11.0, tvOS 18.0, visionOS 2.0, *) else {
            preconditionFailure("jobs arrive only through the TaskExecutor conformance")
        }
        let executor = asUnownedTaskExecutor()
        for job in batch { job.runSynchronously(on: executor) }
    }
}

@available(macOS 15.0, iOS 18.0, watchOS 11.0, tvOS 18.0, visionOS 2.0, *)
extension BackgroundIOThread: TaskExecutor {
    /// Queues `job` for the thread, waking it if it sleeps.
    public func enqueue(_ job: consuming ExecutorJob) {
        add(UnownedJob(job))
    }
}
