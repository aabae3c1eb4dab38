import Foundation
import IntegrationExamples
import ScoreTracker
import Testing
import TrackerCore
import TrackerCoreTestKit

// Score with a token provider, wired as the Score integration guide's "Auth0 (JWT)" section
// does (`Integration/Examples/ScoreSignIn.swift`), through the real libcurl transport to a
// loopback collector, with the queue in a file store as an app keeps it.
//
// New scenario:
// - INT5: after sign-in every flush asks the provider for a fresh token: the events requests
//   carry `Authorization: Bearer tok-1`, then `Bearer tok-2`, with the publishable key; the
//   device's anonymous id is linked to the fan once, after the first flush's events, with the
//   token; every event is sent once; the token never shows in `inspect()`.

/// Stands in for Auth0's `CredentialsManager`: hands out `tok-1`, `tok-2`, … in turn.
final class RotatingCredentials: ScoreTokenProvider, @unchecked Sendable {
    private let issued = Locked(0)
    var calls: Int { issued.value }
    func accessToken() async throws -> String? {
        let n = issued.withLock {
            $0 += 1
            return $0
        }
        return "tok-\(n)"
    }
}

@Suite struct ScoreTokenProviderTests {
    @Test(.timeLimit(.minutes(2))) func INT5_everyFlushCarriesAFreshTokenFromTheProvider() async throws {
        let collector = try Collector()
        defer { collector.stop() }
        let dir = try TempDirectory("int5")
        defer { dir.remove() }
        let clock = ManualClock()
        let log = DiagnosticLog()
        let score = ScoreClient(
            configuration: ScoreConfiguration(
                publishableKey: "pk_test_1", siteId: "urc-ios", endpoint: collector.baseURL, appVersion: "4.2.0", os: "ios",
                store: FileScoreStore(directory: dir.path), clock: clock, scheduler: clock, onDiagnostic: log.handler))
        score.setConsent(analytics: true, personalization: false, advertising: false)
        score.track("poll_vote", properties: ["pollId": "motm-r12", "choice": "player_7"])

        let credentials = RotatingCredentials()
        onFanSignedIn(score, tokens: credentials, userId: "auth0|abc123")
        try await score.flush()
        score.track("article_read", properties: ["articleId": "a-1"])
        try await score.flush()

        let events = collector.requests("/api/events")
        #expect(events.count == 2)
        #expect(events.map { $0.request.header("Authorization") } == ["Bearer tok-1", "Bearer tok-2"])
        #expect(events.allSatisfy { $0.request.header("X-Publishable-Key") == "pk_test_1" })
        #expect(events.allSatisfy { $0.request.header("Content-Type") == "application/json" })
        #expect(credentials.calls == 2)
        let names = events.flatMap { $0.json["events"]?.arrayValue ?? [] }.compactMap { $0["name"]?.stringValue }
        #expect(names.filter { $0 == "poll_vote" }.count == 1 && names.filter { $0 == "article_read" }.count == 1, "\(names)")

        let links = collector.requests("/api/identity/link-anonymous")
        #expect(links.count == 1)
        let link = try #require(links.first)
        #expect(link.request.header("Authorization") == "Bearer tok-1")
        #expect(link.json["userId"] == "auth0|abc123")
        #expect(link.json["anonymousId"] == .string(score.inspect().identity.anonymousId))
        let linkIndex = try #require(collector.received.firstIndex { $0.path == "/api/identity/link-anonymous" })
        let firstEventsIndex = try #require(collector.received.firstIndex { $0.path == "/api/events" })
        #expect(linkIndex > firstEventsIndex, "the link follows the events")
        #expect(score.inspect().queue.depth == 0)
        #expect(!score.inspectJSON().contains("tok-"), "the token never shows in inspect()")
        #expect(log.all.isEmpty, "\(log.all)")
    }
}
