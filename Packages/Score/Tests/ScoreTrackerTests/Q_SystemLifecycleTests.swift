import Foundation
import Testing
import TrackerCore
import TrackerCoreTestKit

@testable import ScoreTracker

/// `bindToAppLifecycle()` as it runs on UIKit, driven on Linux: the client bound to
/// `MonitoredLifecycleSource` over Core's `AppLifecycleMonitor`, a fake OS side and a main-thread
/// hop the test holds (a held hop is a busy or blocked main thread).
///
/// New scenarios (issue 18):
/// - LC9: binding from any thread never waits for the main thread; the real state follows as an event.
/// - LC10: a background transition and the `track()` calls during it finish while the main thread is held.
/// - LC11: the OS expiration of the background task abandons the flush at once and loses nothing.
/// - LC12: regression: `bindToAppLifecycle(source:)` reads `currentState` outside the client's lock,
///   so a source that waits for the main thread cannot block `track()`.
/// - LC20: `NWPathMonitor` updates flush only when the network comes back; protected-data
///   notifications do not flush; unbinding stops the OS notifications.
@Suite struct SystemLifecycleScenarios {
    /// Runs `body` on its own thread and waits for it at most `seconds` (a watchdog, so that a
    /// regression fails instead of hanging the suite). Returns whether it finished.
    func finishes(within seconds: Double, _ body: @escaping @Sendable () -> Void) -> Bool {
        let done = DispatchSemaphore(value: 0)
        Thread {
            body()
            done.signal()
        }.start()
        return done.wait(timeout: .now() + seconds) == .success
    }

    @Test func LC9_bindingNeverWaitsForTheMainThread() async {
        let h = Harness()
        let c = h.client(granted: true)
        let system = FakeLifecycleSystem(appState: .foreground)
        let hop = HeldMainHop(held: true)
        c.pv()
        c.bindToAppLifecycle(source: MonitoredLifecycleSource(monitor: AppLifecycleMonitor(system: system, hop: hop)))
        await h.settle()
        #expect(system.stateReads == 0)
        #expect(h.tx.eventRequests.isEmpty)  // not known to be in the foreground yet
        hop.release()
        await h.settle()
        #expect(system.stateReads == 1)
        #expect(h.tx.eventRequests.map(\.ids) == [[E(1)]])
        #expect(system.isObserving)
    }

    @Test func LC10_trackDuringABackgroundTransitionNeverWaitsOnTheMainThread() async {
        let h = Harness()
        let c = h.client(granted: true)
        let system = FakeLifecycleSystem(appState: .foreground)
        let hop = HeldMainHop()
        c.bindToAppLifecycle(source: MonitoredLifecycleSource(monitor: AppLifecycleMonitor(system: system, hop: hop)))
        await h.settle()
        h.tx.answerAll(.hang)
        c.pv()
        hop.hold()  // the main thread is busy from here on
        let ok = finishes(within: 10) {
            system.post(.didEnterBackground)  // begins the background task and the flush
            c.pv()
            c.pv()
        }
        #expect(ok)
        #expect(c.inspect().queue.depth == 3)
        #expect(system.begunTasks.isEmpty)  // the OS call waits for the main thread, nobody waits for it
        await h.settle()
        h.tx.answerAll(.status(200))
        h.tx.releaseHung()
        await h.settle()
        hop.release()
        await h.settle()
        // The flush ended (and ended its task) before the main thread ever began it: never begun.
        #expect(system.runningTasks == 0)
        #expect(c.inspect().queue.depth < 3)
    }

    @Test func LC11_expirationAbandonsTheBackgroundFlushLosingNothing() async {
        let h = Harness()
        let c = h.client(granted: true)
        let system = FakeLifecycleSystem(appState: .foreground)
        c.bindToAppLifecycle(source: MonitoredLifecycleSource(monitor: AppLifecycleMonitor(system: system, hop: HeldMainHop())))
        await h.settle()
        h.tx.answerAll(.hang)
        await h.at(T0 + SEC)
        c.pv()
        await h.at(T0 + 2 * SEC)
        system.post(.didEnterBackground)
        await h.settle()
        #expect(system.begunTasks == ["score.flush"])
        #expect(system.runningTasks == 1)
        await h.at(T0 + 3 * SEC)
        #expect(system.expireBackgroundTasks() == 1)
        await h.settle()
        #expect(system.runningTasks == 0)
        #expect(system.endedTasks.count == 1)
        #expect(c.inspect().lastFlush.ok == false)
        #expect(c.inspect().queue.depth == 1)
        h.tx.releaseHung(status: 503)  // the abandoned request fails late: its event stays queued
        await h.settle()
        #expect(c.inspect().queue.depth == 1)
        h.tx.answerAll(.status(200))
        await h.at(T0 + 60 * SEC)
        system.post(.didBecomeActive)
        await h.settle()
        #expect(h.tx.eventRequests.last?.ids == [E(1)])
        #expect(c.inspect().queue.depth == 0)
        #expect(system.endedTasks.count == 1)  // the budget timer did not end it a second time
    }

    /// A source whose `currentState` waits for a main thread the test holds, as the old UIKit
    /// adapter's `DispatchQueue.main.sync` did.
    final class MainWaitingSource: AppLifecycleSource, @unchecked Sendable {
        let entered = DispatchSemaphore(value: 0)
        let mainFree = DispatchSemaphore(value: 0)
        let reads = Locked(0)
        var currentState: AppLifecycleState {
            // Only the first read waits (the old code read the state twice).
            if reads.withLock({ r -> Bool in
                r += 1
                return r == 1
            }) {
                entered.signal()
                mainFree.wait()
            }
            return .background
        }
        func startObserving(_ handler: @escaping @Sendable (AppLifecycleEvent) -> Void) {}
        func stopObserving() {}
        func beginBackgroundTask() -> BackgroundTaskID { BackgroundTaskID(rawValue: 1) }
        func endBackgroundTask(_ id: BackgroundTaskID) {}
    }

    @Test func LC12_currentStateIsReadOutsideTheLock() async {
        let h = Harness()
        let c = h.client(granted: true)
        let source = MainWaitingSource()
        let bound = DispatchSemaphore(value: 0)
        Thread {
            c.bindToAppLifecycle(source: source)
            bound.signal()
        }.start()
        source.entered.wait()  // the binding thread now waits for the "main thread"
        let ok = finishes(within: 10) { c.pv() }  // the main thread records an event
        #expect(ok)
        source.mainFree.signal()
        bound.wait()
        if !ok { _ = finishes(within: 10) {} }
        await h.settle()
        #expect(c.inspect().queue.depth == 1)
    }

    @Test func LC20_networkComebackFlushesAndUnbindStops() async {
        let h = Harness()
        let c = h.client(granted: true)
        let system = FakeLifecycleSystem(appState: .background)
        let binding = c.bindToAppLifecycle(
            source: MonitoredLifecycleSource(monitor: AppLifecycleMonitor(system: system, hop: HeldMainHop())))
        await h.settle()
        c.pv()
        system.post(.networkPath(satisfied: true))  // the first path: not a comeback
        system.post(.protectedDataAvailable)
        await h.settle()
        #expect(h.tx.eventRequests.isEmpty)
        system.post(.networkPath(satisfied: false))
        system.post(.networkPath(satisfied: true))
        await h.settle()
        #expect(h.tx.eventRequests.map(\.ids) == [[E(1)]])
        binding.unbind()
        #expect(!system.isObserving)
    }
}
