import Foundation
import Testing
import TrackerCore

@testable import ScoreTracker

@Suite struct ConsentScenarios {
    @Test func SC8_idleUntilGrantedDroppedNotBuffered() async {
        let h = Harness()
        let c = h.client()
        c.pv()
        c.track("custom_badge_tap")
        c.screen("home")
        await h.flush(c)
        #expect(h.tx.records.isEmpty)
        let i = c.inspect()
        #expect(
            i.consent
                == .init(
                    analytics: false, personalization: false, advertising: false, droppedByConsent: 3,
                    droppedByCategory: ["analytics": 3, "personalization": 0, "advertising": 0]))
        #expect(i.queue.depth == 0)
        c.grantAllConsent()
        c.track("after")
        await h.flush(c)
        #expect(h.tx.batches == [[E(1)]])
        #expect(h.tx.eventRequests[0].names == ["after"])
    }

    @Test func SC9_typedEventCarriesRequires() async {
        let h = Harness()
        let c = h.client()
        c.setConsent(analytics: true, personalization: false, advertising: false)
        c.ad()
        c.pv()
        await h.flush(c)
        c.setConsent(analytics: false, personalization: false, advertising: true)
        c.ad()
        c.pv()
        await h.flush(c)
        #expect(h.tx.batches == [[E(1)], [E(2)]])
        #expect(h.tx.eventRequests.map(\.names) == [["poll_vote"], ["ad_impression"]])
        let i = c.inspect().consent
        #expect(i.droppedByConsent == 2)
        #expect(i.droppedByCategory == ["analytics": 1, "personalization": 0, "advertising": 1])
    }

    @Test func SC10_namedEventRequiresAnalyticsByDefault() async {
        let h = Harness()
        let c = h.client()
        c.setConsent(analytics: false, personalization: true, advertising: true)
        c.track("custom_badge_tap")
        c.track("perso", requires: [.personalization])
        c.trackAdvertising("ad_click")
        c.screen("home")
        c.track("both", requires: [.personalization, .advertising])
        await h.flush(c)
        #expect(h.tx.batches == [[E(1), E(2), E(3)]])
        #expect(h.tx.eventRequests[0].names == ["perso", "ad_click", "both"])
        #expect(c.inspect().consent.droppedByConsent == 2)
        #expect(c.inspect().consent.droppedByCategory["analytics"] == 2)
        #expect(!h.tx.bodies.contains { $0.contains("requires") || $0.contains("personalization") })
    }

    @Test func SC11_severalRequiresAndNoneGranted() async {
        let h = Harness()
        let c = h.client()
        c.setConsent(analytics: true, personalization: false, advertising: false)
        c.track("combo", requires: [.analytics, .advertising])
        c.setConsent(analytics: false, personalization: false, advertising: false)
        c.track("combo", requires: [.analytics, .advertising])
        c.track("free", requires: [])
        let i = c.inspect().consent
        #expect(i.droppedByConsent == 3)
        #expect(i.droppedByCategory == ["analytics": 1, "personalization": 0, "advertising": 2])
        c.setConsent(analytics: false, personalization: true, advertising: false)
        c.track("free", requires: [])
        #expect(c.inspect().queue.depth == 1)
    }

    @Test func SC12_withdrawalPurgesTheQueue() async {
        let h = Harness()
        let c = h.client(granted: true)
        c.pv()
        c.ad(delivery: .critical)
        c.screen("home")
        c.track("p", requires: [.personalization])
        c.setConsent(analytics: true, personalization: true, advertising: false)
        #expect(c.inspect().queue.depth == 3)
        #expect(c.inspect().queue.critical == 0)
        await h.flush(c)
        #expect(h.tx.batches == [[E(1), E(3), E(4)]])
        #expect(c.inspect().queue.criticalLost == 0)
        #expect(!h.tx.bodies.contains { $0.contains("delivery_failed") })
    }

    @Test func SC13_consentNotPersistedEarlierEventsWait() async {
        let h = Harness()
        let c = h.client(granted: true)
        c.pv()
        c.pv()
        await h.settle()
        await h.at(T0 + 60 * SEC)
        let c2 = h.client()
        let i = c2.inspect()
        #expect(!i.consent.analytics && !i.consent.personalization && !i.consent.advertising)
        #expect(i.queue.depth == 2)
        await h.flush(c2)
        #expect(h.tx.records.isEmpty)
        c2.grantAllConsent()
        await h.flush(c2)
        #expect(h.tx.batches == [[E(1), E(2)]])
        #expect(h.tx.eventRequests[0].envelopeTexts == [pvEnvelope(1), pvEnvelope(2)])
        _ = c
    }

    @Test func SC14_initialConsentWins() async {
        let h = Harness()
        let c = h.client(
            privacy: PrivacyOptions(mode: .gdpr),
            initialConsent: ConsentState(analytics: true, personalization: false, advertising: false))
        c.pv()
        c.ad()
        await h.flush(c)
        #expect(h.tx.eventRequests[0].envelopeTexts == [pvEnvelope(1, ctx: CTX2)])
        #expect(c.inspect().consent.droppedByCategory["advertising"] == 1)

        let h2 = Harness()
        let c2 = h2.client(
            privacy: PrivacyOptions(mode: .cpra), initialConsent: ConsentState(analytics: false, personalization: false, advertising: false)
        )
        c2.pv()
        #expect(c2.inspect().queue.depth == 0)
        #expect(c2.inspect().consent.droppedByConsent == 1)
    }

    @Test func SC15_firstSetConsentEndsStartingConsent() async {
        let h = Harness()
        let c = h.client(privacy: PrivacyOptions(mode: .cpra))
        c.pv()
        #expect(c.inspect().queue.depth == 1)
        c.setConsent(analytics: false, personalization: false, advertising: true)
        c.pv()
        c.ad()
        await h.flush(c)
        #expect(h.tx.batches == [[E(2)]])
        #expect(h.tx.eventRequests[0].names == ["ad_impression"])
        await h.settle()
        let c2 = h.client(privacy: PrivacyOptions(mode: .cpra))
        let k = c2.inspect().consent
        #expect(k.analytics && k.personalization && !k.advertising)
    }
}
