import TrackerCore

/// One request recorded by a `record…` method: what it sends, without what only a started client
/// knows (the roca id, the device context, the headers). Its request is built when it is sent,
/// by the same code as the awaited form's, so the bytes and the deduplication id are the same.
struct RecordedEntry: Sendable, Equatable {
    enum Kind: Sendable, Equatable {
        /// A `purchase` track event, deduplicated on `<rocaId>-purchase-<transaction>`.
        case purchase(transaction: String)
        /// A track event, deduplicated on `<rocaId>-<name>`.
        case track(name: String)
        /// An identify; `body` is the filtered, ordered identifier map.
        case identify

        var isPurchase: Bool {
            if case .purchase = self { return true }
            return false
        }
    }

    /// Its place in the queue, unique in the store (delivery is in this order).
    var seq: Int
    var kind: Kind
    /// The track event's properties, or the identify body.
    var body: JSONObject

    /// The stored form: `{"kind":…,(…),"body":{…}}`.
    var stored: JSONValue {
        var o = JSONObject()
        switch kind {
        case .purchase(let transaction):
            o.appendUnchecked("kind", "purchase")
            o.appendUnchecked("transaction", .string(transaction))
        case .track(let name):
            o.appendUnchecked("kind", "track")
            o.appendUnchecked("name", .string(name))
        case .identify:
            o.appendUnchecked("kind", "identify")
        }
        o.appendUnchecked("body", .object(body))
        return .object(o)
    }

    /// Reads a stored form; `nil` when it is not one.
    init?(seq: Int, stored: JSONValue) {
        guard let body = stored["body"]?.objectValue else { return nil }
        switch stored["kind"]?.stringValue {
        case "purchase":
            guard let t = stored["transaction"]?.stringValue else { return nil }
            kind = .purchase(transaction: t)
        case "track":
            guard let n = stored["name"]?.stringValue else { return nil }
            kind = .track(name: n)
        case "identify": kind = .identify
        default: return nil
        }
        self.seq = seq
        self.body = body
    }

    init(seq: Int, kind: Kind, body: JSONObject) {
        self.seq = seq
        self.kind = kind
        self.body = body
    }
}

/// The durable queue behind the client's `record…` methods, and the persisted opt-out.
///
/// Recorded requests are kept under one storage key through Core's ``SnapshotOutbox`` (write,
/// then hand over: a request is sent once the write that records it has finished, or 5 s
/// passed), and sent one at a time, in record order, through Core's ``DeliveryRuntime`` (one
/// attempt in flight, a transient answer retried after the backoff). A request leaves the store
/// once its answer settles it. Nothing is sent before ``enableSending()`` (the client has started
/// with a roca id) or while opted out; opting out drops every request not yet sent. Nothing here
/// blocks or throws: storage failures are reported as `storage` diagnostics.
///
/// The queue holds at most ``capacity`` requests (memory and storage alike), so a server that stays
/// unreachable cannot grow it without bound. When a request is recorded into a full queue, the
/// oldest request that is not a purchase and not on the wire is dropped; only a queue of nothing
/// but purchases drops its oldest purchase. One `storage-cap` diagnostic is given per run of
/// drops; the next comes once the queue has been below capacity in between.
final class RecordedRequests: Sendable {
    /// The storage key of the queue.
    static let queueKey = "rocalytics-recorded-requests"
    /// The storage key of the opt-out (`true` when opted out; absent otherwise).
    static let optOutKey = "rocalytics-opted-out"
    /// The most requests kept (see the type's documentation).
    static let capacity = 1_000

    typealias Deliver = @Sendable (RecordedEntry) async -> SinkResult

