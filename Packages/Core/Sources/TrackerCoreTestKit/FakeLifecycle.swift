import TrackerCore

/// A ``MainActorHop`` a test can hold: while held, work queues up (as if the main thread were
/// busy or blocked); ``release()`` runs it on the test's thread. Not held, it runs work inline.
public final class HeldMainHop: MainActorHop, @unchecked Sendable {
    private let state = Locked((held: false, queue: [@Sendable () -> Void]()))
    private let running = Locked(0)

    /// Whether work given to the hop is running now: what "on the main thread" means for a
    /// test (``FakeLifecycleSystem/init(appState:mainThread:)`` records calls made outside it).
    public var isRunningWork: Bool { running.value > 0 }

    /// A hop, held or not.
    public init(held: Bool = false) { state.withLock { $0.held = held } }

    /// Holds the main thread: later work waits in the queue.
    public func hold() { state.withLock { $0.held = true } }

    /// Work waiting for the main thread.
    public var pending: Int { state.withLock { $0.queue.count } }

    /// Runs the queued work (and work it queues) and stops holding.
    public func release() {
        while true {
            let next: (@Sendable () -> Void)? = state.withLock { s in
                s.held = false
                return s.queue.isEmpty ? nil : s.queue.removeFirst()
            }
            guard let next else { return }
            perform(next)
        }
    }

    private func perform(_ body: @Sendable () -> Void) {
        running.withLock { $0 += 1 }
        defer { running.withLock { $0 -= 1 } }
        body()
    }

    public func run(_ body: @escaping @Sendable () -> Void) {
        let now = state.withLock { s -> Bool in
            if s.held || !s.queue.isEmpty {
                s.queue.append(body)
                return false
            }
            return true
        }
        if now { perform(body) }
    }
}

/// A scripted OS side for ``AppLifecycleMonitor``: the test posts notifications, expires
/// background tasks, and reads what was begun and ended.
public final class FakeLifecycleSystem: AppLifecycleSystem, @unchecked Sendable {
    private struct State {
        var appState: AppRunState
        var deliver: (@Sendable (AppSystemEvent) -> Void)?
        var nextId = 100
        var refuseTasks = false
        var running: [Int: (name: String, expiration: @Sendable () -> Void)] = [:]
        var begun: [String] = []
        var ended: [Int] = []
        var stateReads = 0
        var offMain: [String] = []
    }

    private let state: Locked<State>
    private let mainThread: HeldMainHop?

    /// A system whose app is in `appState`. With `mainThread`, every call the monitor makes
    /// outside that hop's work is recorded in ``callsOffMainThread``.
    public init(appState: AppRunState = .foreground, mainThread: HeldMainHop? = nil) {
        state = Locked(State(appState: appState))
        self.mainThread = mainThread
    }

    /// The system calls made while `mainThread` ran no work (UIKit would have been touched off
    /// the main thread), in order.
    public var callsOffMainThread: [String] { state.withLock { $0.offMain } }

    private func called(_ name: String) {
        guard let mainThread, !mainThread.isRunningWork else { return }
        state.withLock { $0.offMain.append(name) }
    }

    /// Changes what ``readState()`` answers (without a notification).
    public func setAppState(_ s: AppRunState) { state.withLock { $0.appState = s } }
    /// Makes the OS refuse background tasks (`.invalid`).
    public func refuseBackgroundTasks(_ refuse: Bool) { state.withLock { $0.refuseTasks = refuse } }
    /// Whether notifications are being delivered.
    public var isObserving: Bool { state.withLock { $0.deliver != nil } }
    /// Names of the background tasks begun so far, in order.
    public var begunTasks: [String] { state.withLock { $0.begun } }
    /// Ids of the background tasks ended so far.
    public var endedTasks: [Int] { state.withLock { $0.ended } }
    /// Background tasks begun and not ended.
    public var runningTasks: Int { state.withLock { $0.running.count } }
    /// How many times the state was read.
    public var stateReads: Int { state.withLock { $0.stateReads } }

    /// Posts a notification, as the OS would (on the calling thread).
    public func post(_ event: AppSystemEvent) {
        if event == .didBecomeActive { setAppState(.foreground) }
        if event == .didEnterBackground { setAppState(.background) }
        let d = state.withLock { $0.deliver }
        d?(event)
    }

    /// The OS runs out of background time: calls every running task's expiration handler, as the
    /// OS does on the main thread. Returns how many handlers ran.
    @discardableResult
    public func expireBackgroundTasks() -> Int {
        let handlers = state.withLock { s in s.running.sorted { $0.key < $1.key }.map(\.value.expiration) }
        for h in handlers { h() }
        return handlers.count
    }

    public func readState() -> AppRunState {
        called("readState")
        return state.withLock { s in
            s.stateReads += 1
            return s.appState
        }
    }
    public func startNotifications(_ deliver: @escaping @Sendable (AppSystemEvent) -> Void) {
        called("startNotifications")
        state.withLock { $0.deliver = deliver }
    }
    public func stopNotifications() {
        called("stopNotifications")
        state.withLock { $0.deliver = nil }
    }

    public func beginBackgroundTask(name: String, expiration: @escaping @Sendable () -> Void) -> Int? {
        called("beginBackgroundTask")
        return state.withLock { s in
            if s.refuseTasks { return nil }
            let id = s.nextId
            s.nextId += 1
            s.running[id] = (name, expiration)
            s.begun.append(name)
            return id
        }
    }

    public func endBackgroundTask(_ id: Int) {
        called("endBackgroundTask")
        state.withLock { s in
            s.ended.append(id)
            s.running[id] = nil
        }
    }
}
