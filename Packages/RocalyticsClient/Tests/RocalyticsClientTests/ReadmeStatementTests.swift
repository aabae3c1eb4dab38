import Foundation
import RocalyticsClient
import RocalyticsClientTestSupport
import Testing
import TrackerCore
import TrackerCoreTestKit

/// A one-shot async signal (no sleeping).
final class Signal: Sendable {
    private let state = Locked<(fired: Bool, waiters: [CheckedContinuation<Void, Never>])>((false, []))
    func fire() {
        let waiters = state.withLock { s -> [CheckedContinuation<Void, Never>] in
            s.fired = true
            defer { s.waiters = [] }
            return s.waiters
        }
        for w in waiters { w.resume() }
    }
    func wait() async {
        await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
            let fired = state.withLock { s -> Bool in
                if s.fired { return true }
                s.waiters.append(c)
                return false
            }
            if fired { c.resume() }
        }
    }
}

/// G. README statements not covered above.
@Suite struct ReadmeStatementTests {
    @Test func G69_rocaIdReadsNilUntilReady() async throws {
        let arrived = Signal()
        let answer = Signal()
        let h = ClientFixture(
            store: RETURNING(),
            transport: RecordingTransport { r in
                if r.url.hasSuffix("/identify") {
                    arrived.fire()
                    await answer.wait()
                }
                return try await RecordingTransport.rocalyticsReplies(r)
            })
        await arrived.wait()
        #expect(h.client.rocaId == nil)
        answer.fire()
        await h.client.ready()
        #expect(h.client.rocaId == ID)
    }

