import TrackerCore

/// How a ``PaywallPresentationTracker`` is set up (spec section 13).
public struct PaywallTrackerConfiguration: Sendable {
    /// Where snapshots go: the Rocalytics paywall sink, an `HTTPSink`, or a custom sink.
    public var sink: any Sink<PaywallSnapshot>
    /// Device and app facts, read once per presentation at `start()`.
    public var context: PaywallContextSource
    /// Keeps unsent snapshots across launches; without it nothing survives a restart.
    public var storage: (any KeyValueStorage)?
    /// The storage key (default ``PaywallPresentationTracker/defaultStorageKey``).
    public var storageKey: String
    /// The clock of every timestamp.
    public var clock: any TrackerClock
    /// Runs every timer and background step.
    public var scheduler: any TrackerScheduler
    /// Mints presentation ids; must return a lowercase UUID. Default: UUIDv7 from `clock`.
    public var uuid: (@Sendable () -> String)?
    /// Backoff after transient answers (default 1 s doubling up to 60 s).
    public var retry: RetryPolicy
    /// An attempt with no answer after this long counts as transient (default 30 s).
    public var attemptTimeoutMs: Int64
    /// Receives every diagnostic (default: a console line `[rocalytics-sdk] <code>: <message>`).
    public var onDiagnostic: DiagnosticHandler

    /// Creates a configuration.
    public init(
        sink: any Sink<PaywallSnapshot>, context: PaywallContextSource, storage: (any KeyValueStorage)? = nil,
        storageKey: String = PaywallPresentationTracker.defaultStorageKey, clock: any TrackerClock = SystemClock(),
        scheduler: any TrackerScheduler = SystemScheduler.shared, uuid: (@Sendable () -> String)? = nil,
        retry: RetryPolicy = RetryPolicy(), attemptTimeoutMs: Int64 = 30_000,
        onDiagnostic: @escaping DiagnosticHandler = Diagnostics.systemLog(subsystem: LogSubsystem.paywall, prefix: "rocalytics-sdk")
    ) {
        self.sink = sink
        self.context = context
        self.storage = storage
        self.storageKey = storageKey
        self.clock = clock
        self.scheduler = scheduler
        self.uuid = uuid
        self.retry = retry
        self.attemptTimeoutMs = attemptTimeoutMs
        self.onDiagnostic = onDiagnostic
    }
}

/// The paywall presentation tracker: pass it to the paywall host as its ``PaywallObserver``.
///
/// Each presentation sends up to three complete snapshots (start, shown, end) through the sink,
/// on its own delivery queue with retries. Unsent snapshots (at most
/// ``maxStoredPresentations``) are kept in storage and resent unchanged at the next launch.
/// No method throws, blocks or waits for I/O: invalid input, a failing context, sink or storage
/// become diagnostics.
public final class PaywallPresentationTracker: PaywallObserver, Sendable {
    /// The default storage key of unsent snapshots.
    public static let defaultStorageKey = "rocalytics-sdk:paywall-presentations"
    /// At most this many unsent presentations are kept in storage.
    public static let maxStoredPresentations = 20

    private struct State: Sendable {
        var disposed = false
        var deliveries: [String: DeliveryRuntime<PaywallSnapshot>] = [:]
        /// Presentations restored from storage (no handle this session).
        var restored: Set<String> = []
        /// Unsettled snapshot per presentation, in the order presentations entered the map.
        var pendingOrder: [String] = []
        var pending: [String: Outbound<PaywallSnapshot>] = [:]
        /// The first read failed: no write or removal at all this session.
        var persistenceOff = false
    }

    private let config: PaywallTrackerConfiguration
    private let state = Locked(State())
    private let store: SerialStore?

    /// Creates a tracker. With storage, the stored unsent snapshots are read first (before any
    /// write) and resent.
    public init(configuration: PaywallTrackerConfiguration) {
        config = configuration
        let report = configuration.onDiagnostic
        if let storage = configuration.storage {
            store = SerialStore(storage: storage, key: configuration.storageKey, scheduler: configuration.scheduler, sharedQueue: true) { message in
                report(Diagnostic(code: "storage", message: message))
            }
        } else {
            store = nil
        }
        if let store {
            // The first operation on the key: every later write waits for it and builds its map
            // only when its turn comes, so it includes what was restored here.
            store.enqueueSaveWith { [weak self] in
                await self?.restoreFromStorage(store.storage, key: store.key)
                return .skip
            }
        }
    }

