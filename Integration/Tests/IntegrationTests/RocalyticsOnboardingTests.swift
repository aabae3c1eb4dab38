import Foundation
import IntegrationExamples
import OnboardingTracker
import RocalyticsClient
import RocalyticsClientTestSupport
import Testing
import TrackerCore
import TrackerCoreTestKit

// Onboarding → Rocalytics onboarding sink → client → CurlTransport → a loopback collector, wired
// exactly as the README's client example (the seed's `examples/client.ts`) does: steps 1 to 4 of
// `Packages/RocalyticsClient/Examples/ClientExample.swift`, the tracker configured with
// `createRocalyticsOnboardingSink(rocalytics)`.
//
// New scenarios:
// - INT1: a hand-coded onboarding run through the Rocalytics sink: every onboarding-response
//   body is the client spec's body (§9.3: the v1 snapshot at the top level, the computed shared
//   `sent_at`, then `responses` and `onboarding_metadata`), with the four Rocalytics headers; the
//   completed run sends `onboarding_completed` once, after its completed snapshot, with the
//   run-scoped deduplication id.
// - INT2: killed after the server took the completion event but before the answer reached the
//   app (so the tracker never stored that its snapshot was delivered), the app relaunches (a new client and a new tracker on the same secure
//   store and the same storage): the stored completion is resent with the very same body, its
//   `onboarding_completed` again with the same deduplication id, so the server keeps one event.
// - INT7: the completion event fails (a 500 from `/track`): the send is transient, and the
//   tracker's retry after its 1 s backoff sends the same body and the event again; the server
//   keeps one event, and nothing is sent after the retry succeeded.

/// The contract's top-level members in order (onboarding-run contract v1).
let snapshotKeyOrder = [
    "schema_version", "run_id", "seq", "status", "started_at", "completed_at", "sent_at",
    "onboarding", "studio", "context", "manifest", "properties", "truncated", "steps",
]

let mainOnboarding = StartOptions(
    onboarding: OnboardingInput(key: "main", version: "3"),
    manifest: [
        ManifestStepInput(stepKey: "welcome"),
        ManifestStepInput(stepKey: "goal"),
        ManifestStepInput(stepKey: "level_beginner", slot: "level"),
        ManifestStepInput(stepKey: "level_advanced", slot: "level"),
        ManifestStepInput(stepKey: "notifications"),
        ManifestStepInput(stepKey: "done"),
    ],
    properties: ["signup_source": "email"]
)

let runContext = RunContextInput(
    appVersion: "2.4.0", build: "412", platform: .ios, osVersion: "18.1",
    locale: "en-US", timezone: "Europe/Paris")

