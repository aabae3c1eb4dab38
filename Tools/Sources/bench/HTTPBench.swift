import CBenchCurl
import Dispatch
import Foundation
import Synchronization
import TrackerCore
import TrackerCoreTestKit

// HTTP transport benchmark cases: sequential small requests over one reused loopback
// connection, through CurlTransport and through a plain C curl_easy_perform loop.
// `http.loopback.reused` sends from a plain task (global pool); `http.loopback.reused.executor`
// sends from a task preferring the transport's executor (the loop thread). HTTP_BENCH_SPIN_US
// overrides the transport's idle spin.

private let httpRequestsPerRound = 5000
private let httpWarmup = 300
private let httpRounds = 3
private let httpPairedRounds = 21
private let httpPairedRequests = 500
private let httpBody = Array(#"{"run":"r-1","step":"welcome","n":1}"#.utf8)
private let httpAnswer = Array(#"{"outcome":"accepted"}"#.utf8)

func httpBenchCases() -> [BenchCase] {
    [
        BenchCase(name: "http.loopback.c_baseline", run: runCBaseline),
        BenchCase(name: "http.loopback.reused", run: { try runCurlTransport(onLoopThread: false) }),
        BenchCase(name: "http.loopback.reused.executor", run: { try runCurlTransport(onLoopThread: true) }),
    ]
}

private struct HTTPBenchFailure: Error, CustomStringConvertible {
    var description: String
}

private func makeServer() throws -> LoopbackHTTPServer {
    try LoopbackHTTPServer(recordRequests: false) { _ in .respond(status: 200, body: httpAnswer) }
}

/// Best-of-rounds rate of the plain C loop (requests per second); `count` requests per round.
private func cRound(_ url: String, _ count: Int) throws -> Double {
    let ns = httpBody.withUnsafeBufferPointer { body in
        body.withMemoryRebound(to: CChar.self) { chars in
            bench_curl_sequential(url, Int32(count), chars.baseAddress, Int(body.count))
        }
    }
    guard ns > 0 else { throw HTTPBenchFailure(description: "C loop failed: \(ns)") }
    return Double(count) / (Double(ns) / 1e9)
}

/// Rate of `count` sequential sends through `transport` from one task (requests per second);
/// with `onLoopThread` the sending loop runs under the transport's executor preference.
private func swiftRound(_ transport: CurlTransport, _ request: HTTPRequest, _ count: Int, onLoopThread: Bool) throws -> Double {
    let outcome = Mutex<Result<Double, any Error>?>(nil)
    let done = DispatchSemaphore(value: 0)
    @Sendable func sendAll() async {
        let start = MonotonicClock.nowNs()
        do {
            for _ in 0..<count {
                let response = try await transport.send(request)
                guard response.status == 200 else { throw HTTPBenchFailure(description: "status \(response.status)") }
            }
            let ns = Double(MonotonicClock.nowNs() - start)
            outcome.withLock { $0 = .success(Double(count) / (ns / 1e9)) }
        } catch {
            outcome.withLock { $0 = .failure(error) }
        }
    }
    Task {
        if onLoopThread {
            await withTaskExecutorPreference(transport.taskExecutor) { await sendAll() }
        } else {
            await sendAll()
        }
        done.signal()
    }
    done.wait()
    return try outcome.withLock { $0! }.get()
}

private func runCBaseline() throws -> [String: Double] {
    let server = try makeServer()
    defer { server.stop() }
    let url = server.baseURL + "/collect"
    _ = try cRound(url, httpWarmup)
    var rates: [Double] = []
    for _ in 0..<httpRounds { rates.append(try cRound(url, httpRequestsPerRound)) }
    return figures(rates, connections: 1, server: server)
}

private func runCurlTransport(onLoopThread: Bool) throws -> [String: Double] {
    let server = try makeServer()
    defer { server.stop() }
    var options = CurlTransport.Options()
    if let spin = ProcessInfo.processInfo.environment["HTTP_BENCH_SPIN_US"].flatMap({ Int($0) }) {
        options.idleSpinMicroseconds = spin
    }
    let transport = CurlTransport(options: options)
    defer { transport.shutdown() }
    let url = server.baseURL + "/collect"
    let request = HTTPRequest(url: url, method: "POST", headers: [HTTPHeader("content-type", "application/json")], body: httpBody)

    _ = try swiftRound(transport, request, httpWarmup, onLoopThread: onLoopThread)
    var rates: [Double] = []
    for _ in 0..<httpRounds { rates.append(try swiftRound(transport, request, httpRequestsPerRound, onLoopThread: onLoopThread)) }
    var result = figures(rates, connections: server.connectionCount, server: server)

    // The machine is shared, so compare like with like: alternate short C and Swift rounds
    // against the same server and take the median of the per-pair ratios.
    var ratios: [Double] = []
    for _ in 0..<httpPairedRounds {
        let c = try cRound(url, httpPairedRequests)
        let swift = try swiftRound(transport, request, httpPairedRequests, onLoopThread: onLoopThread)
        ratios.append(swift / c)
    }
    result["ratio_to_c_paired_median"] = Stats.percentile(ratios.sorted(), 0.5)
    return result
}

private func figures(_ rates: [Double], connections: Int, server: LoopbackHTTPServer) -> [String: Double] {
    let sorted = rates.sorted()
    return [
        "requests_per_s_best": sorted.last ?? 0,
        "requests_per_s_median": Stats.percentile(sorted, 0.5),
        "us_per_request_median": 1e6 / max(1, Stats.percentile(sorted, 0.5)),
        "connections": Double(connections),
    ]
}
