// The curl loop's idle wake-up logic (issue 19 item 3): with nothing in flight the loop sleeps
// in `curl_multi_poll` without a deadline and wakes only for work (a submitted transfer, a
// cancellation, an executor job, shutdown). No timed assertion: the tests look at the loop's
// state once it went to sleep.
//
// New scenarios: I1 idle loop sleeps without a deadline, I2 a request wakes it and it sleeps
// again without a deadline, I3 shutdown wakes an idle loop and ends it.
import Testing
import TrackerCoreTestKit

@testable import TrackerCore

@Suite struct CurlIdleWakeTests {
    /// Yields until `condition` holds (bounded, so a broken loop fails instead of hanging).
    private func eventually(_ condition: () -> Bool) async -> Bool {
        for _ in 0..<2_000_000 {
            if condition() { return true }
            await Task.yield()
        }
        return condition()
    }

    private func send(_ engine: CurlEngine, _ request: HTTPRequest) async throws -> HTTPResponse {
        let transfer = try engine.prepare(request)
        return try await withUnsafeThrowingContinuation { (c: UnsafeContinuation<HTTPResponse, any Error>) in
            transfer.continuation = c
            engine.submit(transfer)
        }
    }

    @Test func pollTimeoutIsUnboundedOnlyWithNothingInFlight() {
        #expect(CurlEngine.pollTimeoutMs(activeTransfers: 0) == Int32.max)
        #expect(CurlEngine.pollTimeoutMs(activeTransfers: 1) == 1000)
        #expect(CurlEngine.pollTimeoutMs(activeTransfers: 50) == 1000)
    }

    @Test func I1_idleLoopSleepsWithoutDeadline() async {
        let engine = CurlEngine(options: .init())
        defer { engine.shutdown() }
        #expect(await eventually { engine.loopState.sleeping })
        #expect(engine.loopState.timeoutMs == Int32.max)
    }

    @Test func I2_requestWakesTheIdleLoopWhichSleepsAgainWithoutDeadline() async throws {
        let server = try LoopbackHTTPServer { request in .respond(status: 200, body: request.path) }
        defer { server.stop() }
        let engine = CurlEngine(options: .init(idleSpinMicroseconds: 0))
        defer { engine.shutdown() }
        for i in 0..<3 {
            #expect(await eventually { engine.loopState.sleeping })
            #expect(engine.loopState.timeoutMs == Int32.max)
            // Only the wake-up can get this request on the wire: the loop has no deadline.
            let response = try await send(engine, HTTPRequest(url: server.baseURL + "/w\(i)"))
            #expect(response.status == 200)
            #expect(response.body == Array("/w\(i)".utf8))
        }
        #expect(await eventually { engine.loopState.sleeping })
        #expect(engine.loopState.timeoutMs == Int32.max)
    }

    @Test func I3_shutdownWakesAndEndsAnIdleLoop() async {
        let engine = CurlEngine(options: .init())
        #expect(await eventually { engine.loopState.sleeping })
        engine.shutdown()
        #expect(await eventually { engine.loopState.finished })
    }
}
