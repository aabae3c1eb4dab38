import Testing
import TrackerCore
import TrackerCoreTestKit

@testable import PaywallTracker

/// Spec 17 A: lifecycle.
@Suite struct LifecycleTests {
    @Test func P1_startShownDismissedSendsThreeConformantSnapshots() async throws {
        let h = PaywallFixture()
        let handle = try #require(h.tracker.start(INFO))
        handle.shown()
        await h.settle()
        await h.advance(1000)
        handle.end(.dismissed)
        await h.settle()
        try h.expectShownThenDismissedAfterOneSecond()
        h.expectConformant()
        #expect(h.log.all.isEmpty)
    }

    @Test func P2_middleSnapshotSupersededWhileSeq1InFlight() async throws {
        let h = PaywallFixture { n, _ in n == 1 ? .hold : .result(.accepted) }
        let handle = try #require(h.tracker.start(INFO))
        await h.settle()
        #expect(h.sink.recorder.heldCount == 1)
        handle.shown()
        handle.end(.dismissed)
        h.sink.recorder.releaseHeld(with: .result(.accepted))
        await h.settle()
        #expect(h.received.map(\.seq) == [1, 3])
        #expect(h.received.last?.body["shown_at"] != .null)
        h.expectConformant()
    }

    @Test func P3_distinctPresentationIds() async throws {
        let h = PaywallFixture()
        let a = try #require(h.tracker.start(INFO))
        let b = try #require(h.tracker.start(INFO))
        a.end(.dismissed)
        b.end(.dismissed)
        await h.settle()
        let ids = Set(h.received.compactMap(\.presentationId))
        #expect(ids.count == 2)
        #expect(ids.allSatisfy(IDs.isLowercaseUUID))
        h.expectConformant()
    }

    @Test func P4_presentationsDoNotSupersedeEachOther() async throws {
        let h = PaywallFixture { _, _ in .result(.transient) }
        let a = try #require(h.tracker.start(INFO))
        a.shown()
        a.end(.purchased(PaywallTransactionInfo(originalTransactionIdentifier: "2000000123")))
        var infoB = INFO
        infoB.paywallId = "pw-2"
        let b = try #require(h.tracker.start(infoB))
        b.end(.dismissed)
        await h.settle()
        h.sink.recorder.respond(always: .accepted)
        await h.advance(120_000)
        let ended = h.received.filter(\.isEnded)
        let endA = try #require(ended.first { $0.body["paywall"]?["paywall_id"] == "pw-1" })
        let endB = try #require(ended.first { $0.body["paywall"]?["paywall_id"] == "pw-2" })
        #expect(ended.count == 2)
        #expect(endA.seq == 3)
        #expect(
            endA.wireString.hasSuffix(#""outcome":{"status":"purchased","transaction":{"original_transaction_identifier":"2000000123"}}}"#))
        #expect(endB.seq == 2)
        #expect(endB.wireString.hasSuffix(#""outcome":{"status":"dismissed"}}"#))
        h.expectConformant()
    }

    @Test func P5_contextReadOncePerPresentation() async throws {
        let calls = Locked(0)
        let h = PaywallFixture(
            context: .provider {
                calls.withLock { $0 += 1 }
                return CTX_IN
            })
        let handle = try #require(h.tracker.start(INFO))
        handle.shown()
        handle.end(.dismissed)
        await h.settle()
        #expect(calls.value == 1)
        h.expectConformant()
    }

    @Test func P6_contextFrozenAtStart() async throws {
        let calls = Locked(0)
        let h = PaywallFixture(
            context: .provider {
                let n = calls.withLock {
                    $0 += 1
                    return $0
                }
                var c = CTX_IN
                if n > 1 {
                    c.appVersion = "9.9.9"
                    c.locale = "fr-FR"
                }
                return c
            })
        let handle = try #require(h.tracker.start(INFO))
        _ = h.tracker.start(INFO)  // the provider now answers differently
        await h.settle()
        handle.shown()
        await h.settle()
        handle.end(.dismissed)
        await h.settle()
        let mine = h.received.filter { $0.presentationId == (handle as? PaywallPresentation)?.id }
        #expect(mine.count == 3)
        for s in mine { #expect(WireJSON.encodeString(s.body["context"]!) == CTX) }
        h.expectConformant()
    }
}
