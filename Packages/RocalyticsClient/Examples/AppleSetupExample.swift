// The Apple-platform setup of the README's Rocalytics section. Step 1 is compiled and run by the
// test suite (`ExampleTests`; on Linux the client is inert and says why). Step 2 needs UIKit and
// the three tracker modules, so only an app's Apple build compiles it; the Linux tests drive the
// same bindings over a fake OS side (LC9-LC19).

import RocalyticsClient

/// 1. On iOS, iPadOS, tvOS and visionOS the whole setup is one line: the system services
///    (`.systemDefault`) read the roca id from the Keychain items an earlier Expo build of the
///    app wrote (`expo-secure-store`), so an upgraded user keeps its id and never sends a second
///    `install`. A launch in the background before the first unlock only delays start-up.
public func startRocalyticsOnApplePlatforms() -> RocalyticsClient {
    RocalyticsClient()
}

#if canImport(UIKit) && !os(watchOS) && canImport(ScoreTracker) && canImport(OnboardingTracker) && canImport(PaywallTracker)
    import OnboardingTracker
    import PaywallTracker
    import ScoreTracker

    /// 2. Lifecycle, opt-in, one call per surface (at launch, after configuring the trackers).
    @available(iOSApplicationExtension, unavailable)
    @available(tvOSApplicationExtension, unavailable)
    @available(visionOSApplicationExtension, unavailable)
    @available(macCatalystApplicationExtension, unavailable)
    public func bindTrackersToTheAppLifecycle(score: ScoreClient, paywalls: PaywallPresentationTracker) {
        // Flush in the foreground and every 30 s, a bounded background flush, a flush when the network comes back.
        score.bindToAppLifecycle()
        // Entering the background calls background() on the current run and sends every unsent snapshot.
        OnboardingRun.bindToAppLifecycle()
        // Entering the background sends the unsent presentation snapshots.
        paywalls.bindToAppLifecycle()
    }

    /// In an app extension (no `UIApplication`), call the manual alternatives from its own lifecycle.
    public func extensionDidEnterBackground(score: ScoreClient, paywalls: PaywallPresentationTracker) {
        score.onBackground()
        OnboardingRun.shared?.appDidEnterBackground()
        paywalls.appDidEnterBackground()
    }
#endif
