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

    /// The keychain access group the app and its widget share (both targets list
    /// `$(AppIdentifierPrefix)com.rocalytics.example.shared` in `keychain-access-groups`, and carry
    /// the prefix in their Info.plist), so the widget uses the app's roca id instead of minting its
    /// own and sending a second `install`. `nil` (no prefix): each process keeps its own.
    static var sharedKeychainGroup: String? {
        guard let prefix = Bundle.main.object(forInfoDictionaryKey: "AppIdentifierPrefix") as? String, !prefix.isEmpty
        else { return nil }
        return prefix + "com.rocalytics.example.shared"
    }

    static func rocalytics() -> RocalyticsClient {
        RocalyticsClient(configuration: RocalyticsConfiguration(keychainAccessGroup: sharedKeychainGroup))
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
