import Testing
import TrackerCore
import TrackerCoreTestKit

@testable import PaywallTracker

/// The opt-in lifecycle binding (issue 18), driven by Core's `AppLifecycleMonitor` over a fake
/// OS side and a main-thread hop.
///
/// New scenarios:
/// - LC17: entering the background sends an unsent snapshot now (skipping its backoff) inside a background task, ended once settled.
/// - LC18: a send still failing keeps its snapshot; the background task ends at the budget.
/// - LC19: the manual call sends at once without a background task; unbind stops the binding.
@Suite struct PaywallLifecycleBindingTests {
    @Test func LC17_backgroundSendsUnsentSnapshotsInsideABackgroundTask() async throws {
        let h = PaywallFixture { n, _ in n == 1 ? .result(.transient) : .result(.accepted) }
        let system = FakeLifecycleSystem()
        h.tracker.bindToAppLifecycle(monitor: AppLifecycleMonitor(system: system, hop: HeldMainHop()))
        _ = try #require(h.tracker.start(INFO))
        await h.settle()
        #expect(h.received.count == 1)  // transient: the retry waits 1 s
        system.post(.didEnterBackground)
        await h.settle()
        #expect(h.received.count == 2)
        #expect(h.sink.callTimes.value == [T0, T0])
        #expect(system.begunTasks == ["paywall.send"])
        #expect(system.runningTasks == 0)
    }

    @Test func LC18_aFailingSendKeepsItsSnapshotAndTheTaskEndsAtTheBudget() async throws {
        let h = PaywallFixture { n, _ in n == 1 ? .result(.transient) : .never }
        let system = FakeLifecycleSystem()
        h.tracker.bindToAppLifecycle(monitor: AppLifecycleMonitor(system: system, hop: HeldMainHop()), backgroundBudgetSeconds: 2)
        _ = try #require(h.tracker.start(INFO))
        await h.settle()
        system.post(.didEnterBackground)
        await h.advance(1999)
        #expect(system.runningTasks == 1)
        await h.advance(1)
        #expect(system.runningTasks == 0)
        #expect(h.tracker.liveDeliveries.first?.pending != nil)  // nothing lost
    }

    @Test func LC19_manualCallAndUnbind() async throws {
        let h = PaywallFixture { n, _ in n == 1 ? .result(.transient) : .result(.accepted) }
        let system = FakeLifecycleSystem()
        let binding = h.tracker.bindToAppLifecycle(monitor: AppLifecycleMonitor(system: system, hop: HeldMainHop()))
        binding.unbind()
        _ = try #require(h.tracker.start(INFO))
        await h.settle()
        system.post(.didEnterBackground)
        await h.settle()
        #expect(h.received.count == 1)
        h.tracker.appDidEnterBackground()
        await h.settle()
        #expect(h.received.count == 2)
        #expect(system.begunTasks.isEmpty)
        #expect(h.log.all.isEmpty)
    }
}
