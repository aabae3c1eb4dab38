import Foundation
import OnboardingExamples
import Testing
import TrackerCore
import TrackerCoreTestKit

@testable import OnboardingTracker

// End to end: the tracker, Core's `HTTPSink<OnboardingRunSnapshot>` and the real `CurlTransport`
// against a `LoopbackHTTPServer` playing the ingest of onboarding-tracker.md §6.6 (scenarios
// S71–S73, S160). Real network answers are awaited event-driven (the sink wrapper signals each
// answer), then the clock settles; retry backoffs run on the manual clock. Nothing sleeps.

/// A mock collector: scripted answers for chosen requests, otherwise the rules of §6.6.
final class MockCollector: @unchecked Sendable {
    /// One request and what the collector did with it.
    struct Exchange: Sendable {
        var runId: String?
        var seq: Int?
        var body: [UInt8]
        var authorization: String?
        /// `accepted`, `ignored`, `rejected`, or `scripted` for a fault.
        var outcome: String
    }

    typealias Script = @Sendable (RecordedRequest, _ index: Int) -> LoopbackHTTPServer.Action?

    private let state = Locked<(stored: [String: JSONValue], log: [Exchange])>(([:], []))
    private let script: Script

    init(script: @escaping Script = { _, _ in nil }) { self.script = script }

    var log: [Exchange] { state.value.log }
    func stored(_ runId: String) -> JSONValue? { state.value.stored[runId] }

    func handle(_ request: RecordedRequest) -> LoopbackHTTPServer.Action {
        let json = try? WireJSON.decode(request.body)
        let runId = json?["run_id"]?.stringValue
        let seq = json?["seq"]?.intValue
        let auth = request.header("authorization")
        let index = state.withLock { $0.log.count }
        if let action = script(request, index) {
            state.withLock { $0.log.append(Exchange(runId: runId, seq: seq, body: request.body, authorization: auth, outcome: "scripted")) }
            return action
        }
        let outcome: String = state.withLock { s in
            let outcome = Self.ingest(json, size: request.body.count, stored: runId.flatMap { s.stored[$0] })
            if outcome == "accepted", let runId, let json { s.stored[runId] = json }
            s.log.append(Exchange(runId: runId, seq: seq, body: request.body, authorization: auth, outcome: outcome))
            return outcome
        }
        return .respond(status: outcome == "rejected" ? 400 : 200, body: #"{"outcome":"\#(outcome)"}"#)
    }

    /// §6.6, first match wins: Core's server verdict with its own conformance step.
    static func ingest(_ incoming: JSONValue?, size: Int, stored: JSONValue?) -> String {
        // A body that is no JSON is nonconformant (unless the run is completed).
        ContractChecker.onboardingRunVerdict(incoming: incoming ?? .null, stored: stored, size: size).outcome.rawValue
    }
}

/// Wraps a sink and signals every answer, so a test can wait for real network answers without
/// sleeping. Every body it passes on is checked and captured (schema onboarding-run v1).
final class AnsweringSink: OnboardingSink, @unchecked Sendable {
    let inner: any OnboardingSink
    var destination: String? { inner.destination }
    private let state = Locked<(inFlight: Int, answers: [SinkResult], waiters: [(Int, CheckedContinuation<Void, Never>)])>((0, [], []))

    init(_ inner: any OnboardingSink) { self.inner = inner }

    var status: (inFlight: Int, answered: Int) { state.withLock { ($0.inFlight, $0.answers.count) } }
    var answers: [SinkResult] { state.value.answers }

    func send(_ payload: OnboardingRunSnapshot) async throws -> SinkResult {
        Conformance.check(SentPayload(payload))
        state.withLock { $0.inFlight += 1 }
        let result: SinkResult
        do { result = try await inner.send(payload) } catch { result = SinkResult(.transient, reason: "\(error)") }
        let ready = state.withLock { s -> [CheckedContinuation<Void, Never>] in
            s.inFlight -= 1
            s.answers.append(result)
            let n = s.answers.count
            let ready = s.waiters.filter { $0.0 <= n }.map(\.1)
            s.waiters.removeAll { $0.0 <= n }
            return ready
        }
        for c in ready { c.resume() }
        return result
    }

