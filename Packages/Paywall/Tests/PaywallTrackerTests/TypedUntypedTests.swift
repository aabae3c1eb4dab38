// The typed and untyped entry points read into the same fields and build the generated snapshot
// directly (issue 16): no JSON round trip, the same bytes and the same refusals.
//
// New scenario ids:
// - P70: typed `start(_:)` and untyped `start(json:)` of the same info send identical bytes
//   (v1, provider native and external, paywall step) or the same `invalid-info` message.
// - P71: typed `end(_:)` and untyped `end(json:)` of the same end send identical bytes; a reason
//   is kept only with `error` and when it is a key, a transaction only with `purchased`, keeping
//   its ids of 1 to 1024 characters and `restored` only when true.
import Testing
import TrackerCore
import TrackerCoreTestKit

@testable import PaywallTracker

@Suite struct TypedUntypedTests {
    private static let run = PaywallOnboardingRun(runId: "0192f1a2-0000-7000-8000-000000000001", stepKey: "paywall")

    private static var infos: [PaywallPresentationInfo] {
        var step = PaywallPresentationInfo(
            moment: "m", paywallId: "p", audienceId: "a", renderMode: .elements, billing: .stripe,
            surface: .paywallStep, variantKey: "v", deploymentId: "d", onboardingRun: run)
        step.audienceId = nil
        var external = PaywallPresentationInfo(provider: .external, externalPaywallId: "x1", placement: "pl", providerName: "RC")
        external.audienceId = "aud"
        var noPlacement = external
        noPlacement.placement = nil
        var empty = INFO
        empty.moment = ""
        return [INFO, INFO_A, step, external, PaywallPresentationInfo(provider: .native, externalPaywallId: "n1"), noPlacement, empty]
    }

    /// Sends start, shown and `end` for one presentation; returns the bodies and diagnostics.
    private func drive(
        _ start: (PaywallPresentationTracker) -> (any PaywallPresentationHandle)?,
        end: (any PaywallPresentationHandle) -> Void
    ) async -> (bodies: [String], log: [String]) {
        let h = PaywallFixture(uuid: { FIXED_ID })
        if let handle = start(h.tracker) {
            handle.shown()
            await h.advance(10)
            end(handle)
        }
        await h.settle()
        h.expectConformantIfAny()
        return (h.bodies, h.log.all.map { "\($0.code): \($0.message)" })
    }

    @Test func P70_typedAndUntypedStartsSendTheSameBytes() async {
        for (i, info) in Self.infos.enumerated() {
            let typed = await drive({ $0.start(info) }, end: { $0.end(.dismissed) })
            let untyped = await drive({ $0.start(json: InfoValidation.raw(info)) }, end: { $0.end(.dismissed) })
            #expect(typed.bodies == untyped.bodies, "info \(i)")
            #expect(typed.log == untyped.log, "info \(i)")
            #expect(typed.bodies.count == (i >= 5 ? 0 : 3), "info \(i)")
        }
        let refused = await drive({ $0.start(Self.infos[5]) }, end: { _ in })
        #expect(refused.log == ["invalid-info: placement must be 1 to 128 characters"])
    }

    @Test func P71_typedAndUntypedEndsSendTheSameOutcome() async throws {
        let cases: [(PaywallPresentationEnd, String)] = [
            (PaywallPresentationEnd(status: .error, reason: "net_down"), #"{"status":"error","reason":"net_down"}"#),
            (PaywallPresentationEnd(status: .error, reason: "not a key"), #"{"status":"error"}"#),
            (
                PaywallPresentationEnd(status: .dismissed, reason: "x", transaction: PaywallTransactionInfo(productId: "pro")),
                #"{"status":"dismissed"}"#
            ),
            (
                PaywallPresentationEnd(
                    status: .purchased,
                    transaction: PaywallTransactionInfo(
                        originalTransactionIdentifier: "100", purchaseToken: "", productId: "pro", restored: false)),
                #"{"status":"purchased","transaction":{"original_transaction_identifier":"100","product_id":"pro"}}"#
            ),
            (
                PaywallPresentationEnd(status: .purchased, transaction: PaywallTransactionInfo(purchaseToken: "", restored: true)),
                #"{"status":"purchased","transaction":{"restored":true}}"#
            ),
            (
                PaywallPresentationEnd(status: .purchased, transaction: PaywallTransactionInfo(purchaseToken: "")),
                #"{"status":"purchased"}"#
            ),
        ]
        for (end, outcome) in cases {
            let typed = await drive({ $0.start(INFO) }, end: { $0.end(end) })
            let untyped = await drive({ $0.start(INFO) }, end: { ($0 as! PaywallPresentation).end(json: Self.raw(end)) })
            #expect(typed.bodies == untyped.bodies, "\(end)")
            let last = try #require(typed.bodies.last)
            #expect(last.hasSuffix(#""status":"ended","ended_at":"2026-01-10T08:00:00.010Z","outcome":\#(outcome)}"#), "\(last)")
        }
    }

    /// The untyped form of a typed end (the observer's key names).
    private static func raw(_ end: PaywallPresentationEnd) -> JSONValue {
        var o = JSONObject()
        o["status"] = .string(end.status.rawValue)
        if let r = end.reason { o["reason"] = .string(r) }
        if let t = end.transaction {
            var tx = JSONObject()
            if let v = t.originalTransactionIdentifier { tx["originalTransactionIdentifier"] = .string(v) }
            if let v = t.purchaseToken { tx["purchaseToken"] = .string(v) }
            if let v = t.productId { tx["productId"] = .string(v) }
            if let v = t.restored { tx["restored"] = .bool(v) }
            o["transaction"] = .object(tx)
        }
        return .object(o)
    }
}

extension PaywallFixture {
    /// Every snapshot the sink saw was conformant (none sent is fine: a refused start).
    fileprivate func expectConformantIfAny() {
        #expect(sink.problems.value.isEmpty, "\(sink.problems.value)")
    }
}