    private struct State: Sendable {
        var entries: [RecordedEntry] = []
        /// Seqs that may be sent (their write finished, or they were read from storage).
        var deliverable: Set<Int> = []
        var nextSeq = 1
        var loaded = false
        /// The stored queue could not be read: it is never written this session (a later launch
        /// that reads it still sends what it holds).
        var storeUnreadable = false
        var canSend = false
        var optedOut = false
        /// `optOut()`/`optIn()` was called this session: the stored choice read at start-up is older.
        var choiceMade = false
        var delivering: (seq: Int, runtime: DeliveryRuntime<RecordedEntry>)?
        var deliver: Deliver?
        /// A `storage-cap` diagnostic was given and the queue has not been below capacity since.
        var capReported = false
        /// The last seq a write composed after the stored queue was read (stored, or, when the
        /// stored queue is unreadable, deliberately sent without being stored). A write composed
        /// before that read skips: its end must not make anything deliverable, even when the
        /// read has finished meanwhile.
        var composedThrough = 0

        /// Drops requests until at most `capacity` remain: the oldest non-purchase first, never the
        /// one on the wire. Returns the kinds dropped, and whether a diagnostic is due.
        mutating func enforceCapacity(_ capacity: Int) -> (dropped: [RecordedEntry.Kind], report: Bool) {
            guard entries.count > capacity else {
                // Called after each append: at most `capacity` now means below it before.
                capReported = false
                return ([], false)
            }
            var dropped: [RecordedEntry.Kind] = []
            while entries.count > capacity {
                let onWire = delivering?.seq
                let victim =
                    entries.firstIndex { !$0.kind.isPurchase && $0.seq != onWire } ?? entries.firstIndex { $0.seq != onWire }
                guard let victim else { break }
                deliverable.remove(entries[victim].seq)
                dropped.append(entries.remove(at: victim).kind)
            }
            let due = !dropped.isEmpty && !capReported
            if due { capReported = true }
            return (dropped, due)
        }
    }

    private let state = Locked(State())
    private let outbox: SnapshotOutbox
    private let optOutStore: SerialStore
    private let scheduler: any TrackerScheduler
    private let retry: RetryPolicy
    private let report: @Sendable (String, String) -> Void

    init(
        storage: any KeyValueStorage, scheduler: any TrackerScheduler, retry: RetryPolicy = RetryPolicy(),
        report: @escaping @Sendable (String, String) -> Void
    ) {
        self.scheduler = scheduler
        self.retry = retry
        self.report = report
        outbox = SnapshotOutbox(
            storage: storage, key: Self.queueKey, scheduler: scheduler, policy: .writeThenSend(timeoutMs: 5_000),
            reportsEveryFailure: false
        ) { message in
            report("storage", "recorded Rocalytics requests could not be stored (\(message)); they are still sent while the app runs")
        }
        optOutStore = SerialStore(storage: storage, key: Self.optOutKey, scheduler: scheduler) { message in
            report("storage", "the Rocalytics opt-out could not be stored or read (\(message))")
        }
    }

    // MARK: Opt-out

    var isOptedOut: Bool { state.withLock { $0.optedOut } }

    /// Reads the stored opt-out (start-up); a choice made since wins. Returns the resulting state.
    func loadOptOut() async -> Bool {
        let stored = await optOutStore.load()
        let optedOut = state.withLock { s in
            if !s.choiceMade { s.optedOut = stored?.boolValue == true }
            return s.optedOut
        }
        if optedOut { dropAll(choice: false) }
        return optedOut
    }

    func optOut() {
        dropAll(choice: true)
        optOutStore.save(.bool(true))
    }

    /// Opts out in memory and drops every request not yet sent (storage too).
    private func dropAll(choice: Bool) {
        let (runtime, dropped) = state.withLock { s -> (DeliveryRuntime<RecordedEntry>?, Bool) in
            s.optedOut = true
            if choice { s.choiceMade = true }
            let dropped = !s.entries.isEmpty
            s.entries = []
            s.deliverable = []
            defer { s.delivering = nil }
            return (s.delivering?.runtime, dropped)
        }
        runtime?.stop()
        if dropped { persist() }
    }

