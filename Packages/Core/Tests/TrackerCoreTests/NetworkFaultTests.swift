import Testing
import TrackerCore
import TrackerCoreTestKit

/// Reliability: delivery through the stock HTTP sink and the real curl transport against a
/// loopback server that misbehaves. Backoff is checked on the manual clock; the network is real.
@Suite struct NetworkFaultTests {
    /// A sink wrapper that reports each answer, so a test can wait for a real network answer
    /// without sleeping.
    final class ObservedSink: Sink {
        let inner: HTTPSink<JSONValue>
        let answers = Locked<[SinkResult]>([])
        private let waiters = Locked<[(Int, OnceContinuation<Bool>)]>([])
        var destination: String? { inner.destination }

        init(_ inner: HTTPSink<JSONValue>) { self.inner = inner }

        func send(_ payload: JSONValue) async throws -> SinkResult {
            let result = await inner.send(payload)
            let n = answers.withLock {
                $0.append(result)
                return $0.count
            }
            let ready = waiters.withLock { ws -> [OnceContinuation<Bool>] in
                var ready: [OnceContinuation<Bool>] = []
                ws.removeAll {
                    if $0.0 <= n {
                        ready.append($0.1)
                        return true
                    }
                    return false
                }
                return ready
            }
            for c in ready { c.resume(returning: true) }
            return result
        }

        /// Bounded: a regression that never answers fails the test instead of hanging the suite.
        @discardableResult
        func waitForAnswers(_ count: Int) async -> Bool {
            await boundedWait(what: "waitForAnswers(\(count))", onTimeout: { false }) { once in
                let done = answers.withLock { $0.count >= count }
                if done { once.resume(returning: true) } else { waiters.withLock { $0.append((count, once)) } }
            }
        }
    }

    enum Fault: String, CaseIterable, Sendable {
        case status503NoBody, status401NoBody, status413Text, status404JSONWithoutOutcome, status200Empty
        case malformedJSON, unknownOutcome, hangPastTheHTTPTimeout, closedBeforeAnswer, closedMidResponse
        case resetMidRequest, dripTooSlow, answerLargerThanCap

        var action: LoopbackHTTPServer.Action {
            switch self {
            case .status503NoBody: .respond(status: 503, body: "")
            case .status401NoBody: .respond(status: 401, body: "")
            case .status413Text: .respond(status: 413, body: "Payload Too Large")
            case .status404JSONWithoutOutcome: .respond(status: 404, body: "{\"error\":\"not found\"}")
            case .status200Empty: .respond(status: 200, body: "")
            case .malformedJSON: .respond(status: 200, body: "{\"outcome\":")
            case .unknownOutcome: .respond(status: 200, body: "{\"outcome\":\"stored\"}")
            case .hangPastTheHTTPTimeout: .hang
            case .closedBeforeAnswer: .close
            case .closedMidResponse: .closeMidResponse(status: 200, body: Array("{\"outcome\":\"accepted\"}".utf8), bodyBytesSent: 5)
            case .resetMidRequest: .reset
            case .dripTooSlow: .drip(status: 200, body: Array("{\"outcome\":\"accepted\"}".utf8), intervalMs: 40)
            case .answerLargerThanCap:
                .respond(
                    status: 200,
                    body: Array("{\"outcome\":\"accepted\",\"pad\":\"".utf8) + Array(repeating: UInt8(ascii: "x"), count: 1 << 21)
                        + Array("\"}".utf8))
            }
        }
    }

    static let accepted = LoopbackHTTPServer.Action.respond(status: 200, body: "{\"outcome\":\"accepted\"}")

    /// Each fault answers the first two attempts; the third is accepted. The backoff runs 1 s
    /// then 2 s on the manual clock, every attempt carries the same body, and after acceptance
    /// nothing more is sent.
    @Test(arguments: Fault.allCases)
    func transientFaultsAreRetriedWithBackoffUntilAccepted(fault: Fault) async throws {
        // Counted per request: a reset or closed connection may make curl retry once on a fresh
        // connection, which the server sees as one more request.
        let calls = Locked(0)
        let faulty = try LoopbackHTTPServer { _ in
            let n = calls.withLock {
                $0 += 1
                return $0
            }
            return n <= 2 ? fault.action : Self.accepted
        }
        defer { faulty.stop() }
        let clock = ManualClock()
        let sink = ObservedSink(HTTPSink<JSONValue>(url: faulty.baseURL + "/v1/onboarding-runs", timeoutMs: 300))
        let settled = Locked<[(Int, SinkOutcome)]>([])
        let delivery = DeliveryRuntime(
            sink: sink, scheduler: clock, attemptTimeoutMs: 30_000,
            onSettled: { item, result in settled.withLock { $0.append((item.seq, result.outcome)) } })
        let body: JSONValue = ["run_id": "00000000-0000-4000-8000-000000000001", "seq": 1, "note": "é/😀"]
        delivery.enqueue(Outbound(seq: 1, payload: body))

        #expect(await sink.waitForAnswers(1))
        await clock.settle()
        #expect(sink.answers.value[0].outcome == .transient)
        #expect(clock.pendingTimerDueTimes == [clock.nowMs() + 1000])
        await clock.advance(byMs: 999)
        #expect(sink.answers.value.count == 1)
        await clock.advance(byMs: 1)
        #expect(await sink.waitForAnswers(2))
        await clock.settle()
        #expect(sink.answers.value[1].outcome == .transient)
        #expect(clock.pendingTimerDueTimes == [clock.nowMs() + 2000])
        await clock.advance(byMs: 2000)
        #expect(await sink.waitForAnswers(3))
        await clock.settle()
        #expect(sink.answers.value.map(\.outcome) == [.transient, .transient, .accepted])
        #expect(settled.value.map(\.0) == [1])
        #expect(delivery.pending == nil)
        #expect(clock.pendingTimerCount == 0)  // no leaked attempt or retry timer
        await clock.advance(byMs: 120_000)
        #expect(sink.answers.value.count == 3)
        let bodies = Set(faulty.requests.map(\.body))
        #expect(bodies == [WireJSON.encode(body)])  // every attempt carried the same bytes
        #expect(faulty.requestCount >= 3)
    }

