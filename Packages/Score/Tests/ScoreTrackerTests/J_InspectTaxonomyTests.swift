import Foundation
import Testing
import TrackerCore
import TrackerCoreTestKit

@testable import ScoreTracker

@Suite struct InspectTaxonomyScenarios {
    @Test func SC87_inspectJsonOfANewClient() {
        let h = Harness()
        let c = h.client(privacy: PrivacyOptions(mode: .gdpr), pii: PII4)
        let expected =
            #"{"sdk":\#(SDKJSON),"consent":{"analytics":false,"personalization":false,"advertising":false,"droppedByConsent":0,"droppedByCategory":{"analytics":0,"personalization":0,"advertising":0}},"queue":{"depth":0,"maxSize":1000,"retentionHours":24,"oldestAgeSeconds":null,"critical":0,"criticalLost":0,"shed":0,"expired":0,"invalid":0},"identity":{"anonymousId":"\#(A(1))","sessionId":"\#(S(1))","userId":null,"hasToken":false,"link":{"state":"none","lastSkipReason":null},"replayBuffer":{"count":0,"capacity":100}},"lastFlush":{"at":null,"ok":null,"sent":0,"consecutiveFailures":0},"site":"urc-ios","endpoint":"https://score.test","piiRules":4,"privacy":{"requested":"gdpr","mode":"gdpr","region":null,"retentionHours":24,"dropsDeviceSignals":true,"noSessionReplay":true,"noGeoEnrichment":true}}"#
        #expect(c.inspectJSON() == expected)
        let i = c.inspect()
        #expect(WireJSON.encodeString(i.json()) == expected)
        #expect(i.queue.maxSize == 1000 && i.piiRules == 4 && i.identity.anonymousId == A(1) && i.lastFlush.at == nil)
    }

    @Test func SC88_inspectAfterActivity() async {
        let h = Harness()
        let c = h.client(maxQueueSize: 2, granted: true)
        c.critical("c")
        c.pv()
        await h.at(T0 + 10 * SEC)
        c.track("b")
        c.track("")
        c.setConsent(analytics: true, personalization: false, advertising: false)
        c.ad()
        await h.at(T0 + 90 * SEC)
        let i = c.inspect()
        #expect(
            i.consent
                == .init(
                    analytics: true, personalization: false, advertising: false, droppedByConsent: 1,
                    droppedByCategory: ["analytics": 0, "personalization": 0, "advertising": 1]))
        #expect(
            i.queue
                == .init(
                    depth: 2, maxSize: 2, retentionHours: 72, oldestAgeSeconds: 90, critical: 1, criticalLost: 0,
                    shed: 1, expired: 0, invalid: 1))
        h.tx.answerAll(.status(500))
        await h.flush(c)
        #expect(c.inspect().lastFlush == .init(at: "2026-03-01T12:01:30.000Z", ok: false, sent: 0, consecutiveFailures: 1))
        await h.at(T0 + 100 * SEC)
        h.tx.answerAll(.status(200))
        await h.flush(c)
        let j = c.inspect()
        #expect(j.lastFlush == .init(at: "2026-03-01T12:01:40.000Z", ok: true, sent: 2, consecutiveFailures: 0))
        #expect(j.queue.depth == 0 && j.queue.oldestAgeSeconds == nil)
    }

    // SC90 (the taxonomy generator's drift test) runs in Tools/Tests/CodegenTests, next to the generator.
    @Test func SC89_generatedTaxonomy() throws {
        let names = EventDefinition.all.map(\.name)
        #expect(
            names == [
                "ad_impression", "article_read", "minigame_play", "motm_submit", "player_rating", "poll_vote",
                "product_view", "profile_favourite_team", "social_share", "sports_prediction", "streak_tick", "video_watch",
            ])
        #expect(EventDefinition.adImpression.requires == [.advertising])
        for d in EventDefinition.all where d.name != "ad_impression" { #expect(d.requires == [.analytics]) }
        #expect(EventDefinition.pollVote.name == "poll_vote")
        let dir = PackagePaths.packageRoot(#filePath) + "/schemas/events/"
        for d in EventDefinition.all {
            let doc = try WireJSON.decode(Array(Data(contentsOf: URL(fileURLWithPath: dir + d.name + ".schema.json"))))
            #expect(doc["x-score"]?["name"]?.stringValue == d.name)
            #expect(doc["x-score"]?["requires"]?.arrayValue?.compactMap(\.stringValue) == d.requires.map(\.rawValue))
        }
    }
}
