import TrackerCore

// The opt-in app-lifecycle binding of the paywall tracker: entering the background gives every
// unsent snapshot its send inside a bounded OS background task. The logic is Core's
// platform-independent `AppLifecycleMonitor`; only `bindToAppLifecycle()` without arguments
// reaches UIKit or AppKit.

extension PaywallPresentationTracker {
    /// Binds this tracker to `monitor`: when the app enters the background, every unsent
    /// snapshot is sent now (skipping a running backoff) inside a background task of at most
    /// `backgroundBudgetSeconds`. A snapshot whose send fails stays stored and is retried as
    /// usual. Keep the returned binding to `AppLifecycleBinding.unbind()` later.
    @discardableResult
    public func bindToAppLifecycle(monitor: AppLifecycleMonitor, backgroundBudgetSeconds: Double = 5) -> AppLifecycleBinding {
        monitor.bindBackground(budgetSeconds: backgroundBudgetSeconds) { [weak self] budgetMs in
            self?.appDidEnterBackground(monitor: monitor, budgetMs: budgetMs)
        }
    }

    #if (canImport(UIKit) && !os(watchOS)) || canImport(AppKit)
        /// Binds this tracker to the application lifecycle (UIKit, or AppKit's resign-active) in one
        /// call. Not available in app extensions: call ``appDidEnterBackground()`` instead.
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

    /// The app entered the background (the manual, extension-safe call): sends every unsent
    /// snapshot now. Never blocks.
    public func appDidEnterBackground() {
        drainOutgoing()
        for d in liveDeliveries { d.flush() }
    }

    func appDidEnterBackground(monitor: AppLifecycleMonitor, budgetMs: Int64) {
        let scheduler = lifecycleScheduler
        runInBackgroundTask(monitor: monitor, name: "paywall.send", budgetMs: budgetMs, scheduler: scheduler) { [weak self] done in
            guard let self else { return done() }
            scheduler.spawn {
                // Every recorded snapshot is with its delivery already (sent when recorded, never
                // held for its write): send what is unsent now, skipping a backoff.
                self.drainOutgoing()
                let deliveries = self.liveDeliveries
                for d in deliveries { d.flush() }
                for d in deliveries { await d.idle() }
                // The writes under way land before the task ends (a failed send's snapshot is
                // then stored for the next launch); a hung one holds the task to its budget.
                await self.idle()
                done()
            }
        }
    }
}
