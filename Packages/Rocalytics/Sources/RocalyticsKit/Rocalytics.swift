@_exported import OnboardingTracker
@_exported import PaywallTracker
@_exported import RocalyticsClient
@_exported import TrackerCore

/// What ``Rocalytics/start(_:)`` sets up, and how. Every property has a default an iOS app keeps.
public struct RocalyticsSetup: Sendable {
    /// The client's configuration. Default: the system services (`.systemDefault`).
    public var client: RocalyticsConfiguration
    /// Where the onboarding run and the unsent paywall presentations are kept between launches.
    /// `nil`: the default store (a private folder in Application Support, prepared on the store's
    /// own I/O thread, so ``Rocalytics/start(_:)`` does no file I/O). Default: `nil`.
    public var storage: (any KeyValueStorage)?
    /// The app facts both trackers stamp on their snapshots. Default: `.system`.
    public var context: ContextSource
    /// Last changes to the onboarding tracker's configuration (a clock and scheduler in tests).
    public var onboarding: @Sendable (inout OnboardingRunConfiguration) -> Void
    /// Last changes to the paywall tracker's configuration.
    public var paywall: @Sendable (inout PaywallTrackerConfiguration) -> Void

    /// Creates a setup; every argument has the default documented on its property.
    public init(
        client: RocalyticsConfiguration = RocalyticsConfiguration(),
        storage: (any KeyValueStorage)? = nil,
        context: ContextSource = .system,
        onboarding: @escaping @Sendable (inout OnboardingRunConfiguration) -> Void = { _ in },
        paywall: @escaping @Sendable (inout PaywallTrackerConfiguration) -> Void = { _ in }
    ) {
        self.client = client
        self.storage = storage
        self.context = context
        self.onboarding = onboarding
        self.paywall = paywall
    }
}

/// The Rocalytics client with the onboarding and paywall trackers delivering to it, started by one
/// call that fits in `App.init()`:
///
/// ```swift
/// let rocalytics = Rocalytics.start()
/// ```
///
/// Then, anywhere: `OnboardingRun.resumeOrStart(...)` for the onboarding, `rocalytics.paywalls`
/// for paywalls, `rocalytics.client.recordPurchase(...)` for purchases. Each surface is also its
/// own package: an app that uses only one depends on that one alone.
public final class Rocalytics: Sendable {
    /// The Rocalytics client (install, identify, purchases, demand score).
    public let client: RocalyticsClient
    /// The paywall presentation tracker, delivering to ``client``.
    public let paywalls: PaywallPresentationTracker
    /// The app-wide onboarding tracker (`OnboardingRun.shared`), delivering to ``client``.
    public let onboarding: OnboardingRunTracker
    private let bindings: Locked<[AppLifecycleBinding]>

    private static let current = Locked<Rocalytics?>(nil)

    /// What ``start(_:)`` set up, or `nil` before it.
    public static var shared: Rocalytics? { current.withLock { $0 } }

    #if (canImport(UIKit) && !os(watchOS)) || canImport(AppKit)
        /// Starts the client, configures the app-wide onboarding tracker and creates the paywall
        /// tracker, both delivering to the client, with the default store and the system context,
        /// and binds both trackers to the app lifecycle (entering the background sends what is
        /// unsent). Synchronous and free of file I/O: call it in `App.init()` or
        /// `application(_:didFinishLaunchingWithOptions:)`. Called again, it returns what the first
        /// call set up (the new setup is ignored). In an app extension, call
        /// ``start(_:lifecycle:)`` with `nil` and the trackers' `appDidEnterBackground()` yourself.
        @available(iOSApplicationExtension, unavailable)
        @available(tvOSApplicationExtension, unavailable)
        @available(visionOSApplicationExtension, unavailable)
        @available(macCatalystApplicationExtension, unavailable)
        @discardableResult
        public static func start(_ setup: RocalyticsSetup = RocalyticsSetup()) -> Rocalytics {
            start(setup, lifecycle: { AppLifecycleMonitor.system() })
        }
    #else
        /// Starts the client, configures the app-wide onboarding tracker and creates the paywall
        /// tracker, both delivering to the client, with the default store and the system context.
        /// Synchronous and free of file I/O. Called again, it returns what the first call set up.
        /// (No application lifecycle exists on this platform: nothing is bound.)
        @discardableResult
        public static func start(_ setup: RocalyticsSetup = RocalyticsSetup()) -> Rocalytics {
            start(setup, lifecycle: nil)
        }
    #endif

    /// ``start(_:)`` with the lifecycle monitors to bind the two trackers to: `lifecycle` is called
    /// once per tracker (a monitor serves one binding); `nil` binds nothing (app extensions, tests).
    @discardableResult
    public static func start(_ setup: RocalyticsSetup, lifecycle: (@Sendable () -> AppLifecycleMonitor?)?) -> Rocalytics {
        current.withLock { current in
            if let current { return current }
            let started = Rocalytics(setup, lifecycle: lifecycle)
            current = started
            return started
        }
    }

    init(_ setup: RocalyticsSetup, lifecycle: (@Sendable () -> AppLifecycleMonitor?)?) {
        let client = RocalyticsClient(configuration: setup.client)
        let storage = setup.storage ?? StandardFileStorage()
        var onboardingConfig = OnboardingRunConfiguration(sink: .rocalytics(client), context: setup.context, storage: storage)
        setup.onboarding(&onboardingConfig)
        OnboardingRun.configure(onboardingConfig)
        var paywallConfig = PaywallTrackerConfiguration(sink: .rocalytics(client), context: setup.context, storage: storage)
        setup.paywall(&paywallConfig)
        let onboarding = OnboardingRun.shared ?? OnboardingRunTracker(configuration: onboardingConfig)
        let paywalls = PaywallPresentationTracker(configuration: paywallConfig)
        var made: [AppLifecycleBinding] = []
        if let lifecycle {
            if let monitor = lifecycle() { made.append(OnboardingRun.bindToAppLifecycle(monitor: monitor)) }
            if let monitor = lifecycle() { made.append(paywalls.bindToAppLifecycle(monitor: monitor)) }
        }
        self.client = client
        self.onboarding = onboarding
        self.paywalls = paywalls
        self.bindings = Locked(made)
    }

    /// Stops sending on all three surfaces and forgets what they had not sent yet; each surface
    /// stores its switch, so later launches stay opted out until ``optIn()`` (and while a tracker's
    /// launch read is still running, its sink, the client's, answers `ignored` anyway).
    public func optOut() {
        client.optOut()
        onboarding.optOut()
        paywalls.optOut()
    }

    /// Sends again on all three surfaces (stored).
    public func optIn() {
        client.optIn()
        onboarding.optIn()
        paywalls.optIn()
    }

    /// Whether ``optOut()`` is in force (the client's persisted switch).
    public var isOptedOut: Bool { client.isOptedOut }

    /// Ends the lifecycle bindings ``start(_:)`` made and disposes the trackers (tests, or an app
    /// that signs out of analytics for good); the next ``start(_:)`` sets up anew.
    public func stop() {
        bindings.withLock { all in
            for b in all { b.unbind() }
            all = []
        }
        onboarding.dispose()
        paywalls.dispose()
        Self.current.withLock { if $0 === self { $0 = nil } }
    }
}