    /// Resumes once `count` answers arrived (at once if they already did).
    func waitForAnswers(count: Int) async {
        await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
            let now = state.withLock { s -> Bool in
                if s.answers.count >= count { return true }
                s.waiters.append((count, c))
                return false
            }
            if now { c.resume() }
        }
    }
}

/// Lets the world run against a real server: settles; while a request is in flight, waits for
/// its answer (event-driven) and settles again; otherwise moves the manual clock to the next
/// timer (a retry backoff). Stops when `done()` holds or nothing is left to wait for.
func drive(_ w: World, _ sinks: [AnsweringSink], until done: () -> Bool) async {
    for _ in 0..<500 {
        await w.settle()
        if let busy = sinks.first(where: { $0.status.inFlight > 0 }) {
            await busy.waitForAnswers(count: busy.status.answered + 1)
            continue
        }
        if done() { return }
        guard let next = w.clock.pendingTimerDueTimes.first else { return }
        await w.advance(max(0, next - w.clock.nowMs()))
    }
    Issue.record("drive: did not finish")
}

/// Bodies grouped by seq, for one run: every retry of a seq must carry the same bytes, and
/// nothing of a seq is sent after the collector accepted it.
func checkRetriesAndAcceptance(_ log: [MockCollector.Exchange], runId: String, sourceLocation: SourceLocation = #_sourceLocation) {
    let mine = log.filter { $0.runId == runId }
    for seq in Set(mine.compactMap(\.seq)).sorted() {
        let exchanges = mine.filter { $0.seq == seq }
        #expect(Set(exchanges.map(\.body)).count == 1, "seq \(seq) was sent with different bodies", sourceLocation: sourceLocation)
        let accepted = exchanges.indices.filter { exchanges[$0].outcome == "accepted" }
        #expect(accepted.count <= 1, "seq \(seq) accepted \(accepted.count) times", sourceLocation: sourceLocation)
        if let a = accepted.first {
            #expect(a == exchanges.count - 1, "seq \(seq) sent again after acceptance", sourceLocation: sourceLocation)
        }
    }
}

@Suite struct EndToEndScenarios {
    static let path = "/v1/onboarding-runs"

    /// A harness whose sink is the stock HTTP sink (system transport: `CurlTransport.shared`).
    func harness(
        _ w: World, _ server: LoopbackHTTPServer, headers: HTTPSinkHeaders = .fixed([]), timeoutMs: Int64 = 2000,
        retry: RetryPolicy? = nil, debounceMs: Int64 = 0
    ) -> (Harness, AnsweringSink) {
        let sink = AnsweringSink(HTTPSink<OnboardingRunSnapshot>(url: server.baseURL + Self.path, headers: headers, timeoutMs: timeoutMs))
        let h = Harness(w) { c in
            c.sink = sink
            c.debounceMs = debounceMs
            if let retry { c.retry = retry }
        }
        return (h, sink)
    }

    @Test func S71_endToEnd() async throws {
        let collector = MockCollector()
        let server = try LoopbackHTTPServer { collector.handle($0) }
        defer { server.stop() }
        let w = World()
        let (h, sink) = harness(w, server)
        #expect(h.tracker.destination == server.baseURL + Self.path)
        let run = h.start(HandCodedOnboarding.main)
        HandCodedOnboarding.walkThrough(run, goal: .practice, notificationsGranted: true)
        await drive(w, [sink]) { collector.stored(run.runId)?["status"] == "completed" }
        let stored = collector.stored(run.runId)
        #expect(stored?["status"] == "completed")
        #expect(keys(stored) == ["welcome", "goal", "level_advanced", "done"])
        #expect(WireJSON.encodeString(steps(stored)[1]["answers"]!) == #"[{"question_key":"goal","kind":"single","value":"practice"}]"#)
        #expect(!h.codes.contains("rejected"))
        #expect(collector.log.allSatisfy { $0.outcome == "accepted" || $0.outcome == "ignored" })
        for e in collector.log { Conformance.check(json: try WireJSON.decode(e.body)) }
    }

