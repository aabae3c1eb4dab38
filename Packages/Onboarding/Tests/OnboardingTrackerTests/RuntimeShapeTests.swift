import Dispatch
import Foundation
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

// The tracker's rules, driven on a bare `State` without a tracker, storage or delivery: each
// returns effects as values (issue 36 item 4).
//
// S239 the debounce window as effects: a change writes and asks for a timer (nothing is
//      scheduled by the rule); the timer's firing stages the change; `complete()` cancels the
//      timer and stages the completion, flushed.
// S240 a staged snapshot's hand-over: sent when covered or when its write timed out, held (the
//      first hold reported once) when a landed write does not cover it, dropped once opted out.
// S241 opt-out: the deliveries are stopped in creation order before anything else, the run and
//      the unsent snapshots dropped, the switch written; calls are then refused with one
//      `opted-out` per period; optIn() writes the switch again.
// S242 resume: a stored run of another identity is reported as a mismatch and kept; a matching
//      one is restored, written and its change staged; a disposed state reports; the
//      resumeOrStart bound clamps NaN, negative and huge values.
// S243 start: a live run in progress is replaced (its unsent change staged first, then
//      `run-replaced`), a resumable one abandoned with its change staged; an invalid start is
//      refused with its problems; a uuid option that is not a UUID falls back to a UUIDv7.
// S244 dispose: the unsent change is staged while live, the deliveries are closed in creation
//      order, the hand-over carries the run in progress; a second dispose does nothing; the
//      leftover is taken once, only when nothing is staged.
// S247 the stored-state read, the predecessor's hand-over and settling, applied to the state: a
//      stored outbox is delivered or held, the stored run kept for resume(), the ledger set only
//      with storage; a hand-over of the same destination is taken in (its outboxes held), one of
//      another destination discarded and reported; a settled snapshot leaves the outbox (a
//      rejected one reported) and the state is written; a predecessor's late write is answered
//      only with something of this tracker's own to store.
@Suite struct TrackerRulesTests {
    typealias State = OnboardingRunTracker.State

    static let clock = ManualClock()

    /// Deliveries that are never used (the rules only hold them and name them in effects).
    final class Maker: DeliveryMaker, Sendable {
        func makeDelivery(_ runId: String) -> Delivery { Delivery(send: { _ in .accepted }, scheduler: clock) }
    }
    static let maker = Maker()

    static func env(now: Int64 = T0, debounceMs: Int64 = 0, hasStore: Bool = true) -> RuleEnv {
        RuleEnv(now: now, debounceMs: debounceMs, hasStore: hasStore, maker: maker)
    }

    static var spec: RunSpec {
        var problems: [String] = []
        let spec = StartValidation.spec(OPTIONS, context: CONTEXT, problems: &problems)
        #expect(problems.isEmpty)
        return spec
    }

    /// A started state with its run's handle.
    static func started(_ s: inout State, runId: String = "00000000-0000-4000-8000-000000000001", debounceMs: Int64 = 0) -> RunHandle {
        var fx = Effects()
        let begun = s.start(runId: runId, spec: spec, properties: OrderedScalarMap(), env(debounceMs: debounceMs), &fx)
        #expect(begun != nil)
        return RunHandle(runId: runId, generation: begun?.generation ?? 0)
    }

    /// The effects' actions, named.
    static func names(_ fx: Effects) -> [String] {
        fx.actions.map { a in
            switch a {
            case .write: "write"
            case .stage(let item, _, let flush): "stage \(item.seq)" + (flush ? " flush" : "")
            case .enqueue(_, let item): "enqueue \(item.seq)"
            case .flush: "flush"
            case .close: "close"
            case .stop: "stop"
            case .holdForStorage(let item): "hold \(item.seq)"
            case .setStored: "setStored"
            case .scheduleTimer(let ms, _): "schedule \(ms)"
            case .cancelTimer: "cancel"
            }
        }
    }

