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

/// P82: the opt-out check does not depend on the tracker's lifetime: a tracker the app released
/// still sends what it queued (its retry comes after the release).
@Suite struct PaywallOptOutLifetimeTests {
    @Test func P82_aReleasedTrackersQueuedSendStillGoes() async throws {
        let clock = ManualClock()
        let sink = RecordingSink<PaywallSnapshot>(clock: clock) { n, _ in n == 1 ? .result(.transient) : .result(.accepted) }
        var tracker: PaywallPresentationTracker? = PaywallPresentationTracker(
            configuration: PaywallTrackerConfiguration(
                sink: sink,
                context: .value(
                    RunContextInput(
                        appVersion: "1.0", build: "1", platform: .ios, osVersion: "18.1", locale: "en-US", timezone: "Europe/Paris")),
                clock: clock, scheduler: clock))
        _ = try #require(tracker?.start(INFO))
        await clock.settle()
        #expect(sink.received.count == 1)
        weak let released = tracker
        tracker = nil
        #expect(released == nil, "the test holds the tracker elsewhere")
        for _ in 0..<20 {
            await clock.settle()
            await clock.advance(byMs: 1_000)
        }
        #expect(sink.received.count == 2, "the retry after the release was not sent")
    }
}