    @Test func S72_outage() async throws {
        let collector = MockCollector { _, i in i < 4 ? .respond(status: 503, body: "") : nil }
        let server = try LoopbackHTTPServer { collector.handle($0) }
        defer { server.stop() }
        let w = World()
        let (h, sink) = harness(w, server, retry: RetryPolicy(initialDelay: 0.02, factor: 2, maxDelay: 0.1))
        let run = h.start(HandCodedOnboarding.main)
        HandCodedOnboarding.walkThrough(run, goal: .practice, notificationsGranted: true)
        await drive(w, [sink]) { collector.stored(run.runId)?["status"] == "completed" }
        #expect(collector.stored(run.runId)?["status"] == "completed")
        #expect(collector.log.prefix(4).allSatisfy { $0.outcome == "scripted" })
        #expect(sink.answers.prefix(4).allSatisfy { $0.outcome == .transient })
        checkRetriesAndAcceptance(collector.log, runId: run.runId)
        #expect(!h.codes.contains("rejected"))
    }

    @Test func S73_gatewayStatuses() async throws {
        for status in [401, 404, 413] {
            let collector = MockCollector { _, i in
                guard i < 3 else { return nil }
                return status == 413 ? .respond(status: 413, body: "Payload Too Large") : .respond(status: status, body: "")
            }
            let server = try LoopbackHTTPServer { collector.handle($0) }
            defer { server.stop() }
            let w = World()
            let (h, sink) = harness(w, server, retry: RetryPolicy(initialDelay: 0.02, factor: 1, maxDelay: 0.02))
            let run = h.start(HandCodedOnboarding.main)
            HandCodedOnboarding.walkThrough(run, goal: .practice, notificationsGranted: true)
            await drive(w, [sink]) { collector.stored(run.runId)?["status"] == "completed" }
            #expect(collector.stored(run.runId)?["status"] == "completed", "status \(status)")
            #expect(sink.answers.prefix(3).allSatisfy { $0.outcome == .transient })
            checkRetriesAndAcceptance(collector.log, runId: run.runId)
        }
    }

