import Foundation
import RocalyticsClient
import RocalyticsClientTestSupport
import Testing
import TrackerCore
import TrackerCoreTestKit

let D30_PURCHASE = TrackPurchaseParams(
    isTrial: false, value: 9.99, currency: "EUR", originalTransactionIdentifier: "t-1", productId: "pro_monthly")
let D30_BODY = TRACK(
    "purchase", "\(ID)-purchase-t-1",
    #"{"is_trial":false,"original_transaction_identifier":"t-1","product_id":"pro_monthly","price":9.99,"currency_code":"EUR"}"#, DC_IOS)

/// D. Events, purchases and requests.
@Suite struct EventTests {
    @Test func D30_aPurchaseWithOnlyProductIdHasNoExperimentalKey() async throws {
        let h = ClientFixture(store: RETURNING())
        try await h.client.trackPurchase(originalTransactionIdentifier: "t-1", productId: "pro_monthly", price: 9.99, currency: "EUR")
        expectRequest(h.requests.last, "\(API)/track", body: D30_BODY)
        #expect(!bodyText(h.requests.last!).contains("experimental"))
    }

    @Test func D31_onlyTheRawObjectsGivenGoUnderExperimental() async throws {
        let h = ClientFixture(store: RETURNING())
        try await h.client.trackPurchase(
            originalTransactionIdentifier: "t-2", productId: "p", price: 0, currency: "EUR", isTrial: true,
            redemptionResult: ["code": "abc"])
        let body = try WireJSON.decode(h.requests.last!.body!)
        #expect(body["properties"]?["experimental"] == json(#"{"redemption_result":{"code":"abc"}}"#))
    }

    @Test func D32_withNoProductIdAnywhereProductIdIsAbsent() async throws {
        let h = ClientFixture(store: RETURNING())
        try await h.client.trackPurchase(
            originalTransactionIdentifier: "t-3", price: 4.99, currency: "USD", transaction: ["id": "x"])
        expectRequest(
            h.requests.last, "\(API)/track",
            body: TRACK(
                "purchase", "\(ID)-purchase-t-3",
                #"{"is_trial":false,"original_transaction_identifier":"t-3","price":4.99,"currency_code":"USD","experimental":{"transaction":{"id":"x"}}}"#,
                DC_IOS))
    }

    // D33 (a working client logs nothing, default handler): see OutputTests.

    @Test func D34_anAllNullIdentifyStillSendsEmptyObject() async throws {
        let h = ClientFixture(store: RETURNING())
        var ids = IdentifyParams()
        ids.email = nil
        try await h.client.identify(["email": nil])
        try await h.client.identify(ids)
        expectRequest(h.requests[1], "\(API)/identify", body: "{}")
        expectRequest(h.requests[2], "\(API)/identify", body: "{}")
    }

    @Test func D35_anEmptyDedupSuffixAddsNothing() async throws {
        let h = ClientFixture(store: RETURNING())
        try await h.client.trackCustomEvent("streak_lost", dedupSuffix: "")
        expectRequest(h.requests.last, "\(API)/track", body: TRACK("streak_lost", "\(ID)-streak_lost", "{}", DC_IOS, custom: true))
    }

    @Test func D36_baseUrlMovesEveryApiRequest() async throws {
        let h = ClientFixture(store: RETURNING(), baseURL: "https://staging.example.test")
        try await h.client.track(.trialStarted)
        #expect(
            h.requests.map(\.url) == [
                "https://staging.example.test/functions/v1/identify", "https://staging.example.test/functions/v1/track",
            ])
    }

    @Test func D37_demandScoreFailures() async throws {
        let h = ClientFixture(
            store: RETURNING(),
            transport: RecordingTransport { r in
                RecordingTransport.path(of: r.url) == "/functions/v1/demand-score"
                    ? HTTPResponse(status: 404) : try await RecordingTransport.rocalyticsReplies(r)
            })
        let message = await errorMessage { _ = try await h.client.getDemandScore() }
        #expect(message == "[ROCALYTICS] demand-score failed: 404")
    }

    @Test func D38_trackOnboardingFailuresKeepTheState() async throws {
        let h = ClientFixture(store: RETURNING())
        h.transport.setHandler { r in
            RecordingTransport.path(of: r.url) == "/functions/v1/onboarding-response"
                ? HTTPResponse(status: 500) : try await RecordingTransport.rocalyticsReplies(r)
        }
        let message = await errorMessage { try await h.client.trackOnboarding(stepId: "welcome") }
        #expect(message == "[ROCALYTICS] onboarding-response failed: 500")
        h.transport.setHandler(RecordingTransport.rocalyticsReplies)
        await h.clock.set(ms: T0ms + 2000)
        try await h.client.trackOnboarding(stepId: "goal")
        expectRequest(
            h.requests.last, "\(API)/onboarding-response",
            body:
                #"{"sent_at":"2026-01-10T08:00:02.000Z","responses":[{"step_id":"welcome","entered_at":"\#(T0)","exited_at":"2026-01-10T08:00:02.000Z","answers":{}},{"step_id":"goal","entered_at":"2026-01-10T08:00:02.000Z","exited_at":null,"answers":{}}]}"#
        )
    }

    @Test func D39_getEventId() {
        #expect(getEventId("purchase", ["original_transaction_identifier": "2000000841136630"]) == "purchase-2000000841136630")
        #expect(getEventId("purchase", ["originalTransactionIdentifier": "t-9"]) == "purchase-t-9")
        #expect(getEventId("trial_started", ["transaction": ["originalTransactionIdentifier": "t-7"]]) == "trial_started-t-7")
        #expect(getEventId("purchase", [:]) == nil)
        #expect(getEventId("purchase", nil) == nil)
        #expect(getEventId("purchase", ["original_transaction_identifier": "", "originalTransactionIdentifier": "t-9"]) == nil)
        // A null earlier slot does not mask the later ones.
        #expect(getEventId("purchase", ["original_transaction_identifier": nil, "originalTransactionIdentifier": "t-9"]) == "purchase-t-9")
    }

    @Test func freeFormMapsKeepJavaScriptPropertyOrder() async throws {
        // Decision 10: canonical array-index keys first, ascending, then insertion order.
        let h = ClientFixture(store: RETURNING())
        try await h.client.track(
            .onboardingCompleted,
            properties: JSONObject([("b", 1), ("10", 2), ("a", 3), ("2", 4), ("07", 5), ("nested", ["z": 1, "1": 2])]))
        #expect(bodyText(h.requests.last!).contains(#""properties":{"2":4,"10":2,"b":1,"a":3,"07":5,"nested":{"1":2,"z":1}}"#))
        try await h.client.trackOnboarding(
            stepId: "s", answers: JSONObject([("q", 1), ("3", 2)]), metadata: JSONObject([("k", "v"), ("0", "x")]))
        #expect(
            bodyText(h.requests.last!)
                == #"{"onboarding_metadata":{"0":"x","k":"v"},"sent_at":"\#(T0)","responses":[{"step_id":"s","entered_at":"\#(T0)","exited_at":null,"answers":{"3":2,"q":1}}]}"#
        )
    }

    @Test func identifyKeepsTheCallersOrderAndTypedSetters() async throws {
        let h = ClientFixture(store: RETURNING())
        var ids = IdentifyParams()
        ids.userId = "user-42"
        ids.revenueCatId = nil
        ids.adjustAttribution = AdjustAttribution(trackerToken: "tt", network: "Organic", costAmount: 1.5)
        ids.locale = "fr-FR"
        try await h.client.identify(ids)
        expectRequest(
            h.requests.last, "\(API)/identify",
            body: #"{"user_id":"user-42","adjust_attribution":{"trackerToken":"tt","network":"Organic","costAmount":1.5},"locale":"fr-FR"}"#
        )
    }

    @Test func encodableObjectsAreForwardedWhole() throws {
        struct Product: Encodable {
            let productIdentifier: String
            let price: Double
            let url: String
        }
        let value = try #require(JSONValue(encoding: Product(productIdentifier: "pro", price: 9.99, url: "https://x/y")))
        #expect(WireJSON.encodeString(value) == #"{"price":9.99,"productIdentifier":"pro","url":"https://x/y"}"#)
    }
}
