import Foundation
import RocalyticsClient
import RocalyticsClientTestSupport
import Testing
import TrackerCore
import TrackerCoreTestKit

/// A transport that answers `/track` with `status` while `failing` is set, and the stock replies otherwise.
final class SwitchableServer: Sendable {
    let failing = Locked(true)
    let status: Int
    init(status: Int = 503) { self.status = status }
    func transport() -> RecordingTransport {
        RecordingTransport { [failing, status] request in
            if failing.value, RecordingTransport.path(of: request.url) != "/functions/v1/identify" {
                return HTTPResponse(status: status)
            }
            return try await RecordingTransport.rocalyticsReplies(request)
        }
    }
}

private let PURCHASE_DEDUP = "\(ID)-purchase-t-1"

/// G77–: issue 37 items 2 and 3: the recording forms (stored, retried) and the persisted opt-out.
@Suite struct RecordingTests {
    private func tracks(_ h: ClientFixture) -> [HTTPRequest] { h.requests.filter { $0.url == "\(API)/track" } }

    @Test func G77_aRecordedPurchaseSurvivesAFailingServerAndIsSentOnceItRecovers() async throws {
        let server = SwitchableServer()
        let h = ClientFixture(store: RETURNING(), transport: server.transport())
        h.client.recordPurchase(originalTransactionIdentifier: "t-1", productId: "pro_monthly", price: 9.99, currency: "EUR")
        await h.client.ready()
        await h.clock.settle()
        #expect(tracks(h).count == 1)
        await h.clock.advance(byMs: 1_000)
        #expect(tracks(h).count == 2)  // retried after the backoff
        server.failing.withLock { $0 = false }
        await h.clock.advance(byMs: 2_000)
        #expect(tracks(h).count == 3)
        for r in tracks(h) { expectRequest(r, "\(API)/track", body: D30_BODY) }
        #expect(tracks(h).allSatisfy { bodyText($0).contains(#""deduplication_id":"\#(PURCHASE_DEDUP)""#) })
        await h.clock.advance(byMs: 120_000)
        #expect(tracks(h).count == 3)  // accepted: never sent again
        await h.client.storageIdle()
        #expect((h.storage as! InMemoryKeyValueStorage).snapshot["rocalytics-recorded-requests"] == nil)
        #expect(h.log.isEmpty)
    }

    @Test func G78_aRecordedPurchaseIsTheAwaitedOnesRequest() async throws {
        let h = ClientFixture(store: RETURNING())
        try await h.client.trackPurchase(originalTransactionIdentifier: "t-1", productId: "pro_monthly", price: 9.99, currency: "EUR")
        h.client.recordPurchase(originalTransactionIdentifier: "t-1", productId: "pro_monthly", price: 9.99, currency: "EUR")
        await h.clock.settle()
        #expect(tracks(h).count == 2)
        #expect(tracks(h)[0] == tracks(h)[1])
        expectRequest(tracks(h)[1], "\(API)/track", body: D30_BODY)
    }

    @Test func G79_aStoredPurchaseIsSentAfterARelaunch() async throws {
        let server = SwitchableServer()
        let first = ClientFixture(store: RETURNING(), transport: server.transport())
        first.client.recordPurchase(originalTransactionIdentifier: "t-1", productId: "pro_monthly", price: 9.99, currency: "EUR")
        await first.clock.settle()
        await first.client.storageIdle()
        #expect(tracks(first).count == 1)  // failed; the process is then "killed" (its clock never moves again)
        let stored = (first.storage as! InMemoryKeyValueStorage).snapshot["rocalytics-recorded-requests"]
        #expect(stored?.contains("t-1") == true)

        let second = first.relaunch(transport: RecordingTransport.rocalytics(), clock: ManualClock())
        await second.client.ready()
        await second.clock.settle()
        #expect(second.paths == ["/functions/v1/identify", "/functions/v1/track"])
        expectRequest(tracks(second).first, "\(API)/track", body: D30_BODY)
        await second.client.storageIdle()
        #expect((second.storage as! InMemoryKeyValueStorage).snapshot["rocalytics-recorded-requests"] == nil)
        await second.clock.advance(byMs: 120_000)
        #expect(tracks(second).count == 1)
    }

