import Foundation
import Testing
import TrackerCore
import TrackerCoreTestKit

@testable import ScoreTracker

/// Issue 37 item 7 (Score's part): nothing is written or sent from Xcode Previews.
@Suite struct W_PreviewTests {
    /// SC201 — a client built while Xcode Previews render records in memory only: no file in its
    /// store's directory, no request, no stored consent, no storage diagnostic.
    @Test func SC201_inertInXcodePreviews() async {
        let dir = NSTemporaryDirectory() + "score-preview-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let h = Harness()
        var c = ScoreConfiguration(publishableKey: "pk_test_1", siteId: "urc-ios", endpoint: "https://score.test")
        (c.store, c.transport, c.clock, c.scheduler, c.idSource) = (FileScoreStore(directory: dir), h.tx, h.clock, h.clock, h.ids)
        c.persistConsent = true
        c.onDiagnostic = { [diagnostics = h.diagnostics] d in diagnostics.add(d) }
        c.runningForPreviews = { true }
        let score = ScoreClient(configuration: c)
        score.grantAllConsent()
        score.track(.pollVote, properties: ["pollId": "p"])
        score.screen("home")
        await h.flush(score)
        #expect(h.tx.records.isEmpty)
        #expect(score.inspect().queue.depth == 0)
        #expect((try? FileManager.default.contentsOfDirectory(atPath: dir))?.isEmpty ?? true)
        #expect(h.diagnostics.all.isEmpty)
    }
}