    static func codes(_ fx: Effects) -> [String] { fx.diagnostics.map(\.code.rawValue) }

    @Test func S239_theDebounceWindowAsEffects() {
        var s = State()
        let h = Self.started(&s, debounceMs: 500)
        var fx = Effects()
        let entered = s.record(h, Self.env(debounceMs: 500), &fx) { r, now in r.enterStep("welcome", nowMs: now) }
        #expect(entered == "welcome")
        #expect(Self.names(fx) == ["schedule 500", "write"], "\(Self.names(fx))")
        guard case .open(let gen, nil) = s.run.window else {
            Issue.record("the window is not open waiting for its token: \(s.run.window)")
            return
        }
        fx = Effects()
        s.perform(s.run.handle(.timerScheduled(TimerToken(id: 7), generation: gen)), Self.env(), &fx)
        #expect(fx.actions.isEmpty)
        fx = Effects()
        s.perform(s.run.handle(.timerFired(generation: gen)), Self.env(now: T0 + 500), &fx)
        #expect(Self.names(fx) == ["stage 1"], "\(Self.names(fx))")
        #expect(s.staging == 1 && s.outboxes[h.runId]?.seq == 1 && s.deliveries[h.runId] != nil)

        fx = Effects()
        _ = s.record(h, Self.env(now: T0 + 600, debounceMs: 500), &fx) { r, now in r.enterStep("goal", nowMs: now) }
        #expect(Self.names(fx) == ["schedule 500", "write"])
        if case .open(let g, nil) = s.run.window {
            fx = Effects()
            s.perform(s.run.handle(.timerScheduled(TimerToken(id: 8), generation: g)), Self.env(), &fx)
        }
        fx = Effects()
        let completed = s.complete(h, Self.env(now: T0 + 700), &fx)
        #expect(completed)
        #expect(Self.names(fx) == ["cancel", "stage 2 flush"], "\(Self.names(fx))")
        #expect(s.outboxes[h.runId]?.payload.isCompleted == true && s.staging == 2)
    }

    @Test func S240_aStagedSnapshotsHandOver() {
        var s = State()
        let h = Self.started(&s)
        var fx = Effects()
        _ = s.record(h, Self.env(), &fx) { r, now in r.enterStep("welcome", nowMs: now) }
        guard let item = s.outboxes[h.runId] else {
            Issue.record("nothing staged")
            return
        }
        s.staging = 4
        fx = Effects()
        var v = s.handedOver(item, result: .landed, covered: true, &fx)
        #expect(v == .send && s.staging == 3)
        v = s.handedOver(item, result: .timedOut, covered: false, &fx)
        #expect(v == .send && s.staging == 2)
        #expect(fx.diagnostics.isEmpty)
        v = s.handedOver(item, result: .landed, covered: false, &fx)
        #expect(v == .hold)
        #expect(Self.codes(fx) == ["storage"] && fx.diagnostics[0].message.contains("seq 1"))
        v = s.handedOver(item, result: .failed, covered: false, &fx)
        #expect(v == .hold)
        #expect(Self.codes(fx) == ["storage"], "the hold is reported once")
        s.optedOut = true
        s.staging = 1
        v = s.handedOver(item, result: .landed, covered: true, &fx)
        #expect(v == .dropped && s.staging == 0)
    }

