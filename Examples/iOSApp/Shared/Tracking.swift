import Foundation
import OnboardingTracker
import PaywallTracker
import RocalyticsClient
import ScoreTracker
import TrackerCore

/// What the app and its widget extension share: the Score client and the Rocalytics client's
/// configuration (the app starts the onboarding and paywall trackers with `Rocalytics.start`).
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

    /// The app's Score client on its default store (no file I/O here: fits in `App.init()`).
    static func score() -> ScoreClient {
        ScoreClient(
            configuration: ScoreConfiguration(
                publishableKey: "pk_example", siteId: "example-site", endpoint: endpoint,
                appVersion: appVersion(), os: "ios", locale: Locale.current.identifier))
    }

    /// A Score client on its own folder (the widget's, apart from the app's queue).
    static func score(directory: String) -> ScoreClient {
        ScoreClient(
            configuration: ScoreConfiguration(
                publishableKey: "pk_example", siteId: "example-site", endpoint: endpoint,
                appVersion: appVersion(), os: "ios", locale: Locale.current.identifier,
                store: FileScoreStore(directory: directory)))
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
}
