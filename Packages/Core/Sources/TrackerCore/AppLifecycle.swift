// Not Foundation: on Linux it would load Foundation's libraries into every tracker process
// (issue 36 item 5, `make check-no-foundation`).
import CTrackerCurlShim
import Dispatch

// The app-lifecycle logic every surface shares, in platform-independent code: the OS side
// (UIKit, AppKit, or a test double) only reports notifications and begins or ends background
// tasks, always on the main thread, through ``MainActorHop``. Nothing here ever waits for the
// main thread: a tracker that calls into this monitor while holding its own lock cannot deadlock
// against a main thread that is waiting for that lock.

/// Whether the app is visible.
public enum AppRunState: Sendable, Equatable {
    /// Visible and active.
    case foreground
    /// Not visible; the OS may suspend it soon.
    case background
}

/// What the OS side reports to an ``AppLifecycleMonitor``.
public enum AppSystemEvent: Sendable, Equatable {
    /// The app became active (`didBecomeActive`).
    case didBecomeActive
    /// The app entered the background (UIKit's `didEnterBackground`; on AppKit see
    /// ``AppKitLifecycleMapping``).
    case didEnterBackground
    /// Protected data (the Keychain, files with complete protection) became readable.
    case protectedDataAvailable
    /// The network path changed (`NWPathMonitor`): `true` when it can carry traffic.
    case networkPath(satisfied: Bool)
}

/// What AppKit's application notifications mean for the lifecycle (issue 38, item 8), as a table
/// the Mac side applies and Linux tests. A Mac app is never suspended and stays visible when
/// another app becomes active: resigning active (every app switch) is not entering the background,
/// or each switch would run the background flush, and becoming active again is not a return to the
/// foreground (the monitor reports one for every `didBecomeActive`). The app is in the background
/// while it is hidden (`hide(_:)`, Command-H) and when it is about to terminate (the last chance to
/// flush), and back in the foreground when it is unhidden.
public enum AppKitLifecycleMapping {
    /// The `NSApplication` notifications the Mac side observes.
    public enum AppKitNotification: Sendable, CaseIterable, Equatable {
        /// `NSApplication.didBecomeActiveNotification`.
        case didBecomeActive
        /// `NSApplication.didResignActiveNotification`: another app became active.
        case didResignActive
        /// `NSApplication.didHideNotification`.
        case didHide
        /// `NSApplication.didUnhideNotification`.
        case didUnhide
        /// `NSApplication.willTerminateNotification`.
        case willTerminate
    }

    /// What `notification` reports to the monitor; `nil` for none.
    public static func event(for notification: AppKitNotification) -> AppSystemEvent? {
        switch notification {
        case .didUnhide: return .didBecomeActive
        case .didBecomeActive, .didResignActive: return nil
        case .didHide, .willTerminate: return .didEnterBackground
        }
    }

    /// The state at start: in the background only while hidden (an inactive app is still visible).
    public static func state(isHidden: Bool) -> AppRunState { isHidden ? .background : .foreground }
}

/// What an ``AppLifecycleMonitor`` tells its observer.
public enum AppLifecycleChange: Sendable, Equatable {
    /// The app came to the foreground.
    case foreground
    /// The app went to the background.
    case background
    /// Protected data became available (after the first unlock, or after an unlock).
    case protectedDataAvailable
    /// The network came back after being unavailable.
    case networkAvailable
}

/// Runs work on the main thread without ever waiting for it.
public protocol MainActorHop: Sendable {
    /// Runs `body` on the main thread: at once when the caller is on the main thread, otherwise
    /// later (enqueued). Never blocks the caller.
    func run(_ body: @escaping @Sendable () -> Void)
}

/// The main dispatch queue as a ``MainActorHop``: inline on the main thread, else
/// `DispatchQueue.main.async` (never `sync`).
public struct MainQueueHop: MainActorHop {
    /// Creates the hop.
    public init() {}

    public func run(_ body: @escaping @Sendable () -> Void) {
        if Self.isMainThread { body() } else { DispatchQueue.main.async(execute: body) }
    }

    /// Whether the caller runs on the process's main thread.
    static var isMainThread: Bool { ctracker_is_main_thread() != 0 }
}

/// The OS calls an ``AppLifecycleMonitor`` needs. The monitor calls every method on the main
/// thread (inside its ``MainActorHop``, never anywhere else: `AppLifecycleTests` LC22 checks each
/// path), so an implementation may touch UIKit or AppKit directly.
public protocol AppLifecycleSystem: AnyObject, Sendable {
    /// The current state (`UIApplication.applicationState`).
    func readState() -> AppRunState
    /// Starts delivering notifications to `deliver` (from any thread).
    func startNotifications(_ deliver: @escaping @Sendable (AppSystemEvent) -> Void)
    /// Stops the notifications.
    func stopNotifications()
    /// Begins an OS background task; `nil` when the OS refuses one (or has none). The OS calls
    /// `expiration` on the main thread when the time is up; the task must then end at once.
    func beginBackgroundTask(name: String, expiration: @escaping @Sendable () -> Void) -> Int?
    /// Ends a task begun with ``beginBackgroundTask(name:expiration:)``.
    func endBackgroundTask(_ id: Int)
}