    @Test func S241_optOutAndOptIn() {
        var s = State()
        let h = Self.started(&s, debounceMs: 500)
        var fx = Effects()
        _ = s.record(h, Self.env(debounceMs: 500), &fx) { r, now in r.enterStep("welcome", nowMs: now) }
        for id in ["run-b", "run-a"] { _ = s.delivery(id, Self.env(), &fx) }
        let order = s.deliveryOrder.compactMap { s.deliveries[$0] }
        s.outboxes["run-b"] = s.outboxes[h.runId]
        if case .open(let g, nil) = s.run.window {
            s.perform(s.run.handle(.timerScheduled(TimerToken(id: 3), generation: g)), Self.env(), &fx)
        }
        fx = Effects()
        s.optOut(persist: true, Self.env(), &fx)
        #expect(Self.names(fx) == ["stop", "stop", "cancel", "write"], "\(Self.names(fx))")
        var stopped: [Delivery] = []
        for case .stop(let d) in fx.actions { stopped.append(d) }
        #expect(stopped.count == order.count && zip(stopped, order).allSatisfy { $0 === $1 }, "stopped in creation order")
        #expect(s.optedOut && s.switchSetThisSession && s.run.current == nil && s.outboxes.isEmpty && s.deliveries.isEmpty)

        fx = Effects()
        _ = s.record(h, Self.env(), &fx) { r, now in r.enterStep("goal", nowMs: now) }
        let refused = s.refusesStart(&fx)
        #expect(refused)
        #expect(Self.codes(fx) == ["opted-out"] && fx.actions.isEmpty, "one opted-out per period: \(Self.codes(fx))")
        fx = Effects()
        s.optOut(persist: true, Self.env(), &fx)
        #expect(fx.actions.isEmpty, "idempotent")
        s.optIn(Self.env(), &fx)
        #expect(!s.optedOut && Self.names(fx) == ["write"])
        fx = Effects()
        let refusedAgain = s.refusesStart(&fx)
        #expect(!refusedAgain && fx.diagnostics.isEmpty)
    }

    @Test func S242_resume() {
        var stored = RunRecordingTests.run(entries: ["welcome", "goal"])
        stored.lastActiveAt = T0 + 1000
        var s = State()
        s.session = .awaiting(resumable: stored)
        var fx = Effects()
        var other = OPTIONS
        other.onboarding = OnboardingInput(key: "other", version: "3")
        let mismatch = s.resume(ResumeExpectation(other), Self.env(), &fx)
        #expect(mismatch == nil)
        #expect(Self.codes(fx) == ["resume-mismatch"] && s.resumable != nil && !s.sessionStarted)
        fx = Effects()
        let invalid = s.resume(.invalid, Self.env(), &fx)
        #expect(invalid == nil && Self.codes(fx) == ["resume-mismatch"])

        fx = Effects()
        let begun = s.resume(.any, Self.env(now: T0 + 60_000), &fx)
        #expect(begun?.runId == stored.runId && begun?.stepKey == "goal" && s.sessionStarted)
        #expect(Self.names(fx) == ["write", "stage 1"], "\(Self.names(fx))")
        #expect(s.run.current?.steps.map(\.stepKey).prefix(2) == ["welcome", "goal"] && s.outboxes[stored.runId]?.seq == 1)
        fx = Effects()
        let again = s.resume(.any, Self.env(), &fx)
        #expect(again == nil && fx.diagnostics.isEmpty, "the session started already")

        var disposed = State()
        fx = Effects()
        _ = disposed.dispose(sink: Self.clock, destination: nil, storedRun: nil, hasStore: false, Self.env(), &fx)
        fx = Effects()
        let none = disposed.resume(.any, Self.env(), &fx)
        #expect(none == nil && Self.codes(fx) == ["disposed"])

        #expect(ResumeWait.ms(3) == 3000 && ResumeWait.ms(.nan) == 0 && ResumeWait.ms(-1) == 0)
        #expect(ResumeWait.ms(1e12) == 86_400_000 && ResumeWait.ms(0.25) == 250)
        #expect(ResumeWait.ms(0.0009) == 1 && ResumeWait.ms(0.0004) == 0)  // rounded like every duration
    }

