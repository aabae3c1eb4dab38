import Testing
import TrackerCore
import TrackerCoreTestKit

@testable import PaywallTracker

/// Spec 17 F: delivery outcomes.
@Suite struct DeliveryTests {
    @Test func P32_rejected() async throws {
        let h = PaywallFixture { _, _ in .result(SinkResult(.rejected, reason: "schema")) }
        let handle = try #require(h.tracker.start(INFO) as? PaywallPresentation)
        await h.advance(120_000)
        #expect(h.received.count == 1)
        #expect(h.log.all == [Diagnostic(code: "rejected", message: "snapshot 1 rejected: schema", runId: handle.id, surface: .paywall)])
        h.expectConformant()
    }

    @Test func P33_backoff() async throws {
        let h = PaywallFixture { n, _ in n <= 3 ? .result(.transient) : .result(.accepted) }
        _ = try #require(h.tracker.start(INFO))
        await h.advance(120_000)
        #expect(h.sink.callTimes.value == [T0, T0 + 1000, T0 + 3000, T0 + 7000])
        #expect(Set(h.received.map { $0.wireBytes() }).count == 1)
        #expect(h.received.first?.seq == 1)
        h.expectConformant()
    }

    @Test func P34_backoffCeiling() async throws {
        let h = PaywallFixture { _, _ in .result(.transient) }
        _ = try #require(h.tracker.start(INFO))
        await h.advance(400_000)
        let times = h.sink.callTimes.value
        let gaps = zip(times.dropFirst(), times).map { ($0 - $1) / 1000 }
        #expect(Array(gaps.prefix(10)) == [1, 2, 4, 8, 16, 32, 60, 60, 60, 60])
        #expect(h.log.all.isEmpty)
        h.expectConformant()
    }

    @Test func P35_attemptTimeout() async throws {
        let h = PaywallFixture { n, _ in n == 1 ? .never : .result(.accepted) }
        _ = try #require(h.tracker.start(INFO))
        await h.advance(29_999)
        #expect(h.received.count == 1)
        await h.advance(1)  // the attempt times out: transient, reason timeout
        await h.advance(999)
        #expect(h.received.count == 1)
        await h.advance(1)  // the retry after the 1 s backoff
        #expect(h.sink.callTimes.value == [T0, T0 + 31_000])
        await h.advance(120_000)
        #expect(h.received.count == 2)
        h.expectConformant()
    }

    @Test func P36_ignoredSettles() async throws {
        let storage = InMemoryKeyValueStorage()
        let h = PaywallFixture(storage: storage) { _, _ in .result(.ignored) }
        _ = try #require(h.tracker.start(INFO))
        await h.settle()
        await h.tracker.idle()
        await h.advance(120_000)
        await h.tracker.idle()
        #expect(h.received.count == 1)
        #expect(h.log.all.isEmpty)
        #expect(storage.snapshot[STORAGE_KEY] == nil)
        h.expectConformant()
    }

    /// Spec 6.1: when a snapshot settles and nothing newer is pending, the queue is released once
    /// the presentation can send nothing more.
    @Test func P36_queueReleasedAfterEndedSettles() async throws {
        let h = PaywallFixture()
        let handle = try #require(h.tracker.start(INFO))
        handle.end(.dismissed)
        await h.settle()
        #expect(h.tracker.deliveryCount == 0)
        let open = try #require(h.tracker.start(INFO))
        await h.settle()
        #expect(h.tracker.deliveryCount == 1)  // in progress: kept for its next snapshot
        open.end(.cancelled)
        await h.settle()
        #expect(h.tracker.deliveryCount == 0)
        h.expectConformant()
    }
}
