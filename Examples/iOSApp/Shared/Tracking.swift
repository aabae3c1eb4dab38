import Foundation
import OnboardingTracker
import PaywallTracker
import RocalyticsClient
import ScoreTracker
import TrackerCore

/// The four SDK surfaces, set up as an app would (shared by the app and its widget extension,
/// so both link and use every one of them).
enum Tracking {
    static let endpoint = "https://collector.example.com"

    /// The SDK folder in the standard location (Core's `StorageLocation`: Application Support,
    /// Caches on tvOS; excluded from backup, protected until first unlock): file I/O, so it runs
    /// off the main thread.
    static func directory(_ name: String) async throws -> String {
        try await Task.detached(priority: .utility) { try AppleStorageDirectory.prepare(name) }.value
    }

    static func appVersion() -> String {
        Bundle.main.object(forInfoDictionaryKey: "CFBundleShortVersionString") as? String ?? "1.0"
    }

    static func score(directory: String) -> ScoreClient {
        ScoreClient(
            publishableKey: "pk_example", siteId: "example-site", endpoint: endpoint,
            appVersion: appVersion(), os: "ios", locale: Locale.current.identifier,
            store: FileScoreStore(directory: directory))
    }

    static func rocalytics() -> RocalyticsClient {
        RocalyticsClient(configuration: RocalyticsConfiguration())
    }

    static func configureOnboarding(client: RocalyticsClient, storage: any KeyValueStorage) {
        let version = appVersion()
        OnboardingRun.configure(
            OnboardingRunConfiguration(
                sink: createRocalyticsOnboardingSink(client),
                context: .provider {
                    RunContextInput(
                        appVersion: version, build: nil, platform: .ios, osVersion: nil,
                        locale: "en-US", timezone: TimeZone.current.identifier)
                },
                storage: storage))
    }

    static func paywall(client: RocalyticsClient, storage: any KeyValueStorage) -> PaywallPresentationTracker {
        let version = appVersion()
        return PaywallPresentationTracker(
            configuration: PaywallTrackerConfiguration(
                sink: createRocalyticsPaywallSink(client, for: PaywallSnapshot.self),
                context: .provider {
                    RunContextInput(
                        appVersion: version, build: nil, platform: .ios, osVersion: nil,
                        locale: "en-US", timezone: TimeZone.current.identifier)
                },
                storage: storage))
    }
}