    @Test func S243_start() {
        var s = State()
        var abandoned = RunRecordingTests.run(entries: ["welcome"])
        abandoned.dirty = true
        s.session = .awaiting(resumable: abandoned)
        let first = Self.started(&s, runId: "00000000-0000-4000-8000-0000000000aa")
        #expect(s.outboxes[LifecycleMachineTests.runA]?.seq == 1, "the abandoned run's change was staged")
        #expect(s.resumable == nil && s.sessionStarted)
        var fx = Effects()
        _ = s.record(first, Self.env(debounceMs: 500), &fx) { r, now in r.enterStep("welcome", nowMs: now) }
        fx = Effects()
        let begun = s.start(
            runId: "00000000-0000-4000-8000-0000000000bb", spec: Self.spec, properties: OrderedScalarMap(), Self.env(), &fx)
        #expect(begun?.generation == first.generation + 1)
        #expect(Self.names(fx).prefix(1) == ["stage 1"] && Self.names(fx).last == "write", "\(Self.names(fx))")
        #expect(Self.codes(fx) == ["run-replaced"] && fx.diagnostics[0].runId == first.runId)
        #expect(s.outboxes[first.runId]?.seq == 1 && s.run.current?.runId == "00000000-0000-4000-8000-0000000000bb")

        let (_, problems) = StartValidation.request(OPTIONS, context: .provider { throw CancellationError() })
        fx = Effects()
        let refused = StartValidation.accept(Self.spec, problems: problems, OPTIONS, &fx)
        #expect(refused == nil)
        #expect(Self.codes(fx) == ["invalid-start"] && fx.diagnostics[0].message.contains("the context closure failed"))
        fx = Effects()
        let id = RunIds.mint({ "not a uuid" }, nowMs: T0, &fx)
        #expect(IDs.isLowercaseUUID(id) && Self.codes(fx) == ["invalid-uuid"])
        fx = Effects()
        let given = RunIds.mint({ "00000000-0000-4000-8000-0000000000CC" }, nowMs: T0, &fx)
        #expect(given == "00000000-0000-4000-8000-0000000000cc")
        #expect(fx.diagnostics.isEmpty)
    }

    @Test func S247_theReadTheHandOverAndSettling() {
        var s = State()
        let h = Self.started(&s)
        var fx = Effects()
        _ = s.record(h, Self.env(), &fx) { r, now in r.enterStep("welcome", nowMs: now) }
        let item = s.outboxes[h.runId]!
        let resumable = RunRecordingTests.run(entries: ["welcome"])

        var read = State()
        fx = Effects()
        read.applyRead(
            [
                .storedRun(StoredRunMark(runId: "a", reserved: 20)), .adoptOutbox("a", item, deliver: true),
                .adoptOutbox("b", item, deliver: false), .keepResumable(resumable), .write,
            ], Self.env(), &fx)
        #expect(Self.names(fx) == ["setStored", "enqueue 1", "write"], "\(Self.names(fx))")
        #expect(read.outboxes.keys.sorted() == ["a", "b"] && read.held == ["b"] && read.deliveryOrder == ["a"])
        #expect(read.resumable?.runId == resumable.runId)
        fx = Effects()
        var noStore = State()
        noStore.applyRead([.storedRun(StoredRunMark(runId: "a", reserved: 20)), .write, .persistenceOff], Self.env(hasStore: false), &fx)
        #expect(fx.actions.isEmpty && noStore.persistenceOff, "no ledger and no write without storage")

        // The hand-over at creation.
        let handoff = Handoff(
            sink: Self.clock, destination: DESTINATION, run: .run(resumable), outboxes: ["a": item], leftover: Deferred(),
            writeFailed: true)
        var same = State()
        fx = Effects()
        same.takeHandoff(handoff, same: true, &fx)
        #expect(fx.diagnostics.isEmpty && same.writeFailed && same.held == ["a"] && same.resumable?.runId == resumable.runId)
        var other = State()
        other.takeHandoff(handoff, same: false, &fx)
        #expect(Self.codes(fx) == ["destination-changed"] && other.outboxes.isEmpty && other.resumable == nil)
        #expect(other.destinationChangedReported && other.handover.isRefused)
        fx = Effects()
        other.lateWriteLanded(Self.env(), &fx)
        #expect(Self.names(fx) == ["write"], "a refused hand-over's key is this tracker's to write")
        fx = Effects()
        var fresh = State()
        fresh.lateWriteLanded(Self.env(), &fx)
        #expect(fx.actions.isEmpty, "nothing of its own to store")

        // Settling.
        fx = Effects()
        s.settled(item, rejected: .some("too old"), Self.env(), &fx)
        #expect(s.outboxes[h.runId] == nil && s.settled[h.runId] == 1)
        #expect(Self.codes(fx) == ["rejected"] && fx.diagnostics[0].message.contains("too old"))
        #expect(Self.names(fx) == ["write"])
        fx = Effects()
        s.settled(item, rejected: nil, Self.env(), &fx)
        #expect(fx.diagnostics.isEmpty && s.settled[h.runId] == 1)
    }

