import Foundation
import Testing
import TrackerCore

@testable import ScoreTracker

@Suite struct PrivacyScenarios {
    func privacyOf(_ c: ScoreClient) -> InspectSnapshot.Privacy { c.inspect().privacy }

    func policySteps(_ mode: PrivacyMode, requested: String, retention: Int) async {
        let h = Harness()
        let c = h.client(privacy: PrivacyOptions(mode: mode))
        c.pv()
        c.grantAllConsent()
        c.pv()
        await h.flush(c)
        #expect(c.inspect().consent.droppedByConsent == 1)
        #expect(h.tx.eventRequests.count == 1)
        #expect(h.tx.eventRequests[0].envelopeTexts == [pvEnvelope(1, ctx: CTX2)])
        #expect(
            privacyOf(c)
                == .init(
                    requested: requested, mode: requested, region: nil, retentionHours: retention,
                    dropsDeviceSignals: true, noSessionReplay: true, noGeoEnrichment: true))
        #expect(c.inspect().queue.retentionHours == retention)
    }

    @Test func SC16_gdpr() async { await policySteps(.gdpr, requested: "gdpr", retention: 24) }

    @Test func SC17_quebecAndLgpd() async {
        await policySteps(.quebec, requested: "quebec", retention: 24)
        await policySteps(.lgpd, requested: "lgpd", retention: 48)
    }

    @Test func SC18_cpra() async {
        let h = Harness()
        let c = h.client(privacy: PrivacyOptions(mode: .cpra))
        let k = c.inspect().consent
        #expect(k.analytics && k.personalization && !k.advertising)
        c.pv()
        c.ad()
        await h.flush(c)
        #expect(h.tx.eventRequests[0].envelopeTexts == [pvEnvelope(1)])
        #expect(c.inspect().consent.droppedByCategory["advertising"] == 1)
        #expect(
            privacyOf(c)
                == .init(
                    requested: "cpra", mode: "cpra", region: nil, retentionHours: 72,
                    dropsDeviceSignals: false, noSessionReplay: true, noGeoEnrichment: true))
    }

    @Test func SC19_offAndNoOption() async {
        for option in [PrivacyOptions(mode: .off), nil] {
            let h = Harness()
            let c = h.client(privacy: option)
            c.pv()
            c.grantAllConsent()
            c.pv()
            await h.flush(c)
            #expect(c.inspect().consent.droppedByConsent == 1)
            #expect(h.tx.eventRequests[0].envelopeTexts == [pvEnvelope(1)])
            #expect(
                privacyOf(c)
                    == .init(
                        requested: "off", mode: "off", region: nil, retentionHours: 72,
                        dropsDeviceSignals: false, noSessionReplay: false, noGeoEnrichment: false))
        }
    }

    @Test func SC20_retentionAtFlush() async {
        let h = Harness()
        let c = h.client(privacy: PrivacyOptions(mode: .gdpr), granted: true)
        c.pv()
        await h.at(T0 + HOUR)
        c.pv()
        await h.at(T0 + 24 * HOUR)
        h.tx.answerAll(.status(500))
        await h.flush(c)
        await h.at(T0 + 24 * HOUR + 1)
        h.tx.answerAll(.status(200))
        await h.flush(c)
        #expect(h.tx.batches == [[E(1), E(2)], [E(2)]])
        #expect(c.inspect().queue.expired == 1)
    }

    @Test func SC21_retentionAtStartup() async {
        let h = Harness()
        let c = h.client(privacy: PrivacyOptions(mode: .lgpd), granted: true)
        c.pv()
        await h.settle()
        await h.at(T0 + 48 * HOUR + SEC)
        let c2 = h.client(privacy: PrivacyOptions(mode: .lgpd), initialConsent: .all)
        await h.settle()
        #expect(c2.inspect().queue.depth == 0)
        #expect(c2.inspect().queue.expired == 1)
        #expect(h.tx.records.isEmpty)
        _ = c
    }

    @Test func SC22_cpraCappedAt72h() async {
        let h = Harness()
        let c = h.client(privacy: PrivacyOptions(mode: .cpra))
        c.pv()
        await h.at(T0 + 72 * HOUR + 1)
        await h.flush(c)
        #expect(h.tx.records.isEmpty)
        #expect(c.inspect().queue.expired == 1)
        #expect(privacyOf(c).retentionHours == 72)
    }

    @Test func SC23_overrides() async {
        do {
            let h = Harness()
            let c = h.client(privacy: PrivacyOptions(mode: .gdpr, overrides: PrivacyOverrides(retentionMaxHours: 12)), granted: true)
            #expect(privacyOf(c).retentionHours == 12)
            c.pv()
            await h.at(T0 + 12 * HOUR + 1)
            await h.flush(c)
            #expect(c.inspect().queue.expired == 1)
            #expect(h.tx.records.isEmpty)
        }
        do {
            let h = Harness()
            let c = h.client(privacy: PrivacyOptions(mode: .off, overrides: PrivacyOverrides(retentionMaxHours: 200)), granted: true)
            #expect(privacyOf(c).retentionHours == 72)
        }
        do {
            let h = Harness()
            let c = h.client(privacy: PrivacyOptions(mode: .gdpr, overrides: PrivacyOverrides(dropDeviceSignals: false)), granted: true)
            c.pv()
            await h.flush(c)
            #expect(h.tx.eventRequests[0].envelopeTexts == [pvEnvelope(1)])
            #expect(privacyOf(c).dropsDeviceSignals == false)
            #expect(privacyOf(c).retentionHours == 24)
        }
        do {
            let h = Harness()
            let c = h.client(
                privacy: PrivacyOptions(
                    mode: .gdpr,
                    overrides: PrivacyOverrides(
                        startingConsent: ConsentState(analytics: true, personalization: false, advertising: false))))
            c.pv()
            #expect(c.inspect().queue.depth == 1)
        }
    }

    @Test func SC24_autoInEurope() {
        for (r, expected) in [("GB", "GB"), ("DE", "DE"), ("CH", "CH"), (" gb ", "GB"), ("UK", "UK"), ("DE-BY", "DE-BY")] {
            let c = Harness().client(privacy: PrivacyOptions(mode: .auto, region: r))
            let p = privacyOf(c)
            #expect(p.requested == "auto" && p.mode == "gdpr" && p.retentionHours == 24 && p.dropsDeviceSignals, "\(r)")
            #expect(p.region == expected)
            let k = c.inspect().consent
            #expect(!k.analytics && !k.personalization && !k.advertising)
        }
    }

    @Test func SC25_autoInTheUnitedStates() {
        for r in ["US-CA", "US"] {
            let c = Harness().client(privacy: PrivacyOptions(mode: .auto, region: r))
            let p = privacyOf(c)
            #expect(p.mode == "cpra" && p.region == r && p.retentionHours == 72)
            let k = c.inspect().consent
            #expect(k.analytics && k.personalization && !k.advertising)
        }
    }

    @Test func SC26_autoQuebecBrazilElsewhere() async {
        let q = privacyOf(Harness().client(privacy: PrivacyOptions(mode: .auto, region: "CA-QC")))
        #expect(q.mode == "quebec" && q.retentionHours == 24 && q.dropsDeviceSignals)
        #expect(privacyOf(Harness().client(privacy: PrivacyOptions(mode: .auto, region: "CA"))).mode == "off")
        #expect(privacyOf(Harness().client(privacy: PrivacyOptions(mode: .auto, region: "CA-ON"))).mode == "off")
        let b = privacyOf(Harness().client(privacy: PrivacyOptions(mode: .auto, region: "BR")))
        #expect(b.mode == "lgpd" && b.retentionHours == 48)
        let h = Harness()
        let c = h.client(privacy: PrivacyOptions(mode: .auto, region: "JP"))
        #expect(privacyOf(c).mode == "off" && privacyOf(c).retentionHours == 72)
        let k = c.inspect().consent
        #expect(!k.analytics && !k.personalization && !k.advertising)
        c.grantAllConsent()
        c.pv()
        await h.flush(c)
        #expect(h.tx.eventRequests[0].envelopeTexts == [pvEnvelope(1)])
    }

    @Test func SC27_autoWithoutRegion() {
        let a = Harness().client(locale: "en-US", privacy: PrivacyOptions(mode: .auto))
        #expect(privacyOf(a).mode == "gdpr" && privacyOf(a).region == nil)
        let b = Harness().client(privacy: PrivacyOptions(mode: .auto, regionProvider: { "BR" }))
        #expect(privacyOf(b).mode == "lgpd" && privacyOf(b).region == "BR")
        let calls = Counter()
        let c = Harness().client(
            privacy: PrivacyOptions(
                mode: .auto, region: "JP",
                regionProvider: {
                    calls.bump()
                    return "DE"
                }))
        #expect(privacyOf(c).mode == "off")
        #expect(calls.value == 0)
        let d = Harness().client(privacy: PrivacyOptions(mode: .auto, regionProvider: { nil }))
        #expect(privacyOf(d).mode == "gdpr")
        let e = Harness().client(privacy: PrivacyOptions(mode: .auto, region: "123"))
        #expect(privacyOf(e).mode == "gdpr" && privacyOf(e).region == nil)
    }

    @Test func SC28_policyFixedForLifetime() async {
        let calls = Counter()
        let h = Harness()
        let c = h.client(privacy: PrivacyOptions(mode: .auto, regionProvider: { calls.bump() == 1 ? "US" : "DE" }))
        c.pv()
        await h.flush(c)
        #expect(privacyOf(c).mode == "cpra")
        #expect(privacyOf(c).mode == "cpra")
        #expect(calls.value == 1)
        #expect(h.tx.eventRequests[0].envelopeTexts == [pvEnvelope(1)])
    }
}

final class Counter: Sendable {
    private let n = Locked(0)
    @discardableResult func bump() -> Int {
        n.withLock {
            $0 += 1
            return $0
        }
    }
    var value: Int { n.withLock { $0 } }
}