/// Checks one onboarding-response body against rocalytics-client.md §9.2-§9.3 and returns the
/// v1 snapshot inside it (captured for the schema validation).
@discardableResult
func checkOnboardingResponseBody(_ r: Received, rocaId: String, sourceLocation: SourceLocation = #_sourceLocation) throws -> JSONObject {
    #expect(r.request.method == "POST", sourceLocation: sourceLocation)
    #expect(r.request.header("Content-Type") == "application/json", sourceLocation: sourceLocation)
    #expect(r.request.header("X-Roca-ID") == rocaId, sourceLocation: sourceLocation)
    #expect(r.request.header("X-Application-ID") == "com.example.app", sourceLocation: sourceLocation)
    #expect(r.request.header("X-Platform") == "ios", sourceLocation: sourceLocation)
    #expect(r.request.header("Authorization") == nil, sourceLocation: sourceLocation)
    let body = try #require(r.json.objectValue, sourceLocation: sourceLocation)
    // The v1 members in the contract's order, then the two pre-v1 members.
    let keys = body.entries.map(\.0)
    #expect(Array(keys.suffix(2)) == ["responses", "onboarding_metadata"], sourceLocation: sourceLocation)
    let v1Keys = Array(keys.dropLast(2))
    #expect(v1Keys == snapshotKeyOrder.filter(v1Keys.contains), "\(v1Keys)", sourceLocation: sourceLocation)
    var snapshot = JSONObject()
    for (k, v) in body.entries where k != "responses" && k != "onboarding_metadata" { snapshot.appendUnchecked(k, v) }
    #expect(
        ContractChecker.onboardingRun(.object(snapshot)).isEmpty, "\(ContractChecker.onboardingRun(.object(snapshot)))",
        sourceLocation: sourceLocation)
    _ = try OnboardingRunSnapshot(json: .object(snapshot))
    PayloadCapture.record(WireJSON.encode(.object(snapshot)), schema: .onboardingRunV1)
    // The shared sent_at: the latest recorded timestamp plus seq milliseconds.
    let sentAt = try #require(onboardingSentAtMs(snapshot), sourceLocation: sourceLocation)
    #expect(body["sent_at"] == .string(Timestamp.format(ms: sentAt)), sourceLocation: sourceLocation)
    // The body is exactly the client's mapping of its snapshot.
    #expect(WireJSON.encode(.object(toOnboardingRunBody(snapshotObject: snapshot))) == r.request.body, sourceLocation: sourceLocation)
    // The pre-v1 part.
    let meta = try #require(body["onboarding_metadata"]?.objectValue, sourceLocation: sourceLocation)
    #expect(
        meta["onboarding_id"] == "main" && meta["onboarding_key"] == "main" && meta["onboarding_version"] == "3",
        sourceLocation: sourceLocation)
    #expect(meta["locale"] == "en-US", sourceLocation: sourceLocation)
    #expect(meta["run_id"] == snapshot["run_id"] && meta["seq"] == snapshot["seq"], sourceLocation: sourceLocation)
    let responses = try #require(body["responses"]?.arrayValue, sourceLocation: sourceLocation)
    let steps = try #require(snapshot["steps"]?.arrayValue, sourceLocation: sourceLocation)
    #expect(responses.map { $0["step_id"] } == steps.map { $0["step_key"] }, sourceLocation: sourceLocation)
    return snapshot
}

@Suite(.serialized) struct RocalyticsOnboardingTests {
    @Test(.timeLimit(.minutes(2))) func INT1_anOnboardingRunThroughTheRocalyticsSinkOverCurl() async throws {
        let collector = try Collector()
        defer { collector.stop() }
        let dir = try TempDirectory("int1")
        defer { dir.remove() }
        let clock = ManualClock()
        let log = DiagnosticLog()

        // Steps 1 to 4 of the client example, as an app runs them.
        let rocalytics = startRocalytics(
            .init(
                platform: .custom(FixturePlatform.ios()), baseURL: collector.baseURL, clock: clock, scheduler: clock,
                onDiagnostic: log.handler, attributionBaseURL: collector.baseURL))
        await rocalytics.ready()
        let rocaId = try #require(rocalytics.rocaId)
        try await onSignedIn(rocalytics, userId: "user-42", revenueCatId: nil)
        let storage = ProcessStorage(directory: dir.path)
        setUpOnboardingTracking(rocalytics, storage: storage, context: .value(runContext)) {
            $0.clock = clock
            $0.scheduler = clock
            $0.onDiagnostic = log.handler
            $0.registry = HandoffRegistry()  // this test's own app process
        }
        defer { OnboardingRun.dispose() }

        // The user goes through the flow, a few seconds per screen.
        let run = OnboardingRun.start(mainOnboarding)
        run.enterStep("welcome")
        await clock.advance(byMs: 2000)
        run.exitStep("welcome")
        run.enterStep("goal")
        await clock.advance(byMs: 3000)
        run.exitStep("goal", answers: [.single(questionKey: "goal", value: "practice")])
        run.enterStep("level_advanced")
        await clock.advance(byMs: 4000)
        run.exitStep("level_advanced", answers: [.numeric(questionKey: "daily_minutes", value: 15, unit: "minute")])
        run.enterStep("done")
        await clock.advance(byMs: 1000)
        run.complete()

        // Settled: the completion was accepted and its event sent, so nothing is left to store.
        await storage.waitUntilRemoved("rocalytics-sdk:onboarding-run")

        let runs = collector.requests("/functions/v1/onboarding-response")
        #expect(!runs.isEmpty)
        var lastSeq = 0
        for r in runs {
            let snapshot = try checkOnboardingResponseBody(r, rocaId: rocaId)
            #expect(snapshot["run_id"] == .string(run.runId))
            let seq = try #require(snapshot["seq"]?.intValue)
            #expect(seq > lastSeq, "seq \(seq) after \(lastSeq)")
            lastSeq = seq
        }
        let completed = try #require(runs.last?.json)
        #expect(completed["status"] == "completed")
        #expect(completed["steps"]?.arrayValue?.map { $0["step_key"] } == ["welcome", "goal", "level_advanced", "done"])
        let responses = try #require(completed["responses"]?.arrayValue)
        #expect(responses[1]["answers"] == ["goal": "practice"])
        #expect(responses[2]["answers"] == ["daily_minutes": 15])  // the unit is dropped
        #expect(runs.filter { $0.json["status"] == "completed" }.count == 1)

        // onboarding_completed once, after the completed snapshot, with the run-scoped id.
        let all = collector.received
        let events = all.enumerated().filter { $0.element.eventName == "onboarding_completed" }
        #expect(events.count == 1)
        let event = try #require(events.first)
        #expect(event.element.json["deduplication_id"] == .string("\(rocaId)-onboarding_completed-\(run.runId)"))
        #expect(event.element.json["properties"] == .object([:]))
        let completedIndex = try #require(all.lastIndex { $0.path == "/functions/v1/onboarding-response" })
        #expect(event.offset > completedIndex)
        #expect(log.all.isEmpty, "\(log.all)")
    }

