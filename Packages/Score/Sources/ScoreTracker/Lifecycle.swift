import TrackerCore

/// Whether the app is in the foreground.
public enum AppLifecycleState: Sendable, Equatable {
    /// Visible and active.
    case foreground
    /// Not visible; may be suspended soon.
    case background
}

/// What an ``AppLifecycleSource`` reports.
public enum AppLifecycleEvent: Sendable, Equatable {
    /// The app came to the foreground.
    case foreground
    /// The app went to the background.
    case background
    /// Network connectivity came back.
    case networkAvailable
    /// The OS ended the background time of a task begun with
    /// ``AppLifecycleSource/beginBackgroundTask()``: the background flush is abandoned at once
    /// (its events stay queued; they leave the queue only after a 2xx).
    case backgroundTimeExpired
}

/// Identifies a platform background task.
public struct BackgroundTaskID: Sendable, Hashable {
    /// Opaque value.
    public let rawValue: Int
    /// Creates an id.
    public init(rawValue: Int) { self.rawValue = rawValue }
}

/// A source of app lifecycle and connectivity events (UIKit/AppKit on Apple platforms, a test
/// double on Linux). The tracker's lifecycle logic is platform-independent and driven by it.
public protocol AppLifecycleSource: AnyObject, Sendable {
    /// The current state, read once when the tracker binds (never under the client's lock).
    var currentState: AppLifecycleState { get }
    /// Starts delivering events to `handler` until ``stopObserving()``.
    func startObserving(_ handler: @escaping @Sendable (AppLifecycleEvent) -> Void)
    /// Stops delivering events.
    func stopObserving()
    /// Asks the platform for time to finish work in the background. Called while no lock is
    /// held, but must return at once: it must never wait for the main thread. When the OS takes
    /// the time back, report ``AppLifecycleEvent/backgroundTimeExpired``.
    func beginBackgroundTask() -> BackgroundTaskID
    /// Ends a background task begun with ``beginBackgroundTask()``. Called while the client's
    /// lock is held: it must return at once and never call back into the client.
    func endBackgroundTask(_ id: BackgroundTaskID)
}

/// A live binding of a client to a lifecycle source.
struct LifecycleBinding: @unchecked Sendable {
    let source: AppLifecycleSource
    let autoFlushMs: Int64?
    let budgetMs: Int64
    /// Tells this binding from a later one (of the same source too): the ``AppLifecycleBinding``
    /// handed to the app ends only its own.
    let id: UInt64 = LifecycleBinding.nextId.withLock { n in
        n += 1
        return n
    }
    private static let nextId = Locked<UInt64>(0)
}

/// The OS side of the monitor behind the ``AppLifecycleBinding`` that Score's
/// `bindToAppLifecycle` returns (the binding type Onboarding and Paywall return, issue 37 item 6):
/// its `unbind()` stops the monitor, which ends the client's binding `id` here (and nothing if the
/// client was bound again since).
final class ScoreBindingSystem: AppLifecycleSystem, @unchecked Sendable {
    private weak var client: ScoreClient?
    private let id: UInt64

    init(client: ScoreClient, id: UInt64) {
        self.client = client
        self.id = id
    }

    func readState() -> AppRunState { .foreground }
    func startNotifications(_ deliver: @escaping @Sendable (AppSystemEvent) -> Void) {}
    func stopNotifications() { client?.unbindLifecycle(onlyId: id) }
    func beginBackgroundTask(name: String, expiration: @escaping @Sendable () -> Void) -> Int? { nil }
    func endBackgroundTask(_ id: Int) {}

    /// The binding handed to the app for the client's binding `id`.
    static func binding(client: ScoreClient, id: UInt64) -> AppLifecycleBinding {
        let monitor = AppLifecycleMonitor(system: ScoreBindingSystem(client: client, id: id), hop: InlineHop())
        monitor.start(assuming: .foreground) { _ in }
        return AppLifecycleBinding(monitor: monitor)
    }
}

/// Runs the monitor's steps at once on the calling thread (its OS side touches no UI).
struct InlineHop: MainActorHop {
    func run(_ body: @escaping @Sendable () -> Void) { body() }
}

/// The lifecycle source over Core's `AppLifecycleMonitor`: the platform-independent state
/// machine that reaches UIKit or AppKit only through a main-thread hop that never waits. This is
/// what `ScoreClient.bindToAppLifecycle(autoFlushEverySeconds:backgroundBudgetSeconds:)` uses;
/// tests build it over a fake OS side.
public final class MonitoredLifecycleSource: AppLifecycleSource, Sendable {
    private struct State {
        var handler: (@Sendable (AppLifecycleEvent) -> Void)?
        var reported: AppRunState?
    }

