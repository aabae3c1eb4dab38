import Foundation
import RocalyticsClient
import RocalyticsClientTestSupport
import Testing
import TrackerCore
import TrackerCoreTestKit

let PING = "https://track.rocapi.ne/install"
let A1_INSTALL = TRACK("install", "\(ID)-install", #"{"install_time":"2026-01-10T07:59:00.000Z"}"#, DC_IOS)

/// F. Additions in 0.3.0.
@Suite struct Release030Tests {
    @Test func F57_theInstallPingAfterAFreshInstall() async throws {
        let h = ClientFixture(installPing: true)
        await h.client.ready()
        #expect(h.requests.count == 3)
        expectRequest(h.requests[0], "\(API)/identify", body: IDENT_IOS)
        expectRequest(h.requests[1], "\(API)/track", body: A1_INSTALL)
        // The identity headers (plus Content-Type, §17 item 2) and no body.
        expectRequest(h.requests[2], PING, body: nil)
        #expect(h.log.all.isEmpty)
        // The flag is written before the ping.
        #expect(h.store.writtenKeys.last == "rocadata-install-tracked")
    }

    @Test func F58_theCombinedOnboardingBody() async throws {
        let h = ClientFixture(store: RETURNING())
        _ = await h.client.sendOnboardingRun(IN_PROGRESS)
        _ = await h.client.sendOnboardingRun(COMPLETED)
        #expect(bodyText(h.requests[1]) == F58_BODY)
        // COMPLETED: the snapshot (contract order, computed sent_at) plus E40's pre-v1 part.
        var want = JSONObject()
        // The snapshot's own wire form (the generated type drops `"audience_id": null`).
        let completed = try #require(COMPLETED.wireJSON().objectValue)
        let e40 = obj(E40_PAYLOAD)
        for key in ["schema_version", "run_id", "seq", "status", "started_at", "completed_at"] { want[key] = completed[key] }
        want["sent_at"] = "2026-01-10T08:00:40.004Z"
        for key in ["onboarding", "studio", "context", "manifest", "properties", "steps"] { want[key] = completed[key] }
        want["responses"] = e40["responses"]
        want["onboarding_metadata"] = e40["onboarding_metadata"]
        #expect(bodyText(h.requests[2]) == WireJSON.encodeString(.object(want)))
        captureOnboardingBodies(h.requests)
    }

    @Test func F59_theStudioVariantKey() async throws {
        var o = completedObject()
        o["studio"] = json(#"{"onboarding_id":"onb_123","deployment_id":"dep_789","audience_id":null,"variant_key":"main"}"#)
        let body = toOnboardingRunBody(snapshot(o))
        #expect(
            WireJSON.encodeString(body["onboarding_metadata"]!)
                == #"{"onboardingId":"onb_123","deployment_id":"dep_789","locale":"en-US","onboarding_key":"main","onboarding_version":"3","variant_key":"short-intro","studio_variant_key":"main","run_id":"0190a8c4-4b2e-7c1a-9f3d-2e5b6c7d8e9f","seq":4}"#
        )
        #expect(body["studio"]?["variant_key"] == "main")
        let h = ClientFixture(store: RETURNING())
        _ = await h.client.sendOnboardingRun(snapshot(o))
        captureOnboardingBodies(h.requests)
    }

    @Test func F60_pingTurnedOff() async throws {
        let h = ClientFixture(installPing: false)
        await h.client.ready()
        #expect(h.requests.count == 2)
        expectRequest(h.requests[0], "\(API)/identify", body: IDENT_IOS)
        expectRequest(h.requests[1], "\(API)/track", body: A1_INSTALL)
    }

    @Test func F61_theAttributionBaseMovesThePing() async throws {
        for base in ["https://attribution.example.test", "https://attribution.example.test/"] {
            let h = ClientFixture(installPing: true, attributionBaseURL: base)
            await h.client.ready()
            #expect(h.requests.count == 3)
            expectRequest(h.requests.last, "https://attribution.example.test/install", body: nil)
        }
    }

    @Test func F62_noPingOnAReturningDevice() async throws {
        let h = ClientFixture(store: RETURNING(), installPing: true)
        await h.client.ready()
        #expect(h.requests.count == 1)
        expectRequest(h.requests[0], "\(API)/identify", body: IDENT_IOS)
    }

    @Test func F63_noPingWhenTheInstallEventFails() async throws {
        let h = ClientFixture(
            transport: RecordingTransport { r in
                r.url.hasSuffix("/track") ? HTTPResponse(status: 500) : try await RecordingTransport.rocalyticsReplies(r)
            }, installPing: true)
        await h.client.ready()
        #expect(h.paths == ["/functions/v1/identify", "/functions/v1/track"])
        #expect(h.log.codes == ["init-failed"])
    }

    @Test(arguments: [false, true])
    func F64_aFailedPingIsReportedAndNeverRetried(transportThrows: Bool) async throws {
        let h = ClientFixture(
            transport: RecordingTransport { r in
                if r.url.hasPrefix("https://track.rocapi.ne") {
                    if transportThrows { throw HTTPError(.connectionFailed, "no route") }
                    return HTTPResponse(status: 503)
                }
                return try await RecordingTransport.rocalyticsReplies(r)
            }, installPing: true)
        await h.client.ready()
        #expect(h.requests.map(\.url) == ["\(API)/identify", "\(API)/track", PING])
        #expect(h.log.codes == ["install-ping-failed"])
        #expect(h.store.values["rocadata-install-tracked"] == "true")
        let next = h.relaunch(installPing: true)
        await next.client.ready()
        #expect(h.requests.count == 4)
        expectRequest(h.requests.last, "\(API)/identify", body: IDENT_IOS)
    }

    @Test func F65_identifyOnStartFalse() async throws {
        let h = ClientFixture(installPing: true, identifyOnStart: false)
        await h.client.ready()
        #expect(h.requests.count == 2)
        expectRequest(h.requests[0], "\(API)/track", body: A1_INSTALL)
        expectRequest(h.requests[1], PING, body: nil)
        #expect(
            h.store.writes.map { "\($0.key)=\($0.value)" } == [
                "rocalytics-roca-id=\(ID)", "rocalitics-roca-id=\(ID)", "rocadata-install-tracked=true",
            ])

        let returning = ClientFixture(store: RETURNING(), installPing: true, identifyOnStart: false)
        await returning.client.ready()
        #expect(returning.requests.isEmpty)
    }

    @Test func F66_anUpsellPurchase() async throws {
        let h = ClientFixture(store: RETURNING())
        try await h.client.trackPurchase(
            originalTransactionIdentifier: "t-up", productId: "pro_yearly", price: 19.99, currency: "EUR",
            purchaseType: .upsell)
        expectRequest(
            h.requests.last, "\(API)/track",
            body: TRACK(
                "purchase", "\(ID)-purchase-t-up",
                #"{"is_trial":false,"original_transaction_identifier":"t-up","product_id":"pro_yearly","price":19.99,"currency_code":"EUR","purchase_type":"upsell"}"#,
                DC_IOS))
    }

    @Test func F67_noPurchaseTypeMeansNoChange() async throws {
        let h = ClientFixture(store: RETURNING())
        try await h.client.trackPurchase(originalTransactionIdentifier: "t-1", productId: "pro_monthly", price: 9.99, currency: "EUR")
        #expect(bodyText(h.requests.last!) == D30_BODY)
        #expect(!bodyText(h.requests.last!).contains("purchase_type"))
    }

    @Test func F68_anUnknownPurchaseType() async throws {
        // The raw-value entry point (`PurchaseType(rawValue:)`) is the untyped input of decision 6.
        let h = ClientFixture(store: RETURNING())
        try await h.client.trackPurchase(
            originalTransactionIdentifier: "t-1", productId: "pro_monthly", price: 9.99, currency: "EUR",
            purchaseType: PurchaseType(rawValue: "renewal"))
        #expect(bodyText(h.requests.last!) == D30_BODY)
        #expect(h.log.codes == ["unknown-purchase-type"])
        #expect(!h.log.all[0].message.contains("renewal"))
    }
}