    @Test func S244_dispose() {
        var s = State()
        let h = Self.started(&s, debounceMs: 500)
        var fx = Effects()
        _ = s.record(h, Self.env(debounceMs: 500), &fx) { r, now in r.enterStep("welcome", nowMs: now) }
        _ = s.delivery("run-z", Self.env(), &fx)
        fx = Effects()
        let published = s.dispose(sink: Self.clock, destination: DESTINATION, storedRun: nil, hasStore: true, Self.env(), &fx)
        #expect(s.deliveryOrder == ["run-z", h.runId])
        let order = s.deliveryOrder.compactMap { s.deliveries[$0] }
        #expect(Self.names(fx) == ["stage 1", "close", "close"], "\(Self.names(fx))")
        var closed: [Delivery] = []
        for case .close(let d) in fx.actions { closed.append(d) }
        #expect(zip(closed, order).allSatisfy { $0 === $1 } && closed.count == 2, "closed in creation order")
        guard let (handoff, drain) = published else {
            Issue.record("nothing published")
            return
        }
        #expect(drain != nil && handoff.outboxes[h.runId]?.seq == 1 && handoff.destination == DESTINATION)
        if case .run(let r) = handoff.run { #expect(r.runId == h.runId) } else { Issue.record("no run handed over") }
        fx = Effects()
        let second = s.dispose(sink: Self.clock, destination: nil, storedRun: nil, hasStore: true, Self.env(), &fx)
        #expect(second == nil)
        #expect(fx.actions.isEmpty)
        fx = Effects()
        _ = s.record(h, Self.env(), &fx) { r, now in r.enterStep("goal", nowMs: now) }
        #expect(Self.codes(fx) == ["disposed"] && fx.actions.isEmpty)

        #expect(s.leftoverCandidates == nil, "a snapshot is staged")
        _ = s.handedOver(s.outboxes[h.runId]!, result: .landed, covered: true, &fx)
        #expect(s.leftoverCandidates?.count == 2)
        let early = s.takeLeftover(idle: 1)
        #expect(early == nil, "a delivery was created since")
        let taken = s.takeLeftover(idle: 2)
        #expect(taken?.0 === handoff.leftover && taken?.1.unsent[h.runId]?.seq == 1)
        let twice = s.takeLeftover(idle: 2)
        #expect(twice == nil, "taken once")
    }
}

// The onboarding outbox's own I/O thread (issue 36: onboarding's writes never wait behind another
// engine's sync).
//
// S245 on a file store the app shares with another engine (the paywall tracker's writes), an
//      onboarding write lands while that engine's fsync is held: the tracker's read and write run on
//      a thread of their own, not on the shared store's queue behind the held fsync.
@Suite struct OutboxThreadTests {
    /// Holds the other engine's fsync until released (bounded), and tells when the onboarding
    /// write has landed (its rename done: the directory's sync that follows it starts).
    final class HoldOtherFsync: FileFaultPolicy, @unchecked Sendable {
        let directory: String
        private let release = DispatchSemaphore(value: 0)
        private struct State {
            var held = false
            var released = false
            var renamed = false
            var landed = false
            var heldWaiters: [OnceContinuation<Bool>] = []
            var landedWaiters: [OnceContinuation<Bool>] = []
            var heldWhenLanded = false
        }
        private let state = Locked(State())

