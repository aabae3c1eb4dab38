import Dispatch

/// Identifies a scheduled timer so it can be cancelled.
public struct TimerToken: Hashable, Sendable {
    /// Opaque identifier, unique per scheduler.
    public let id: UInt64
    /// Creates a token.
    public init(id: UInt64) { self.id = id }
}

/// Runs every timer and every background step of a tracker.
///
/// Trackers never create tasks or timers on their own: they go through this protocol, so that
/// tests can run them on `ManualClock` (in `TrackerCoreTestKit`), wait until no work is
/// runnable, and then advance time.
public protocol TrackerScheduler: Sendable {
    /// Runs `work` once, `afterMs` milliseconds from now on the scheduler's clock (at once
    /// when `afterMs <= 0`, but never synchronously inside this call).
    @discardableResult
    func schedule(afterMs: Int64, _ work: @escaping @Sendable () -> Void) -> TimerToken
    /// Cancels a timer that has not fired yet; does nothing otherwise.
    func cancel(_ token: TimerToken)
    /// Starts a background step (never on the caller's thread).
    func spawn(_ work: @escaping @Sendable () async -> Void)
    /// Starts a background step that blocks on file I/O (appends, `fsync`). The system scheduler
    /// runs it on ``BackgroundIOThread/shared`` rather than on Swift's shared concurrency pool.
    /// Default: ``spawn(_:)``.
    func spawnIO(_ work: @escaping @Sendable () async -> Void)
    /// Suspends an I/O step started by ``spawnIO(_:)`` for about `microseconds` of real time, so
    /// that it can wait a little for more work before it goes idle, and returns `true`; returns
    /// `false` at once when this scheduler does not pause steps (the default, and the manual
    /// clock): the step then goes idle at once.
    func pauseIO(microseconds: Int) async -> Bool
    /// Starts a step of a snapshot outbox's writes (``SnapshotOutbox``). The system scheduler runs
    /// it on ``BackgroundIOThread/outbox``, a thread of its own: never on Swift's shared
    /// concurrency pool, never behind another engine's `fsync` on ``BackgroundIOThread/shared``.
    /// Default: ``spawn(_:)``.
    func spawnOutbox(_ work: @escaping @Sendable () async -> Void)
}

extension TrackerScheduler {
    public func spawnIO(_ work: @escaping @Sendable () async -> Void) { spawn(work) }
    public func pauseIO(microseconds: Int) async -> Bool { false }
    public func spawnOutbox(_ work: @escaping @Sendable () async -> Void) { spawn(work) }
}

/// The production scheduler: timers on a Dispatch queue, steps as detached tasks.
///
/// Each timer is a Dispatch timer source, cancelled by ``cancel(_:)``: a cancelled timer is gone,
/// it does not wake a thread at its deadline only to find that it has nothing to do.
public final class SystemScheduler: TrackerScheduler {
    /// A process-wide instance.
    public static let shared = SystemScheduler()

    /// A timer source (Dispatch's sources are thread-safe; the wrapper only carries it across the lock).
    private struct Source: @unchecked Sendable {
        let timer: any DispatchSourceTimer
    }

    private let queue = DispatchQueue(label: "tracker.scheduler", attributes: .concurrent)
    private let state = Locked<(next: UInt64, live: [UInt64: Source])>((1, [:]))

    /// Creates a scheduler.
    public init() {}

    @discardableResult
    public func schedule(afterMs: Int64, _ work: @escaping @Sendable () -> Void) -> TimerToken {
        let delay = Int(min(max(0, afterMs), Int64(Int32.max)))
        let timer = DispatchSource.makeTimerSource(queue: queue)
        timer.schedule(deadline: .now() + .milliseconds(delay))
        let id = state.withLock { s -> UInt64 in
            let id = s.next
            s.next += 1
            s.live[id] = Source(timer: timer)
            return id
        }
        timer.setEventHandler { [self] in
            guard let source = state.withLock({ $0.live.removeValue(forKey: id) }) else { return }
            source.timer.cancel()
            work()
        }
        timer.resume()
        return TimerToken(id: id)
    }

    public func cancel(_ token: TimerToken) {
        state.withLock { $0.live.removeValue(forKey: token.id) }?.timer.cancel()
    }

    /// The Dispatch source of a timer that has neither fired nor been cancelled (for tests).
    func timerSource(_ token: TimerToken) -> (any DispatchSourceTimer)? {
        state.withLock { $0.live[token.id]?.timer }
    }

    public func spawn(_ work: @escaping @Sendable () async -> Void) {
        Task.detached { await work() }
    }

    /// Runs `work` with ``BackgroundIOThread/shared`` as its executor preference.
    public func spawnIO(_ work: @escaping @Sendable () async -> Void) {
        if #available(macOS 15.0, iOS 18.0, watchOS 11.0, tvOS 18.0, visionOS 2.0, *) {
            Task.detached(executorPreference: BackgroundIOThread.shared) { await work() }
        } else {
            spawn(work)
        }
    }

    /// Runs `work` with ``BackgroundIOThread/outbox`` as its executor preference (before macOS 15,
    /// iOS 18, tvOS 18 and visionOS 2, where task executors do not exist, as ``spawn(_:)``).
    public func spawnOutbox(_ work: @escaping @Sendable () async -> Void) {
        if #available(macOS 15.0, iOS 18.0, watchOS 11.0, tvOS 18.0, visionOS 2.0, *) {
            Task.detached(executorPreference: BackgroundIOThread.outbox) { await work() }
        } else {
            spawn(work)
        }
    }

    /// Pauses a step running on ``BackgroundIOThread/shared`` (see
    /// ``BackgroundIOThread/pause(microseconds:)``); `false` anywhere else.
    public func pauseIO(microseconds: Int) async -> Bool {
        guard BackgroundIOThread.shared.isCurrent else { return false }
        await BackgroundIOThread.shared.pause(microseconds: microseconds)
        return true
    }
}
