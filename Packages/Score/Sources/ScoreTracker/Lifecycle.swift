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
    /// The current state, read once when the tracker binds.
    var currentState: AppLifecycleState { get }
    /// Starts delivering events to `handler` until ``stopObserving()``.
    func startObserving(_ handler: @escaping @Sendable (AppLifecycleEvent) -> Void)
    /// Stops delivering events.
    func stopObserving()
    /// Asks the platform for time to finish work in the background.
    func beginBackgroundTask() -> BackgroundTaskID
    /// Ends a background task begun with ``beginBackgroundTask()``.
    func endBackgroundTask(_ id: BackgroundTaskID)
}

/// A live binding of a client to a lifecycle source.
struct LifecycleBinding: @unchecked Sendable {
    let source: AppLifecycleSource
    let autoFlushMs: Int64?
    let budgetMs: Int64
}

#if canImport(UIKit) && !os(watchOS)
import UIKit
import Network

/// Observes UIKit application notifications and network reachability.
public final class UIKitLifecycleSource: AppLifecycleSource, @unchecked Sendable {
    private var observers: [NSObjectProtocol] = []
    private let monitor = NWPathMonitor()
    private var lastPathSatisfied: Bool?

    /// Creates the source.
    public init() {}

    public var currentState: AppLifecycleState {
        if Thread.isMainThread {
            return MainActor.assumeIsolated { UIApplication.shared.applicationState == .background ? .background : .foreground }
        }
        return DispatchQueue.main.sync {
            MainActor.assumeIsolated { UIApplication.shared.applicationState == .background ? .background : .foreground }
        }
    }

    public func startObserving(_ handler: @escaping @Sendable (AppLifecycleEvent) -> Void) {
        let center = NotificationCenter.default
        observers.append(center.addObserver(forName: UIApplication.didBecomeActiveNotification, object: nil, queue: nil) { _ in handler(.foreground) })
        observers.append(center.addObserver(forName: UIApplication.didEnterBackgroundNotification, object: nil, queue: nil) { _ in handler(.background) })
        monitor.pathUpdateHandler = { [weak self] path in
            let ok = path.status == .satisfied
            if ok, self?.lastPathSatisfied == false { handler(.networkAvailable) }
            self?.lastPathSatisfied = ok
        }
        monitor.start(queue: DispatchQueue(label: "score.network"))
    }

    public func stopObserving() {
        for o in observers { NotificationCenter.default.removeObserver(o) }
        observers = []
        monitor.cancel()
    }

    public func beginBackgroundTask() -> BackgroundTaskID {
        let id = DispatchQueue.main.sync {
            MainActor.assumeIsolated { UIApplication.shared.beginBackgroundTask(withName: "score.flush", expirationHandler: nil) }
        }
        return BackgroundTaskID(rawValue: id.rawValue)
    }

    public func endBackgroundTask(_ id: BackgroundTaskID) {
        DispatchQueue.main.async {
            MainActor.assumeIsolated { UIApplication.shared.endBackgroundTask(UIBackgroundTaskIdentifier(rawValue: id.rawValue)) }
        }
    }
}
#elseif canImport(AppKit)
import AppKit

/// Observes AppKit application notifications.
public final class AppKitLifecycleSource: AppLifecycleSource, @unchecked Sendable {
    private var observers: [NSObjectProtocol] = []

    /// Creates the source.
    public init() {}

    public var currentState: AppLifecycleState { .foreground }

    public func startObserving(_ handler: @escaping @Sendable (AppLifecycleEvent) -> Void) {
        let center = NotificationCenter.default
        observers.append(center.addObserver(forName: NSApplication.didBecomeActiveNotification, object: nil, queue: nil) { _ in handler(.foreground) })
        observers.append(center.addObserver(forName: NSApplication.didResignActiveNotification, object: nil, queue: nil) { _ in handler(.background) })
    }

    public func stopObserving() {
        for o in observers { NotificationCenter.default.removeObserver(o) }
        observers = []
    }

    public func beginBackgroundTask() -> BackgroundTaskID { BackgroundTaskID(rawValue: 0) }
    public func endBackgroundTask(_ id: BackgroundTaskID) {}
}
#endif