    @Test(.timeLimit(.minutes(2))) func INT2_aRelaunchResendsTheCompletionAndTheServerKeepsOneEvent() async throws {
        let collector = try Collector()
        defer { collector.stop() }
        let dir = try TempDirectory("int2")
        defer { dir.remove() }
        let secureStore = InMemorySecureStore()  // the device's keychain, kept across launches
        let log = DiagnosticLog()
        let key = "rocalytics-sdk:onboarding-run"

        // First launch.
        let clock1 = ManualClock()
        let transport1 = ProcessTransport()
        let storage1 = ProcessStorage(directory: dir.path)
        let first = startRocalytics(
            .init(
                platform: .custom(FixturePlatform.ios(store: secureStore)), transport: transport1, baseURL: collector.baseURL,
                clock: clock1, scheduler: clock1, onDiagnostic: log.handler, installPing: false))
        await first.ready()
        let rocaId = try #require(first.rocaId)
        setUpOnboardingTracking(first, storage: storage1, context: .value(runContext)) {
            $0.clock = clock1
            $0.scheduler = clock1
            $0.onDiagnostic = log.handler
            $0.registry = HandoffRegistry()
        }
        defer { OnboardingRun.dispose() }
        // The app is killed the moment the server takes the completion event, before the answer
        // reaches it: from then on nothing of the first process reaches the network or its
        // storage, and clock1 stays still, so the tracker never learns that its completed
        // snapshot was delivered.
        collector.onRequest.withLock { hook in
            hook = { r in
                if r.eventName == "onboarding_completed" {
                    transport1.kill()
                    storage1.kill()
                }
            }
        }
        let run = OnboardingRun.start(mainOnboarding)
        run.enterStep("welcome")
        await clock1.advance(byMs: 2000)
        run.exitStep("welcome")
        run.enterStep("done")
        await clock1.advance(byMs: 1000)
        run.complete()
        await collector.waitFor { $0.contains { $0.eventName == "onboarding_completed" } }
        collector.onRequest.withLock { $0 = { _ in } }
        let firstCompletion = try #require(collector.requests("/functions/v1/onboarding-response").last)
        #expect(firstCompletion.json["status"] == "completed")
        #expect(try await storage1.files.getItem(key) != nil, "the completed snapshot was stored before it was sent")

        // Second launch: a new client and a new tracker on the same keychain and storage.
        let clock2 = ManualClock(startMs: clock1.nowMs() + 60_000)
        let storage2 = ProcessStorage(directory: dir.path)
        let second = startRocalytics(
            .init(
                platform: .custom(FixturePlatform.ios(store: secureStore)), transport: ProcessTransport(), baseURL: collector.baseURL,
                clock: clock2, scheduler: clock2, onDiagnostic: log.handler, installPing: false))
        await second.ready()
        #expect(second.rocaId == rocaId)
        setUpOnboardingTracking(second, storage: storage2, context: .value(runContext)) {
            $0.clock = clock2
            $0.scheduler = clock2
            $0.onDiagnostic = log.handler
            $0.registry = HandoffRegistry()  // a new app process
        }
        await storage2.waitUntilRemoved(key)
        #expect(await OnboardingRun.resume(expected: mainOnboarding) == nil, "a completed run is never resumed")

        let completions = collector.requests("/functions/v1/onboarding-response").filter { $0.json["status"] == "completed" }
        #expect(completions.count == 2)
        #expect(completions.last?.request.body == firstCompletion.request.body, "the resend carries the very same body")
        try checkOnboardingResponseBody(try #require(completions.last), rocaId: rocaId)
        let events = collector.received.filter { $0.eventName == "onboarding_completed" }
        let dedup = "\(rocaId)-onboarding_completed-\(run.runId)"
        #expect(events.map { $0.json["deduplication_id"] } == [.string(dedup), .string(dedup)])
        #expect(collector.storedEvents.keys.filter { $0.contains("onboarding_completed") } == [dedup], "the server keeps one event")
        #expect(log.all.isEmpty, "\(log.all)")
    }

    @Test(.timeLimit(.minutes(2))) func INT7_aFailedCompletionEventIsRetriedWithTheSnapshot() async throws {
        let collector = try Collector()
        defer { collector.stop() }
        let dir = try TempDirectory("int7")
        defer { dir.remove() }
        let clock = ManualClock()
        let log = DiagnosticLog()
        let transport = ProcessTransport()
        let rocalytics = startRocalytics(
            .init(
                platform: .custom(FixturePlatform.ios()), transport: transport, baseURL: collector.baseURL,
                clock: clock, scheduler: clock, onDiagnostic: log.handler, installPing: false))
        await rocalytics.ready()
        let rocaId = try #require(rocalytics.rocaId)
        let storage = ProcessStorage(directory: dir.path)
        setUpOnboardingTracking(rocalytics, storage: storage, context: .value(runContext)) {
            $0.clock = clock
            $0.scheduler = clock
            $0.onDiagnostic = log.handler
            $0.registry = HandoffRegistry()
        }
        defer { OnboardingRun.dispose() }
        let failures = Locked(0)
        collector.override.withLock { o in
            o = { r in
                guard r.eventName == "onboarding_completed" else { return nil }
                let first = failures.withLock { n -> Bool in
                    n += 1
                    return n == 1
                }
                return first ? .respond(status: 500, body: #"{"error":"busy"}"#) : nil
            }
        }

        let run = OnboardingRun.start(mainOnboarding)
        run.enterStep("welcome")
        await clock.advance(byMs: 2000)
        run.exitStep("welcome")
        run.enterStep("done")
        await clock.advance(byMs: 1000)
        run.complete()
        // The 500 came back and the tracker handled the transient answer: its retry is due in 1 s.
        await transport.waitForAnswer { url, status in url.hasSuffix("/functions/v1/track") && status == 500 }
        await clock.settle()
        let completionsBeforeRetry = collector.requests("/functions/v1/onboarding-response").filter { $0.json["status"] == "completed" }
        #expect(completionsBeforeRetry.count == 1)
        #expect(clock.pendingTimerDueTimes.contains(clock.nowMs() + 1000), "\(clock.pendingTimerDueTimes) at \(clock.nowMs())")
        await clock.advance(byMs: 1000)
        await storage.waitUntilRemoved("rocalytics-sdk:onboarding-run")

        let completions = collector.requests("/functions/v1/onboarding-response").filter { $0.json["status"] == "completed" }
        #expect(completions.count == 2)
        #expect(completions.first?.request.body == completions.last?.request.body, "the retry sends the same body")
        let dedup = "\(rocaId)-onboarding_completed-\(run.runId)"
        let events = collector.received.filter { $0.eventName == "onboarding_completed" }
        #expect(events.map { $0.json["deduplication_id"] } == [.string(dedup), .string(dedup)])
        #expect(collector.storedEvents.keys.filter { $0.contains("onboarding_completed") } == [dedup])
        // Settled: nothing more goes out, however long the app keeps running.
        let sent = collector.received.count
        await clock.advance(byMs: 120_000)
        #expect(collector.received.count == sent)
        #expect(log.all.isEmpty, "\(log.all)")
    }
}
