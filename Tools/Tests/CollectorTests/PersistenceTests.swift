import CollectorKit
import Foundation
import Testing
import TrackerCore
import TrackerCoreTestKit

@Suite struct PersistenceTests {
    @Test func sqliteRoundTripKeepsHighestSeqAndVerdicts() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("collector-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: dir) }
        let path = dir.appendingPathComponent("nested/collector.sqlite").path
        let mid = try Fixtures.example("onboarding-run/studio-1-mid-flow.json")
        let done = try Fixtures.example("onboarding-run/studio-2-completed.json")
        let s1 = try Fixtures.example("paywall-presentation/purchased-android-1-start-in-progress.json")
        do {
            let c = try Collector(databasePath: path, contractsDirectory: Fixtures.contracts, clock: ManualClock())
            #expect(c.ingestOnboardingRun(body: Fixtures.bytes(mid), sender: "s", receivedAtMs: 1000).outcome == .accepted)
            #expect(c.ingestOnboardingRun(body: Fixtures.bytes(done), sender: "s", receivedAtMs: 2000).outcome == .accepted)
            #expect(c.ingestOnboardingRun(body: Fixtures.bytes(mid), sender: "s", receivedAtMs: 3000).outcome == .ignored)
            #expect(c.ingestPaywallPresentation(body: Fixtures.bytes(s1), sender: "s", receivedAtMs: 4000).outcome == .accepted)
        }
        // Reopen: what was accepted is still there, and the acceptance rules read it.
        let c = try Collector(databasePath: path, contractsDirectory: Fixtures.contracts, clock: ManualClock())
        let run = try #require(try c.storedRun(sender: "s", runId: "00000000-0000-4000-8000-000000000001"))
        #expect(run.seq == 8 && run.status == "completed")
        #expect(run.firstReceivedAtMs == 1000 && run.lastReceivedAtMs == 2000)
        #expect(run.body == WireJSON.encodeString(done))
        #expect(try c.storedPresentation(sender: "s", id: s1["presentation_id"]!.stringValue!)?.seq == 1)
        #expect(c.ingestOnboardingRun(body: Fixtures.bytes(done.with("seq", 9)), sender: "s").outcome == .ignored)
        let counts = try c.verdictCounts().map { "\($0.kind) \($0.outcome) \($0.count)" }
        #expect(counts == ["onboarding-run accepted 2", "onboarding-run ignored 2", "paywall-presentation accepted 1"])
        #expect(try c.canonicalManifest(key: "6f1c2b0e-3d4a-4f8e-9b7c-2a1d0e9f8c7b", version: "412") != nil)
    }

    @Test func scoreBatchesAreStoredOncePerEventId() throws {
        let c = try Fixtures.collector()
        let event: JSONValue = [
            "type": "track", "name": "opened", "eventId": "019ba6eb-5800-7000-8000-000000000001",
            "timestamp": "2026-01-10T08:00:00.000Z", "anonymousId": "019ba6eb-5800-7000-8000-000000000002",
            "sessionId": "019ba6eb-5800-7000-8000-000000000003", "siteId": "site", "props": [:], "context": ["os": "ios"],
            "sdk": ["name": "score-tracker-linux", "version": "0.1.0"],
        ]
        let batch: JSONValue = ["sentAt": "2026-01-10T08:00:01.000Z", "events": [event]]
        let v = c.ingestScoreBatch(body: Fixtures.bytes(batch))
        #expect(v.outcome == .accepted && v.httpStatus == 200)
        #expect(c.ingestScoreBatch(body: Fixtures.bytes(batch)).note == "1 duplicates")
        #expect(try c.scoreEventCount() == 1)
        let bad = c.ingestScoreBatch(body: Fixtures.bytes(["sentAt": "2026-01-10T08:00:01.000Z", "events": [event.with("eventId", "X")]]))
        #expect(bad.outcome == .rejected && bad.httpStatus == 400)
        let tooBig = c.ingestScoreBatch(body: [UInt8](repeating: 32, count: Collector.maxScoreBatchBytes + 1))
        #expect(tooBig.httpStatus == 413)
        #expect(c.ingestScoreLink(body: Array(#"{"anonymousId":"a","userId":"u"}"#.utf8)).outcome == .accepted)
    }
}
