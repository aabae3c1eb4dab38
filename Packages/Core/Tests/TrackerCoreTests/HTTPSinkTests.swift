import Foundation
import Testing
import TrackerCore
import TrackerCoreTestKit

private struct HeadersUnavailable: Error, CustomStringConvertible {
    var description: String { "token refresh failed" }
}

@Suite struct HTTPSinkTests {
    static let payload: JSONValue = ["hello": "world"]

    /// (action, expected outcome, expected reason when it matters)
    static let table: [(String, LoopbackHTTPServer.Action, SinkOutcome, String?)] = [
        ("200 accepted", .respond(status: 200, body: #"{"outcome":"accepted"}"#), .accepted, nil),
        ("200 ignored", .respond(status: 200, body: #"{"outcome":"ignored"}"#), .ignored, nil),
        ("400 rejected", .respond(status: 400, body: #"{"outcome":"rejected","reason":"too large"}"#), .rejected, "too large"),
        ("401 no body", .respond(status: 401), .transient, nil),
        (
            "413 text", .respond(status: 413, headers: [HTTPHeader("Content-Type", "text/plain")], body: "Payload Too Large"), .transient,
            nil
        ),
        ("503 no body", .respond(status: 503), .transient, nil),
        ("200 no body", .respond(status: 200), .transient, nil),
        ("404 error object", .respond(status: 404, body: #"{"error":"not found"}"#), .transient, nil),
        ("200 empty object", .respond(status: 200, body: "{}"), .transient, nil),
        ("200 unknown outcome", .respond(status: 200, body: #"{"outcome":"stored"}"#), .transient, nil),
        ("connection destroyed", .close, .transient, nil),
        ("connection reset", .reset, .transient, nil),
        (
            "closed mid-response", .closeMidResponse(status: 200, body: Array(#"{"outcome":"accepted"}"#.utf8), bodyBytesSent: 5),
            .transient, nil
        ),
    ]

    @Test func S64_responseTable() async throws {
        let cases = Self.table
        let server = try LoopbackHTTPServer { request in
            let index = Int(request.path.dropFirst("/case/".count)) ?? 0
            return cases[index].1
        }
        defer { server.stop() }
        for (index, (name, _, outcome, reason)) in cases.enumerated() {
            let sink = HTTPSink<JSONValue>(url: server.baseURL + "/case/\(index)", timeoutMs: 5000)
            let result = await sink.send(Self.payload)
            #expect(result.outcome == outcome, "\(name)")
            if let reason { #expect(result.reason == reason, "\(name)") }
            if outcome == .transient { #expect(result.reason != nil, "\(name): a transient result says why") }
        }
        // libcurl retries once on a fresh connection when a reused one dies before any answer
        // byte (the "connection destroyed" row), so the server may see one request more.
        #expect(server.requestCount >= cases.count)
    }

    @Test func S65_reasonKept() async throws {
        let server = try LoopbackHTTPServer { _ in .respond(status: 400, body: #"{"outcome":"rejected","reason":"schema"}"#) }
        defer { server.stop() }
        let result = await HTTPSink<JSONValue>(url: server.baseURL + "/runs").send(Self.payload)
        #expect(result == SinkResult(.rejected, reason: "schema"))
    }

    @Test func S66_timeoutIsTransientAndFast() async throws {
        let server = try LoopbackHTTPServer { _ in .hang }
        defer { server.stop() }
        let sink = HTTPSink<JSONValue>(url: server.baseURL + "/runs", timeoutMs: 150)
        var result: SinkResult?
        let ms = await elapsedMs { result = await sink.send(Self.payload) }
        #expect(result?.outcome == .transient)
        #expect(ms < 15_000)  // the 150 ms bound ended it, not the 30 s default (a tight wall-clock bound fails on a loaded machine)
    }

    @Test func S66_timeoutAlsoBoundsAnInjectedTransport() async throws {
        let sink = HTTPSink<JSONValue>(
            url: "http://127.0.0.1:9/never", timeoutMs: 150, transport: RecordingTransport(always: .untilCancelled))
        var result: SinkResult?
        let ms = await elapsedMs { result = await sink.send(Self.payload) }
        #expect(result?.outcome == .transient)
        #expect(ms < 15_000)  // the 150 ms bound ended it, not the 30 s default (a tight wall-clock bound fails on a loaded machine)
    }

    @Test func S67_unreachableHostIsTransient() async throws {
        let sink = HTTPSink<JSONValue>(url: "http://127.0.0.1:9/never", timeoutMs: 1000)
        let result = await sink.send(Self.payload)
        #expect(result.outcome == .transient)
        #expect(result.reason != nil)
    }

    @Test func S68_requestForm() async throws {
        let server = try LoopbackHTTPServer { _ in .respond(status: 200, body: #"{"outcome":"accepted"}"#) }
        defer { server.stop() }
        let url = server.baseURL + "/v1/runs"
        let fixed = HTTPSink<JSONValue>(
            url: url, headers: .fixed([HTTPHeader("authorization", "Bearer a"), HTTPHeader("Content-Type", "text/plain")]))
        let closureCalls = Locked(0)
        let dynamic = HTTPSink<JSONValue>(
            url: url,
            headers: .dynamic {
                closureCalls.withLock { $0 += 1 }
                return [HTTPHeader("authorization", "Bearer b")]
            })
        #expect(await fixed.send(["n": 1]).outcome == .accepted)
        #expect(await dynamic.send(["n": 2]).outcome == .accepted)
        #expect(await dynamic.send(["n": 3]).outcome == .accepted)
        #expect(closureCalls.value == 2, "the closure runs on every send")

        let seen = await server.waitForRequests(count: 3)
        #expect(seen.map(\.method) == ["POST", "POST", "POST"])
        #expect(seen.map(\.path) == ["/v1/runs", "/v1/runs", "/v1/runs"])
        for request in seen {
            let contentTypes = request.headers.filter { $0.name.lowercased() == "content-type" }.map(\.value)
            #expect(contentTypes == ["application/json"])
        }
        #expect(seen.map { $0.header("authorization") } == ["Bearer a", "Bearer b", "Bearer b"])
        #expect(seen.map(\.bodyText) == [#"{"n":1}"#, #"{"n":2}"#, #"{"n":3}"#])
    }

    @Test func S69_headersClosureFailureIsTransient() async throws {
        let server = try LoopbackHTTPServer { _ in .respond(status: 200, body: #"{"outcome":"accepted"}"#) }
        defer { server.stop() }
        let sink = HTTPSink<JSONValue>(url: server.baseURL, headers: .dynamic { throw HeadersUnavailable() })
        let result = await sink.send(Self.payload)
        #expect(result.outcome == .transient)
        #expect(result.reason?.contains("token refresh failed") == true)
        #expect(server.connectionCount == 0)
    }

    @Test func S70_destinations() async throws {
        let url = "https://collector.example/v1/runs"
        #expect(HTTPSink<JSONValue>(url: url).destination == url)
        #expect(HTTPSink<JSONValue>(url: url, headers: .fixed([HTTPHeader("authorization", "Bearer one")])).destination == url)
        #expect(HTTPSink<JSONValue>(url: url, headers: .dynamic { [] }).destination == url)
        let custom = RecordingTransport(always: .status(200, body: #"{"outcome":"ignored"}"#))
        let sink = HTTPSink<JSONValue>(url: url, transport: custom)
        #expect(sink.destination == "\(url) (custom fetch)")
        #expect(await sink.send(Self.payload) == SinkResult(.ignored))
        #expect(custom.count == 1)
    }

    @Test func unsupportedSchemeIsTransient() async throws {
        let result = await HTTPSink<JSONValue>(url: "file:///tmp/collector").send(Self.payload)
        #expect(result.outcome == .transient)
        #expect(result.reason?.contains("unsupported-scheme") == true)
    }
}
