import Testing
import TrackerCore
import TrackerCoreTestKit

@testable import PaywallTracker

/// Runs one presentation at T9 with the fixed id: start, optional shown, then the end; returns
/// the harness after everything settled.
private func run(
    _ info: PaywallPresentationInfo = INFO_A, shownAfterMs: Int64? = 350, endAfterMs: Int64 = 41_120,
    end: (PaywallPresentation) -> Void
) async throws -> PaywallFixture {
    let h = PaywallFixture(startMs: T9, uuid: { FIXED_ID })
    let handle = try #require(h.tracker.start(info) as? PaywallPresentation)
    await h.settle()
    var elapsed: Int64 = 0
    if let shownAfterMs {
        await h.advance(shownAfterMs)
        elapsed = shownAfterMs
        handle.shown()
        await h.settle()
    }
    await h.advance(endAfterMs - elapsed)
    end(handle)
    await h.settle()
    return h
}

private func outcome(_ h: PaywallFixture) -> String? {
    h.received.last.flatMap { $0.body["outcome"] }.map(WireJSON.encodeString)
}

/// Spec 17 C: outcome mapping.
@Suite struct OutcomeTests {
    @Test func P16_iOSPurchase() async throws {
        let h = try await run {
            $0.end(.purchased(PaywallTransactionInfo(originalTransactionIdentifier: "2000000123", productId: "pro_annual")))
        }
        #expect(h.received.map(\.seq) == [1, 2, 3])
        #expect(
            h.bodies[0].contains(
                #""paywall":{"moment_key":"settings_upgrade","paywall_id":"pw-1","audience_id":"aud-1","render_mode":"custom","billing":"store"}"#
            ))
        #expect(h.bodies[0].contains(#""presentation_id":"\#(FIXED_ID)""#))
        let last = h.bodies[2]
        #expect(last.contains(#""status":"ended""#))
        #expect(last.contains(#""shown_at":"2026-01-10T09:00:00.350Z""#))
        #expect(last.contains(#""ended_at":"2026-01-10T09:00:41.120Z""#))
        #expect(
            last.contains(
                #""outcome":{"status":"purchased","transaction":{"original_transaction_identifier":"2000000123","product_id":"pro_annual"}}"#
            ))
        h.expectConformant()
    }

    @Test func P17_purchaseWithoutTransaction() async throws {
        let h = try await run { $0.end(.purchased()) }
        #expect(outcome(h) == #"{"status":"purchased"}"#)
        h.expectConformant()
    }

    @Test func P18_extrasDroppedOnDismissed() async throws {
        let h = try await run {
            $0.end(PaywallPresentationEnd(status: .dismissed, reason: "x", transaction: PaywallTransactionInfo(productId: "p")))
        }
        #expect(outcome(h) == #"{"status":"dismissed"}"#)
        h.expectConformant()
    }

    @Test func P19_emptyStoreIdDropped() async throws {
        let h = try await run { $0.end(.purchased(PaywallTransactionInfo(originalTransactionIdentifier: "", purchaseToken: "tok"))) }
        #expect(outcome(h) == #"{"status":"purchased","transaction":{"purchase_token":"tok"}}"#)
        h.expectConformant()
    }

    @Test func P20_restore() async throws {
        let h = try await run { $0.end(.restored) }
        #expect(outcome(h) == #"{"status":"purchased","transaction":{"restored":true}}"#)
        h.expectConformant()
    }

    @Test func P21_restoredThatIsNotTrue() async throws {
        // A string `restored` is only expressible through the untyped end.
        let h1 = try await run { $0.end(json: ["status": "purchased", "transaction": ["restored": "yes", "productId": "p"]]) }
        #expect(outcome(h1) == #"{"status":"purchased","transaction":{"product_id":"p"}}"#)
        h1.expectConformant()
        let h2 = try await run { $0.end(.purchased(PaywallTransactionInfo(restored: false))) }
        #expect(outcome(h2) == #"{"status":"purchased"}"#)
        h2.expectConformant()
    }

    @Test func P22_purchaseImpliesShown() async throws {
        let h = try await run(shownAfterMs: nil, endAfterMs: 500) { $0.end(.purchased(PaywallTransactionInfo(productId: "p"))) }
        let last = try #require(h.bodies.last)
        #expect(h.received.last?.seq == 2)
        #expect(last.contains(#""shown_at":"2026-01-10T09:00:00.500Z""#))
        #expect(last.contains(#""ended_at":"2026-01-10T09:00:00.500Z""#))
        h.expectConformant()
    }

    @Test func P23_errorBeforeShown() async throws {
        let h = try await run(shownAfterMs: nil, endAfterMs: 10) { $0.end(.error("unknown-custom-screen")) }
        let last = try #require(h.bodies.last)
        #expect(last.contains(#""shown_at":null"#))
        #expect(last.contains(#""ended_at":"2026-01-10T09:00:00.010Z""#))
        #expect(outcome(h) == #"{"status":"error","reason":"unknown-custom-screen"}"#)
        h.expectConformant()
    }

    @Test func P24_reasonOutsideKeyPatternDroppedSilently() async throws {
        let h = try await run { $0.end(.error("render error!")) }
        #expect(outcome(h) == #"{"status":"error"}"#)
        #expect(h.log.all.isEmpty)
        h.expectConformant()
    }

    @Test func P25_androidJoinKeys() async throws {
        let h = try await run {
            $0.end(
                .purchased(
                    PaywallTransactionInfo(
                        originalTransactionIdentifier: "GPA.3311-4849-7511-34728",
                        purchaseToken: "mboecpopplapdphlhgegnpol.AO-J1OxExampleToken", productId: "pro_annual")))
        }
        #expect(
            outcome(h)
                == #"{"status":"purchased","transaction":{"original_transaction_identifier":"GPA.3311-4849-7511-34728","purchase_token":"mboecpopplapdphlhgegnpol.AO-J1OxExampleToken","product_id":"pro_annual"}}"#
        )
        h.expectConformant()
    }

    @Test func P26_storeIdOverTheLimitDropped() async throws {
        let long = String(repeating: "p", count: 1025)
        let h = try await run { $0.end(.purchased(PaywallTransactionInfo(purchaseToken: "tok", productId: long))) }
        #expect(outcome(h) == #"{"status":"purchased","transaction":{"purchase_token":"tok"}}"#)
        // Counted in UTF-16 units: 512 characters outside the BMP are 1,024 units (kept), 513 are not.
        let emoji512 = String(repeating: "😀", count: 512)
        let h2 = try await run { $0.end(.purchased(PaywallTransactionInfo(productId: emoji512 + "😀"))) }
        #expect(outcome(h2) == #"{"status":"purchased"}"#)
        let h3 = try await run { $0.end(.purchased(PaywallTransactionInfo(productId: emoji512))) }
        #expect(outcome(h3) == #"{"status":"purchased","transaction":{"product_id":"\#(emoji512)"}}"#)
        h.expectConformant()
        h3.expectConformant()
    }
}
