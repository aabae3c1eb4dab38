import Testing
import TrackerCore
import TrackerCoreTestKit

/// The shared app-lifecycle state machine (`AppLifecycleMonitor`), driven by a fake OS side and a
/// main-thread hop the test holds.
///
/// New scenarios (issue 18):
/// - LC1: the initial state is read on the main thread, reported only when it differs from what the caller assumed.
/// - LC2: nothing waits for a held main thread; the OS calls run once it is released.
/// - LC3: a background task ended before the main thread began it is never begun; ended after, it is ended once.
/// - LC4: the OS expiration runs the caller's handler, then ends the task at once; a later end is a no-op.
/// - LC5: network updates become `networkAvailable` only on unsatisfied → satisfied.
/// - LC6: `runInBackgroundTask` ends its task at the first of done, budget, or expiration.
/// - LC7: protected-data notifications are reported; stop() ends the observation.
/// - LC8: the system log level of a diagnostic code.
///
/// New scenario (issue 27, item 4):
/// - LC22: every call to the OS side (UIKit in the app) happens inside the main-thread hop, on
///   every path, also the end of a task whose expiration arrives from another thread.
@Suite struct AppLifecycleTests {
    final class Changes: @unchecked Sendable {
        let list = Locked<[AppLifecycleChange]>([])
        var all: [AppLifecycleChange] { list.value }
        func add(_ c: AppLifecycleChange) { list.withLock { $0.append(c) } }
    }

    @Test func LC1_initialStateReadOnMainAndReportedOnlyWhenDifferent() {
        let system = FakeLifecycleSystem(appState: .foreground)
        let hop = HeldMainHop(held: true)
        let monitor = AppLifecycleMonitor(system: system, hop: hop)
        let changes = Changes()
        monitor.start(assuming: .background) { changes.add($0) }
        #expect(monitor.knownState == nil)
        #expect(system.stateReads == 0)
        hop.release()
        #expect(system.stateReads == 1)
        #expect(monitor.knownState == .foreground)
        #expect(changes.all == [.foreground])

        let system2 = FakeLifecycleSystem(appState: .foreground)
        let monitor2 = AppLifecycleMonitor(system: system2, hop: HeldMainHop())
        let changes2 = Changes()
        monitor2.start(assuming: .foreground) { changes2.add($0) }
        #expect(changes2.all.isEmpty)
        system2.post(.didEnterBackground)
        system2.post(.didBecomeActive)
        #expect(changes2.all == [.background, .foreground])
        #expect(monitor2.knownState == .foreground)
    }

    @Test func LC2_nothingWaitsForAHeldMainThread() {
        let system = FakeLifecycleSystem()
        let hop = HeldMainHop(held: true)
        let monitor = AppLifecycleMonitor(system: system, hop: hop)
        monitor.start(assuming: nil) { _ in }
        let task = monitor.beginBackgroundTask(name: "t")
        // Every call above returned with the main thread held; the OS has seen nothing yet.
        #expect(system.begunTasks.isEmpty)
        #expect(hop.pending == 2)
        #expect(monitor.openBackgroundTasks == 1)
        hop.release()
        #expect(system.begunTasks == ["t"])
        #expect(system.runningTasks == 1)
        hop.hold()
        monitor.endBackgroundTask(task)
        #expect(system.runningTasks == 1)
        hop.release()
        #expect(system.runningTasks == 0)
        #expect(monitor.openBackgroundTasks == 0)
    }

    @Test func LC3_endedBeforeBegunIsNeverBegunAndEndIsIdempotent() {
        let system = FakeLifecycleSystem()
        let hop = HeldMainHop(held: true)
        let monitor = AppLifecycleMonitor(system: system, hop: hop)
        let task = monitor.beginBackgroundTask(name: "early")
        monitor.endBackgroundTask(task)
        hop.release()
        #expect(system.begunTasks.isEmpty)
        #expect(monitor.openBackgroundTasks == 0)

        let t2 = monitor.beginBackgroundTask(name: "late")
        monitor.endBackgroundTask(t2)
        monitor.endBackgroundTask(t2)
        #expect(system.begunTasks == ["late"])
        #expect(system.endedTasks.count == 1)

        system.refuseBackgroundTasks(true)
        let t3 = monitor.beginBackgroundTask(name: "refused")
        #expect(monitor.openBackgroundTasks == 0)
        monitor.endBackgroundTask(t3)
        #expect(system.endedTasks.count == 1)
    }

    @Test func LC4_expirationRunsTheHandlerThenEndsTheTask() {
        let system = FakeLifecycleSystem()
        let monitor = AppLifecycleMonitor(system: system, hop: HeldMainHop())
        let order = Locked<[String]>([])
        let task = monitor.beginBackgroundTask(name: "flush") {
            order.withLock { $0.append("handler, running \(system.runningTasks)") }
        }
        #expect(system.expireBackgroundTasks() == 1)
        #expect(order.value == ["handler, running 1"])
        #expect(system.runningTasks == 0)
        #expect(system.endedTasks.count == 1)
        monitor.endBackgroundTask(task)
        #expect(system.endedTasks.count == 1)
    }

    @Test func LC5_networkComesBackOnlyAfterBeingUnavailable() {
        var filter = NetworkComeback()
        #expect(filter.update(satisfied: true) == false)
        #expect(filter.update(satisfied: true) == false)
        #expect(filter.update(satisfied: false) == false)
        #expect(filter.update(satisfied: true) == true)

        let system = FakeLifecycleSystem()
        let monitor = AppLifecycleMonitor(system: system, hop: HeldMainHop())
        let changes = Changes()
        monitor.start(assuming: .foreground) { changes.add($0) }
        system.post(.networkPath(satisfied: false))
        system.post(.networkPath(satisfied: false))
        system.post(.networkPath(satisfied: true))
        #expect(changes.all == [.networkAvailable])
    }

