import Foundation
import Testing
import TrackerCore
import TrackerCoreTestKit

@testable import ScoreTracker

/// Through Core's libcurl transport to the loopback server: failures, a token provider that hangs
/// past its bound, a 413, then delivery.
@Suite struct EndToEndTests {
    @Test func endToEndThroughCurlToLoopback() async throws {
        let answers = Counter()
        let server = try LoopbackHTTPServer { req in
            if req.path.hasSuffix("/api/identity/link-anonymous") { return .respond(status: 204, body: "") }
            let n = answers.bump()
            switch n {
            case 1: return .respond(status: 500, body: "boom")
            case 2: return .respond(status: 503, body: "unavailable")
            default:
                let events = (try? WireJSON.decode(req.body))?["events"]?.arrayValue?.count ?? 0
                return events > 2 ? .respond(status: 413, body: "too large") : .respond(status: 200, body: "{}")
            }
        }
        defer { server.stop() }
        let h = Harness()
        let c = ScoreClient(
            configuration: ScoreConfiguration(
                publishableKey: "pk_test_1", siteId: "urc-ios", endpoint: server.baseURL + "/", appVersion: "4.2.0",
                os: "iOS 18.1", pii: PII4, initialConsent: .all, store: h.store, transport: CurlTransport(),
                clock: h.clock, scheduler: h.clock, idSource: h.ids, onDiagnostic: { _ in }))
        c.setToken("tok-e2e")
        let p = Provider(h.clock) { _ in .never }
        c.setTokenProvider { try await p.call() }
        c.identify(userId: "u1", traits: ["email": "fan@example.com"])
        for n in 1...4 { c.track("e2e", properties: ["n": n]) }

        // 1: the provider hangs past its 5 s bound; the request carries the last known token; 500.
        // The link request still follows it (a link never depends on the batches).
        var f = await h.startFlush(c)
        await h.advance(5_000)
        if case .success? = await bounded(f, "the flush") { Issue.record("a 500 must fail the flush") }
        #expect(c.inspect().queue.depth == 5)
        // 2: a 503.
        f = await h.startFlush(c)
        await h.advance(5_000)
        if case .success? = await bounded(f, "the flush") { Issue.record("a 503 must fail the flush") }
        #expect(c.inspect().lastFlush.consecutiveFailures == 2)
        // 3: 413 for more than 2 events: 5 → 2, 2, 1, delivered; then the link.
        f = await h.startFlush(c)
        await h.advance(5_000)
        if case .failure(let e)? = await bounded(f, "the flush") { Issue.record("unexpected failure \(e)") }
        await h.settle()
        let i = c.inspect()
        #expect(i.queue.depth == 0)
        #expect(i.lastFlush.ok == true && i.lastFlush.sent == 5 && i.lastFlush.consecutiveFailures == 0)
        #expect(p.calls == 1)
        let events = server.requests.filter { $0.path == "/api/events" }
        #expect(events.map { (try? WireJSON.decode($0.body))?["events"]?.arrayValue?.count ?? -1 } == [5, 5, 5, 2, 2, 1])
        #expect(events.allSatisfy { $0.header("Authorization") == "Bearer tok-e2e" && $0.header("X-Publishable-Key") == "pk_test_1" })
        #expect(!events.contains { $0.bodyText.contains("fan@example.com") })
        let link = server.requests.filter { $0.path == "/api/identity/link-anonymous" }
        #expect(link.map(\.bodyText) == [#"{"anonymousId":"\#(A(1))","userId":"u1"}"#])
        #expect(i.identity.link.state == "linked")
    }
}
