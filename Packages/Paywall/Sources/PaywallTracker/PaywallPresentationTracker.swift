import TrackerCore

/// The paywall presentation tracker: pass it to the paywall host as its `PaywallObserver`.
///
/// Each presentation sends up to three complete snapshots (start, shown, end) through the sink,
/// on its own delivery queue with retries. Unsent snapshots (at most
/// ``maxStoredPresentations``) are kept in storage and resent unchanged at the next launch.
/// A snapshot goes to its delivery queue when it is recorded, and with storage its write starts
/// at the same moment: sending never waits for storing (paywall spec 10.2), so an app killed
/// loses a snapshot only when neither its request reached the server nor its write landed.
/// Writes are coalesced (latest state wins, one write running and at most one waiting). A write
/// that failed is reported (`storage`) once per run of failures, and written again at the next
/// change or at a transient answer of its presentation, so a relaunch resends what the sink did
/// not take.
/// No method throws, blocks or waits for I/O: invalid input, a failing context, sink or storage
/// become diagnostics.
public final class PaywallPresentationTracker: PaywallObserver, Sendable {
    /// The default storage key of unsent snapshots.
    public static let defaultStorageKey = "rocalytics-sdk:paywall-presentations"
    /// At most this many unsent presentations are kept in storage.
    public static let maxStoredPresentations = 20

    struct State: Sendable {
        var disposed = false
        /// The opt-out switch (``optOut()``); read from storage at launch unless set before.
        var optedOut = false
        /// ``optOut()`` or ``optIn()`` was called: the launch read no longer decides the switch.
        var optChosen = false
        /// The one `opted-out` diagnostic of this opt-out period was reported.
        var optOutReported = false
        var deliveries: [String: DeliveryRuntime<PaywallSnapshot>] = [:]
        /// Presentations restored from storage (no handle this session).
        var restored: Set<String> = []
        /// Unsettled snapshot per presentation, in the order presentations entered the map.
        var pendingOrder: [String] = []
        var pending: [String: Outbound<PaywallSnapshot>] = [:]
        /// The wire bytes of each pending snapshot, encoded once (by the first write that stores
        /// it, or as read at launch) and stored as they are.
        var pendingBytes: [String: [UInt8]] = [:]
        /// The first read failed: no write or removal at all this session.
        var persistenceOff = false
        /// Highest seq built per presentation with a delivery queue (its queue is released only
        /// once nothing newer than the settled snapshot was built).
        var staged: [String: Int] = [:]
    }

    private let config: PaywallTrackerConfiguration
    let state = Locked(State())
    /// Snapshots handed over by the outbox, on their way to their delivery queue (``handOff``).
    private let outgoing = Locked<(items: [(DeliveryRuntime<PaywallSnapshot>, Outbound<PaywallSnapshot>)], draining: Bool)>(([], false))
    /// Core's snapshot outbox (send and write together, a run of failed writes reported once):
    /// the coalesced write, the ledger of what is stored, the hand-over.
    private let outbox: SnapshotOutbox?
    private var store: SerialStore? { outbox?.store }

