import Foundation
import TrackerCore

/// A manual clock and scheduler for deterministic tests.
///
/// Time moves only when a test calls ``advance(byMs:)`` or ``set(ms:)``. Background steps
/// spawned through the scheduler run on one serial executor thread owned by the clock, so the
/// clock knows when no work is runnable: ``settle()`` waits for that moment. Work suspended on
/// something outside the clock (a real network request, a sink the test holds open) is not
/// runnable and does not keep ``settle()`` waiting.
public final class ManualClock: TrackerClock, TrackerScheduler, @unchecked Sendable {
    private struct Timer {
        let id: UInt64
        let due: Int64
        let work: @Sendable () -> Void
    }

    private struct State {
        var now: Int64
        var nextId: UInt64 = 1
        var timers: [Timer] = []
    }

    private let state: Locked<State>
    /// The serial executor every spawned step and fired timer runs on.
    public let executor: SerialTestExecutor

    /// Creates a clock reading `startMs` (default 2026-01-10T08:00:00.000Z).
    ///
    /// With `holdsOutsideWork`, background steps spawned from outside the clock's executor (by the
    /// test's own synchronous calls, say) wait until the test next settles or advances the clock,
    /// so that a run of synchronous calls is never raced by the work the first of them started: the
    /// test decides when background work runs (no test depends on real time or luck). Steps spawned
    /// by running work are never held. Held steps are released by one job on the executor itself,
    /// which starts them all, in spawn order, before any of them runs: a step spawned by the first
    /// released one therefore always runs after the last released one. Inside
    /// ``withOutsideWorkReleased(_:)`` outside steps are not held.
    public init(startMs: Int64 = 1_768_032_000_000, holdsOutsideWork: Bool = false) {
        state = Locked(State(now: startMs))
        executor = SerialTestExecutor(holdsOutsideWork: holdsOutsideWork)
    }

    deinit {
        executor.shutdown()
    }

    /// The current manual time in milliseconds since the epoch.
    public func nowMs() -> Int64 { state.withLock { $0.now } }

    /// The number of timers scheduled and not yet fired or cancelled.
    public var pendingTimerCount: Int { state.withLock { $0.timers.count } }

    /// Due times of the pending timers, earliest first.
    public var pendingTimerDueTimes: [Int64] { state.withLock { $0.timers.map(\.due).sorted() } }

    @discardableResult
    public func schedule(afterMs: Int64, _ work: @escaping @Sendable () -> Void) -> TimerToken {
        state.withLock { s in
            let id = s.nextId
            s.nextId += 1
            s.timers.append(Timer(id: id, due: s.now + max(0, afterMs), work: work))
            return TimerToken(id: id)
        }
    }

    public func cancel(_ token: TimerToken) {
        state.withLock { $0.timers.removeAll { $0.id == token.id } }
    }

    public func spawn(_ work: @escaping @Sendable () async -> Void) {
        executor.spawn(work)
    }

    /// Starts `work` the way a test's own synchronous call of it would run: with
    /// `holdsOutsideWork`, a call from outside the executor is held too, but released ahead of
    /// every held background step (in call order among such calls), as a call a test makes
    /// runs before the background work already pending. Otherwise the same as ``spawn(_:)``.
    public func spawnAsCaller(_ work: @escaping @Sendable () async -> Void) {
        executor.spawn(work, asCaller: true)
    }

    /// Waits until no spawned step or fired timer is runnable.
    public func settle() async {
        await executor.waitUntilIdle()
    }

    /// Runs `body` (a call the test awaits, such as a tracker's `idle()`) with held outside
    /// steps released first and outside steps not held while it runs, so that work the awaited
    /// call starts can complete it. Without `holdsOutsideWork` it just runs `body`.
    public func withOutsideWorkReleased<T: Sendable>(_ body: () async -> T) async -> T {
        executor.openGate()
        let result = await body()
        executor.closeGate()
        return result
    }

    /// Moves time forward by `ms`, firing each due timer at its own time in due order (ties in
    /// scheduling order) and settling after each; settles before and after.
    public func advance(byMs ms: Int64) async {
        let target = state.withLock { $0.now } + max(0, ms)
        await run(until: target)
    }

    /// Moves time to `ms` (never backwards for timers; a backwards set only changes `nowMs()`).
    public func set(ms: Int64) async {
        let current = nowMs()
        if ms >= current {
            await run(until: ms)
        } else {
            state.withLock { $0.now = ms }
        }
    }

    private func run(until target: Int64) async {
        await settle()
        while true {
            let next: Timer? = state.withLock { s in
                guard let idx = s.timers.indices.min(by: { (s.timers[$0].due, s.timers[$0].id) < (s.timers[$1].due, s.timers[$1].id) }),
                    s.timers[idx].due <= target
                else { return nil }
                let t = s.timers.remove(at: idx)
                s.now = max(s.now, t.due)
                return t
            }
            guard let next else { break }
            let work = next.work
            executor.spawn { work() }
            await settle()
        }
        state.withLock { $0.now = max($0.now, target) }
        await settle()
    }
}

