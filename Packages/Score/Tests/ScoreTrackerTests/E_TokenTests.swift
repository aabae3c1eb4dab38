import Foundation
import Testing
import TrackerCore
import TrackerCoreTestKit

@testable import ScoreTracker

/// A scripted token provider: each call gets an answer by its index.
final class Provider: Sendable {
    enum Reply: Sendable {
        case token(String?)
        case after(Int64, String?)
        case never, fail
    }
    let clock: ManualClock
    let replies: @Sendable (Int) -> Reply
    private let n = Locked(0)
    init(_ clock: ManualClock, _ replies: @escaping @Sendable (Int) -> Reply) {
        self.clock = clock
        self.replies = replies
    }
    var calls: Int { n.withLock { $0 } }
    struct Failure: Error {}
    func call() async throws -> String? {
        let i = n.withLock {
            $0 += 1
            return $0
        }
        switch replies(i) {
        case .token(let t): return t
        case .after(let ms, let t):
            await clockSleep(clock, ms)
            return t
        case .never:
            await withCheckedContinuation { (_: CheckedContinuation<Void, Never>) in }
            return nil
        case .fail: throw Failure()
        }
    }
}

@Suite struct TokenScenarios {
    @Test func SC39_consultedBeforeEachFlush() async {
        let h = Harness()
        let c = h.client(granted: true)
        let p = Provider(h.clock) { .token("tok-\($0)") }
        c.setTokenProvider { try await p.call() }
        c.pv()
        await h.flush(c)
        await h.flush(c)
        c.pv()
        await h.flush(c)
        #expect(h.tx.eventRequests.map { $0.header("Authorization") } == ["Bearer tok-1", "Bearer tok-2"])
        #expect(p.calls == 2)
    }

    @Test func SC40_boundedTo5s() async {
        let h = Harness()
        let c = h.client(granted: true)
        c.setToken("tok-old")
        let p = Provider(h.clock) { _ in .never }
        c.setTokenProvider { try await p.call() }
        c.pv()
        let f = await h.startFlush(c)
        await h.advance(4_999)
        #expect(h.tx.records.isEmpty)
        await h.advance(1)
        _ = await bounded(f, "the flush")
        #expect(h.tx.eventRequests.count == 1)
        #expect(h.tx.eventRequests[0].header("Authorization") == "Bearer tok-old")
        #expect(h.tx.eventRequests[0].bodyText.hasPrefix(#"{"sentAt":"2026-03-01T12:00:05.000Z""#))
        #expect(c.inspect().lastFlush.ok == true)
    }

    @Test func SC41_lateTokenUsedNextTime() async {
        let h = Harness()
        let c = h.client(granted: true)
        let p = Provider(h.clock) { $0 == 1 ? .after(7_000, "tok-late") : .fail }
        c.setTokenProvider { try await p.call() }
        c.pv()
        let f = await h.startFlush(c)
        await h.advance(5_000)
        _ = await bounded(f, "the flush")
        #expect(h.tx.eventRequests.count == 1)
        #expect(h.tx.eventRequests[0].at == T0 + 5_000)
        #expect(h.tx.eventRequests[0].header("Authorization") == nil)
        await h.at(T0 + 6_000)
        #expect(c.inspect().identity.hasToken == false)
        await h.at(T0 + 7_000)
        #expect(c.inspect().identity.hasToken == true)
        await h.at(T0 + 10_000)
        c.pv()
        await h.flush(c)
        #expect(h.tx.eventRequests.count == 2)
        #expect(h.tx.eventRequests[1].header("Authorization") == "Bearer tok-late")
    }

    @Test func SC42_singleFlightAcrossOverlappingFlushes() async {
        let h = Harness()
        let c = h.client(granted: true)
        let p = Provider(h.clock) { $0 == 1 ? .after(7_000, "tok-late") : .token("tok-new") }
        c.setTokenProvider { try await p.call() }
        c.pv()
        let f1 = await h.startFlush(c)
        await h.at(T0 + 6_000)
        _ = await bounded(f1, "the first flush")
        #expect(h.tx.eventRequests.count == 1)
        #expect(h.tx.eventRequests[0].at == T0 + 5_000)
        #expect(h.tx.eventRequests[0].header("Authorization") == nil)
        c.pv()
        let f2 = await h.startFlush(c)
        await h.clock.settle()
        await h.at(T0 + 7_000)
        _ = await bounded(f2, "the second flush")
        #expect(p.calls == 1)
        #expect(h.tx.eventRequests.count == 2)
        #expect(h.tx.eventRequests[1].at == T0 + 7_000)
        #expect(h.tx.eventRequests[1].header("Authorization") == "Bearer tok-late")
        await h.at(T0 + 20_000)
        c.pv()
        await h.flush(c)
        #expect(p.calls == 2)
        #expect(h.tx.eventRequests[2].header("Authorization") == "Bearer tok-new")
    }

    @Test func SC43_throwAndNilFallBack() async {
        do {
            let h = Harness()
            let c = h.client(granted: true)
            c.setToken("tok-A")
            c.setTokenProvider { throw Provider.Failure() }
            c.pv()
            await h.flush(c)
            #expect(h.tx.eventRequests[0].header("Authorization") == "Bearer tok-A")
            #expect(c.inspect().queue.depth == 0)
        }
        do {
            let h = Harness()
            let c = h.client(granted: true)
            c.setTokenProvider { throw Provider.Failure() }
            c.pv()
            await h.flush(c)
            #expect(h.tx.eventRequests[0].header("Authorization") == nil)
            #expect(c.inspect().queue.depth == 0)
        }
        do {
            let h = Harness()
            let c = h.client(granted: true)
            let p = Provider(h.clock) { $0 == 1 ? .token("tok-1") : .token(nil) }
            c.setTokenProvider { try await p.call() }
            c.pv()
            await h.flush(c)
            c.pv()
            await h.flush(c)
            #expect(h.tx.eventRequests.map { $0.header("Authorization") } == ["Bearer tok-1", "Bearer tok-1"])
        }
    }

    @Test func SC44_synchronousClosure() async {
        let h = Harness()
        let c = h.client(granted: true)
        let cached = "tok-sync"
        c.setTokenProvider { cached }
        c.pv()
        await h.flush(c)
        #expect(h.tx.eventRequests[0].header("Authorization") == "Bearer tok-sync")
    }

    @Test func SC45_setTokenAlone() async {
        let h = Harness()
        let c = h.client(granted: true)
        c.setToken("tok-S")
        #expect(c.inspect().identity.hasToken)
        c.pv()
        await h.flush(c)
        c.setToken(nil)
        #expect(!c.inspect().identity.hasToken)
        c.pv()
        await h.flush(c)
        #expect(h.tx.eventRequests.map { $0.header("Authorization") } == ["Bearer tok-S", nil])
    }

    @Test func SC46_tokenNeverReachesInspect() async {
        let h = Harness()
        let c = h.client(granted: true)
        c.setTokenProvider { "secret-tok-123" }
        c.pv()
        await h.flush(c)
        let json = c.inspectJSON()
        #expect(json.contains(#""hasToken":true"#))
        #expect(!json.contains("secret-tok-123"))
        #expect(!String(describing: c.inspect()).contains("secret-tok-123"))
        #expect(!h.diagnostics.all.contains { $0.message.contains("secret-tok-123") })
    }
}
