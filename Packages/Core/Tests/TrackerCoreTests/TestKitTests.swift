// The test kit's own doubles, tested (issue 16, item 4). Scenario ids of this file:
// TK1  RecordingTransport records each request (URL, method, headers, body, index, clock time)
// TK2  RecordingTransport answers by a script given the request and its index; statuses, 0 fails
// TK3  RecordingTransport: a handler's answer or error, replaced later; the script takes over again
// TK4  RecordingTransport: delayed replies wait on the manual clock; a delay without a clock fails
// TK5  RecordingTransport: held requests answer only when released, in any later reply
// TK6  RecordingTransport: an until-cancelled request ends when its task is cancelled
// TK7  RecordingTransport.waitForRequests resolves at the count, and gives up at its bound
// TK8  RecordingTransport.path(of:)
// TK9  DiagnosticLog collects from its handler and add(_:), filters, counts and clears
// TK10 RecordingSink with a clock: call times, delayed answers, kill()
// TK11 SplitMix64 is the reference SplitMix64 sequence and its helpers stay in range
import Foundation
import Testing
import TrackerCore
import TrackerCoreTestKit

@Suite struct RecordingTransportTests {
    static func post(_ url: String, _ body: String? = nil, headers: [HTTPHeader] = []) -> HTTPRequest {
        HTTPRequest(url: url, method: "POST", headers: headers, body: body.map { Array($0.utf8) })
    }

