import Testing
import TrackerCore
import TrackerCoreTestKit

@testable import PaywallTracker

/// The paywall tracker's opt-out (issue 37 item 3).
@Suite struct PaywallOptOutTests {
    /// P80: opting out stops what was recorded before it (an unsent snapshot is settled, never
    /// sent), refuses later starts with one `opted-out` diagnostic per opt-out period, and
    /// opting in records and sends again.
    @Test func P80_optOutStopsUnsentSnapshotsAndRefusesStartsOnce() async throws {
        let storage = InMemoryKeyValueStorage()
        let h = PaywallFixture(storage: storage) { _, _ in .result(.transient) }
        let handle = try #require(h.tracker.start(INFO))
        await h.settle()
        let sentBefore = h.received.count
        #expect(sentBefore >= 1)
        h.tracker.optOut()
        handle.end(.dismissed)
        #expect(h.tracker.start(INFO) == nil)
        #expect(h.tracker.start(INFO) == nil)
        for _ in 0..<20 {
            await h.settle()
            await h.advance(5_000)
        }
        await h.tracker.idle()
        #expect(h.received.count == sentBefore, "sent after the opt-out: \(h.received.count - sentBefore)")
        #expect(h.log.codes.filter { $0 == "opted-out" }.count == 1)
        #expect(storage.snapshot[STORAGE_KEY] == #"{"optedOut":true}"#, "the switch alone is stored, nothing recorded before it")
        h.tracker.optIn()
        #expect(h.tracker.start(INFO) != nil)
        await h.settle()
        #expect(h.received.count == sentBefore + 1)
        await h.tracker.idle()
        // Opted in again: the switch is gone, the new (unsent) presentation is what is stored.
        #expect(storage.snapshot[STORAGE_KEY]?.contains("optedOut") == false)
    }

    /// P81: the switch is kept: the next launch finds it, forgets the presentations stored before
    /// the opt-out without sending them, and refuses starts.
    @Test func P81_theNextLaunchStaysOptedOutAndSendsNothingStoredBefore() async throws {
        let storage = InMemoryKeyValueStorage()
        let first = PaywallFixture(storage: storage) { _, _ in .result(.transient) }
        _ = try #require(first.tracker.start(INFO))
        await first.settle()
        await first.tracker.idle()
        #expect(storage.snapshot[STORAGE_KEY] != nil)
        first.tracker.optOut()
        await first.settle()
        await first.tracker.idle()
        first.tracker.dispose()

        let second = PaywallFixture(storage: storage)
        await second.settle()
        await second.tracker.idle()
        #expect(second.tracker.isOptedOut)
        #expect(second.received.isEmpty, "a presentation stored before the opt-out was sent")
        #expect(storage.snapshot[STORAGE_KEY] == #"{"optedOut":true}"#)
        #expect(second.tracker.start(INFO) == nil)
        #expect(second.log.codes == ["opted-out"])
    }
}
