import Foundation
import Testing
import TrackerCore
import TrackerCoreTestKit

/// The `HTTPError` thrown by `body`, or `nil` when it returned (or threw something else).
func httpError(_ body: () async throws -> HTTPResponse) async -> HTTPError? {
    do {
        _ = try await body()
        return nil
    } catch let error as HTTPError {
        return error
    } catch {
        return nil
    }
}

/// Milliseconds `body` took.
func elapsedMs(_ body: () async -> Void) async -> Double {
    // MonotonicClock, not ContinuousClock (macOS 13 / iOS 16): the tests build for the floors.
    let start = MonotonicClock.nowNs()
    await body()
    return Double(MonotonicClock.nowNs() - start) / 1e6
}

@Suite struct CurlTransportTests {
    let transport = CurlTransport.shared

    @Test func statusHeadersAndBodyRoundTrip() async throws {
        let server = try LoopbackHTTPServer { _ in
            .respond(status: 201, headers: [HTTPHeader("X-Test", "yes")], body: "hello")
        }
        defer { server.stop() }
        let response = try await transport.send(HTTPRequest(url: server.baseURL + "/echo?x=1", method: "POST", body: Array("ping".utf8)))
        #expect(response.status == 201)
        #expect(response.header("x-test") == "yes")
        #expect(response.header("content-length") == "5")
        #expect(response.body == Array("hello".utf8))
        let seen = server.requests
        #expect(seen.count == 1)
        #expect(seen.first?.method == "POST")
        #expect(seen.first?.path == "/echo?x=1")
        #expect(seen.first?.bodyText == "ping")
    }

