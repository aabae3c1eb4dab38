// The README excerpts must be written as an app writes them, at the start of the line
// (`make check-readme` compares them verbatim), so this file is not formatted.
// swift-format-ignore-file

import Foundation
import Testing
import TrackerCore
import TrackerCoreTestKit

import ScoreTracker

/// The README's Score section, verbatim (`make check-readme` checks the excerpts are in this
/// file), compiled and run by `SC200`.
enum ReadmeSnippets {
    static func setUp(base: String, dataDirectory: String, showDiagnostic: @escaping DiagnosticHandler) -> ScoreClient {
let score = ScoreClient(
    configuration: ScoreConfiguration(
        publishableKey: "pk_sample_publishable", siteId: "sample-app", endpoint: base,
        appVersion: "2.4.0", os: "ios", locale: "en-US",
        pii: .classify([PiiRule(field: "email", action: .hash), PiiRule(field: "phone", action: .drop)]),
        store: FileScoreStore(directory: dataDirectory + "/score"), onDiagnostic: showDiagnostic))
score.setConsent(analytics: true, personalization: false, advertising: false)
        return score
    }

    static func record(_ score: ScoreClient) {
score.track(.pollVote, properties: ["pollId": "motm-r12", "choice": "player_7"])
score.track("lesson_completed", properties: ["lesson": "intro", "email": "fan@example.com", "startedAt": Date()])
score.trackAdvertising("ad_clicked", properties: ["campaign": "spring"])  // no advertising consent: dropped
score.track("subscription_started", properties: ["plan": "pro_yearly"], delivery: .critical)
score.identify(userId: "user-42", traits: ["tier": "gold"])
print(score.inspectJSON())  // attach to bug reports: never holds the token
    }

    static func remembered(dataDirectory: String) -> ScoreClient {
var configuration = ScoreConfiguration(publishableKey: "pk_live_…", siteId: "urc-ios", endpoint: "https://score.example")
configuration.privacy = PrivacyOptions(mode: .gdpr)  // nothing is sent before consent…
configuration.persistConsent = true  // …and the next launch starts from the fan's last choice
configuration.store = FileScoreStore(directory: dataDirectory + "/score-remembered")
        return ScoreClient(configuration: configuration)
    }
}

@Suite struct ReadmeSnippetTests {
    /// SC200 — the README's Score section runs as written (no request: nothing is flushed).
    @Test func SC200_readmeScoreSectionRuns() throws {
        let dir = NSTemporaryDirectory() + "score-readme-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let diagnostics = DiagnosticLog()
        let score = ReadmeSnippets.setUp(base: "http://127.0.0.1:9", dataDirectory: dir, showDiagnostic: diagnostics.handler)
        ReadmeSnippets.record(score)
        let i = score.inspect()
        #expect(i.queue.depth == 4)  // the advertising event was dropped
        #expect(i.consent.droppedByConsent == 1)
        #expect(i.identity.userId == "user-42")
        #expect(score.inspectJSON() == WireJSON.encodeString(score.inspect().json()))
        let remembered = ReadmeSnippets.remembered(dataDirectory: dir)
        #expect(remembered.inspect().consent.analytics == false)
    }
}