/// A serial task executor that runs jobs on its own thread and reports when it has none left.
///
/// Task executors need macOS 15, iOS 18, tvOS 18 or visionOS 2 at run time (the `TaskExecutor`
/// conformance is gated): the package floors are lower, so the test kit compiles for every
/// supported OS, and stops with a clear message when tests run on an older one (the Apple CI
/// runs them on macOS 15 and an iOS 18 simulator).
public final class SerialTestExecutor: @unchecked Sendable {
    private let condition = NSCondition()
    private var jobs: [UnownedJob] = []
    private var running = false
    private var waiters: [CheckedContinuation<Void, Never>] = []
    private var isShutDown = false
    private let holdsOutsideWork: Bool
    private var held: [@Sendable () async -> Void] = []
    /// Held calls of the test (``ManualClock/spawnAsCaller(_:)``), released before `held`.
    private var heldCalls: [@Sendable () async -> Void] = []
    /// How many ``ManualClock/withOutsideWorkReleased(_:)`` bodies are running.
    private var openCount = 0
    private var loopThread: pthread_t?

    init(holdsOutsideWork: Bool = false) {
        self.holdsOutsideWork = holdsOutsideWork
        // The thread keeps the executor alive while it runs; it ends after `shutdown()` once
        // no job is left. The executor object itself is then deliberately kept (never freed),
        // so that a task still referring to it can never touch freed memory.
        let t = Thread { [self] in
            self.loop()
            _ = Unmanaged.passRetained(self)
        }
        t.name = "ManualClock.executor"
        t.start()
    }

    /// Lets the executor thread end once its queue is empty (called when the clock goes away).
    func shutdown() {
        condition.lock()
        isShutDown = true
        condition.signal()
        condition.unlock()
    }

    /// Starts `work` as a task that prefers this executor (held until the next
    /// ``waitUntilIdle()`` when spawned from outside and the executor holds outside work).
    public func spawn(_ work: @escaping @Sendable () async -> Void) {
        spawn(work, asCaller: false)
    }

    func spawn(_ work: @escaping @Sendable () async -> Void, asCaller: Bool) {
        if holdsOutsideWork {
            condition.lock()
            let inside = loopThread.map { pthread_equal($0, pthread_self()) != 0 } ?? false
            if !inside && openCount == 0 {
                if asCaller { heldCalls.append(work) } else { held.append(work) }
                condition.unlock()
                return
            }
            condition.unlock()
        }
        _ = startTask { await work() }
    }

    /// Lets outside work through until the matching ``closeGate()`` (held work is released first).
    func openGate() {
        releaseHeld()
        condition.lock()
        openCount += 1
        condition.unlock()
    }

    func closeGate() {
        condition.lock()
        openCount -= 1
        condition.unlock()
    }

    /// Starts `body` as a task that prefers this executor (`Task(executorPreference:)` where
    /// the OS has task executors).
    @discardableResult
    public func startTask<T: Sendable>(_ body: @escaping @Sendable () async -> T) -> Task<T, Never> {
        guard #available(macOS 15.0, iOS 18.0, tvOS 18.0, visionOS 2.0, *) else {
            preconditionFailure(Self.tooOld)
        }
        return Task(executorPreference: self) { await body() }
    }

    static let tooOld = "ManualClock's executor needs task executors: run the tests on macOS 15, iOS 18, tvOS 18 or visionOS 2 or later"

    /// Starts the held outside work, in the order it was spawned, from one job on the executor:
    /// every held step is enqueued before any of them runs, so a step spawned by the first one
    /// can never overtake the second (as it could if the calling thread started them in a loop
    /// while the executor already ran the first).
    private func releaseHeld() {
        condition.lock()
        let work = heldCalls + held
        held = []
        heldCalls = []
        condition.unlock()
        guard !work.isEmpty else { return }
        startTask { [self] in
            for w in work { startTask { await w() } }
        }
    }

    fileprivate func enqueue(unowned: UnownedJob) {
        condition.lock()
        jobs.append(unowned)
        condition.signal()
        condition.unlock()
    }

    /// Resumes once the executor has no queued or running job.
    public func waitUntilIdle() async {
        releaseHeld()
        await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
            condition.lock()
            if jobs.isEmpty && !running {
                condition.unlock()
                c.resume()
            } else {
                waiters.append(c)
                condition.unlock()
            }
        }
    }

    private func loop() {
        condition.lock()
        loopThread = pthread_self()
        condition.unlock()
        while true {
            condition.lock()
            while jobs.isEmpty && !isShutDown { condition.wait() }
            if jobs.isEmpty {
                condition.unlock()
                return
            }
            let job = jobs.removeFirst()
            running = true
            condition.unlock()
            guard #available(macOS 15.0, iOS 18.0, tvOS 18.0, visionOS 2.0, *) else {
                preconditionFailure(Self.tooOld)  // jobs arrive only through the TaskExecutor conformance
            }
            job.runSynchronously(on: asUnownedTaskExecutor())
            condition.lock()
            running = false
            var ready: [CheckedContinuation<Void, Never>] = []
            if jobs.isEmpty {
                ready = waiters
                waiters = []
            }
            condition.unlock()
            for c in ready { c.resume() }
        }
    }
}

@available(macOS 15.0, iOS 18.0, tvOS 18.0, visionOS 2.0, *)
extension SerialTestExecutor: TaskExecutor {
    public func enqueue(_ job: consuming ExecutorJob) {
        enqueue(unowned: UnownedJob(job))
    }
}