    /// Outcome bodies decide, whatever the status.
    @Test(arguments: [(500, "accepted"), (404, "ignored"), (200, "rejected"), (302, "accepted"), (418, "ignored")])
    func outcomeBodiesWithOddStatusesSettle(status: Int, outcome: String) async throws {
        let server = try LoopbackHTTPServer { _ in .respond(status: status, body: "{\"outcome\":\"\(outcome)\",\"reason\":\"r\"}") }
        defer { server.stop() }
        let clock = ManualClock()
        let sink = ObservedSink(HTTPSink<JSONValue>(url: server.baseURL + "/x", timeoutMs: 2000))
        let delivery = DeliveryRuntime(sink: sink, scheduler: clock)
        delivery.enqueue(Outbound(seq: 1, payload: ["seq": 1]))
        #expect(await sink.waitForAnswers(1))
        await clock.settle()
        #expect(sink.answers.value.map(\.outcome.rawValue) == [outcome])
        #expect(sink.answers.value.first?.reason == "r")
        #expect(delivery.pending == nil)
        #expect(clock.pendingTimerCount == 0)
        await clock.advance(byMs: 120_000)
        #expect(server.requestCount == 1)
    }

    /// A server that hangs past the attempt timeout: the attempt counts as transient on the
    /// manual clock, the late answer is ignored, and the retry goes out after the backoff.
    @Test func hangPastTheAttemptTimeoutIsTransientAndTheLateAnswerIsIgnored() async throws {
        let calls = Locked(0)
        let server = try LoopbackHTTPServer { _ in
            let n = calls.withLock {
                $0 += 1
                return $0
            }
            return n == 1 ? .hang : Self.accepted
        }
        defer { server.stop() }
        let clock = ManualClock()
        let sink = ObservedSink(HTTPSink<JSONValue>(url: server.baseURL + "/x", timeoutMs: 60_000))
        let delivery = DeliveryRuntime(sink: sink, scheduler: clock, attemptTimeoutMs: 30_000)
        delivery.enqueue(Outbound(seq: 1, payload: ["seq": 1]))
        _ = await server.waitForRequests(count: 1)
        await clock.advance(byMs: 30_000)  // attempt timeout → transient, backoff 1 s
        #expect(sink.answers.value.isEmpty)  // the HTTP request itself is still hanging
        await clock.advance(byMs: 1000)
        #expect(await sink.waitForAnswers(1))
        await clock.settle()
        #expect(delivery.pending == nil)
        #expect(server.requestCount == 2)
        server.stop()  // the hanging request now fails; its late answer must change nothing
        #expect(await sink.waitForAnswers(2))
        await clock.settle()
        #expect(delivery.pending == nil)
        #expect(clock.pendingTimerCount == 0)
    }

    /// Many failing attempts leave no state behind: timers and connections stay bounded.
    @Test func manyFailuresKeepStateBounded() async throws {
        let server = try LoopbackHTTPServer { _ in .respond(status: 503, body: "") }
        defer { server.stop() }
        let clock = ManualClock()
        let sink = ObservedSink(HTTPSink<JSONValue>(url: server.baseURL + "/x", timeoutMs: 2000))
        let delivery = DeliveryRuntime(sink: sink, scheduler: clock, retry: RetryPolicy(initialDelay: 0.01, factor: 1, maxDelay: 0.01))
        for attempt in 1...60 {
            if attempt == 1 { delivery.enqueue(Outbound(seq: 1, payload: ["seq": 1])) } else { await clock.advance(byMs: 10) }
            #expect(await sink.waitForAnswers(attempt))
            await clock.settle()
            #expect(clock.pendingTimerCount == 1)  // just the retry timer
        }
        // Connections are reused: 60 attempts open a handful at most (a loaded machine may see an
        // idle connection closed and reopened), never one per attempt.
        #expect(server.connectionCount <= 10)
        #expect(delivery.pending?.seq == 1)
    }
}