/// A background task handed out by ``AppLifecycleMonitor/beginBackgroundTask(name:onExpire:)``.
public struct AppBackgroundTask: Sendable, Hashable {
    /// Opaque, unique per monitor.
    public let rawValue: UInt64
    /// Creates a token.
    public init(rawValue: UInt64) { self.rawValue = rawValue }
}

/// Turns `NWPathMonitor` updates into "the network came back" (unsatisfied, then satisfied).
public struct NetworkComeback: Sendable, Equatable {
    private var last: Bool?

    /// Creates a filter that has seen no path yet.
    public init() {}

    /// Feeds one path update; `true` when the network just came back. The first update only
    /// records the state (a satisfied path at start is not a comeback).
    public mutating func update(satisfied: Bool) -> Bool {
        defer { last = satisfied }
        return satisfied && last == false
    }
}

/// The platform-independent app-lifecycle state machine shared by every tracker: it caches the
/// app state, filters network updates, and begins and ends OS background tasks, never waiting
/// for the main thread. Every call is safe from any thread and while holding any lock.
public final class AppLifecycleMonitor: Sendable {
    private enum TaskPhase {
        case pending  // begin requested, not yet run on the main thread
        case beginning  // the OS begin call is running
        case running(Int)  // the OS task id
    }

    private struct State {
        var known: AppRunState?
        var handler: (@Sendable (AppLifecycleChange) -> Void)?
        var observing = false
        var network = NetworkComeback()
        var nextTask: UInt64 = 1
        var tasks: [UInt64: (phase: TaskPhase, onExpire: @Sendable () -> Void)] = [:]
    }

    private let system: any AppLifecycleSystem
    private let hop: any MainActorHop
    private let state = Locked(State())

    /// A monitor over `system`, reaching the main thread through `hop`.
    public init(system: any AppLifecycleSystem, hop: any MainActorHop = MainQueueHop()) {
        self.system = system
        self.hop = hop
    }

    /// The last state read or notified; `nil` until the main thread has answered once.
    public var knownState: AppRunState? { state.withLock { $0.known } }

    /// Number of background tasks begun or requested and not yet ended (for tests).
    public var openBackgroundTasks: Int { state.withLock { $0.tasks.count } }

    /// Starts observing. On the main thread (now, or later when called elsewhere) the monitor
    /// reads the current state and reports it to `handler` when it differs from `assumed`, the
    /// state the caller acted on meanwhile; then every notification is reported.
    public func start(assuming assumed: AppRunState?, _ handler: @escaping @Sendable (AppLifecycleChange) -> Void) {
        let already = state.withLock { s -> Bool in
            if s.observing {
                s.handler = handler
                return true
            }
            s.observing = true
            s.handler = handler
            return false
        }
        if already { return }
        hop.run { [self] in
            guard state.withLock({ $0.observing }) else { return }
            let now = system.readState()
            state.withLock { $0.known = now }
            if now != assumed { deliver(now == .foreground ? .foreground : .background) }
            system.startNotifications { [weak self] event in self?.received(event) }
        }
    }

    /// Stops observing; background tasks already begun still end normally.
    public func stop() {
        let was = state.withLock { s -> Bool in
            defer {
                s.observing = false
                s.handler = nil
            }
            return s.observing
        }
        if was { hop.run { [system] in system.stopNotifications() } }
    }

    /// Feeds one OS notification (the system implementation calls this; so can tests).
    public func received(_ event: AppSystemEvent) {
        let change: AppLifecycleChange? = state.withLock { s in
            switch event {
            case .didBecomeActive:
                s.known = .foreground
                return .foreground
            case .didEnterBackground:
                s.known = .background
                return .background
            case .protectedDataAvailable: return .protectedDataAvailable
            case .networkPath(let ok): return s.network.update(satisfied: ok) ? .networkAvailable : nil
            }
        }
        if let change { deliver(change) }
    }

    private func deliver(_ change: AppLifecycleChange) {
        let handler = state.withLock { $0.observing ? $0.handler : nil }
        handler?(change)
    }