        init(directory: String) { self.directory = directory }

        func fault(_ call: FileCall, path: String, bytes: Int) -> Int32? {
            if call == .fsync && path.contains("paywall-state") {
                let waiters = state.withLock { s -> [OnceContinuation<Bool>] in
                    s.held = true
                    defer { s.heldWaiters = [] }
                    return s.heldWaiters
                }
                for w in waiters { w.resume(returning: true) }
                _ = release.wait(timeout: .now() + .seconds(30))
                state.withLock { $0.held = false }
                return nil
            }
            if call == .rename && path.contains("onboarding-run") { state.withLock { $0.renamed = true } }
            if (call == .openForReading || call == .fsync) && (path == directory || path == directory + "/") {
                let waiters = state.withLock { s -> [OnceContinuation<Bool>] in
                    guard s.renamed, !s.landed else { return [] }
                    s.landed = true
                    s.heldWhenLanded = s.held
                    defer { s.landedWaiters = [] }
                    return s.landedWaiters
                }
                for w in waiters { w.resume(returning: true) }
            }
            return nil
        }

        func onHeld(_ once: OnceContinuation<Bool>) {
            if state.withLock({ s -> Bool in
                if !s.held { s.heldWaiters.append(once) }
                return s.held
            }) {
                once.resume(returning: true)
            }
        }

        func onLanded(_ once: OnceContinuation<Bool>) {
            if state.withLock({ s -> Bool in
                if !s.landed { s.landedWaiters.append(once) }
                return s.landed
            }) {
                once.resume(returning: true)
            }
        }

        var heldWhenLanded: Bool { state.value.heldWhenLanded }

        func releaseAll() {
            let first = state.withLock { s -> Bool in
                defer { s.released = true }
                return !s.released
            }
            if first { release.signal() }
        }
    }

    @Test func S245_anOnboardingWriteLandsWhileAnotherEnginesFsyncIsHeld() async throws {
        let dir = NSTemporaryDirectory() + "onboarding-S245-\(IDs.uuidV4())"
        let policy = HoldOtherFsync(directory: dir)
        let installation = FileFaults.install(policy, under: dir)
        defer {
            policy.releaseAll()
            installation.remove()
            try? FileManager.default.removeItem(atPath: dir)
        }
        // One store for both engines, as `Rocalytics.start` and the README set them up.
        let shared = StandardFileStorage(directory: dir)
        Task.detached { try? await shared.setItem("paywall-state", "{\"other\":true}") }
        let held = await boundedWait(what: "the other engine's fsync", onTimeout: { false }) { policy.onHeld($0) }
        #expect(held, "the other engine's write never reached its fsync")

        let w = World()
        let log = DiagnosticLog()
        let sink = HarnessSink(destination: DESTINATION, clock: w.clock)
        let tracker = OnboardingRunTracker(
            configuration: OnboardingRunConfiguration(
                sink: sink, context: .value(CONTEXT), storage: shared, debounceMs: 0, onDiagnostic: log.handler, clock: w.clock,
                scheduler: w.scheduler, uuid: harnessUUID, registry: w.registry))
        let run = tracker.start(OPTIONS)
        run.enterStep("welcome")
        await w.settle()  // the tracker's read and writes start
        let landed = await boundedWait(what: "the onboarding write", onTimeout: { false }) { policy.onLanded($0) }
        #expect(landed, "the onboarding write waited behind the other engine's held fsync")
        #expect(policy.heldWhenLanded, "the other engine's fsync was released before the onboarding write landed")
        let stored = try FileIO.read(FileKeyValueStorage(directory: dir).path(for: tracker.config.storageKey))
        #expect(stored?.contains(run.runId) == true, "\(stored ?? "nothing stored")")
        policy.releaseAll()
        tracker.dispose()
        await w.advance(10_000)
        #expect(!log.codes.contains("storage"), "\(log.codes)")
    }
}