    /// Creates a tracker (see ``PaywallTrackerConfiguration`` for each option).
    public convenience init(
        sink: any Sink<PaywallSnapshot>, context: PaywallContextSource, storage: (any KeyValueStorage)? = nil,
        clock: any TrackerClock = SystemClock(), scheduler: any TrackerScheduler = SystemScheduler.shared,
        onDiagnostic: @escaping DiagnosticHandler = Diagnostics.systemLog(subsystem: LogSubsystem.paywall, prefix: "rocalytics-sdk")
    ) {
        self.init(configuration: PaywallTrackerConfiguration(
            sink: sink, context: context, storage: storage, clock: clock, scheduler: scheduler, onDiagnostic: onDiagnostic))
    }

    // MARK: Observer

    /// Starts following a presentation that resolved to a paywall. Returns `nil` (with an
    /// `invalid-info`, `invalid-context` or `disposed` diagnostic) when refused; sends seq 1
    /// asynchronously otherwise. Never throws, never blocks.
    public func start(_ info: PaywallPresentationInfo) -> (any PaywallPresentationHandle)? {
        startPresentation(InfoValidation.raw(info))
    }

    /// The untyped entry point for hosts that bridge JSON-like data (React Native, a web view):
    /// the same rules and messages as ``start(_:)``, including `info is not an object`. Keys are
    /// the observer's (`moment`, `paywallId`, `audienceId`, `renderMode`, `billing`, `surface`,
    /// `variantKey`, `deploymentId`, `onboardingRun {runId, stepKey}`, `provider`, `placement`,
    /// `externalPaywallId`, `providerName`).
    public func start(json info: JSONValue) -> PaywallPresentation? {
        startPresentation(info)
    }

    private func startPresentation(_ info: JSONValue) -> PaywallPresentation? {
        if state.withLock({ $0.disposed }) {
            report("disposed", "start() ignored: the tracker was disposed")
            return nil
        }
        let fixed: ValidatedInfo
        switch InfoValidation.validate(info) {
        case let .failure(problems):
            report("invalid-info", problems.messages.joined(separator: "; "))
            return nil
        case let .success(v):
            fixed = v
        }
        let context: PaywallContext
        switch config.context {
        case let .value(c):
            context = c
        case let .provider(read):
            do {
                context = try read()
            } catch {
                report("invalid-context", String(describing: error))
                return nil
            }
        }
        let problems = context.problems()
        if !problems.isEmpty {
            report("invalid-context", problems.joined(separator: "; "))
            return nil
        }
        let now = config.clock.nowMs()
        let id = config.uuid?() ?? IDs.uuidV7(nowMs: now)
        var s = PresentationState(id: id, startedAt: now, fixed: fixed, context: context.wire())
        guard let first = s.nextSnapshot(nowMs: now) else {
            report("internal", "start() could not build its snapshot", runId: id)
            return nil
        }
        guard enqueue(first, id: id) else {
            // Disposed on another thread since the check above: refused like any later start().
            report("disposed", "start() ignored: the tracker was disposed")
            return nil
        }
        return PaywallPresentation(tracker: self, state: s)
    }

    /// Resolves once the storage operations queued so far have finished.
    public func idle() async {
        await store?.idle()
    }

    /// Stops every retry timer; no snapshot is enqueued any more. Unsent snapshots stay stored
    /// for the next launch (no final attempt). Later calls report `disposed`.
    public func dispose() {
        let runtimes = state.withLock { s -> [DeliveryRuntime<PaywallSnapshot>] in
            s.disposed = true
            return Array(s.deliveries.values)
        }
        for r in runtimes { r.stop() }
    }

    // MARK: Internals used by the handles

    var clock: any TrackerClock { config.clock }
    var isDisposed: Bool { state.withLock { $0.disposed } }
    /// Number of live delivery queues (for tests).
    var deliveryCount: Int { state.withLock { $0.deliveries.count } }
    /// The live delivery queues and the scheduler (for the lifecycle binding, AppLifecycleBinding.swift).
    var liveDeliveries: [DeliveryRuntime<PaywallSnapshot>] { state.withLock { $0.disposed ? [] : Array($0.deliveries.values) } }
    var lifecycleScheduler: any TrackerScheduler { config.scheduler }

    func report(_ code: String, _ message: String, runId: String? = nil) {
        config.onDiagnostic(Diagnostic(code: code, message: message, runId: runId))
    }