    @Test func G70_everySendingMethodFailsWithItsEndpointAndStatusAndNothingIsReported() async throws {
        let h = ClientFixture(
            store: RETURNING(),
            transport: RecordingTransport { r in
                r.url.hasSuffix("/identify") ? HTTPResponse(status: 503) : HTTPResponse(status: 500)
            }, identifyOnStart: false)
        #expect(await errorMessage { try await h.client.identify(["user_id": "u"]) } == "[ROCALYTICS] identify failed: 503")
        #expect(
            await errorMessage {
                try await h.client.trackPurchase(
                    originalTransactionIdentifier: "t-1", productId: "pro_monthly", price: 9.99, currency: "EUR")
            } == "[ROCALYTICS] track failed: 500 (purchase)")
        #expect(
            await errorMessage { try await h.client.trackCustomEvent("cart_abandoned") }
                == "[ROCALYTICS] track failed: 500 (cart_abandoned)")
        #expect(h.log.all.isEmpty)
        // LocalizedError carries the same text.
        #expect(
            RocalyticsError.requestFailed(endpoint: "identify", status: 503, detail: nil).localizedDescription
                == "[ROCALYTICS] identify failed: 503")
    }

    @Test func G71_theRequestBuildersArePureFunctions() {
        let rc = RocalyticsRequestContext(rocaId: ID, applicationId: nil, platform: "android", baseURL: nil)
        let androidHeaders = [
            HTTPHeader("Content-Type", "application/json"), HTTPHeader("X-Roca-ID", ID),
            HTTPHeader("X-Application-ID", "unknown"), HTTPHeader("X-Platform", "android"),
        ]
        let track = buildTrackRequest(rc, TrackRequestInput(name: "trial_started", properties: [:], deviceContext: nil))
        expectRequest(
            track, "\(API)/track",
            body: #"{"name":"trial_started","deduplication_id":"\#(ID)-trial_started","properties":{},"device_context":null}"#,
            headers: androidHeaders)
        let custom = buildTrackRequest(
            rc,
            TrackRequestInput(
                name: "daily_checkin", properties: [:], deviceContext: nil, deduplicationId: "\(ID)-daily_checkin-2026-01-10",
                customEvent: true))
        #expect(
            bodyText(custom)
                == #"{"name":"daily_checkin","deduplication_id":"\#(ID)-daily_checkin-2026-01-10","properties":{},"device_context":null,"custom_event":true}"#
        )
        expectRequest(buildDemandScoreRequest(rc, DemandScoreSignals()), "\(API)/demand-score", body: nil, headers: androidHeaders)
        expectRequest(buildDemandScoreRequest(rc, nil), "\(API)/demand-score", body: nil, headers: androidHeaders)
        expectRequest(
            buildDemandScoreRequest(rc, DemandScoreSignals(appOpenCount: 3)), "\(API)/demand-score", body: #"{"app_open_count":3}"#,
            headers: androidHeaders)
        var staging = rc
        staging.baseURL = "https://staging.example.test"
        expectRequest(
            buildIdentifyRequest(staging, ["user_id": "u"]), "https://staging.example.test/functions/v1/identify",
            body: #"{"user_id":"u"}"#, headers: androidHeaders)
        #expect(buildTrackRequest(rc, TrackRequestInput(name: "trial_started", deviceContext: nil)) == track)
        #expect(buildIdentifyRequest(staging, ["user_id": "u"]) == buildIdentifyRequest(staging, ["user_id": "u"]))
        #expect(buildDemandScoreRequest(rc, nil) == buildDemandScoreRequest(rc, nil))
        #expect(buildOnboardingResponseRequest(rc, ["a": 1]) == buildOnboardingResponseRequest(rc, ["a": 1]))
    }

    @Test func G72_aDemandScoreResponseFromBeforeVersioningStillDecodes() async throws {
        let body = #"{"demandScore":42,"coldStart":true,"signals":[{"signal":"paywallViews","value":null,"weight":14,"weighted":0}]}"#
        let h = ClientFixture(
            store: RETURNING(),
            transport: RecordingTransport { r in
                r.url.hasSuffix("/demand-score")
                    ? HTTPResponse(status: 200, body: Array(body.utf8)) : try await RecordingTransport.rocalyticsReplies(r)
            })
        let result = try await h.client.getDemandScore()
        #expect(result.demandScore == 42)
        #expect(result.coldStart)
        #expect(result.selectedVersion == nil)
        #expect(result.versions == nil)
        #expect(result.signals?.count == 1)
        #expect(result.signals?.first?.value == nil)
        #expect(result.raw == json(body))
    }

    @Test func G73_bothPreV1KeysStayInABodyPast256KiB() async throws {
        var big = inProgressObject()
        let text = String(repeating: "a", count: 1000)
        let steps = completedObject()["steps"]!.arrayValue!.prefix(4).map { step -> JSONValue in
            var s = step.objectValue!
            s["answers"] = .array(
                (1...50).map { .object(JSONObject([("question_key", .string("q\($0)")), ("kind", "text"), ("value", .string(text))])) })
            return .object(s)
        }
        big["steps"] = .array(Array(steps))
        let v1Size = WireJSON.encode(.object(big)).count
        #expect(v1Size > 200_000 && v1Size < 261_120)
        let h = ClientFixture(store: RETURNING())
        let sink = createRocalyticsOnboardingSink(h.client)
        #expect(try await sink.send(snapshot(big)) == .accepted)
        let posts = h.requests.filter { $0.url.hasSuffix("/onboarding-response") }
        #expect(posts.count == 1)
        let body = try #require(posts.first?.body)
        #expect(body.count > 262_144)
        let o = try #require(try WireJSON.decode(body).objectValue)
        for (k, v) in big.entries where k != "sent_at" { #expect(o[k] == v, "\(k)") }
        #expect(o["responses"]?.arrayValue?.count == 4)
        #expect(o["responses"]?.arrayValue?.allSatisfy { $0["answers"]?.objectValue?.count == 50 } == true)
        #expect(o["onboarding_metadata"] != nil)
        #expect(h.log.all.isEmpty)
        captureOnboardingBodies(h.requests)
    }

    @Test func G74_a404IsTransientUntilAnIdentifySucceeds() async throws {
        let identified = Locked(false)
        let h = ClientFixture(
            store: RETURNING(),
            transport: RecordingTransport { r in
                if r.url.hasSuffix("/identify") {
                    if r.headers.contains(HTTPHeader("X-Roca-ID", ID)) { identified.withLock { $0 = true } }
                    return HTTPResponse(status: 200, body: Array("{}".utf8))
                }
                if r.url.hasSuffix("/onboarding-response") { return HTTPResponse(status: identified.value ? 204 : 404) }
                return HTTPResponse(status: 204)
            }, identifyOnStart: false)
        #expect(await h.client.sendOnboardingRun(IN_PROGRESS) == SinkResult(.transient, reason: "status 404"))
        try await h.client.identify(["user_id": "u"])
        #expect(await h.client.sendOnboardingRun(IN_PROGRESS) == .accepted)
        #expect(h.paths == ["/functions/v1/onboarding-response", "/functions/v1/identify", "/functions/v1/onboarding-response"])
        #expect(h.requests[0].body == h.requests[2].body)
    }

    @Test func G75_aLateCompletionIsNamedOnlyByItsRunId() async throws {
        var r2 = inProgressObject()
        r2["run_id"] = .string(RUN2)
        r2["started_at"] = "2026-01-11T08:00:00.000Z"
        r2["steps"] = json(#"[{"step_key":"welcome","entered_at":"2026-01-11T08:00:00.000Z","exited_at":null,"answers":[]}]"#)
        let h = ClientFixture(store: RETURNING())
        #expect(await h.client.sendOnboardingRun(snapshot(r2)) == .accepted)
        #expect(await h.client.sendOnboardingRun(COMPLETED) == .accepted)
        #expect(
            Array(h.paths.dropFirst()) == ["/functions/v1/onboarding-response", "/functions/v1/onboarding-response", "/functions/v1/track"])
        expectRequest(
            h.requests.last, "\(API)/track", body: TRACK("onboarding_completed", "\(ID)-onboarding_completed-\(RUN1)", "{}", DC_IOS))
        let r2Body = try WireJSON.decode(h.requests[1].body!)
        let lateBody = try WireJSON.decode(h.requests[2].body!)
        #expect(r2Body["sent_at"] == "2026-01-11T08:00:00.004Z")
        #expect(lateBody["sent_at"] == "2026-01-10T08:00:40.004Z")
        captureOnboardingBodies(h.requests)
    }

    @Test func G76_aCompletionEventThatTrackAlwaysRefusesKeepsTheSendTransient() async throws {
        let h = ClientFixture(
            store: RETURNING(),
            transport: RecordingTransport { r in
                r.url.hasSuffix("/track")
                    ? HTTPResponse(status: 400, body: Array(#"{"outcome":"rejected","reason":"unknown event"}"#.utf8))
                    : try await RecordingTransport.rocalyticsReplies(r)
            })
        for _ in 0..<3 { #expect(await h.client.sendOnboardingRun(COMPLETED).outcome == .transient) }
        #expect(
            Array(h.paths.dropFirst())
                == Array(repeating: ["/functions/v1/onboarding-response", "/functions/v1/track"], count: 3).flatMap { $0 })
        #expect(h.log.all.isEmpty)
    }
}