    @Test func TK1_recordsEveryRequest() async throws {
        let clock = ManualClock(startMs: 5_000)
        let transport = RecordingTransport(clock: clock)
        let headers = [HTTPHeader("Content-Type", "application/json"), HTTPHeader("X-Roca-ID", "abc")]
        _ = try await transport.send(Self.post("https://api.example/v1/track?x=1", #"{"n":1}"#, headers: headers))
        await clock.advance(byMs: 250)
        _ = try await transport.send(HTTPRequest(url: "https://api.example/v1/identify"))

        #expect(transport.count == 2)
        #expect(transport.requests.map(\.url) == ["https://api.example/v1/track?x=1", "https://api.example/v1/identify"])
        #expect(transport.paths == ["/v1/track", "/v1/identify"])
        #expect(transport.bodies == [#"{"n":1}"#, ""])
        let records = transport.records
        #expect(records.map(\.index) == [0, 1])
        #expect(records.map(\.at) == [5_000, 5_250])
        #expect(records[0].method == "POST" && records[1].method == "GET")
        #expect(records[0].headers == headers)
        #expect(records[0].header("content-type") == "application/json")
        #expect(records[0].header("x-missing") == nil)
        #expect(records[0].json == ["n": 1])
        #expect(records[1].json == .null)
        #expect(records[1].body == nil)
        #expect(records[0].request == Self.post("https://api.example/v1/track?x=1", #"{"n":1}"#, headers: headers))

        let unclocked = RecordingTransport()
        _ = try await unclocked.send(HTTPRequest(url: "http://127.0.0.1/a"))
        #expect(unclocked.records.map(\.atMs) == [nil])
    }

    @Test func TK2_answersByScript() async throws {
        let transport = RecordingTransport { request, index in
            request.url.hasSuffix("/fail") ? .error : .status(200 + index, body: "#\(index)")
        }
        let a = try await transport.send(HTTPRequest(url: "http://127.0.0.1/a"))
        #expect(a == HTTPResponse(status: 200, body: Array("#0".utf8)))
        await #expect(throws: HTTPError.self) { try await transport.send(HTTPRequest(url: "http://127.0.0.1/fail")) }
        let c = try await transport.send(HTTPRequest(url: "http://127.0.0.1/c"))
        #expect(c.status == 202, "the index counts every request, failed ones included")

        transport.answerAll(.failure(HTTPError(.timeout, "scripted timeout")))
        do {
            _ = try await transport.send(HTTPRequest(url: "http://127.0.0.1/d"))
            Issue.record("expected a failure")
        } catch let e as HTTPError {
            #expect(e.code == .timeout)
        }

        let statuses = RecordingTransport(statuses: { $0 == 1 ? 0 : 503 })
        #expect(try await statuses.send(HTTPRequest(url: "http://127.0.0.1/")).status == 503)
        do {
            _ = try await statuses.send(HTTPRequest(url: "http://127.0.0.1/"))
            Issue.record("status 0 should fail")
        } catch let e as HTTPError {
            #expect(e.code == .connectionFailed)
        }
        #expect(statuses.count == 2)

        let fixed = RecordingTransport(always: .status(204))
        #expect(try await fixed.send(HTTPRequest(url: "http://127.0.0.1/")) == HTTPResponse(status: 204))
        #expect(try await RecordingTransport().send(HTTPRequest(url: "http://127.0.0.1/")) == HTTPResponse(status: 200))
    }

    struct Refused: Error {}

    @Test func TK3_handlerAnswersAndIsReplaceable() async throws {
        let transport = RecordingTransport { request in
            if request.url.hasSuffix("/refuse") { throw Refused() }
            return HTTPResponse(status: 201, headers: [HTTPHeader("X-A", "1")], body: Array("{}".utf8))
        }
        #expect(try await transport.send(HTTPRequest(url: "http://127.0.0.1/ok")).header("x-a") == "1")
        await #expect(throws: Refused.self) { try await transport.send(HTTPRequest(url: "http://127.0.0.1/refuse")) }
        transport.setHandler { _ in HTTPResponse(status: 418) }
        #expect(try await transport.send(HTTPRequest(url: "http://127.0.0.1/refuse")).status == 418)
        transport.script { _, index in .status(index) }
        #expect(try await transport.send(HTTPRequest(url: "http://127.0.0.1/x")).status == 3)
        #expect(transport.paths == ["/ok", "/refuse", "/refuse", "/x"])
    }

    @Test func TK4_delayedRepliesWaitOnTheClock() async throws {
        let clock = ManualClock(startMs: 0)
        let transport = RecordingTransport(clock: clock, always: .delayed(1_000, 503))
        let answered = Locked<[Int64]>([])
        clock.spawn {
            let r = try? await transport.send(HTTPRequest(url: "http://127.0.0.1/"))
            answered.withLock { $0.append(r.map { _ in clock.nowMs() } ?? -1) }
        }
        await clock.advance(byMs: 999)
        #expect(transport.count == 1)
        #expect(answered.value.isEmpty)
        await clock.advance(byMs: 1)
        #expect(answered.value == [1_000])

        let nested = RecordingTransport(clock: clock, always: .after(10, .after(20, .error)))
        let failed = Locked<[Int64]>([])
        clock.spawn {
            do { _ = try await nested.send(HTTPRequest(url: "http://127.0.0.1/")) } catch { failed.withLock { $0.append(clock.nowMs()) } }
        }
        await clock.advance(byMs: 29)
        #expect(failed.value.isEmpty)
        await clock.advance(byMs: 1)
        #expect(failed.value == [1_030])

        let unclocked = RecordingTransport(always: .delayed(5, 200))
        do {
            _ = try await unclocked.send(HTTPRequest(url: "http://127.0.0.1/"))
            Issue.record("a delay without a clock should fail")
        } catch let e as HTTPError {
            #expect(e.code == .other)
            #expect(e.message.contains("needs a clock"))
        }
    }

    @Test func TK5_heldRequestsAnswerWhenReleased() async throws {
        let clock = ManualClock()
        let transport = RecordingTransport(clock: clock, always: .hang)
        let statuses = Locked<[Int]>([])
        for _ in 0..<2 {
            clock.spawn {
                let r = try? await transport.send(HTTPRequest(url: "http://127.0.0.1/"))
                statuses.withLock { $0.append(r?.status ?? -1) }
            }
        }
        await clock.settle()
        #expect(transport.hungCount == 2)
        #expect(statuses.value.isEmpty)
        await clock.advance(byMs: 60_000)
        #expect(statuses.value.isEmpty, "time alone does not answer a held request")

        transport.releaseHung(with: .hang)  // answered "hold again": still held
        await clock.settle()
        #expect(transport.hungCount == 2)
        #expect(statuses.value.isEmpty)

        transport.releaseHung(status: 503)
        await clock.settle()
        #expect(statuses.value == [503, 503])
        #expect(transport.hungCount == 0)

        clock.spawn {
            let r = try? await transport.send(HTTPRequest(url: "http://127.0.0.1/"))
            statuses.withLock { $0.append(r?.status ?? -1) }
        }
        await clock.settle()
        transport.releaseHung(with: .error)
        await clock.settle()
        #expect(statuses.value == [503, 503, -1])
    }

    @Test func TK6_untilCancelledEndsOnCancellation() async throws {
        let transport = RecordingTransport(always: .untilCancelled)
        let task = Task { try await transport.send(HTTPRequest(url: "http://127.0.0.1/")) }
        #expect(await transport.waitForRequests(1))
        task.cancel()
        do {
            _ = try await task.value
            Issue.record("expected a cancellation")
        } catch let e as HTTPError {
            #expect(e.code == .cancelled)
        }
    }

    @Test func TK7_waitForRequests() async throws {
        let transport = RecordingTransport()
        _ = try await transport.send(HTTPRequest(url: "http://127.0.0.1/"))
        #expect(await transport.waitForRequests(1), "already there")
        let waiter = Task { await transport.waitForRequests(3) }
        _ = try await transport.send(HTTPRequest(url: "http://127.0.0.1/"))
        _ = try await transport.send(HTTPRequest(url: "http://127.0.0.1/"))
        #expect(await waiter.value)
        #expect(await transport.waitForRequests(4, timeoutMs: 50) == false, "the bound ends a wait that never succeeds")
    }

    @Test func TK8_path() {
        #expect(RecordingTransport.path(of: "https://a.example/functions/v1/track?x=1#f") == "/functions/v1/track")
        #expect(RecordingTransport.path(of: "https://a.example") == "/")
        #expect(RecordingTransport.path(of: "http://127.0.0.1:8080/") == "/")
        #expect(RecordingTransport.path(of: "/relative") == "/relative")
    }
}

@Suite struct DiagnosticLogTests {
    @Test func TK9_collectsFiltersCountsAndClears() async {
        let log = DiagnosticLog()
        #expect(log.isEmpty)
        let handler = log.handler
        handler(Diagnostic(code: "storage", message: "write failed"))
        log.add(Diagnostic(code: "invalid-info", message: "bad", runId: "r1"))
        // From other threads, concurrently: nothing is lost.
        await withTaskGroup(of: Void.self) { group in
            for i in 0..<50 { group.addTask { handler(Diagnostic(code: i.isMultiple(of: 2) ? "storage" : "rejected", message: "\(i)")) } }
        }
        #expect(log.all.count == 52)
        #expect(Array(log.codes.prefix(2)) == ["storage", "invalid-info"])
        #expect(log.count("storage") == 26)
        #expect(log.count("rejected") == 25)
        #expect(log.with("invalid-info") == [Diagnostic(code: "invalid-info", message: "bad", runId: "r1")])
        #expect(log.with("none").isEmpty)
        #expect(!log.isEmpty)
        log.clear()
        #expect(log.isEmpty && log.codes.isEmpty)
        handler(Diagnostic(code: "disposed", message: ""))
        #expect(log.codes == ["disposed"])
    }
}

@Suite struct RecordingSinkClockTests {
    @Test func TK10_callTimesDelaysAndKill() async {
        let clock = ManualClock(startMs: 100)
        let seen = Locked<[Int]>([])
        let sink = RecordingSink<Int>(
            destination: "memory://x", clock: clock, behavior: { n, _ in n == 1 ? .after(500, .result(.ignored)) : .result(.accepted) },
            onSend: { n in seen.withLock { $0.append(n) } })
        let results = Locked<[SinkOutcome]>([])
        clock.spawn {
            let r = try? await sink.send(1)
            results.withLock { $0.append(r?.outcome ?? .transient) }
        }
        await clock.advance(byMs: 499)
        #expect(results.value.isEmpty)
        #expect(sink.callTimes == [100])
        await clock.advance(byMs: 1)
        #expect(results.value == [.ignored])

        clock.spawn {
            let r = try? await sink.send(2)
            results.withLock { $0.append(r?.outcome ?? .transient) }
        }
        await clock.settle()
        #expect(results.value == [.ignored, .accepted])
        #expect(sink.callTimes == [100, 600])

        sink.kill()
        #expect(sink.isKilled)
        clock.spawn {
            let r = try? await sink.send(3)
            results.withLock { $0.append(r?.outcome ?? .transient) }
        }
        await clock.advance(byMs: 10_000)
        #expect(sink.received == [1, 2], "a killed sink records nothing")
        #expect(results.value == [.ignored, .accepted], "and answers nothing")
        #expect(seen.value == [1, 2])

        let unclocked = RecordingSink<Int>(always: .accepted)
        unclocked.respond { _, _ in .after(1, .result(.accepted)) }
        await #expect(throws: SinkTestError.self) { try await unclocked.send(1) }
        #expect(unclocked.callTimes.isEmpty)
    }
}

@Suite struct SplitMix64Tests {
    @Test func TK11_referenceSequenceAndHelpers() {
        // The first outputs of the reference SplitMix64 (Vigna) from seed 1234567.
        var rng = SplitMix64(seed: 1_234_567)
        #expect([rng.next(), rng.next(), rng.next()] == [6_457_827_717_110_365_317, 3_203_168_211_198_807_973, 9_817_491_932_198_370_423])
        var a = SplitMix64(seed: 7)
        var b = SplitMix64(seed: 7)
        for _ in 0..<100 {
            let n = a.below(10)
            #expect(n == b.below(10))
            #expect((0..<10).contains(n))
        }
        #expect(a.below(0) == 0 && a.below(1) == 0)
        #expect(!a.chance(0) && a.chance(100))
        #expect(["x"].contains(a.pick(["x"])))
        var c = SplitMix64(seed: 7)
        let shuffled = [1, 2, 3, 4, 5].shuffled(using: &c)
        #expect(shuffled.sorted() == [1, 2, 3, 4, 5])
    }
}
