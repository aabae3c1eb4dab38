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

/// Runs `body` on the main actor, synchronously: directly on the main thread, else through the
/// main queue.
private func onMain<T: Sendable>(_ body: @MainActor () -> T) -> T {
    if Thread.isMainThread { return MainActor.assumeIsolated { body() } }
    return DispatchQueue.main.sync { MainActor.assumeIsolated { body() } }
}

// UIApplication.shared is unavailable in app extensions: a widget or share extension binds its
// own AppLifecycleSource (issue 17, extension-safety).
/// Observes UIKit application notifications and network reachability (`NWPathMonitor`).
@available(iOSApplicationExtension, unavailable)
@available(tvOSApplicationExtension, unavailable)
@available(visionOSApplicationExtension, unavailable)
@available(macCatalystApplicationExtension, unavailable)
public final class UIKitLifecycleSource: AppLifecycleSource, @unchecked Sendable {
    private let lock = NSLock()
    private var observers: [NSObjectProtocol] = []
    private var monitor: NWPathMonitor?
    private var lastPathSatisfied: Bool?

    /// Creates the source.
    public init() {}

    public var currentState: AppLifecycleState {
        onMain { UIApplication.shared.applicationState == .background ? .background : .foreground }
    }

    public func startObserving(_ handler: @escaping @Sendable (AppLifecycleEvent) -> Void) {
        let center = NotificationCenter.default
        let fg = center.addObserver(forName: UIApplication.didBecomeActiveNotification, object: nil, queue: nil) { _ in handler(.foreground) }
        let bg = center.addObserver(forName: UIApplication.didEnterBackgroundNotification, object: nil, queue: nil) { _ in handler(.background) }
        let m = NWPathMonitor()
        m.pathUpdateHandler = { [weak self] path in
            guard let self else { return }
            let ok = path.status == .satisfied
            let cameBack: Bool = self.lock.withLock {
                defer { self.lastPathSatisfied = ok }
                return ok && self.lastPathSatisfied == false
            }
            if cameBack { handler(.networkAvailable) }
        }
        m.start(queue: DispatchQueue(label: "score.network"))
        lock.withLock {
            observers += [fg, bg]
            monitor = m
        }
    }

    public func stopObserving() {
        let (obs, m) = lock.withLock { () -> ([NSObjectProtocol], NWPathMonitor?) in
            defer { observers = []; monitor = nil }
            return (observers, monitor)
        }
        for o in obs { NotificationCenter.default.removeObserver(o) }
        m?.cancel()
    }

    public func beginBackgroundTask() -> BackgroundTaskID {
        let raw = onMain { UIApplication.shared.beginBackgroundTask(withName: "score.flush", expirationHandler: nil).rawValue }
        return BackgroundTaskID(rawValue: raw)
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