    /// The issue's end-to-end run: every seq meets a 503 without outcome, a hang past the HTTP
    /// timeout and a dropped connection before the collector accepts it; backoff 1 s, 2 s, 4 s
    /// on the manual clock. `debounceMs 500` groups each screen's calls into one seq.
    @Test func S72_fullRunThroughHTTPSinkAndCurl_transientFaultsBeforeAcceptance() async throws {
        let faults: [LoopbackHTTPServer.Action] = [
            .respond(status: 503, body: ""),
            .hang,
            .closeMidResponse(status: 200, body: Array(#"{"outcome":"accepted"}"#.utf8), bodyBytesSent: 5),
        ]
        // The first three requests of each seq fail, in that order.
        let perSeq = Locked<[Int: Int]>([:])
        let collector = MockCollector { request, _ in
            guard let seq = (try? WireJSON.decode(request.body))?["seq"]?.intValue else { return nil }
            let n = perSeq.withLock { m -> Int in
                m[seq, default: 0] += 1
                return m[seq]!
            }
            return n <= faults.count ? faults[n - 1] : nil
        }
        let server = try LoopbackHTTPServer { collector.handle($0) }
        defer { server.stop() }
        let w = World()
        // The HTTP timeout is real time: long enough that an answer the collector accepted is never
        // timed out under ThreadSanitizer on a loaded machine (at 300 ms one was, and retried),
        // short enough that each seq's hang costs one second.
        let (h, sink) = harness(w, server, timeoutMs: 1_000, debounceMs: 500)
        let run = h.start(HandCodedOnboarding.main)
        let accepted = { (seq: Int) in { collector.stored(run.runId)?["seq"]?.intValue == seq } }

        run.enterStep("welcome")
        await drive(w, [sink], until: accepted(1))
        #expect(sink.answers.map(\.outcome) == [.transient, .transient, .transient, .accepted])
        #expect(w.clock.nowMs() == T0 + 500 + 1000 + 2000 + 4000)

        run.exitStep("welcome")
        run.enterStep("goal")
        run.exitStep("goal", answers: [.single(questionKey: "goal", value: "practice")])
        await drive(w, [sink], until: accepted(2))

        run.enterStep("level_advanced")
        run.exitStep("level_advanced", answers: [.numeric(questionKey: "daily_minutes", value: 15, unit: "minute")])
        run.enterStep("done")
        await drive(w, [sink], until: accepted(3))

        run.complete()
        await drive(w, [sink]) { collector.stored(run.runId)?["status"] == "completed" }

        let stored = collector.stored(run.runId)
        #expect(stored?["status"] == "completed")
        #expect(stored?["seq"] == 4)
        #expect(keys(stored) == ["welcome", "goal", "level_advanced", "done"])
        // Each seq: three faults, then accepted once; the same bytes every time.
        let log = collector.log.filter { $0.runId == run.runId }
        #expect(log.compactMap(\.seq) == [1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3, 4, 4, 4, 4])
        #expect(log.map(\.outcome) == Array(repeating: ["scripted", "scripted", "scripted", "accepted"], count: 4).flatMap { $0 })
        checkRetriesAndAcceptance(collector.log, runId: run.runId)
        #expect(sink.answers.map(\.outcome) == Array(repeating: [.transient, .transient, .transient, .accepted], count: 4).flatMap { $0 })
        #expect(!h.codes.contains("rejected"))
        // Settled: nothing left to send, no timer left.
        await h.idle()
        #expect(h.stored == nil)
        #expect(w.clock.pendingTimerCount == 0)
    }

    @Test func S160_headersAreNotPartOfTheDestination() async throws {
        let collector = MockCollector { request, _ in
            request.header("authorization") == "Bearer one" ? .respond(status: 503, body: "") : nil
        }
        let server = try LoopbackHTTPServer { collector.handle($0) }
        defer { server.stop() }
        let url = server.baseURL + Self.path
        let one = HTTPSink<OnboardingRunSnapshot>(url: url, headers: .fixed([HTTPHeader("authorization", "Bearer one")]))
        let two = HTTPSink<OnboardingRunSnapshot>(url: url, headers: .fixed([HTTPHeader("authorization", "Bearer two")]))
        let dynamic = HTTPSink<OnboardingRunSnapshot>(url: url, headers: .dynamic { [HTTPHeader("authorization", "Bearer three")] })
        #expect(one.destination == url && two.destination == url && dynamic.destination == url)

        let w = World()
        let retry = RetryPolicy(initialDelay: 0.02, factor: 2, maxDelay: 0.1)
        let sinkOne = AnsweringSink(one)
        let a = Harness(w) {
            $0.sink = sinkOne
            $0.retry = retry
        }
        let run = a.start()
        run.enterStep("welcome")
        run.complete()
        await drive(w, [sinkOne]) { sinkOne.status.answered >= 1 }
        a.tracker.dispose()
        let sinkTwo = AnsweringSink(two)
        let b = Harness(w) {
            $0.sink = sinkTwo
            $0.retry = retry
        }
        await drive(w, [sinkOne, sinkTwo]) { collector.stored(run.runId)?["status"] == "completed" }
        #expect(collector.stored(run.runId)?["status"] == "completed")
        let accepting = collector.log.filter { $0.runId == run.runId && $0.outcome == "accepted" }
        #expect(accepting.map(\.authorization) == ["Bearer two"])
        #expect(!a.codes.contains("destination-changed") && !b.codes.contains("destination-changed"))
    }
}