    /// Hands a snapshot to its presentation's delivery queue (created on demand); `false` when
    /// the tracker was disposed meanwhile (the caller reports `disposed`).
    @discardableResult
    func enqueue(_ snapshot: PaywallSnapshot, id: String) -> Bool {
        let seq = snapshot.seq
        let runtime = state.withLock { s -> DeliveryRuntime<PaywallSnapshot>? in
            if s.disposed { return nil }
            return runtimeLocked(&s, id: id)
        }
        guard let runtime else { return false }
        runtime.enqueue(Outbound(seq: seq, payload: snapshot))
        return true
    }

    private func runtimeLocked(_ s: inout State, id: String) -> DeliveryRuntime<PaywallSnapshot> {
        if let r = s.deliveries[id] { return r }
        let sink = config.sink
        let r = DeliveryRuntime<PaywallSnapshot>(
            send: { try await sink.send($0) }, scheduler: config.scheduler, retry: config.retry,
            attemptTimeoutMs: config.attemptTimeoutMs,
            onSettled: { [weak self] item, result in self?.settled(id: id, item, result) },
            onPendingChange: { [weak self] item in self?.pendingChanged(id: id, item) }
        )
        s.deliveries[id] = r
        return r
    }

    private func settled(id: String, _ item: Outbound<PaywallSnapshot>, _ result: SinkResult) {
        if result.outcome == .rejected {
            let reason = result.reason.flatMap { $0.isEmpty ? nil : ": \($0)" } ?? ""
            report("rejected", "snapshot \(item.seq) rejected\(reason)", runId: id)
        }
        // Release the queue once the presentation can send nothing more: its ended snapshot
        // settled, or it was restored from storage (no handle this session).
        state.withLock { s in
            guard let r = s.deliveries[id], item.payload.status == .ended || s.restored.contains(id), r.pending == nil else { return }
            s.deliveries[id] = nil
        }
    }

    private func pendingChanged(id: String, _ item: Outbound<PaywallSnapshot>?) {
        let dropped = state.withLock { s -> [String] in
            if let item {
                if s.pending.updateValue(item, forKey: id) == nil { s.pendingOrder.append(id) }
            } else if s.pending.removeValue(forKey: id) != nil {
                s.pendingOrder.removeAll { $0 == id }
            }
            guard store != nil, !s.persistenceOff else { return [] }
            return Self.applyCap(&s)
        }
        for d in dropped { report("storage-cap", "dropped unsent presentation \(d) from storage", runId: d) }
        persist()
    }

    /// Drops the oldest (by `started_at`, stable) pending presentations beyond the cap.
    private static func applyCap(_ s: inout State) -> [String] {
        let excess = s.pending.count - maxStoredPresentations
        guard excess > 0 else { return [] }
        let byAge = s.pendingOrder.enumerated().sorted { a, b in
            let x = s.pending[a.element]?.payload.startedAt ?? ""
            let y = s.pending[b.element]?.payload.startedAt ?? ""
            return x != y ? x < y : a.offset < b.offset
        }
        let dropped = byAge.prefix(excess).map(\.element)
        for d in dropped { s.pending[d] = nil }
        s.pendingOrder.removeAll { dropped.contains($0) }
        return dropped
    }

    /// Queues a write of the pending map, built when its turn comes. The write keeps the tracker
    /// alive until it ran: a tracker the app disposes and releases still lands its queued writes,
    /// so its successor reads its last unsent snapshots. Once that successor has read the map it
    /// owns it: a disposed tracker's later writes (an answer settling one of its presentations)
    /// are skipped, or they would replace the successor's entries with this tracker's.
    private func persist() {
        guard let store else { return }
        store.enqueueSaveWith { [self] in
            return self.state.withLock { s -> StoreWrite in
                if s.persistenceOff || (s.disposed && store.isSuperseded) { return .skip }
                if s.pending.isEmpty { return .remove }
                var map = JSONObject()
                for id in s.pendingOrder {
                    guard let o = s.pending[id] else { continue }
                    map.appendUnchecked(id, ["seq": .number(Double(o.seq)), "body": o.payload.wireJSON()])
                }
                return .value(.object(map))
            }
        }
    }

    // MARK: Restore

