import Foundation
import Testing
import TrackerCore
import TrackerCoreTestKit

@testable import ScoreTracker

/// Issue 37 item 3 (Score's part): consent is no longer silent, and may be remembered.
@Suite struct W_ConsentNoticeTests {
    /// SC194 — events dropped while nothing is granted are reported once per period without consent,
    /// not once per call; a drop while some category is granted is not reported.
    @Test func SC194_oneNoConsentDiagnosticPerPeriod() async {
        let h = Harness()
        let c = h.client(privacy: PrivacyOptions(mode: .gdpr))
        c.track(.pollVote, properties: ["pollId": "p"])
        c.screen("home")
        c.identify(userId: "u1")
        #expect(h.diagnostics.count("consent") == 1)
        #expect(c.inspect().consent.droppedByConsent == 3)
        c.setConsent(analytics: false, personalization: true, advertising: false)
        c.track("needs_analytics")
        #expect(h.diagnostics.count("consent") == 1)
        c.setConsent(.none)
        c.track("again")
        c.track("again")
        #expect(h.diagnostics.count("consent") == 2)
        let message = h.diagnostics.all.first { $0.code == "consent" }?.message ?? ""
        #expect(message.contains("setConsent") && !message.contains("u1"))
    }

    static func tempDir(_ tag: String) -> String {
        let dir = NSTemporaryDirectory() + "score-consent-\(tag)-\(UUID().uuidString)"
        try? FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        return dir
    }

    /// A GDPR client on `h` (its store, clock, ids, transport and diagnostics).
    static func client(_ h: Harness, persist: Bool, initial: ConsentState? = nil) -> ScoreClient {
        var c = ScoreConfiguration(publishableKey: "pk_test_1", siteId: "urc-ios", endpoint: "https://score.test")
        c.privacy = PrivacyOptions(mode: .gdpr)
        (c.persistConsent, c.initialConsent) = (persist, initial)
        (c.store, c.transport, c.clock, c.scheduler, c.idSource) = (h.store, h.tx, h.clock, h.clock, h.ids)
        c.onDiagnostic = { [diagnostics = h.diagnostics] d in diagnostics.add(d) }
        return ScoreClient(configuration: c)
    }

    /// SC195 — with persistConsent, the consent the app set starts the next launch; events
    /// recorded before the stored value is read wait for it, then are queued or dropped by it.
    /// Without the option, a launch starts from the policy's consent (SC13).
    @Test func SC195_persistedConsentStartsTheNextLaunch() async {
        let dir = Self.tempDir("persist")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let h1 = Harness(store: FileScoreStore(directory: dir, sync: false))
        let c1 = Self.client(h1, persist: true)
        c1.setConsent(analytics: true, personalization: false, advertising: false)
        await h1.settle()
        #expect(FileManager.default.fileExists(atPath: dir + "/consent.json"))

        let h2 = Harness(store: FileScoreStore(directory: dir, sync: false), holdsOutsideWork: true)
        let c2 = Self.client(h2, persist: true)
        #expect(c2.consentKeeper.reading)
        c2.track(.pollVote, properties: ["pollId": "p"])
        c2.track(.adImpression)
        await h2.settle()
        await h2.clock.withOutsideWorkReleased { await h2.flush(c2) }
        let i = c2.inspect()
        #expect((i.consent.analytics, i.consent.personalization, i.consent.advertising) == (true, false, false))
        #expect(h2.tx.eventRequests.first?.names == ["poll_vote"])
        #expect(i.consent.droppedByCategory["advertising"] == 1)
        #expect(h2.diagnostics.count("consent") == 0)

        // Without the option: GDPR's starting consent, as before.
        let h3 = Harness(store: FileScoreStore(directory: dir, sync: false))
        let c3 = Self.client(h3, persist: false)
        c3.track(.pollVote, properties: ["pollId": "p"])
        await h3.flush(c3)
        #expect(c3.inspect().consent.analytics == false)
        #expect(h3.tx.eventRequests.isEmpty)
        #expect(h3.diagnostics.count("consent") == 1)
        _ = (c1, c2)
    }

    /// SC196 — an initialConsent passed, or a setConsent made before the stored value is read,
    /// wins over the stored consent; a withdrawal is stored too.
    @Test func SC196_theAppsConsentWinsAndWithdrawalIsStored() async {
        let dir = Self.tempDir("wins")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let h1 = Harness(store: FileScoreStore(directory: dir, sync: false))
        let c1 = Self.client(h1, persist: true)
        c1.grantAllConsent()
        await h1.settle()

        let h2 = Harness(store: FileScoreStore(directory: dir, sync: false), holdsOutsideWork: true)
        let c2 = Self.client(h2, persist: true, initial: ConsentState(analytics: false, personalization: true, advertising: false))
        #expect(!c2.consentKeeper.reading)
        await h2.settle()
        #expect(c2.inspect().consent.analytics == false)

        let h3 = Harness(store: FileScoreStore(directory: dir, sync: false), holdsOutsideWork: true)
        let c3 = Self.client(h3, persist: true)
        c3.track("before")  // waits for the stored consent; the app's choice below decides
        c3.setConsent(.none)
        await h3.settle()
        await h3.flush(c3)
        #expect(c3.inspect().consent.analytics == false)
        #expect(h3.tx.eventRequests.isEmpty)
        #expect(c3.inspect().consent.droppedByConsent == 1)

        let h4 = Harness(store: FileScoreStore(directory: dir, sync: false))
        let c4 = Self.client(h4, persist: true)
        await h4.settle()
        let i = c4.inspect()
        #expect((i.consent.analytics, i.consent.personalization, i.consent.advertising) == (false, false, false))
        _ = (c1, c2)
    }
}
