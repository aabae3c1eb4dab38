import Testing
import TrackerCore
import TrackerCoreTestKit

/// The test kit's event-driven waits are bounded (issue 14): a regression that never delivers
/// fails the test instead of hanging the suite. The bound is real time by nature; these tests
/// use a 20 ms one.
@Suite struct BoundedWaitTests {
    @Test func aSinkWaitThatNeverIsSatisfiedGivesUp() async {
        let sink = RecordingSink<Int>()
        #expect(await sink.waitForCalls(1, timeoutMs: 20) == false)
        _ = try? await sink.send(1)
        #expect(await sink.waitForCalls(1, timeoutMs: 20))
    }

    @Test func aServerWaitThatNeverIsSatisfiedGivesUp() async throws {
        let server = try LoopbackHTTPServer { _ in .respond(status: 200) }
        defer { server.stop() }
        let seen = await server.waitForRequests(count: 1, timeoutMs: 20)
        #expect(seen.isEmpty)
    }

    @Test func theEventWinsOverTheBound() async {
        let value = await boundedWait(timeoutMs: 60_000, what: "test", onTimeout: { 0 }) { once in
            once.resume(returning: 7)
            once.resume(returning: 8)  // ignored
        }
        #expect(value == 7)
    }
}
