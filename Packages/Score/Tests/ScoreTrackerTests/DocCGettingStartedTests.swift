import Testing
import TrackerCore
import TrackerCoreTestKit

@testable import ScoreTracker

// The snippets of the DocC article "Getting started with Score" (`make check-readme` checks that
// each is part of this file), run against a recording transport.

/// "Create the client" (the default store: a private folder in the platform's data directory).
func gettingStartedCreate() -> ScoreClient {
    let score = ScoreClient(
        configuration: ScoreConfiguration(
            publishableKey: "pk_live_…", siteId: "my-app", endpoint: "https://score.example.com",
            appVersion: "2.4.0", os: "ios", locale: "en-US",
            pii: .classify([PiiRule(field: "email", action: .hash)])))
    score.setConsent(analytics: true, personalization: false, advertising: false)
    return score
}

/// "Record events".
func gettingStartedRecord(_ score: ScoreClient) {
    score.track("lesson_completed", properties: ["lesson": "intro"])
    score.track(.pollVote, properties: ["pollId": "p1", "choice": "a"])
    score.track("subscription_started", properties: ["plan": "pro_yearly"], delivery: .critical)
    score.screen("home")
    score.identify(userId: "user-42", traits: ["tier": "gold"])
}

@Suite struct DocCGettingStartedTests {
    @Test func SC231_theGettingStartedSnippetsRecordWhatTheArticleSays() async {
        let h = Harness()
        let score = h.client(granted: true)
        gettingStartedRecord(score)
        #expect(score.inspect().queue.depth == 5)  // four events, and the identify event
    }
}