    func optIn() {
        state.withLock { s in
            s.optedOut = false
            s.choiceMade = true
        }
        optOutStore.save(nil)
        pump()
    }

    // MARK: Recording

    /// Queues `kind`/`body` (dropped when opted out). Never blocks.
    func record(_ kind: RecordedEntry.Kind, body: JSONObject) {
        let recorded = state.withLock { s -> (seq: Int, cap: (dropped: [RecordedEntry.Kind], report: Bool))? in
            guard !s.optedOut else { return nil }
            let seq = s.nextSeq
            s.nextSeq += 1
            s.entries.append(RecordedEntry(seq: seq, kind: kind, body: body))
            return (seq, s.enforceCapacity(Self.capacity))
        }
        guard let (seq, cap) = recorded else { return }
        reportCap(cap)
        persist { [self] _ in markDeliverable(seq) }
    }

    /// The one `storage-cap` diagnostic of a run of drops: how many, and of which kinds (never a
    /// transaction id, an event name's properties or an identifier).
    private func reportCap(_ cap: (dropped: [RecordedEntry.Kind], report: Bool)) {
        guard cap.report else { return }
        let purchases = cap.dropped.filter(\.isPurchase).count
        let what = purchases == 0 ? "" : " (\(purchases) of them purchases: the queue held nothing else)"
        report(
            "storage-cap",
            "the recorded Rocalytics requests reached \(Self.capacity): \(cap.dropped.count) of the oldest were dropped\(what), and the oldest are dropped at each new request until some are sent"
        )
    }

    /// Reads the stored queue (once, at start-up): stored requests go first, then those recorded
    /// meanwhile (renumbered after them), written before they are sent.
    func load() async {
        var stored: [RecordedEntry] = []
        switch await outbox.store.read() {
        case .ok(let value, _):
            for (key, item) in value?.objectValue?.entries ?? [] {
                guard let seq = item["seq"]?.intValue, let body = item["body"], let entry = RecordedEntry(seq: seq, stored: body) else {
                    report("invalid-stored", "a stored recorded Rocalytics request (\(key)) could not be read; it is dropped")
                    continue
                }
                stored.append(entry)
            }
        case .invalid(_, let error):
            report("invalid-stored", "the stored recorded Rocalytics requests are not JSON (\(error)); they are dropped")
        case .failed(let reason):
            report(
                "storage",
                "the stored recorded Rocalytics requests could not be read (\(reason)); they are kept for a later launch, and requests recorded now are sent but not stored"
            )
            state.withLock { $0.storeUnreadable = true }
        }
        stored.sort { $0.seq < $1.seq }
        let (pendingSeqs, droppedStored, cap) = state.withLock { s -> ([Int], Bool, (dropped: [RecordedEntry.Kind], report: Bool)) in
            s.loaded = true
            let droppedStored = s.optedOut && !stored.isEmpty
            if s.optedOut { stored = [] }
            var next = (stored.last?.seq ?? 0) + 1
            var fresh: [RecordedEntry] = []
            for var e in s.entries {
                e.seq = next
                next += 1
                fresh.append(e)
            }
            s.nextSeq = next
            s.entries = stored + fresh
            s.deliverable = Set(stored.map(\.seq))
            let cap = s.enforceCapacity(Self.capacity)
            let kept = Set(s.entries.map(\.seq))
            return (fresh.map(\.seq).filter { kept.contains($0) }, droppedStored || (!cap.dropped.isEmpty && !stored.isEmpty), cap)
        }
        reportCap(cap)
        if let last = pendingSeqs.last {
            persist { [self] _ in markDeliverable(last) }
        } else if droppedStored {
            persist()
        }
        pump()
    }

    /// Sending may start (the client has a roca id); `deliver` sends one entry.
    func enableSending(_ deliver: @escaping Deliver) {
        state.withLock { s in
            s.canSend = true
            s.deliver = deliver
        }
        pump()
    }