    @Test func G80_aPurchaseRecordedWhileInertWaitsForALaunchThatIsNot() async throws {
        let store = InMemorySecureStore(["rocalytics-roca-id": ID, "rocadata-install-tracked": "true"], failReads: ["rocalytics-roca-id"])
        let first = ClientFixture(store: store)
        await first.client.ready()
        #expect(first.client.isInert)
        first.client.recordPurchase(originalTransactionIdentifier: "t-1", productId: "pro_monthly", price: 9.99, currency: "EUR")
        await first.clock.advance(byMs: 60_000)
        #expect(first.requests.isEmpty)
        await first.client.storageIdle()

        store.setFailReads([])
        let second = first.relaunch(transport: RecordingTransport.rocalytics(), clock: ManualClock())
        await second.client.ready()
        await second.clock.settle()
        expectRequest(tracks(second).first, "\(API)/track", body: D30_BODY)
        #expect(tracks(second).count == 1)
    }

    @Test func G81_aFailingDiskIsADiagnosticAndThePurchaseIsStillSent() async throws {
        var faults = FaultInjectingStorage.Faults()
        faults.writesAlwaysFail = true
        let disk = FaultInjectingStorage(faults: faults)
        let h = ClientFixture(store: RETURNING(), storage: disk)
        // Never throws.
        h.client.recordPurchase(originalTransactionIdentifier: "t-1", productId: "pro_monthly", price: 9.99, currency: "EUR")
        h.client.recordIdentify(["user_id": "u-1"])
        await h.client.ready()
        await h.clock.settle()
        await h.client.storageIdle()
        await h.clock.advance(byMs: 6_000)
        expectRequest(tracks(h).first, "\(API)/track", body: D30_BODY)
        expectRequest(h.requests.last, "\(API)/identify", body: #"{"user_id":"u-1"}"#)
        #expect(h.log.count("storage") >= 1)
        #expect(h.log.all.allSatisfy { !$0.message.contains("t-1") && !$0.message.contains("u-1") })
    }

    @Test func G82_recordedRequestsGoInRecordOrderWithTheAwaitedFormsBodies() async throws {
        let h = ClientFixture(store: RETURNING())
        h.client.recordIdentify(["user_id": "u-1", "email": nil, "revenue_cat_id": "rc-1"])
        h.client.record(.trialStarted, properties: ["plan": "pro"])
        h.client.recordPurchase(originalTransactionIdentifier: "t-1", productId: "pro_monthly", price: 9.99, currency: "EUR")
        await h.client.ready()
        await h.clock.settle()
        #expect(h.paths.count == 4)
        expectRequest(h.requests[1], "\(API)/identify", body: #"{"user_id":"u-1","revenue_cat_id":"rc-1"}"#)
        expectRequest(h.requests[2], "\(API)/track", body: TRACK("trial_started", "\(ID)-trial_started", #"{"plan":"pro"}"#, DC_IOS))
        expectRequest(h.requests[3], "\(API)/track", body: D30_BODY)
    }

    @Test func G83_aRefusedRecordedRequestIsDroppedWithADiagnostic() async throws {
        let server = SwitchableServer(status: 400)
        let h = ClientFixture(store: RETURNING(), transport: server.transport())
        h.client.recordPurchase(originalTransactionIdentifier: "t-1", productId: "pro_monthly", price: 9.99, currency: "EUR")
        h.client.record(.trialStarted)
        await h.client.ready()
        await h.clock.settle()
        await h.clock.advance(byMs: 120_000)
        #expect(tracks(h).count == 2)  // each tried once, in order
        #expect(h.log.codes == ["recorded-request-rejected", "recorded-request-rejected"])
    }

    @Test func G89_aStoredQueueThatCannotBeReadIsNeverOverwritten() async throws {
        let server = SwitchableServer()
        let backing = InMemoryKeyValueStorage()
        let first = ClientFixture(store: RETURNING(), transport: server.transport(), storage: backing)
        first.client.recordPurchase(originalTransactionIdentifier: "t-1", productId: "pro_monthly", price: 9.99, currency: "EUR")
        await first.clock.settle()
        await first.client.storageIdle()
        let stored = try #require(backing.snapshot["rocalytics-recorded-requests"])

        // A launch whose read of the queue fails (twice: the store's retry too): t-1 is kept.
        var faults = FaultInjectingStorage.Faults()
        faults.failNextGets = 2
        let flaky = FaultInjectingStorage(backing: backing, faults: faults)
        let second = first.relaunch(transport: RecordingTransport.rocalytics(), clock: ManualClock(), storage: flaky)
        second.client.recordPurchase(originalTransactionIdentifier: "t-9", productId: "p", price: 1, currency: "EUR")
        await second.client.ready()
        await second.clock.settle()
        await second.client.storageIdle()
        #expect(tracks(second).count == 1)
        #expect(bodyText(tracks(second)[0]).contains("t-9"))  // what was recorded now is still sent
        #expect(second.log.count("storage") == 1)
        #expect(backing.snapshot["rocalytics-recorded-requests"] == stored)

        let third = first.relaunch(transport: RecordingTransport.rocalytics(), clock: ManualClock())
        await third.client.ready()
        await third.clock.settle()
        expectRequest(tracks(third).first, "\(API)/track", body: D30_BODY)
    }

    @Test func G91_aDiskThatNeverAnswersHoldsARecordedPurchaseAtMostFiveSeconds() async throws {
        var faults = FaultInjectingStorage.Faults()
        faults.holdWrites = true
        let disk = FaultInjectingStorage(faults: faults)
        let h = ClientFixture(store: RETURNING(), storage: disk)
        await h.client.ready()
        await h.clock.settle()
        // Returns at once: the write is held.
        h.client.recordPurchase(originalTransactionIdentifier: "t-1", productId: "pro_monthly", price: 9.99, currency: "EUR")
        await h.clock.advance(byMs: 4_900)
        #expect(tracks(h).isEmpty)  // write first, then send
        await h.clock.advance(byMs: 100)
        expectRequest(tracks(h).first, "\(API)/track", body: D30_BODY)
        disk.releaseWrites()
        await h.clock.settle()
        await h.client.storageIdle()
        #expect(tracks(h).count == 1)
    }

    // Item 3: the opt-out.

    @Test func G84_optingOutDropsWhatWasRecordedAndNothingIsSentAfter() async throws {
        let server = SwitchableServer()
        let h = ClientFixture(store: RETURNING(), transport: server.transport())
        h.client.recordPurchase(originalTransactionIdentifier: "t-1", productId: "pro_monthly", price: 9.99, currency: "EUR")
        await h.client.ready()
        await h.clock.settle()
        #expect(tracks(h).count == 1)
        h.client.optOut()
        #expect(h.client.isOptedOut)
        server.failing.withLock { $0 = false }
        h.client.recordPurchase(originalTransactionIdentifier: "t-1", productId: "pro_monthly", price: 9.99, currency: "EUR")
        h.client.recordIdentify(["user_id": "u-1"])
        try await h.client.track(.trialStarted)
        try await h.client.identify(["user_id": "u-1"])
        try await h.client.trackPurchase(originalTransactionIdentifier: "t-1", productId: "pro_monthly", price: 9.99, currency: "EUR")
        await h.clock.advance(byMs: 120_000)
        #expect(h.paths == ["/functions/v1/identify", "/functions/v1/track"])
        await h.client.storageIdle()
        let kept = (h.storage as! InMemoryKeyValueStorage).snapshot
        #expect(kept["rocalytics-recorded-requests"] == nil)
        #expect(kept["rocalytics-opted-out"] == "true")
        let onboarding = await h.client.sendOnboardingRun(RawPayload(#"{"run_id":"r","status":"completed"}"#))
        #expect(onboarding.outcome == .ignored)
        await #expect(throws: RocalyticsError.self) { _ = try await h.client.getDemandScore() }
        #expect(h.paths.count == 2)
    }

    @Test func G85_theOptOutPersistsAndGatesTheStartUpRequests() async throws {
        let storage = InMemoryKeyValueStorage(["rocalytics-opted-out": "true"])
        let h = ClientFixture(installPing: true, storage: storage)  // a fresh device
        await h.client.ready()
        await h.clock.settle()
        #expect(h.client.isOptedOut)
        #expect(h.client.rocaId != nil)
        #expect(h.requests.isEmpty)  // no identify, install or install ping
        #expect(!h.store.writtenKeys.contains("rocadata-install-tracked"))

        h.client.optIn()
        await h.client.storageIdle()
        #expect(storage.snapshot["rocalytics-opted-out"] == nil)
        h.client.record(.trialStarted)
        await h.clock.settle()
        #expect(h.paths == ["/functions/v1/track"])
        expectRequest(h.requests.first, "\(API)/track", body: TRACK("trial_started", "\(h.client.rocaId!)-trial_started", "{}", DC_IOS))
        let next = h.relaunch(transport: RecordingTransport.rocalytics(), clock: ManualClock())
        await next.client.ready()
        #expect(!next.client.isOptedOut)
        #expect(next.paths == ["/functions/v1/identify", "/functions/v1/track"])  // the install, now
    }

    @Test func G86_storedRequestsAreDroppedAtALaunchThatFindsTheOptOut() async throws {
        let server = SwitchableServer()
        let first = ClientFixture(store: RETURNING(), transport: server.transport())
        first.client.recordPurchase(originalTransactionIdentifier: "t-1", productId: "pro_monthly", price: 9.99, currency: "EUR")
        await first.clock.settle()
        await first.client.storageIdle()
        try await first.storage.setItem("rocalytics-opted-out", "true")  // another launch opted out
        let second = first.relaunch(transport: RecordingTransport.rocalytics(), clock: ManualClock())
        await second.client.ready()
        await second.clock.advance(byMs: 120_000)
        await second.client.storageIdle()
        #expect(second.requests.isEmpty)
        #expect((second.storage as! InMemoryKeyValueStorage).snapshot["rocalytics-recorded-requests"] == nil)
    }
}

/// G87–: issue 37, item 12: a StoreKit purchase's values mapped to the purchase parameters.
@Suite struct StorePurchaseTests {
    @Test func G87_aStorePurchaseMapsToThePurchaseParameters() async throws {
        let paid = StorePurchase(
            originalTransactionID: 2_000_000_841_136_630, productID: "pro_monthly", price: Decimal(string: "9.99")!,
            currencyCode: "EUR", isFreeTrial: false)
        #expect(
            paid.params
                == TrackPurchaseParams(
                    isTrial: false, value: 9.99, currency: "EUR", originalTransactionIdentifier: "2000000841136630",
                    productId: "pro_monthly"))
        let trial = StorePurchase(
            originalTransactionID: 7, productID: "pro_yearly", price: Decimal(string: "49.99")!, currencyCode: "USD", isFreeTrial: true,
            purchaseType: .upsell)
        #expect(trial.params.value == 0)
        #expect(trial.params.isTrial)
        #expect(trial.params.purchaseType == .upsell)

        let h = ClientFixture(store: RETURNING())
        h.client.recordPurchase(paid)
        await h.client.ready()
        await h.clock.settle()
        expectRequest(
            h.requests.last, "\(API)/track",
            body: TRACK(
                "purchase", "\(ID)-purchase-2000000841136630",
                #"{"is_trial":false,"original_transaction_identifier":"2000000841136630","product_id":"pro_monthly","price":9.99,"currency_code":"EUR"}"#,
                DC_IOS))
    }
}

/// G90: issue 37, item 10: labelled arguments beside the parameter bag, the same request.
@Suite struct LabelledPurchaseTests {
    /// Deprecated: it pins the reference's spelling (`trackPurchase(TrackPurchaseParams)`), which is.
    @available(*, deprecated)
    @Test func G90_theLabelledPurchaseFormsSendTheParameterBagsRequest() async throws {
        let h = ClientFixture(store: RETURNING())
        try await h.client.trackPurchase(originalTransactionIdentifier: "t-1", productId: "pro_monthly", price: 9.99, currency: "EUR")
        h.client.recordPurchase(originalTransactionIdentifier: "t-1", productId: "pro_monthly", price: 9.99, currency: "EUR")
        try await h.client.trackPurchase(D30_PURCHASE)  // the reference spelling still compiles
        await h.clock.settle()
        let tracks = h.requests.filter { $0.url == "\(API)/track" }
        #expect(tracks.count == 3)
        for r in tracks { expectRequest(r, "\(API)/track", body: D30_BODY) }
    }
}

/// G92: issue 37, item 10: labelled identify arguments, the same request as the bag.
@Suite struct LabelledIdentifyTests {
    @Test func G92_theLabelledIdentifyFormsSendTheBagsRequest() async throws {
        let h = ClientFixture(store: RETURNING())
        var ids = IdentifyParams()
        ids.userId = "u-1"
        ids.revenueCatId = "rc-1"
        ids.locale = "fr-FR"
        try await h.client.identify(ids)
        try await h.client.identify(userId: "u-1", email: nil, revenueCatId: "rc-1", locale: "fr-FR")
        h.client.recordIdentify(userId: "u-1", revenueCatId: "rc-1", locale: "fr-FR")
        await h.clock.settle()
        #expect(h.paths.count == 4)
        for r in h.requests.dropFirst() {
            expectRequest(r, "\(API)/identify", body: #"{"user_id":"u-1","revenue_cat_id":"rc-1","locale":"fr-FR"}"#)
        }
        #expect(IdentifyParams(adjustAttribution: AdjustAttribution(network: "n")).adjustAttribution?.network == "n")
    }
}

/// G110–G112: the recorded-request queue is bounded (1,000 requests): purchases are the last to go,
/// and one `storage-cap` diagnostic is given per run of drops.
@Suite struct RecordedQueueCapTests {
    private func recordPurchase(_ h: ClientFixture, _ n: Int) {
        h.client.recordPurchase(originalTransactionIdentifier: "tx-\(n)", productId: "p", price: 1, currency: "EUR")
    }
    private func storedCount(_ h: ClientFixture) -> Int {
        let text = (h.storage as! InMemoryKeyValueStorage).snapshot["rocalytics-recorded-requests"] ?? ""
        return text.components(separatedBy: #""kind":"#).count - 1
    }
    private func tracks(_ h: ClientFixture) -> [HTTPRequest] { h.requests.filter { $0.url == "\(API)/track" } }

    @Test func G110_aFullQueueDropsTheOldestNonPurchaseOnceWithOneDiagnostic() async throws {
        let server = SwitchableServer()
        let h = ClientFixture(store: RETURNING(), transport: server.transport())
        recordPurchase(h, 0)
        for _ in 0..<1_004 { h.client.record(.trialStarted) }
        recordPurchase(h, 1)
        await h.client.ready()
        await h.clock.settle()
        await h.client.storageIdle()
        #expect(storedCount(h) == 1_000)
        #expect(h.log.codes.filter { $0 == "storage-cap" }.count == 1)
        #expect(h.log.all.allSatisfy { !$0.message.contains("tx-") })

        // Kept, in order: the purchase on the wire, the 998 newest trial events, the last purchase.
        let text = (h.storage as! InMemoryKeyValueStorage).snapshot["rocalytics-recorded-requests"] ?? ""
        let kinds = text.components(separatedBy: #""kind":"#).dropFirst().map { String($0.prefix(12)) }
        #expect(kinds.first?.hasPrefix(#""purchase""#) == true)
        #expect(kinds.last?.hasPrefix(#""purchase""#) == true)
        #expect(kinds.dropFirst().dropLast().allSatisfy { $0.hasPrefix(#""track""#) })
        #expect(text.contains(#""tx-0""#) && text.contains(#""tx-1""#))
        #expect(tracks(h).allSatisfy { bodyText($0).contains("tx-0") })  // only the head was tried
    }

    @Test func G111_aSecondRunOfDropsAfterTheQueueWentBelowCapacityIsReportedAgain() async throws {
        let server = SwitchableServer()
        let h = ClientFixture(store: RETURNING(), transport: server.transport())
        await h.client.ready()
        for _ in 0..<1_010 { h.client.record(.trialStarted) }
        await h.clock.settle()
        #expect(h.log.codes.filter { $0 == "storage-cap" }.count == 1)
        h.client.optOut()  // empties the queue: below capacity again
        h.client.optIn()
        for _ in 0..<1_002 { h.client.record(.trialStarted) }
        await h.clock.settle()
        #expect(h.log.codes.filter { $0 == "storage-cap" }.count == 2)
    }

    /// The queue goes below capacity because a request is accepted (found by review: the second
    /// run of drops was not reported).
    @Test func G113_belowCapacityAfterASendThenFullAgainIsReportedAgain() async throws {
        let allow = Locked(0)
        let transport = RecordingTransport { request in
            if RecordingTransport.path(of: request.url) != "/functions/v1/identify" {
                let ok = allow.withLock { n -> Bool in
                    guard n > 0 else { return false }
                    n -= 1
                    return true
                }
                if !ok { return HTTPResponse(status: 503) }
            }
            return try await RecordingTransport.rocalyticsReplies(request)
        }
        let h = ClientFixture(store: RETURNING(), transport: transport)
        await h.client.ready()
        for _ in 0..<1_001 { h.client.record(.trialStarted) }
        await h.clock.settle()
        #expect(h.log.codes.filter { $0 == "storage-cap" }.count == 1)
        allow.withLock { $0 = 1 }  // one request is accepted: 999 wait
        await h.clock.advance(byMs: 61_000)
        await h.clock.settle()
        #expect(allow.value == 0)
        h.client.record(.trialStarted)  // 1,000: full, nothing dropped
        #expect(h.log.codes.filter { $0 == "storage-cap" }.count == 1)
        h.client.record(.trialStarted)  // a drop: a new run
        await h.clock.settle()
        #expect(h.log.codes.filter { $0 == "storage-cap" }.count == 2)
    }

    @Test func G112_aQueueOfOnlyPurchasesDropsItsOldestPurchaseNotOnTheWire() async throws {
        let server = SwitchableServer()
        let h = ClientFixture(store: RETURNING(), transport: server.transport())
        await h.client.ready()
        await h.clock.settle()  // the stored queue is read
        recordPurchase(h, 0)
        await h.clock.settle()  // stored, then on the wire (the server fails it: it waits for its retry)
        #expect(tracks(h).count == 1)
        for n in 1..<1_001 { recordPurchase(h, n) }
        await h.clock.settle()
        await h.client.storageIdle()
        #expect(storedCount(h) == 1_000)
        let text = (h.storage as! InMemoryKeyValueStorage).snapshot["rocalytics-recorded-requests"] ?? ""
        #expect(text.contains(#""tx-0""#))  // on the wire: kept
        #expect(!text.contains(#""tx-1""#))  // the oldest purchase not on the wire
        #expect(text.contains(#""tx-1000""#))
        #expect(h.log.all.contains { $0.code == "storage-cap" && $0.message.contains("purchases") })
    }
}

/// G94: issue 37, item 10: `trackEvent(_:properties:)`, the TypeScript README's alias, is
/// deprecated for `track(_:properties:)` and sends the same request.
@Suite struct TrackEventAliasTests {
    /// Deprecated: it pins the alias, which is.
    @available(*, deprecated)
    @Test func G94_trackEventIsTracksRequest() async throws {
        let h = ClientFixture(store: RETURNING())
        try await h.client.track(.subscriptionStarted, properties: ["plan": "pro"])
        try await h.client.trackEvent(.subscriptionStarted, properties: ["plan": "pro"])
        await h.clock.settle()
        let tracks = h.requests.filter { $0.url == "\(API)/track" }
        #expect(tracks.count == 2 && tracks[0] == tracks[1])
        #expect(tracks.first.map(bodyText)?.contains(#""name":"subscription_started""#) == true)
    }
}
