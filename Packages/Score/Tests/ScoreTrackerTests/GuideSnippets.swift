import Foundation
import TrackerCore

@testable import ScoreTracker

/// The integration guide's Swift snippets, compiled (and run by the tests) with literal values.
/// Deprecated members: the guide's spellings are (issue 37 item 10), and they must keep compiling.
enum GuideSnippets {
    /// The guide's three constructor calls.
    @available(*, deprecated)
    static var constructors: [ScoreClient] {
        let store = InMemoryScoreStore()
        let pk = "pk_live_…"
        let endpoint = "https://score.test"
        let a = ScoreClient(
            publishableKey: "pk_live_…",
            siteId: "urc-ios",
            endpoint: "https://score.test",
            appVersion: "4.2.0",
            os: "iOS 18.1",
            device: "iPhone",
            locale: "en_GB",
            store: store, transport: NoTransport()
        )
        let b = ScoreClient(
            publishableKey: pk, siteId: "urc-ios", endpoint: endpoint,
            privacy: PrivacyOptions(mode: .gdpr, region: nil, regionProvider: nil, overrides: nil),
            store: store, transport: NoTransport())
        let c = ScoreClient(
            publishableKey: "pk_…", siteId: "app.example.com-1a2b3c",
            endpoint: "https://api.example.com",
            pii: PiiOptions.Classify(rules: [
                PiiRule(field: "email", action: .hash_),  // `hash_`, not `hash`: that name is NSObject's
                PiiRule(field: "phone", action: .redact),
                PiiRule(field: "memberNumber", action: .tokenize),
                PiiRule(field: "dateOfBirth", action: .drop),
            ]),
            store: store, transport: NoTransport()
        )
        return [a, b, c]
    }

    /// The guide's usage snippets on one client.
    @available(*, deprecated)
    static func usage(_ score: ScoreClient, credentials: @escaping @Sendable () async throws -> String) async {
        score.grantAllConsent()
        score.track(Events.shared.PollVote, props: ["pollId": "motm-r12", "choice": "player_7"])
        score.track("custom_badge_tap", props: ["badgeId": "b1"], requires: [.analytics])
        score.screen("match_centre")
        let groups = (analytics: true, personalization: true, advertising: false)
        score.setConsent(analytics: groups.analytics, personalization: groups.personalization, advertising: groups.advertising)
        score.setTokenProvider { try await credentials() }
        score.identify(userId: "auth0|abc123")
        score.identify(userId: "auth0|abc123", traits: ["team": "urc-leinster"], replayAnonymousEvents: true)
        score.track(Events.shared.PollVote, props: ["pollId": "motm-r12"], delivery: .critical)
        score.trackAdvertising("ad_click")
        score.onForeground()
        score.onBackground()
        score.onNetworkAvailable()
        score.startAutoFlush(everySeconds: 30)
        score.stopAutoFlush()
        print(score.inspectJson())
        try? await score.flush()
        Task { try? await score.flush() }
    }

    #if canImport(UIKit) && !os(watchOS)
        /// The guide's one-call lifecycle binding (`application(_:didFinishLaunchingWithOptions:)`),
        /// compiled on Apple platforms only. Deprecated: the guide's `unbindAppLifecycle()` is.
        @available(*, deprecated)
        static func bind(_ score: ScoreClient) {
            score.bindToAppLifecycle()
            score.unbindAppLifecycle()
        }
    #endif
}

struct NoTransport: HTTPTransport {
    func send(_ request: HTTPRequest) async throws -> HTTPResponse { HTTPResponse(status: 200) }
}