    @Test func methodAndHeadersAreSent() async throws {
        let server = try LoopbackHTTPServer { _ in .respond(status: 204) }
        defer { server.stop() }
        let request = HTTPRequest(
            url: server.baseURL + "/items/7", method: "PUT",
            headers: [HTTPHeader("Authorization", "Bearer t"), HTTPHeader("X-Empty", ""), HTTPHeader("content-type", "application/json")],
            body: Array(#"{"a":1}"#.utf8))
        let response = try await transport.send(request)
        #expect(response.status == 204)
        #expect(response.body.isEmpty)
        let seen = try #require(server.requests.first)
        #expect(seen.method == "PUT")
        #expect(seen.path == "/items/7")
        #expect(seen.header("authorization") == "Bearer t")
        #expect(seen.header("x-empty") == "")
        #expect(seen.header("content-type") == "application/json")
        #expect(seen.header("expect") == nil)
        #expect(seen.bodyText == #"{"a":1}"#)

        _ = try await transport.send(HTTPRequest(url: server.baseURL + "/g", method: "GET"))
        _ = try await transport.send(HTTPRequest(url: server.baseURL + "/d", method: "DELETE"))
        _ = try await transport.send(HTTPRequest(url: server.baseURL + "/p", method: "POST"))
        let all = server.requests
        #expect(all.map(\.method) == ["PUT", "GET", "DELETE", "POST"])
        #expect(all[3].header("content-length") == "0")
    }

    @Test func pooledHandleCarriesNothingOverBetweenRequests() async throws {
        let transport = CurlTransport(options: .init(pooledHandles: 1, idleSpinMicroseconds: 0))
        defer { transport.shutdown() }
        let server = try LoopbackHTTPServer { request in .respond(status: 200, body: request.method) }
        defer { server.stop() }
        let url = server.baseURL
        let plan: [(String, [UInt8]?, [HTTPHeader])] = [
            ("POST", Array("one".utf8), [HTTPHeader("X-A", "1")]),
            ("GET", nil, []),
            ("HEAD", nil, [HTTPHeader("X-B", "2")]),
            ("GET", nil, []),
            ("PUT", nil, []),
            ("POST", nil, []),
            ("PATCH", Array("two".utf8), []),
            ("GET", nil, []),
        ]
        for (method, body, headers) in plan {
            let response = try await transport.send(HTTPRequest(url: url + "/m", method: method, headers: headers, body: body))
            #expect(response.body == (method == "HEAD" ? [] : Array(method.utf8)))
        }
        let seen = server.requests
        #expect(seen.map(\.method) == plan.map(\.0))
        #expect(seen.map(\.bodyText) == ["one", "", "", "", "", "", "two", ""])
        #expect(seen.map { $0.header("x-a") } == ["1", nil, nil, nil, nil, nil, nil, nil])
        #expect(seen.map { $0.header("x-b") } == [nil, nil, "2", nil, nil, nil, nil, nil])
        #expect(seen[1].header("content-length") == nil)
        #expect(server.connectionCount == 1)
    }

    @Test func invalidHeaderFieldsAreRefusedBeforeIO() async throws {
        let server = try LoopbackHTTPServer { _ in .respond(status: 200) }
        defer { server.stop() }
        let injected = await httpError {
            try await transport.send(HTTPRequest(url: server.baseURL, headers: [HTTPHeader("X", "a\r\nEvil: 1")]))
        }
        #expect(injected?.code == .other)
        let badMethod = await httpError { try await transport.send(HTTPRequest(url: server.baseURL, method: "GET /x")) }
        #expect(badMethod?.code == .other)
        #expect(server.connectionCount == 0)
    }

    @Test func totalTimeoutFiresWithinItsBound() async throws {
        let server = try LoopbackHTTPServer { _ in .hang }
        defer { server.stop() }
        var error: HTTPError?
        let ms = await elapsedMs {
            error = await httpError { try await transport.send(HTTPRequest(url: server.baseURL + "/slow", timeoutMs: 150)) }
        }
        #expect(error?.code == .timeout)
        #expect(ms >= 140)
        // Only a guard against a hang (the server never answers; nothing but the 150 ms bound ends
        // the transfer): a wall-clock ceiling tighter than this fails on a loaded machine.
        #expect(ms < 20_000)
    }

    @Test func slowDripIsReadAndTimesOutWhenTooSlow() async throws {
        let server = try LoopbackHTTPServer { request in
            request.path == "/fast"
                ? .drip(status: 200, body: Array("ok".utf8), intervalMs: 0)
                : .drip(status: 200, body: Array(repeating: 0x61, count: 100), intervalMs: 20)
        }
        defer { server.stop() }
        let response = try await transport.send(HTTPRequest(url: server.baseURL + "/fast"))
        #expect(response.body == Array("ok".utf8))
        let error = await httpError { try await transport.send(HTTPRequest(url: server.baseURL + "/slow", timeoutMs: 200)) }
        #expect(error?.code == .timeout)
    }

    @Test func cancellingTheTaskAbortsPromptly() async throws {
        let server = try LoopbackHTTPServer { _ in .hang }
        defer { server.stop() }
        let url = server.baseURL + "/hang"
        let task = Task { await httpError { try await CurlTransport.shared.send(HTTPRequest(url: url, timeoutMs: 30_000)) } }
        _ = await server.waitForRequests(count: 1)
        var error: HTTPError?
        let ms = await elapsedMs {
            task.cancel()
            error = await task.value
        }
        #expect(error?.code == .cancelled)
        #expect(ms < 15_000)  // well under the 30 s timeout: the cancellation ended it (a tight wall-clock bound fails on a loaded machine)
    }

    @Test func alreadyCancelledTaskSendsNothing() async throws {
        let server = try LoopbackHTTPServer { _ in .respond(status: 200) }
        defer { server.stop() }
        let url = server.baseURL
        let error = await Task {
            withUnsafeCurrentTask { $0?.cancel() }
            return await httpError { try await CurlTransport.shared.send(HTTPRequest(url: url)) }
        }.value
        #expect(error?.code == .cancelled)
        #expect(server.connectionCount == 0)
    }

    @Test func sequentialRequestsReuseOneConnection() async throws {
        let transport = CurlTransport(options: .init(maxConnections: 4))
        defer { transport.shutdown() }
        let server = try LoopbackHTTPServer { request in .respond(status: 200, body: request.path) }
        defer { server.stop() }
        for i in 0..<10 {
            let response = try await transport.send(
                HTTPRequest(
                    url: server.baseURL + "/r\(i)", method: i.isMultiple(of: 2) ? "GET" : "POST",
                    body: i.isMultiple(of: 2) ? nil : [1, 2, 3]))
            #expect(response.body == Array("/r\(i)".utf8))
        }
        #expect(server.requestCount == 10)
        #expect(server.connectionCount == 1)
    }

    @Test func hundredConcurrentRequestsComplete() async throws {
        let server = try LoopbackHTTPServer { request in .respond(status: 200, body: request.body) }
        defer { server.stop() }
        let url = server.baseURL
        let bodies = try await withThrowingTaskGroup(of: (Int, [UInt8]).self) { group in
            for i in 0..<100 {
                group.addTask {
                    let response = try await CurlTransport.shared.send(
                        HTTPRequest(url: url + "/c", method: "POST", body: Array("\(i)".utf8)))
                    return (i, response.body)
                }
            }
            var out: [Int: [UInt8]] = [:]
            for try await (i, body) in group { out[i] = body }
            return out
        }
        #expect(bodies.count == 100)
        #expect(bodies.allSatisfy { $0.value == Array("\($0.key)".utf8) })
        #expect(server.requestCount == 100)
    }

    @Test func hugeAnswerIsCutAtTheDefaultCap() async throws {
        let big = [UInt8](repeating: 0x7A, count: 2 << 20)
        let server = try LoopbackHTTPServer { request in
            if request.path == "/chunked" {
                // No Content-Length: the cap is enforced while the body streams in.
                var framed: [UInt8] = []
                var offset = 0
                while offset < big.count {
                    let n = min(64 * 1024, big.count - offset)
                    framed += Array((String(n, radix: 16) + "\r\n").utf8) + big[offset..<(offset + n)] + Array("\r\n".utf8)
                    offset += n
                }
                framed += Array("0\r\n\r\n".utf8)
                return .respond(status: 200, headers: [HTTPHeader("Transfer-Encoding", "chunked")], body: framed)
            }
            return .respond(status: 200, body: big)
        }
        defer { server.stop() }
        let declared = await httpError { try await transport.send(HTTPRequest(url: server.baseURL + "/big")) }
        #expect(declared?.code == .responseTooLarge)
        let streamed = await httpError { try await transport.send(HTTPRequest(url: server.baseURL + "/chunked")) }
        #expect(streamed?.code == .responseTooLarge)
    }

    @Test func customCapIsHonoured() async throws {
        let server = try LoopbackHTTPServer { request in
            .respond(status: 200, body: [UInt8](repeating: 0x41, count: request.path == "/over" ? 1001 : 1000))
        }
        defer { server.stop() }
        let over = await httpError { try await transport.send(HTTPRequest(url: server.baseURL + "/over", maxResponseBytes: 1000)) }
        #expect(over?.code == .responseTooLarge)
        let exact = try await transport.send(HTTPRequest(url: server.baseURL + "/exact", maxResponseBytes: 1000))
        #expect(exact.body.count == 1000)
    }

    @Test(arguments: ["file:///etc/passwd", "ftp://127.0.0.1/x", "FTP://127.0.0.1/", "gopher://127.0.0.1/", "scp://h/x"])
    func nonHTTPSchemesAreRefused(_ url: String) async throws {
        let error = await httpError { try await transport.send(HTTPRequest(url: url)) }
        #expect(error?.code == .unsupportedScheme)
    }

    @Test func refusedSchemeNeverReachesTheServer() async throws {
        let server = try LoopbackHTTPServer { _ in .respond(status: 200) }
        defer { server.stop() }
        let ftp = await httpError { try await transport.send(HTTPRequest(url: "ftp://127.0.0.1:\(server.port)/x")) }
        #expect(ftp?.code == .unsupportedScheme)
        #expect(server.connectionCount == 0)
        #expect(server.requestCount == 0)
    }

    @Test(arguments: ["", "127.0.0.1/x", "http:/x", "http://", "http:///path", "http://a b/", "://x"])
    func malformedURLsAreRefused(_ url: String) async throws {
        let error = await httpError { try await transport.send(HTTPRequest(url: url)) }
        #expect(error?.code == .invalidURL)
    }

    @Test func redirectsAreNotFollowed() async throws {
        let server = try LoopbackHTTPServer { request in
            request.path == "/from"
                ? .respond(status: 302, headers: [HTTPHeader("Location", "/to")], body: "moved")
                : .respond(status: 200, body: "target")
        }
        defer { server.stop() }
        let response = try await transport.send(HTTPRequest(url: server.baseURL + "/from"))
        #expect(response.status == 302)
        #expect(response.header("location") == "/to")
        #expect(response.body == Array("moved".utf8))
        #expect(server.requests.map(\.path) == ["/from"])
    }

    @Test func refusedConnectionFailsQuickly() async throws {
        var error: HTTPError?
        let ms = await elapsedMs {
            error = await httpError { try await transport.send(HTTPRequest(url: "http://127.0.0.1:9/", timeoutMs: 60_000)) }
        }
        // A refusal ends the transfer at once: the error is the refusal, not the 60 s timeout.
        #expect(error?.code == .connectionFailed)
        #expect(ms < 30_000)
    }

    @Test(arguments: ["mid", "before", "reset"])
    func brokenConnectionsFail(_ how: String) async throws {
        let server = try LoopbackHTTPServer { _ in
            switch how {
            case "mid": .closeMidResponse(status: 200, body: Array(repeating: 0x42, count: 100), bodyBytesSent: 10)
            case "before": .close
            default: .reset
            }
        }
        defer { server.stop() }
        let error = await httpError { try await transport.send(HTTPRequest(url: server.baseURL + "/x", timeoutMs: 5000)) }
        #expect(error?.code == .connectionLost)
    }

    @Test func shutdownFailsInFlightAndLaterRequests() async throws {
        let transport = CurlTransport()
        let server = try LoopbackHTTPServer { _ in .hang }
        defer { server.stop() }
        let url = server.baseURL
        let inFlight = Task { await httpError { try await transport.send(HTTPRequest(url: url, timeoutMs: 30_000)) } }
        _ = await server.waitForRequests(count: 1)
        transport.shutdown()
        #expect(await inFlight.value?.code == .shutdown)
        let later = await httpError { try await transport.send(HTTPRequest(url: url)) }
        #expect(later?.code == .shutdown)
    }

    @Test func serverStopReleasesWaitersAndHangingConnections() async throws {
        let server = try LoopbackHTTPServer { _ in .hang }
        let url = server.baseURL
        let pending = Task { await httpError { try await CurlTransport.shared.send(HTTPRequest(url: url, timeoutMs: 30_000)) } }
        _ = await server.waitForRequests(count: 1)
        let waiter = Task { await server.waitForRequests(count: 5) }
        server.stop()
        #expect(await waiter.value.count == 1)
        #expect(await pending.value?.code == .connectionLost)
    }
}
