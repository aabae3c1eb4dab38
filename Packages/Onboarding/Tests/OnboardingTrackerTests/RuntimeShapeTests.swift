import Dispatch
import Testing
import TrackerCore
import TrackerCoreTestKit

@testable import OnboardingTracker

// The tracker runtime: one state under one lock, every effect performed after it (issue 36 item 4).
//
// New scenarios:
// S238 no effect runs under the tracker's lock: the debounce timer's scheduling and cancelling,
//      the writes and sends of a timer's firing, the storage's writes, the sink's sends and the
//      diagnostics each call back into the tracker from inside the effect; none finds the tracker's
//      lock held (each probe waits, bounded, on another thread).

/// Calls back into a tracker from inside an effect: reads `isOptedOut` (which takes the tracker's
/// lock) on another thread and waits for it, bounded. A probe that runs out of its bound found the
/// lock held by the effect's caller (on this thread, the same call would deadlock).
final class LockProbe: Sendable {
    private let tracker = Locked<OnboardingRunTracker?>(nil)
    private let found = Locked<(probes: [String], held: [String])>(([], []))

    func attach(_ t: OnboardingRunTracker) { tracker.withLock { $0 = t } }

    func probe(_ what: String) {
        guard let t = tracker.value else { return }
        let done = DispatchSemaphore(value: 0)
        DispatchQueue.global().async {
            _ = t.isOptedOut
            done.signal()
        }
        let answered = done.wait(timeout: .now() + .seconds(2)) == .success
        found.withLock {
            $0.probes.append(what)
            if !answered { $0.held.append(what) }
        }
    }

    var probes: [String] { found.value.probes }
    var held: [String] { found.value.held }
}

/// The manual clock as a tracker's scheduler, probing the tracker's lock at each timer call.
struct ProbingScheduler: TrackerScheduler {
    let clock: ManualClock
    let probe: LockProbe

    func schedule(afterMs: Int64, _ work: @escaping @Sendable () -> Void) -> TimerToken {
        probe.probe("schedule")
        return clock.schedule(afterMs: afterMs, work)
    }
    func cancel(_ token: TimerToken) {
        probe.probe("cancel")
        clock.cancel(token)
    }
    func spawn(_ work: @escaping @Sendable () async -> Void) { clock.spawn(work) }
}

/// A storage that probes the tracker's lock inside each write.
final class ProbingStorage: KeyValueStorage {
    let inner: any KeyValueStorage
    let probe: LockProbe
    init(_ inner: any KeyValueStorage, probe: LockProbe) {
        self.inner = inner
        self.probe = probe
    }
    func getItem(_ key: String) async throws -> String? { try await inner.getItem(key) }
    func setItem(_ key: String, _ value: String) async throws {
        probe.probe("setItem")
        try await inner.setItem(key, value)
    }
    func removeItem(_ key: String) async throws {
        probe.probe("removeItem")
        try await inner.removeItem(key)
    }
}

@Suite struct RuntimeShapeTests {
    @Test func S238_noEffectRunsUnderTheTrackersLock() async {
        let w = World()
        let probe = LockProbe()
        let sink = HarnessSink(destination: DESTINATION, clock: w.clock) { _, _ in
            probe.probe("send")
            return .result(.accepted)
        }
        let backing = HarnessStorage(FaultInjectingStorage(backing: w.backing, clock: w.clock), clock: w.clock)
        let storage = ProbingStorage(backing, probe: probe)
        let log = DiagnosticLog()
        let tracker = OnboardingRunTracker(
            configuration: OnboardingRunConfiguration(
                sink: sink, context: .value(CONTEXT), storage: storage, debounceMs: 500,
                onDiagnostic: { d in
                    probe.probe("diagnostic")
                    log.add(d)
                },
                clock: w.clock, scheduler: ProbingScheduler(clock: w.clock, probe: probe), uuid: harnessUUID, registry: w.registry))
        probe.attach(tracker)
        let run = tracker.start(OPTIONS)
        run.enterStep("welcome")  // opens the debounce window: its timer is scheduled
        await w.advance(600)  // the timer fires: the change is built, written and sent
        run.enterStep("goal")  // a new window
        run.enterStep("nope")  // a diagnostic
        run.complete()  // closes the window: its timer is cancelled
        await w.advance(2000)
        tracker.dispose()
        await w.advance(6000)

        let probes = Set(probe.probes)
        for expected in ["schedule", "cancel", "setItem", "send", "diagnostic"] {
            #expect(probes.contains(expected), "no \(expected) was probed: \(probe.probes)")
        }
        #expect(probe.held.isEmpty, "effects found the tracker's lock held: \(probe.held)")
        #expect(sink.seqs == [1, 2], "\(sink.seqs)")
        #expect(log.codes == ["unknown-step"], "\(log.codes)")
    }
}