    /// The monitor it reads.
    public let monitor: AppLifecycleMonitor
    private let state = Locked(State())

    /// A source over `monitor`.
    public init(monitor: AppLifecycleMonitor) { self.monitor = monitor }

    /// The last state the main thread reported; `.background` until it has answered (so that
    /// binding from any thread never waits for the main thread: the real state follows as an
    /// event as soon as the main thread has read it).
    public var currentState: AppLifecycleState {
        let known = monitor.knownState
        state.withLock { $0.reported = known ?? .background }
        return known == .foreground ? .foreground : .background
    }

    public func startObserving(_ handler: @escaping @Sendable (AppLifecycleEvent) -> Void) {
        let assumed = state.withLock { s -> AppRunState in
            s.handler = handler
            return s.reported ?? .background
        }
        monitor.start(assuming: assumed) { change in
            switch change {
            case .foreground: handler(.foreground)
            case .background: handler(.background)
            case .networkAvailable: handler(.networkAvailable)
            case .protectedDataAvailable: break
            }
        }
    }

    public func stopObserving() {
        state.withLock { $0.handler = nil }
        monitor.stop()
    }

    public func beginBackgroundTask() -> BackgroundTaskID {
        let task = monitor.beginBackgroundTask(name: "score.flush") { [weak self] in
            let handler = self?.state.withLock { $0.handler }
            handler?(.backgroundTimeExpired)
        }
        return BackgroundTaskID(rawValue: Int(truncatingIfNeeded: task.rawValue))
    }

    public func endBackgroundTask(_ id: BackgroundTaskID) {
        monitor.endBackgroundTask(AppBackgroundTask(rawValue: UInt64(truncatingIfNeeded: id.rawValue)))
    }
}

extension ScoreClient {
    /// The OS took the background time back: abandon the background flush now (nothing is lost;
    /// its events stay queued and are sent by the next flush).
    func backgroundTimeExpired() {
        let flight: Int? = state.withLock { s in
            guard let f = s.flight, !f.backgroundTasks.isEmpty else { return nil }
            return f.id
        }
        if let flight { abandon(flight) }
        // A finished flush holding its task for its removal's write ends it now too (the OS
        // suspends or kills an app that keeps a task past this point); the write goes on.
        let answers: [FlightAnswer] = state.withLock { s in
            answerFinishing(&s, s.finishing.filter { !$0.backgroundTasks.isEmpty }, .stopWaitingForRemoval)
        }
        for a in answers { a.deliver() }
    }

    #if canImport(UIKit) && !os(watchOS)
        /// Binds the tracker to the app lifecycle in one call: UIKit's application notifications
        /// (foreground flush and periodic flush, a background flush inside a background task whose
        /// expiration abandons it, losing nothing) and `NWPathMonitor` (flush when the network
        /// comes back). UIKit is touched only on the main thread, and never waited for.
        ///
        /// Not available in app extensions: call ``onForeground()`` and ``onBackground()`` from the
        /// extension's own lifecycle instead.
        ///
        /// Returns the binding (the same kind as the onboarding and paywall trackers'): keep it to
        /// `unbind()` later; `nil` when the app has no application object.
        @available(iOSApplicationExtension, unavailable)
        @available(tvOSApplicationExtension, unavailable)
        @available(visionOSApplicationExtension, unavailable)
        @available(macCatalystApplicationExtension, unavailable)
        @discardableResult
        public func bindToAppLifecycle(autoFlushEverySeconds: Double? = 30, backgroundBudgetSeconds: Double = 5) -> AppLifecycleBinding? {
            guard let monitor = AppLifecycleMonitor.system() else { return nil }
            return bindToAppLifecycle(
                source: MonitoredLifecycleSource(monitor: monitor), autoFlushEverySeconds: autoFlushEverySeconds,
                backgroundBudgetSeconds: backgroundBudgetSeconds)
        }
    #elseif canImport(AppKit)
        /// Binds the tracker to AppKit's activation notifications (becoming active flushes,
        /// resigning active runs the bounded background flush). Returns the binding: keep it to
        /// `unbind()` later; `nil` when the app has no application object.
        @discardableResult
        public func bindToAppLifecycle(autoFlushEverySeconds: Double? = 30, backgroundBudgetSeconds: Double = 5) -> AppLifecycleBinding? {
            guard let monitor = AppLifecycleMonitor.system() else { return nil }
            return bindToAppLifecycle(
                source: MonitoredLifecycleSource(monitor: monitor), autoFlushEverySeconds: autoFlushEverySeconds,
                backgroundBudgetSeconds: backgroundBudgetSeconds)
        }
    #endif
}