    private func restoreFromStorage(_ storage: any KeyValueStorage, key: String) async {
        let raw: String?
        do {
            raw = try await storage.getItem(key)
        } catch {
            do {
                raw = try await storage.getItem(key) // one retry, in the same turn
            } catch {
                state.withLock { $0.persistenceOff = true }
                report("storage", "reading stored presentations failed (\(error)): left untouched; this session runs without persistence")
                return
            }
        }
        guard let raw else { return }
        let value: JSONValue
        do {
            value = try WireJSON.decode(raw)
        } catch {
            report("invalid-stored", "stored presentations are not JSON; ignored")
            return
        }
        guard case let .object(map) = value else {
            report("invalid-stored", "stored presentations are not an object; ignored")
            return
        }
        for (id, entry) in map.entries {
            guard let seqNumber = entry["seq"]?.numberValue, case let .object(body)? = entry["body"],
                  body["presentation_id"]?.stringValue == id, body["seq"]?.numberValue == seqNumber,
                  let seq = entry["seq"]?.intValue, let snapshot = try? PaywallSnapshot(json: .object(body)) else {
                report("invalid-stored", "ignored stored entry \(id)")
                continue
            }
            let item = Outbound(seq: seq, payload: snapshot)
            let adopted = state.withLock { s -> Adoption in
                if s.deliveries[id] != nil { return .skipped }
                if s.disposed {
                    // Disposed before this read ran (a quick reconfigure behind a long write
                    // queue, say): nothing is restored for delivery, but the entry stays stored
                    // for the next launch (spec 10.2). It joins the pending map without a delivery
                    // queue, so the writes this tracker queued after its read carry it instead of
                    // replacing the stored map with this tracker's own entries only.
                    guard s.pending[id] == nil else { return .skipped }
                    s.pending[id] = item
                    s.pendingOrder.append(id)
                    return .kept(dropped: Self.applyCap(&s))
                }
                s.restored.insert(id)
                return .delivered(runtimeLocked(&s, id: id))
            }
            switch adopted {
            case .skipped:
                continue
            case let .kept(dropped):
                for d in dropped { report("storage-cap", "dropped unsent presentation \(d) from storage", runId: d) }
                if !dropped.isEmpty { persist() }
            case let .delivered(runtime):
                // A dispose landing from here on stops this runtime; the enqueued snapshot then
                // stays pending, so it is still written (never dropped between the two steps).
                runtime.enqueue(item)
            }
        }
    }

    /// What the restore did with one stored entry.
    private enum Adoption {
        /// The presentation already has a delivery this session.
        case skipped
        /// Kept in the pending map only (the tracker was disposed); `dropped` went over the cap.
        case kept(dropped: [String])
        /// Restored for delivery on this runtime.
        case delivered(DeliveryRuntime<PaywallSnapshot>)
    }
}

/// One presentation followed by a ``PaywallPresentationTracker``: the handle the host calls.
/// Calls never throw or block; misuse becomes a diagnostic whose `runId` is the presentation id.
public final class PaywallPresentation: PaywallPresentationHandle, Sendable {
    /// The presentation id (a lowercase UUID).
    public let id: String
    private let tracker: PaywallPresentationTracker
    private let state: Locked<PresentationState>

    init(tracker: PaywallPresentationTracker, state: PresentationState) {
        self.id = state.id
        self.tracker = tracker
        self.state = Locked(state)
    }

    /// The host confirmed the paywall is on screen: sends the next snapshot with `shown_at`.
    public func shown() {
        apply("shown()") { s, now in s.markShown(nowMs: now) }
    }

    /// The presentation ended: sends the final snapshot with the outcome.
    public func end(_ outcome: PaywallPresentationEnd) {
        apply("end()") { s, now in s.markEnded(PresentationState.raw(outcome), nowMs: now) }
    }

    /// The untyped form of ``end(_:)`` (`{status, reason?, transaction?}` with the observer's
    /// key names): an unknown or missing status reports `invalid-status` and changes nothing.
    public func end(json outcome: JSONValue) {
        apply("end()") { s, now in s.markEnded(outcome, nowMs: now) }
    }

    private func apply(_ call: String, _ mark: @Sendable (inout PresentationState, Int64) -> PresentationState.MarkResult) {
        if tracker.isDisposed {
            tracker.report("disposed", "\(call) ignored: disposed", runId: id)
            return
        }
        let now = tracker.clock.nowMs()
        let (result, snapshot) = state.withLock { s -> (PresentationState.MarkResult, PaywallSnapshot?) in
            let r = mark(&s, now)
            return (r, r == .ok ? s.nextSnapshot(nowMs: now) : nil)
        }
        if let snapshot {
            // A dispose on another thread may have landed since the check above: the mark is
            // then refused like any call after dispose, never dropped silently.
            if !tracker.enqueue(snapshot, id: id) {
                tracker.report("disposed", "\(call) ignored: disposed", runId: id)
            }
        } else if result == .ok {
            tracker.report("internal", "\(call) could not build its snapshot", runId: id)
        } else {
            tracker.report(result.rawValue, "\(call) ignored: \(result.rawValue)", runId: id)
        }
    }
}