    /// Asks the OS for time to finish work in the background. Returns at once; the OS call runs
    /// on the main thread. When the OS ends the time, `onExpire` runs (on the main thread) and
    /// the OS task is ended right after it, as the OS requires; a later
    /// ``endBackgroundTask(_:)`` is then a no-op.
    public func beginBackgroundTask(name: String, onExpire: @escaping @Sendable () -> Void = {}) -> AppBackgroundTask {
        let token = state.withLock { s -> UInt64 in
            let t = s.nextTask
            s.nextTask += 1
            s.tasks[t] = (.pending, onExpire)
            return t
        }
        hop.run { [self] in
            let go = state.withLock { s -> Bool in
                guard let entry = s.tasks[token], case .pending = entry.phase else { return false }
                s.tasks[token] = (.beginning, entry.onExpire)
                return true
            }
            guard go else { return }
            let osId = system.beginBackgroundTask(name: name) { [weak self] in self?.expired(token) }
            let endNow = state.withLock { s -> Bool in
                guard let entry = s.tasks[token] else { return true }  // ended while beginning
                if osId == nil {
                    s.tasks[token] = nil
                    return false
                }
                s.tasks[token] = (.running(osId!), entry.onExpire)
                return false
            }
            if endNow, let osId { system.endBackgroundTask(osId) }
        }
        return AppBackgroundTask(rawValue: token)
    }

    /// Ends a background task. Returns at once; idempotent.
    public func endBackgroundTask(_ task: AppBackgroundTask) {
        let osId: Int? = state.withLock { s in
            guard let entry = s.tasks.removeValue(forKey: task.rawValue) else { return nil }
            if case .running(let id) = entry.phase { return id }
            return nil  // pending: never begun; beginning: ended by the begin step itself
        }
        if let osId { hop.run { [system] in system.endBackgroundTask(osId) } }
    }

    /// The OS's expiration of a task. UIKit calls it on the main thread, where the hop runs the
    /// end inline, before the handler returns, as the OS requires; called from anywhere else (an
    /// `AppLifecycleSystem` that does not promise the main thread), the end still reaches the
    /// OS only through the hop.
    private func expired(_ token: UInt64) {
        let entry = state.withLock { $0.tasks.removeValue(forKey: token) }
        guard let entry else { return }
        entry.onExpire()
        if case .running(let id) = entry.phase { hop.run { [system] in system.endBackgroundTask(id) } }
    }
}

extension AppLifecycleMonitor {
    /// Starts observing (assuming the app is in the foreground until the OS says otherwise) and
    /// calls `onBackground` with the background-task budget, in milliseconds, each time the app
    /// enters the background: the shared body of the trackers' `bindToAppLifecycle(monitor:)`.
    public func bindBackground(
        budgetSeconds: Double,
        _ onBackground: @escaping @Sendable (_ budgetMs: Int64) -> Void
    ) -> AppLifecycleBinding {
        let budgetMs = Int64((max(0, budgetSeconds) * 1000).rounded())
        start(assuming: .foreground) { change in
            guard change == .background else { return }
            onBackground(budgetMs)
        }
        return AppLifecycleBinding(monitor: self)
    }
}

/// A lifecycle binding an app keeps (or discards: the binding lives as long as its OS
/// observation). ``unbind()`` stops it.
public final class AppLifecycleBinding: Sendable {
    private let monitor: AppLifecycleMonitor

    /// Wraps a started monitor.
    public init(monitor: AppLifecycleMonitor) { self.monitor = monitor }

    /// Stops observing the lifecycle.
    public func unbind() { monitor.stop() }
}

/// Runs one bounded piece of background work inside an OS background task: `work` gets a
/// `done` callback; the task ends at the first of `done`, the budget timer, or the OS
/// expiration. Returns at once.
public func runInBackgroundTask(
    monitor: AppLifecycleMonitor, name: String, budgetMs: Int64, scheduler: any TrackerScheduler,
    _ work: @escaping @Sendable (_ done: @escaping @Sendable () -> Void) -> Void
) {
    let ended = Locked(false)
    let taskBox = Locked<AppBackgroundTask?>(nil)
    let timerBox = Locked<TimerToken?>(nil)
    let finish: @Sendable () -> Void = {
        let first = ended.withLock { e -> Bool in
            defer { e = true }
            return !e
        }
        guard first else { return }
        if let t = timerBox.withLock({ $0 }) { scheduler.cancel(t) }
        if let task = taskBox.withLock({ $0 }) { monitor.endBackgroundTask(task) }
    }
    let task = monitor.beginBackgroundTask(name: name) { ended.withLock { $0 = true } }
    taskBox.withLock { $0 = task }
    let timer = scheduler.schedule(afterMs: max(0, budgetMs)) { finish() }
    timerBox.withLock { $0 = timer }
    if ended.value { scheduler.cancel(timer) }
    work(finish)
}