    @Test func LC6_boundedBackgroundWork() async {
        let clock = ManualClock()
        let system = FakeLifecycleSystem()
        let monitor = AppLifecycleMonitor(system: system, hop: HeldMainHop())
        let done = Locked<(@Sendable () -> Void)?>(nil)

        // 1. done first
        runInBackgroundTask(monitor: monitor, name: "a", budgetMs: 5_000, scheduler: clock) { d in done.withLock { $0 = d } }
        #expect(system.runningTasks == 1)
        done.value?()
        #expect(system.runningTasks == 0)
        await clock.advance(byMs: 10_000)
        #expect(system.endedTasks.count == 1)

        // 2. the budget first
        runInBackgroundTask(monitor: monitor, name: "b", budgetMs: 5_000, scheduler: clock) { _ in }
        await clock.advance(byMs: 4_999)
        #expect(system.runningTasks == 1)
        await clock.advance(byMs: 1)
        #expect(system.runningTasks == 0)

        // 3. the OS expiration first
        runInBackgroundTask(monitor: monitor, name: "c", budgetMs: 5_000, scheduler: clock) { d in done.withLock { $0 = d } }
        system.expireBackgroundTasks()
        #expect(system.runningTasks == 0)
        let ended = system.endedTasks.count
        done.value?()
        await clock.advance(byMs: 10_000)
        #expect(system.endedTasks.count == ended)
    }

    @Test func LC7_protectedDataAndStop() {
        let system = FakeLifecycleSystem()
        let monitor = AppLifecycleMonitor(system: system, hop: HeldMainHop())
        let changes = Changes()
        monitor.start(assuming: .foreground) { changes.add($0) }
        #expect(system.isObserving)
        system.post(.protectedDataAvailable)
        monitor.stop()
        #expect(!system.isObserving)
        monitor.received(.didEnterBackground)
        #expect(changes.all == [.protectedDataAvailable])
    }

    @Test func LC22_everyOSCallRunsInsideTheMainThreadHop() {
        let hop = HeldMainHop()
        let system = FakeLifecycleSystem(mainThread: hop)
        let monitor = AppLifecycleMonitor(system: system, hop: hop)
        monitor.start(assuming: .foreground) { _ in }
        // Begun and ended while the main thread is busy, then released.
        hop.hold()
        let queued = monitor.beginBackgroundTask(name: "queued")
        hop.release()
        hop.hold()
        monitor.endBackgroundTask(queued)
        hop.release()
        // Begun, then expired by a call from outside the main thread (the test's own thread).
        _ = monitor.beginBackgroundTask(name: "expiring")
        #expect(system.runningTasks == 1)
        #expect(system.expireBackgroundTasks() == 1)
        #expect(system.runningTasks == 0)
        // Refused by the OS.
        system.refuseBackgroundTasks(true)
        _ = monitor.beginBackgroundTask(name: "refused")
        system.refuseBackgroundTasks(false)
        monitor.stop()
        #expect(system.begunTasks == ["queued", "expiring"])
        #expect(system.endedTasks.count == 2)
        #expect(system.stateReads == 1)
        #expect(system.callsOffMainThread == [])
    }

    @Test func LC23_appKitNotificationsMapToWhatTheyMeanOnAMac() {
        // Resigning active (every switch to another app) is not the background: the app stays
        // visible and is never suspended; hiding it and quitting are.
        let table = Dictionary(
            uniqueKeysWithValues: AppKitLifecycleMapping.AppKitNotification.allCases.map { ($0, AppKitLifecycleMapping.event(for: $0)) })
        #expect(table[.didResignActive] == .some(nil))
        #expect(table[.didBecomeActive] == .some(nil))
        #expect(table[.didUnhide] == .didBecomeActive)
        #expect(table[.didHide] == .didEnterBackground)
        #expect(table[.willTerminate] == .didEnterBackground)
        #expect(table.count == 5)
        #expect(AppKitLifecycleMapping.state(isHidden: false) == .foreground)
        #expect(AppKitLifecycleMapping.state(isHidden: true) == .background)
        // Through the monitor: an app switch and back changes nothing; hiding is the background and
        // unhiding the foreground.
        let system = FakeLifecycleSystem()
        let monitor = AppLifecycleMonitor(system: system, hop: HeldMainHop())
        let changes = Changes()
        monitor.start(assuming: .foreground) { changes.add($0) }
        for notification in [AppKitLifecycleMapping.AppKitNotification.didResignActive, .didBecomeActive, .didHide, .didUnhide] {
            if let event = AppKitLifecycleMapping.event(for: notification) { system.post(event) }
        }
        monitor.stop()
        #expect(changes.all == [.background, .foreground])
    }

    @Test func LC8_systemLogLevels() {
        #expect(SystemLogLevel.isError(.storage))
        #expect(SystemLogLevel.isError("identity-unavailable"))
        #expect(!SystemLogLevel.isError("invalid-start"))
        // Elsewhere than Apple platforms the handler is the standard-error printer: it must not crash.
        Diagnostics.systemLog(subsystem: "com.rocapine.test", prefix: "test")(Diagnostic(code: "lc8", message: "ok"))
    }
}