    /// Entries not yet sent (for tests).
    var pendingCount: Int { state.withLock { $0.entries.count } }

    /// Resolves once the queue's storage operations so far have finished.
    func idle() async {
        await outbox.idle()
        await optOutStore.idle()
    }

    // MARK: Internals

    private func persist(handOver: (@Sendable (PersistResult) -> Void)? = nil) {
        outbox.request(
            compose: { [state] in
                let (loaded, unreadable, entries) = state.withLock { s in
                    if s.loaded { s.composedThrough = max(s.composedThrough, s.entries.last?.seq ?? 0) }
                    return (s.loaded, s.storeUnreadable, s.entries)
                }
                guard loaded, !unreadable else { return .skip }
                guard !entries.isEmpty else { return OutboxWrite(.remove, records: [:]) }
                let text = OutboxEntries.encode(entries.map { (key: String($0.seq), seq: $0.seq, body: WireJSON.encode($0.stored)) })
                return OutboxWrite(.text(text), records: Dictionary(uniqueKeysWithValues: entries.map { (String($0.seq), $0.seq) }))
            },
            handOver: handOver)
    }

    /// Entries up to `seq` were written (or their write ended): they may be sent. Before the
    /// stored queue is read, nothing is marked: `load()` writes them again first. Nor is anything
    /// a write composed before that read (it skipped), even when its end comes after the read:
    /// only entries up to `composedThrough` (a purchase recorded at launch was otherwise
    /// sent before it was stored, and a kill then lost it: seen once in R37).
    private func markDeliverable(_ seq: Int) {
        state.withLock { s in
            guard s.loaded else { return }
            let through = min(seq, s.composedThrough)
            for e in s.entries where e.seq <= through { s.deliverable.insert(e.seq) }
        }
        pump()
    }

    /// Starts the delivery of the queue's head when nothing is being delivered.
    private func pump() {
        let start = state.withLock { s -> (RecordedEntry, DeliveryRuntime<RecordedEntry>)? in
            guard s.loaded, s.canSend, !s.optedOut, s.delivering == nil, let head = s.entries.first,
                s.deliverable.contains(head.seq), let deliver = s.deliver
            else { return nil }
            let runtime = DeliveryRuntime<RecordedEntry>(
                send: { entry in await deliver(entry) }, scheduler: scheduler, retry: retry,
                // Longer than the transport's own timeout: an attempt is never retried while it may still be on the wire.
                attemptTimeoutMs: rocalyticsRequestTimeoutMs + 5_000,
                onSettled: { [weak self] item, result in self?.settled(item.payload, result) })
            s.delivering = (head.seq, runtime)
            return (head, runtime)
        }
        guard let (head, runtime) = start else { return }
        runtime.enqueue(Outbound(seq: 1, payload: head))
    }

    private func settled(_ entry: RecordedEntry, _ result: SinkResult) {
        let removed = state.withLock { s -> Bool in
            guard s.delivering?.seq == entry.seq else { return false }
            s.delivering = nil
            s.entries.removeAll { $0.seq == entry.seq }
            s.deliverable.remove(entry.seq)
            return true
        }
        guard removed else { return }
        if result.outcome == .rejected {
            report(
                "recorded-request-rejected",
                "a recorded Rocalytics request was refused for good (\(result.reason ?? "no reason")); it is not sent again")
        }
        persist()
        pump()
    }
}

/// How a recorded request's answer settles it: 2xx accepted; 408, 429 and 5xx transient
/// (retried); any other status rejected (dropped, reported).
func recordedOutcome(status: Int) -> SinkResult {
    switch status {
    case 200...299: return .accepted
    case 408, 429, 500...599: return SinkResult(.transient, reason: "answered \(status)")
    default: return SinkResult(.rejected, reason: "answered \(status)")
    }
}
