// Apple-only: the OS side of `AppLifecycleMonitor`. Every decision lives in AppLifecycle.swift;
// these types only call the OS.
//
// Why `MainActor.assumeIsolated` holds: the only caller of these methods is `AppLifecycleMonitor`
// (`AppLifecycleMonitor.system()` is the only place these types are created), and it calls every
// one of them inside its hop, `MainQueueHop`: inline when already on the main thread, else
// `DispatchQueue.main.async`, never `sync`. That includes ending a task from UIKit's expiration
// handler (which UIKit calls on the main thread, so the end runs before the handler returns).
// `AppLifecycleTests` LC22 drives each path (start, stop, begin, end, expiration, refusal) on
// Linux and checks that no call to the system happens outside the hop.
//
// App extensions: `UIApplication.shared` is unavailable there (Xcode compiles packages
// extension-safe), so everything that names it is marked unavailable in app extensions, and so
// is every API that reaches it (`AppLifecycleMonitor.system()`, the trackers'
// `bindToAppLifecycle()`); extensions use the trackers' manual lifecycle calls.

#if canImport(UIKit) && !os(watchOS)
    import UIKit
    #if canImport(Network)
        import Network
    #endif

    /// UIKit's application notifications, protected-data notifications, `NWPathMonitor` and
    /// `UIApplication` background tasks (iOS, iPadOS, tvOS, visionOS, Mac Catalyst). Not available
    /// in app extensions, which have no `UIApplication.shared`: call the trackers' manual
    /// foreground/background methods there.
    @available(iOSApplicationExtension, unavailable)
    @available(tvOSApplicationExtension, unavailable)
    @available(visionOSApplicationExtension, unavailable)
    @available(macCatalystApplicationExtension, unavailable)
    public final class UIKitLifecycleSystem: AppLifecycleSystem, @unchecked Sendable {
        // Touched only on the main thread (the monitor's hop), except `monitor`'s own queue.
        private var observers: [NSObjectProtocol] = []
        #if canImport(Network)
            private var path: NWPathMonitor?
        #endif

        /// Creates the OS side.
        public init() {}

        public func readState() -> AppRunState {
            MainActor.assumeIsolated { UIApplication.shared.applicationState == .background ? .background : .foreground }
        }

        public func startNotifications(_ deliver: @escaping @Sendable (AppSystemEvent) -> Void) {
            let center = NotificationCenter.default
            // UIApplication's notification names are isolated to the main actor (an error under
            // Swift 6 with recent SDKs elsewhere); this runs inside the monitor's hop.
            let pairs: [(Notification.Name, AppSystemEvent)] = MainActor.assumeIsolated {
                [
                    (UIApplication.didBecomeActiveNotification, .didBecomeActive),
                    (UIApplication.didEnterBackgroundNotification, .didEnterBackground),
                    (UIApplication.protectedDataDidBecomeAvailableNotification, .protectedDataAvailable),
                ]
            }
            observers = pairs.map { name, event in
                center.addObserver(forName: name, object: nil, queue: nil) { _ in deliver(event) }
            }
            #if canImport(Network)
                let m = NWPathMonitor()
                m.pathUpdateHandler = { p in deliver(.networkPath(satisfied: p.status == .satisfied)) }
                m.start(queue: DispatchQueue(label: "rocalytics.lifecycle.network"))
                path = m
            #endif
        }

        public func stopNotifications() {
            for o in observers { NotificationCenter.default.removeObserver(o) }
            observers = []
            #if canImport(Network)
                path?.cancel()
                path = nil
            #endif
        }

        public func beginBackgroundTask(name: String, expiration: @escaping @Sendable () -> Void) -> Int? {
            MainActor.assumeIsolated {
                let id = UIApplication.shared.beginBackgroundTask(withName: name, expirationHandler: expiration)
                return id == .invalid ? nil : id.rawValue
            }
        }

        public func endBackgroundTask(_ id: Int) {
            MainActor.assumeIsolated { UIApplication.shared.endBackgroundTask(UIBackgroundTaskIdentifier(rawValue: id)) }
        }
    }

#elseif canImport(AppKit)
    import AppKit

    /// AppKit's application notifications, mapped by ``AppKitLifecycleMapping`` (a Mac app is never
    /// suspended, so there are no background tasks; resigning active is not the background).
    public final class AppKitLifecycleSystem: AppLifecycleSystem, @unchecked Sendable {
        private var observers: [NSObjectProtocol] = []

        /// Creates the OS side.
        public init() {}

        public func readState() -> AppRunState {
            MainActor.assumeIsolated { AppKitLifecycleMapping.state(isHidden: NSApplication.shared.isHidden) }
        }

        public func startNotifications(_ deliver: @escaping @Sendable (AppSystemEvent) -> Void) {
            let center = NotificationCenter.default
            // NSApplication's notification names are isolated to the main actor, like UIKit's;
            // this runs inside the monitor's hop. Names and `isHidden`: developer.apple.com/
            // documentation/appkit/nsapplication (`class let didHideNotification:
            // NSNotification.Name`, "posted at the end of the hide(_:) method").
            let names: [(Notification.Name, AppKitLifecycleMapping.AppKitNotification)] = MainActor.assumeIsolated {
                [
                    (NSApplication.didBecomeActiveNotification, .didBecomeActive),
                    (NSApplication.didResignActiveNotification, .didResignActive),
                    (NSApplication.didHideNotification, .didHide),
                    (NSApplication.didUnhideNotification, .didUnhide),
                    (NSApplication.willTerminateNotification, .willTerminate),
                ]
            }
            observers = names.compactMap { name, notification in
                guard let event = AppKitLifecycleMapping.event(for: notification) else { return nil }
                return center.addObserver(forName: name, object: nil, queue: nil) { _ in deliver(event) }
            }
        }

        public func stopNotifications() {
            for o in observers { NotificationCenter.default.removeObserver(o) }
            observers = []
        }

        public func beginBackgroundTask(name: String, expiration: @escaping @Sendable () -> Void) -> Int? { nil }
        public func endBackgroundTask(_ id: Int) {}
    }
#endif

extension AppLifecycleMonitor {
    /// The monitor over this platform's application lifecycle: UIKit, AppKit, or `nil` where
    /// there is none (Linux, watchOS) or in an app extension build that cannot use it.
    @available(iOSApplicationExtension, unavailable)
    @available(tvOSApplicationExtension, unavailable)
    @available(visionOSApplicationExtension, unavailable)
    @available(macCatalystApplicationExtension, unavailable)
    public static func system() -> AppLifecycleMonitor? {
        #if canImport(UIKit) && !os(watchOS)
            AppLifecycleMonitor(system: UIKitLifecycleSystem())
        #elseif canImport(AppKit)
            AppLifecycleMonitor(system: AppKitLifecycleSystem())
        #else
            nil
        #endif
    }
}
