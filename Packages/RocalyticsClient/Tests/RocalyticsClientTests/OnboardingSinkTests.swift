import Foundation
import RocalyticsClient
import RocalyticsClientTestSupport
import Testing
import TrackerCore
import TrackerCoreTestKit

/// E. Onboarding-run sink.
@Suite struct OnboardingSinkTests {
    /// SINKCLIENT: an IOS client on RETURNING.
    func sinkClient(_ transport: RecordingTransport = RecordingTransport.rocalytics(), identifyOnStart: Bool = true) -> ClientFixture {
        ClientFixture(store: RETURNING(), transport: transport, identifyOnStart: identifyOnStart)
    }

    func trackBodies(_ h: ClientFixture) -> [String] {
        h.requests.filter { $0.url.hasSuffix("/track") }.map(bodyText)
    }

    @Test func E40_thePreV1MappingOfACompletedRun() {
        #expect(WireJSON.encodeString(.object(toOnboardingResponsePayload(COMPLETED))) == E40_PAYLOAD)
    }

    @Test func E41_aRunWithoutAStudioOnboardingIsAttributedThroughOnboardingId() {
        #expect(
            WireJSON.encodeString(.object(toOnboardingResponsePayload(IN_PROGRESS)))
                == #"{"onboarding_metadata":{"onboarding_id":"main","locale":"en-US","onboarding_key":"main","onboarding_version":"3","run_id":"0190a8c4-4b2e-7c1a-9f3d-2e5b6c7d8e9f","seq":4},"sent_at":"2026-01-10T08:00:00.004Z","responses":[{"step_id":"welcome","entered_at":"2026-01-10T08:00:00.000Z","exited_at":null,"answers":{}}]}"#
        )
    }

    @Test func E42_audienceAndDraft() {
        var o = completedObject()
        o["onboarding"] = ["key": "onb_123", "version": "draft"]
        o["studio"] = ["onboarding_id": "onb_123", "audience_id": "aud_456"]
        let payload = toOnboardingResponsePayload(snapshot(o))
        #expect(
            WireJSON.encodeString(payload["onboarding_metadata"]!)
                == #"{"onboardingId":"onb_123","audienceId":"aud_456","locale":"en-US","draft":true,"onboarding_key":"onb_123","onboarding_version":"draft","run_id":"0190a8c4-4b2e-7c1a-9f3d-2e5b6c7d8e9f","seq":4}"#
        )
        #expect(toOnboardingResponsePayload(COMPLETED)["onboarding_metadata"]?["draft"] == nil)
    }

    @Test func E43_theMappingIsDeterministicAndSharesNoStorage() {
        let copy = RawPayload(try! WireJSON.decode(COMPLETED.wireBytes()))
        #expect(
            WireJSON.encode(.object(toOnboardingResponsePayload(copy))) == WireJSON.encode(.object(toOnboardingResponsePayload(COMPLETED))))
        var mapped = toOnboardingResponsePayload(COMPLETED)
        guard case .array(var responses) = mapped["responses"]!, case .object(var entry) = responses[2],
            case .object(var answers) = entry["answers"]!, case .array(var interests) = answers["interests"]!
        else {
            Issue.record("unexpected shape")
            return
        }
        interests.append("swim")
        answers["interests"] = .array(interests)
        entry["answers"] = .object(answers)
        responses[2] = .object(entry)
        mapped["responses"] = .array(responses)
        #expect(completedObject()["steps"]?.arrayValue?[2]["answers"]?.arrayValue?[0]["value"] == ["yoga", "running"])
    }

    @Test func E44_sentAtRisesWithinARun() {
        var five = completedObject()
        five["seq"] = 5
        var six = completedObject()
        six["seq"] = 6
        #expect(toOnboardingResponsePayload(snapshot(five))["sent_at"] == "2026-01-10T08:00:40.005Z")
        #expect(toOnboardingResponsePayload(snapshot(six))["sent_at"] == "2026-01-10T08:00:40.006Z")
        // The device clock stepped back: a newer entry earlier than L still gets L + seq.
        var seven = six
        seven["seq"] = 7
        var steps = seven["steps"]!.arrayValue!
        steps.append(json(#"{"step_key":"done","entered_at":"2026-01-10T08:00:05.000Z","exited_at":null,"answers":[]}"#))
        seven["steps"] = .array(steps)
        #expect(toOnboardingResponsePayload(RawPayload(.object(seven)))["sent_at"] == "2026-01-10T08:00:40.007Z")
    }

    @Test func E45_rocalyticsOutcomeTable() {
        let rows: [(Int, String?, SinkOutcome)] = [
            (204, nil, .accepted), (200, "{}", .accepted), (400, nil, .transient),
            (400, #"{"error":"responses must be an array"}"#, .transient),
            (400, #"{"outcome":"rejected","reason":"too large"}"#, .rejected),
            (413, #"{"outcome":"rejected"}"#, .rejected), (404, nil, .transient), (405, nil, .transient),
            (500, #"{"error":"boom"}"#, .transient), (503, nil, .transient),
        ]
        for (status, body, outcome) in rows {
            let r = rocalyticsOutcome(status: status, body: body.map(json))
            #expect(r.outcome == outcome, "\(status) \(body ?? "none")")
            if outcome == .transient { #expect(r.reason == "status \(status)") }
        }
        #expect(
            rocalyticsOutcome(status: 400, body: json(#"{"outcome":"rejected","reason":"too large"}"#))
                == SinkResult(.rejected, reason: "too large"))
    }

    @Test func E46_theSinkPostsAfterReady() async throws {
        let h = sinkClient()
        let sink = createRocalyticsOnboardingSink(h.client)
        #expect(try await sink.send(IN_PROGRESS) == .accepted)
        #expect(h.paths == ["/functions/v1/identify", "/functions/v1/onboarding-response"])
        expectRequest(h.requests[1], "\(API)/onboarding-response", body: F58_BODY)
        captureOnboardingBodies(h.requests)
    }

    @Test func E47_a400IsTransientUnlessTheBodyRejectsExplicitly() async throws {
        let h = sinkClient()
        h.transport.setHandler { r in
            r.url.hasSuffix("onboarding-response")
                ? HTTPResponse(status: 400, body: Array(#"{"error":"bad"}"#.utf8)) : try await RecordingTransport.rocalyticsReplies(r)
        }
        #expect(await h.client.sendOnboardingRun(IN_PROGRESS).outcome == .transient)
        h.transport.setHandler { r in
            r.url.hasSuffix("onboarding-response")
                ? HTTPResponse(status: 400, body: Array(#"{"outcome":"rejected","reason":"schema"}"#.utf8))
                : try await RecordingTransport.rocalyticsReplies(r)
        }
        #expect(await h.client.sendOnboardingRun(IN_PROGRESS) == SinkResult(.rejected, reason: "schema"))
        captureOnboardingBodies(h.requests)
    }

    @Test func E48_aNetworkFailureIsTransient() async throws {
        let h = sinkClient(
            RecordingTransport { r in
                if r.url.hasSuffix("/identify") { return HTTPResponse(status: 200, body: Array("{}".utf8)) }
                throw HTTPError(.connectionFailed, "Network request failed")
            })
        let result = await h.client.sendOnboardingRun(COMPLETED)
        #expect(result == SinkResult(.transient, reason: "connection-failed: Network request failed"))
        #expect(!h.paths.contains("/functions/v1/track"))
    }

    @Test func E49_anInertClientsSinkAnswersTransient() async throws {
        let h = ClientFixture(choice: RocalyticsPlatformChoice.none)
        #expect(await h.client.sendOnboardingRun(COMPLETED) == SinkResult(.transient, reason: "the Rocalytics client is inert"))
        #expect(h.requests.isEmpty)
    }

    @Test func E50_theCompletionEventFollowsAnAcceptedCompletedSnapshot() async throws {
        let h = sinkClient()
        #expect(await h.client.sendOnboardingRun(IN_PROGRESS) == .accepted)
        #expect(!h.paths.contains("/functions/v1/track"))
        #expect(await h.client.sendOnboardingRun(COMPLETED) == .accepted)
        #expect(h.paths.suffix(2) == ["/functions/v1/onboarding-response", "/functions/v1/track"])
        expectRequest(
            h.requests.last, "\(API)/track", body: TRACK("onboarding_completed", "\(ID)-onboarding_completed-\(RUN1)", "{}", DC_IOS))
        captureOnboardingBodies(h.requests)
    }

    @Test func E51_twoCompletedRunsGiveTwoEvents() async throws {
        let h = sinkClient()
        var second = completedObject()
        second["run_id"] = .string(RUN2)
        second["started_at"] = "2026-01-11T08:00:00.000Z"
        #expect(await h.client.sendOnboardingRun(COMPLETED) == .accepted)
        #expect(await h.client.sendOnboardingRun(snapshot(second)) == .accepted)
        let dedups = trackBodies(h).compactMap { json($0)["deduplication_id"]?.stringValue }
        #expect(dedups == ["\(ID)-onboarding_completed-\(RUN1)", "\(ID)-onboarding_completed-\(RUN2)"])
    }

    @Test func E52_aNewSessionSendsTheCompletionAgainAndTheServerDeduplicatesIt() async throws {
        let stored = Locked<Set<String>>([])
        let server = RecordingTransport { r in
            if r.url.hasSuffix("/track"), let body = r.body, let dedup = (try? WireJSON.decode(body))?["deduplication_id"]?.stringValue {
                _ = stored.withLock { $0.insert(dedup) }
            }
            return try await RecordingTransport.rocalyticsReplies(r)
        }
        let first = sinkClient(server)
        #expect(await first.client.sendOnboardingRun(COMPLETED) == .accepted)
        let second = ClientFixture(store: first.store, transport: server)
        #expect(await second.client.sendOnboardingRun(COMPLETED) == .accepted)
        #expect(server.paths.filter { $0 == "/functions/v1/track" }.count == 2)
        #expect(stored.value.count == 1)
    }

    @Test func E53_noSecondCompletionWithinOneSession() async throws {
        let h = sinkClient()
        _ = await h.client.sendOnboardingRun(COMPLETED)
        _ = await h.client.sendOnboardingRun(COMPLETED)
        #expect(h.paths.filter { $0 == "/functions/v1/track" }.count == 1)
    }

    @Test func E54_aFailedCompletionEventMakesTheSendTransientAndTheRetrySendsIt() async throws {
        let calls = Locked(0)
        let h = sinkClient(
            RecordingTransport { r in
                if r.url.hasSuffix("/track") {
                    let n = calls.withLock {
                        $0 += 1
                        return $0
                    }
                    return HTTPResponse(status: n == 1 ? 503 : 204)
                }
                return try await RecordingTransport.rocalyticsReplies(r)
            })
        let first = await h.client.sendOnboardingRun(COMPLETED)
        #expect(first.outcome == .transient)
        #expect(first.reason == "[ROCALYTICS] track failed: 503 (onboarding_completed)")
        #expect(await h.client.sendOnboardingRun(COMPLETED) == .accepted)
        #expect(
            h.paths == [
                "/functions/v1/identify", "/functions/v1/onboarding-response", "/functions/v1/track", "/functions/v1/onboarding-response",
                "/functions/v1/track",
            ])
        // Stored events: only answers 2xx count.
        #expect(calls.value == 2)
        #expect(await h.client.sendOnboardingRun(COMPLETED) == .accepted)
        #expect(calls.value == 2)
    }

    @Test func E55_noCompletionForAnExplicitRejection() async throws {
        let h = sinkClient(
            RecordingTransport { r in
                r.url.hasSuffix("onboarding-response")
                    ? HTTPResponse(status: 400, body: Array(#"{"outcome":"rejected"}"#.utf8))
                    : try await RecordingTransport.rocalyticsReplies(r)
            })
        #expect(await h.client.sendOnboardingRun(COMPLETED).outcome == .rejected)
        #expect(!h.paths.contains("/functions/v1/track"))
    }

    @Test func E56_destinationStrings() async throws {
        let plain = RocalyticsClient(configuration: .init(platform: .none, onDiagnostic: { _ in }))
        #expect(plain.onboardingRunDestination == "https://rocalytics-api.rocapine.io/functions/v1/onboarding-response")
        let staging = RocalyticsClient(
            configuration: .init(platform: .none, baseURL: "https://staging.example.test", onDiagnostic: { _ in }))
        #expect(staging.onboardingRunDestination == "https://staging.example.test/functions/v1/onboarding-response")
        let custom = RocalyticsClient(
            configuration: .init(platform: .none, transport: RecordingTransport.rocalytics(), onDiagnostic: { _ in }))
        #expect(custom.onboardingRunDestination == "https://rocalytics-api.rocapine.io/functions/v1/onboarding-response (custom fetch)")
        #expect(createRocalyticsOnboardingSink(custom).destination == custom.onboardingRunDestination)
        // A sink built anew on the same client keeps the destination.
        let a = createRocalyticsOnboardingSink(plain)
        let b = createRocalyticsOnboardingSink(plain)
        #expect(sameDestination(a, a.destination, b, b.destination))
        await plain.ready()
        await staging.ready()
        await custom.ready()
    }
}
