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
        let holding: [RemovalWait] = state.withLock { s in
            let holding = s.removalWaits.filter { !$0.backgroundTasks.isEmpty }
            s.removalWaits.removeAll { !$0.backgroundTasks.isEmpty }
            for w in holding {
                if let t = w.timer { scheduler.cancel(t) }
                w.timer = nil
            }
            return holding
        }
        for w in holding { w.finish() }
    }

    #if canImport(UIKit) && !os(watchOS)
        /// Binds the tracker to the app lifecycle in one call: UIKit's application notifications
        /// (foreground flush and periodic flush, a background flush inside a background task whose
        /// expiration abandons it, losing nothing) and `NWPathMonitor` (flush when the network
        /// comes back). UIKit is touched only on the main thread, and never waited for.
        ///
        /// Not available in app extensions: call ``onForeground()`` and ``onBackground()`` from the
        /// extension's own lifecycle instead.
        @available(iOSApplicationExtension, unavailable)
        @available(tvOSApplicationExtension, unavailable)
        @available(visionOSApplicationExtension, unavailable)
        @available(macCatalystApplicationExtension, unavailable)
        public func bindToAppLifecycle(autoFlushEverySeconds: Double? = 30, backgroundBudgetSeconds: Double = 5) {
            guard let monitor = AppLifecycleMonitor.system() else { return }
            bindToAppLifecycle(
                source: MonitoredLifecycleSource(monitor: monitor), autoFlushEverySeconds: autoFlushEverySeconds,
                backgroundBudgetSeconds: backgroundBudgetSeconds)
        }
    #elseif canImport(AppKit)
        /// Binds the tracker to AppKit's activation notifications (becoming active flushes,
        /// resigning active runs the bounded background flush).
        public func bindToAppLifecycle(autoFlushEverySeconds: Double? = 30, backgroundBudgetSeconds: Double = 5) {
            guard let monitor = AppLifecycleMonitor.system() else { return }
            bindToAppLifecycle(
                source: MonitoredLifecycleSource(monitor: monitor), autoFlushEverySeconds: autoFlushEverySeconds,
                backgroundBudgetSeconds: backgroundBudgetSeconds)
        }
    #endif
}