    /// Creates a tracker. With storage, the stored unsent snapshots are read first (before any
    /// write) and resent.
    public init(configuration: PaywallTrackerConfiguration) {
        let configuration = Self.previewSafe(configuration, inPreviews: RuntimeEnvironment.isXcodePreview)
        config = configuration
        let report = configuration.onDiagnostic
        outbox = configuration.storage.map { storage in
            // Sent and written together (paywall spec 10.2); a storage that keeps failing is
            // written again at every change and transient answer, and reported once per run.
            SnapshotOutbox(
                storage: storage, key: configuration.storageKey, scheduler: configuration.scheduler, sharedQueue: true,
                policy: .sendAndWrite, reportsEveryFailure: false
            ) { message in report(Diagnostic(code: .storage, message: message, surface: .paywall)) }
        }
        if let store = outbox?.store {
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
        sink: any Sink<PaywallSnapshot>, context: ContextSource, storage: (any KeyValueStorage)? = nil,
        clock: any TrackerClock = SystemClock(), scheduler: any TrackerScheduler = SystemScheduler.shared,
        onDiagnostic: @escaping DiagnosticHandler = Diagnostics.systemLog(subsystem: LogSubsystem.paywall, prefix: "rocalytics-sdk")
    ) {
        self.init(
            configuration: PaywallTrackerConfiguration(
                sink: sink, context: context, storage: storage, clock: clock, scheduler: scheduler, onDiagnostic: onDiagnostic))
    }

    // MARK: Observer

    /// Starts following a presentation that resolved to a paywall. Returns `nil` (with an
    /// `invalid-info`, `invalid-context` or `disposed` diagnostic) when refused; sends seq 1
    /// asynchronously otherwise. Never throws, never blocks.
    public func start(_ info: PaywallPresentationInfo) -> (any PaywallPresentationHandle)? {
        startPresentation(InfoValidation.validate(info))
    }

    /// The untyped entry point for hosts that bridge JSON-like data (React Native, a web view):
    /// the same rules and messages as ``start(_:)``, including `info is not an object`. Keys are
    /// the observer's (`moment`, `paywallId`, `audienceId`, `renderMode`, `billing`, `surface`,
    /// `variantKey`, `deploymentId`, `onboardingRun {runId, stepKey}`, `provider`, `placement`,
    /// `externalPaywallId`, `providerName`).
    public func start(json info: JSONValue) -> PaywallPresentation? {
        startPresentation(InfoValidation.validate(info))
    }

    private func startPresentation(_ validation: Result<ValidatedInfo, InfoProblems>) -> PaywallPresentation? {
        if state.withLock({ $0.disposed }) {
            report("disposed", "start() ignored: the tracker was disposed")
            return nil
        }
        let (optedOut, firstRefusal) = state.withLock { s -> (Bool, Bool) in
            guard s.optedOut else { return (false, false) }
            defer { s.optOutReported = true }
            return (true, !s.optOutReported)
        }
        if optedOut {
            if firstRefusal { report("opted-out", "start() ignored while opted out (reported once per opt-out)") }
            return nil
        }
        let fixed: ValidatedInfo
        switch validation {
        case .failure(let problems):
            report("invalid-info", problems.messages.joined(separator: "; "))
            return nil
        case .success(let v):
            fixed = v
        }
        let context: RunContextInput
        switch config.context {
        case .value(let c):
            context = c
        case .provider(let read):
            do {
                context = try read()
            } catch {
                report("invalid-context", String(describing: error))
                return nil
            }
        }
        let problems = context.problems
        guard problems.isEmpty, let wireContext = context.wire() else {
            report("invalid-context", problems.joined(separator: "; "))
            return nil
        }
        let now = config.clock.nowMs()
        let id = config.uuid?() ?? IDs.uuidV7(nowMs: now)
        var s = PresentationState(id: id, startedAt: now, fixed: fixed, context: wireContext)
        let first = s.nextSnapshot(nowMs: now)
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

    /// Stops every retry timer; no snapshot is built any more. A presentation whose attempt is
    /// in flight finishes it, and a newer snapshot queued behind it gets one attempt, never a
    /// retry; a snapshot waiting for its retry gets no final attempt. Unsent snapshots stay stored
    /// for the next launch. Later calls report `disposed`.
    public func dispose() {
        let deliveries = state.withLock { s -> [DeliveryRuntime<PaywallSnapshot>] in
            s.disposed = true
            return Array(s.deliveries.values)
        }
        // A snapshot recorded before dispose() that had no attempt yet (queued behind the attempt
        // in flight) gets one; one already tried gets none, and no retry timer runs any more.
        for r in deliveries { r.closeUnattempted() }
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
        config.onDiagnostic(Diagnostic(code: code, message: message, runId: runId, surface: .paywall))
    }

    /// Records a snapshot in the pending map and hands it to its presentation's delivery queue
    /// (created on demand) at once; with storage, requests the write that records it at the same
    /// moment (paywall spec 10.2). `false` when the tracker was disposed meanwhile (the caller
    /// reports `disposed`).
    @discardableResult
    func enqueue(_ snapshot: PaywallSnapshot, id: String) -> Bool {
        let item = Outbound(seq: snapshot.seq, payload: snapshot)
        let staged = state.withLock { s -> (runtime: DeliveryRuntime<PaywallSnapshot>, dropped: [String], writes: Bool)? in
            if s.disposed { return nil }
            let runtime = runtimeLocked(&s, id: id)
            s.staged[id] = max(s.staged[id] ?? 0, item.seq)
            if s.pending.updateValue(item, forKey: id) == nil { s.pendingOrder.append(id) }
            guard outbox != nil, !s.persistenceOff else { return (runtime, [], false) }
            // Encoded by the write that stores it, off the caller's thread (once per snapshot).
            s.pendingBytes[id] = nil
            return (runtime, Self.applyCap(&s), true)
        }
        guard let (runtime, dropped, writes) = staged else { return false }
        for d in dropped { report("storage-cap", "dropped unsent presentation \(d) from storage", runId: d) }
        guard writes, let outbox else {
            runtime.enqueue(item)
            return true
        }
        // The outbox hands it over at once and queues its write beside the send.
        outbox.request(compose: persistCompose()) { [self] _ in handOff(runtime, item) }
        return true
    }

    /// Hands `item` to its delivery queue from a background step, so that a recording call pays
    /// for an append, not for starting the send (a burst of calls shares one step).
    private func handOff(_ runtime: DeliveryRuntime<PaywallSnapshot>, _ item: Outbound<PaywallSnapshot>) {
        let start = outgoing.withLock { o -> Bool in
            o.items.append((runtime, item))
            if o.draining { return false }
            o.draining = true
            return true
        }
        if start { config.scheduler.spawn { [self] in drainOutgoing(endsRun: true) } }
    }

    /// Gives every handed-off snapshot to its delivery queue now (in hand-off order). With
    /// `endsRun`, the background step that ends the draining run.
    func drainOutgoing(endsRun: Bool = false) {
        while true {
            let batch = outgoing.withLock { o -> [(DeliveryRuntime<PaywallSnapshot>, Outbound<PaywallSnapshot>)] in
                if o.items.isEmpty {
                    if endsRun { o.draining = false }
                    return []
                }
                defer { o.items = [] }
                return o.items
            }
            if batch.isEmpty { return }
            for (runtime, item) in batch { runtime.enqueue(item) }
        }
    }

    private func runtimeLocked(_ s: inout State, id: String) -> DeliveryRuntime<PaywallSnapshot> {
        if let r = s.deliveries[id] { return r }
        let sink = config.sink
        // The switch itself, not the tracker: a released tracker's queued sends still go.
        let switchState = state
        let optedOut: @Sendable () -> Bool = { switchState.withLock { $0.optedOut } }
        let r = DeliveryRuntime<PaywallSnapshot>(
            // Opted out, nothing is sent: the snapshot is settled as ignored (and unstored).
            send: { optedOut() ? .ignored : try await sink.send($0) }, scheduler: config.scheduler, retry: config.retry,
            attemptTimeoutMs: config.attemptMs,
            onSettled: { [weak self] item, result in self?.settled(id: id, item, result) },
            onTransient: { [weak self] _, _ in self?.rewriteIfUnstored(id: id) }
        )
        s.deliveries[id] = r
        return r
    }

    private func settled(id: String, _ item: Outbound<PaywallSnapshot>, _ result: SinkResult) {
        if result.outcome == .rejected {
            let reason = result.reason.flatMap { $0.isEmpty ? nil : ": \($0)" } ?? ""
            report("rejected", "snapshot \(item.seq) rejected\(reason)", runId: id)
        }
        let removed = state.withLock { s -> Bool in
            // The stored entry goes once nothing newer of the presentation was built meanwhile.
            var removed = false
            if let p = s.pending[id], p.seq <= item.seq {
                s.pending[id] = nil
                s.pendingBytes[id] = nil
                s.pendingOrder.removeAll { $0 == id }
                removed = true
            }
            // Release the queue once the presentation can send nothing more: its ended snapshot
            // settled, or it was restored from storage (no handle this session).
            if let r = s.deliveries[id], item.payload.status == .ended || s.restored.contains(id), r.pending == nil,
                (s.staged[id] ?? 0) <= item.seq
            {
                s.deliveries[id] = nil
                s.staged[id] = nil
            }
            return removed
        }
        if removed { persist() }
    }

    /// A transient answer for `id`: when the presentation's unsettled snapshot is neither stored
    /// nor recorded by the write under way (its write failed), it is written again, so that a
    /// kill from now on leaves it for the next launch. A write already waiting is joined.
    private func rewriteIfUnstored(id: String) {
        guard let outbox else { return }
        let seq = state.withLock { s -> Int? in s.persistenceOff ? nil : s.pending[id]?.seq }
        if let seq, outbox.isUnstored(key: id, seq: seq) { persist() }
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
        for d in dropped {
            s.pending[d] = nil
            s.pendingBytes[d] = nil
        }
        s.pendingOrder.removeAll { dropped.contains($0) }
        return dropped
    }

    /// Requests a write of the pending map, built when its turn comes; requests made while a
    /// write is still waiting join it (coalesced, latest state wins). A queued write keeps the tracker
    /// alive until it ran: a tracker the app disposes and releases still lands its queued writes,
    /// so its successor reads its last unsent snapshots. Once that successor has read the map it
    /// owns it: a disposed tracker's later writes (an answer settling one of its presentations)
    /// are skipped, or they would replace the successor's entries with this tracker's.
    func persist() {
        outbox?.request(compose: persistCompose())
    }

    /// Builds the pending map (or the removal of the key) when a write's turn comes, from each
    /// snapshot's wire bytes as they are (no JSON tree in between).
    private func persistCompose() -> @Sendable () -> OutboxWrite {
        guard let store else { return { .skip } }
        return { [self] in
            self.state.withLock { s -> OutboxWrite in
                if s.persistenceOff || (s.disposed && store.isSuperseded) { return .skip }
                let records = s.pending.mapValues(\.seq)
                if s.optedOut { return OutboxWrite(.text(Self.optedOutMarker), records: records) }
                if s.pending.isEmpty { return OutboxWrite(.remove, records: records) }
                var entries: [(key: String, seq: Int, body: [UInt8])] = []
                entries.reserveCapacity(s.pendingOrder.count)
                for id in s.pendingOrder {
                    guard let o = s.pending[id] else { continue }
                    let bytes = s.pendingBytes[id] ?? o.payload.wireBytes()
                    s.pendingBytes[id] = bytes
                    entries.append((id, o.seq, bytes))
                }
                return OutboxWrite(.text(OutboxEntries.encode(entries)), records: records)
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
                raw = try await storage.getItem(key)  // one retry, in the same turn
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
        guard case .object(let map) = value else {
            report("invalid-stored", "stored presentations are not an object; ignored")
            return
        }
        if map["optedOut"]?.boolValue == true {
            // The stored opt-out (``optOut()``): nothing was stored beside it. A call made since
            // launch decides instead.
            state.withLock { s in if !s.optChosen { s.optedOut = true } }
            return
        }
        for (id, entry) in map.entries {
            guard let seqNumber = entry["seq"]?.numberValue, case .object(let body)? = entry["body"],
                body["presentation_id"]?.stringValue == id, body["seq"]?.numberValue == seqNumber,
                let seq = entry["seq"]?.intValue, let snapshot = try? PaywallSnapshot(json: .object(body))
            else {
                report("invalid-stored", "ignored stored entry \(id)")
                continue
            }
            let item = Outbound(seq: seq, payload: snapshot)
            let adopted = state.withLock { s -> Adoption in
                if s.deliveries[id] != nil { return .skipped }
                if s.disposed {
                    // Disposed before this read ran (a quick reconfigure behind a long write queue,
                    // say): nothing is restored for delivery, but the entry stays stored for the
                    // next launch (<doc:DeliveryAndStorage#Stored-form>). It joins the pending map
                    // without a delivery queue, so the writes this tracker queued after its read
                    // carry it instead of replacing the stored map with this tracker's own entries
                    // only.
                    guard s.pending[id] == nil else { return .skipped }
                    s.pending[id] = item
                    s.pendingBytes[id] = snapshot.wireBytes()
                    s.pendingOrder.append(id)
                    return .kept(dropped: Self.applyCap(&s))
                }
                s.restored.insert(id)
                // Already stored as it is: it joins the pending map (so later writes keep it) and
                // goes to delivery without waiting for a write.
                s.staged[id] = max(s.staged[id] ?? 0, item.seq)
                if s.pending.updateValue(item, forKey: id) == nil { s.pendingOrder.append(id) }
                s.pendingBytes[id] = snapshot.wireBytes()
                let dropped = store != nil && !s.persistenceOff ? Self.applyCap(&s) : []
                return .delivered(runtimeLocked(&s, id: id), dropped: dropped)
            }
            if case .delivered = adopted { outbox?.foundStored(key: id, seq: seq) }
            switch adopted {
            case .skipped:
                continue
            case .kept(let dropped):
                for d in dropped { report("storage-cap", "dropped unsent presentation \(d) from storage", runId: d) }
                if !dropped.isEmpty { persist() }
            case .delivered(let runtime, let dropped):
                for d in dropped { report("storage-cap", "dropped unsent presentation \(d) from storage", runId: d) }
                if !dropped.isEmpty { persist() }
                // A dispose landing from here on stops this runtime; the entry is in the pending
                // map already, so later writes keep it stored (never dropped between the two steps).
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
        /// Restored for delivery on this runtime; `dropped` went over the cap.
        case delivered(DeliveryRuntime<PaywallSnapshot>, dropped: [String])
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
        apply("end()") { s, now in s.markEnded(outcome, nowMs: now) }
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
        } else {
            tracker.report(result.rawValue, "\(call) ignored: \(result.rawValue)", runId: id)
        }
    }
}

extension PaywallPresentationTracker {
    /// In Xcode Previews nothing is written or sent (issue 37 item 7): no storage, and a sink that
    /// sends nothing (``PreviewSink``).
    static func previewSafe(_ configuration: PaywallTrackerConfiguration, inPreviews: Bool) -> PaywallTrackerConfiguration {
        guard inPreviews else { return configuration }
        var safe = configuration
        safe.sink = PreviewSink<PaywallSnapshot>()
        safe.storage = nil
        return safe
    }
}
