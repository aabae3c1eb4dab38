import TrackerCore

// The opt-in app-lifecycle binding of the onboarding tracker: entering the background calls
// `background()` on the current run and gives every unsent snapshot its send inside a bounded
// OS background task. The logic is Core's platform-independent `AppLifecycleMonitor`; only
// `bindToAppLifecycle()` without arguments reaches UIKit or AppKit.

extension OnboardingRunTracker {
    /// Binds this tracker to `monitor`: when the app enters the background, the current run is
    /// backgrounded (recorded and sent at once, see ``OnboardingRun/background()``) and every
    /// unsent snapshot is sent inside a background task of at most `backgroundBudgetSeconds`.
    /// Keep the returned binding to `AppLifecycleBinding.unbind()` later.
    @discardableResult
    public func bindToAppLifecycle(monitor: AppLifecycleMonitor, backgroundBudgetSeconds: Double = 5) -> AppLifecycleBinding {
        monitor.bindBackground(budgetSeconds: backgroundBudgetSeconds) { [weak self] budgetMs in
            self?.appDidEnterBackground(monitor: monitor, budgetMs: budgetMs)
        }
    }

    #if (canImport(UIKit) && !os(watchOS)) || canImport(AppKit)
        /// Binds this tracker to the application lifecycle (UIKit, or AppKit's resign-active) in one
        /// call. Not available in app extensions: call ``appDidEnterBackground()`` from the
        /// extension's own lifecycle instead.
        @available(iOSApplicationExtension, unavailable)
        @available(tvOSApplicationExtension, unavailable)
        @available(visionOSApplicationExtension, unavailable)
        @available(macCatalystApplicationExtension, unavailable)
        @discardableResult
        public func bindToAppLifecycle(backgroundBudgetSeconds: Double = 5) -> AppLifecycleBinding? {
            guard let monitor = AppLifecycleMonitor.system() else { return nil }
            return bindToAppLifecycle(monitor: monitor, backgroundBudgetSeconds: backgroundBudgetSeconds)
        }
    #endif

    /// The app entered the background (the manual, extension-safe call): backgrounds the
    /// current run and sends every unsent snapshot now. Never blocks.
    public func appDidEnterBackground() {
        backgroundCurrentRun()
        flushDeliveries()
    }

    func appDidEnterBackground(monitor: AppLifecycleMonitor, budgetMs: Int64) {
        backgroundCurrentRun()
        runInBackgroundTask(monitor: monitor, name: "onboarding.send", budgetMs: budgetMs, scheduler: scheduler) { [weak self] done in
            guard let self else { return done() }
            self.scheduler.spawn {
                // Every unsent snapshot already with its delivery goes now, skipping its backoff
                // (an earlier run's completion included): `idle()` waits up to
                // `storageReadTimeoutMs` for a write that hangs, past the budget (LC21).
                self.flushDeliveries()
                await self.idle()  // the backgrounded snapshot is stored and handed to its delivery
                let deliveries = self.flushDeliveries()
                for d in deliveries { await d.idle() }
                done()
            }
        }
    }

    /// `background()` on the current run, when it has entries (nothing to record otherwise).
    func backgroundCurrentRun() {
        let run: OnboardingRun? = state.withLock { s in
            guard !s.run.disposed, let cur = s.run.current, cur.hasEntries else { return nil }
            return OnboardingRun(runId: cur.runId, tracker: self, generation: s.run.generation)
        }
        run?.background()
    }

    @discardableResult
    func flushDeliveries() -> [DeliveryRuntime<OnboardingRunSnapshot>] {
        let deliveries = state.withLock { $0.run.disposed ? [] : Array($0.deliveries.values) }
        for d in deliveries { d.flush() }
        return deliveries
    }
}

extension OnboardingRun {
    /// Binds the app-wide tracker (the one ``configure(_:)`` set, whichever it is when the app
    /// goes to the background) to `monitor`. See ``OnboardingRunTracker/bindToAppLifecycle(monitor:backgroundBudgetSeconds:)``.
    @discardableResult
    public static func bindToAppLifecycle(monitor: AppLifecycleMonitor, backgroundBudgetSeconds: Double = 5) -> AppLifecycleBinding {
        monitor.bindBackground(budgetSeconds: backgroundBudgetSeconds) { budgetMs in
            OnboardingRun.shared?.appDidEnterBackground(monitor: monitor, budgetMs: budgetMs)
        }
    }

    #if (canImport(UIKit) && !os(watchOS)) || canImport(AppKit)
        /// Binds the app-wide tracker to the application lifecycle in one call (UIKit or AppKit).
        /// Not available in app extensions: call `OnboardingRun.shared?.appDidEnterBackground()`.
        @available(iOSApplicationExtension, unavailable)
        @available(tvOSApplicationExtension, unavailable)
        @available(visionOSApplicationExtension, unavailable)
        @available(macCatalystApplicationExtension, unavailable)
        @discardableResult
        public static func bindToAppLifecycle(backgroundBudgetSeconds: Double = 5) -> AppLifecycleBinding? {
            guard let monitor = AppLifecycleMonitor.system() else { return nil }
            return bindToAppLifecycle(monitor: monitor, backgroundBudgetSeconds: backgroundBudgetSeconds)
        }
    #endif
}
