import TrackerCore

// The next-batch file (issue 19: ready to send within 2 ms over 10,000 queued events).
//
// Any load that reads the whole queue log before its first request costs more than 2 ms at
// 10,000 events (the walk alone is 1.2 to 1.9 ms here). So when the app is in the background and
// the queue writer has nothing left to write, the writer also writes `queue.next` (0600, next to
// the log, atomically): where the records of the first batch the next flush would send are in the
// log (the selection's order: critical events first, then queue order; at most
// `ScoreClient.maxBatchEvents`), the log's fingerprint (size, modification time, checksum of its
// tail), and what the selection and the merge depended on (the consent, how many events and
// notices were queued, the oldest event's time). It holds no event's bytes.
//
// At launch the load step reads it before anything else. When the log's fingerprint is the same
// (nothing was appended, compacted or cut since), every record of the batch matches its checksum,
// and the launch would select the same batch, that batch is ready to go ("early"). When a flush
// is asked for before the load is merged, it starts with that batch at once (`startEarlyFlight`)
// while the load goes on; the early batch's events are the same objects the loaded queue then
// holds (`adoptEarly`), so the flush goes on after the merge as any flush does. The conditions,
// each checked when the flush starts (`earlyUsable`):
// - the consent is the one the file was written under, no category was withdrawn before the load
//   (its stored events leave at the merge) and no token provider is set (it must be consulted);
// - the merge would neither shed (the queue cap, the notices' cap) nor expire (retention) stored
//   events, and no critical event was recorded before the load (it would come first).
// Otherwise, or when the file is missing, damaged or stale, the launch loads as before.
//
// An answer to the early request that comes before the merge waits for it (`parkedAnswers`): its
// removals must go to the log the load opened, and only the merge says which events are queued.

/// What `queue.next` holds (see the comment at the top).
struct NextBatchHint: Equatable, Sendable {
    /// The log as the file describes it.
    var log: AppendLog.Fingerprint
    /// The events queued, the notices among them, and the oldest event's time.
    var queued: Int
    var notices: Int
    var oldestMs: Int64
    /// The consent the batch was selected under (`ConsentState.mask`).
    var consentMask: UInt8
    /// The frame offsets of the batch's add records, in the selection's order.
    var offsets: [Int]

    static let magic: [UInt8] = Array("SQNB".utf8)
    static let version: UInt8 = 1
    /// Magic, version, fingerprint, counts, consent, offset count, and the closing checksum.
    static let fixedBytes = 4 + 1 + 8 + 8 + 8 + 4 + 4 + 4 + 8 + 1 + 4 + 4

    /// The file's bytes: little-endian fields, a CRC-32 of everything before it last.
    func encode() -> [UInt8] {
        var b = NextBatchHint.magic
        b.reserveCapacity(NextBatchHint.fixedBytes + 8 * offsets.count)
        b.append(NextBatchHint.version)
        func put(_ v: UInt64, _ n: Int) { for k in 0..<n { b.append(UInt8(truncatingIfNeeded: v >> (8 * UInt64(k)))) } }
        put(UInt64(log.bytes), 8)
        put(UInt64(bitPattern: log.modifiedSeconds), 8)
        put(UInt64(bitPattern: log.modifiedNanoseconds), 8)
        put(UInt64(log.tailChecksum), 4)
        put(UInt64(queued), 4)
        put(UInt64(notices), 4)
        put(UInt64(bitPattern: oldestMs), 8)
        b.append(consentMask)
        put(UInt64(offsets.count), 4)
        for o in offsets { put(UInt64(o), 8) }
        put(UInt64(CRC32.checksum(b)), 4)
        return b
    }

    /// The hint `bytes` encode; `nil` for anything else (another version, a damaged or cut file).
    static func decode(_ bytes: [UInt8]) -> NextBatchHint? {
        guard bytes.count >= fixedBytes, Array(bytes[0..<4]) == magic, bytes[4] == version else { return nil }
        var at = 5
        func get(_ n: Int) -> UInt64 {
            var v: UInt64 = 0
            for k in 0..<n { v |= UInt64(bytes[at + k]) << (8 * UInt64(k)) }
            at += n
            return v
        }
        let size = get(8)
        let seconds = Int64(bitPattern: get(8))
        let nanoseconds = Int64(bitPattern: get(8))
        let tail = UInt32(get(4))
        let queued = Int(get(4))
        let notices = Int(get(4))
        let oldest = Int64(bitPattern: get(8))
        let consent = bytes[at]
        at += 1
        let count = Int(get(4))
        guard count > 0, count <= ScoreClient.maxBatchEvents, bytes.count == fixedBytes + 8 * count,
            size <= UInt64(Int.max), count <= queued
        else { return nil }
        var offsets: [Int] = []
        offsets.reserveCapacity(count)
        for _ in 0..<count {
            let o = get(8)
            guard o < size else { return nil }
            offsets.append(Int(o))
        }
        guard CRC32.checksum(Array(bytes[0..<at])) == UInt32(get(4)) else { return nil }
        return NextBatchHint(
            log: AppendLog.Fingerprint(
                bytes: Int(size), modifiedSeconds: seconds, modifiedNanoseconds: nanoseconds, tailChecksum: tail),
            queued: queued, notices: notices, oldestMs: oldest, consentMask: consent, offsets: offsets)
    }
}

/// A batch read from the next-batch file at launch, ready to go (see the comment at the top).
struct EarlyBatch: Sendable {
    var hint: NextBatchHint
    /// The batch's events, in the selection's order, holding their envelopes.
    var events: [QueuedEvent]
    /// The stored userId (stamped on the events that carry none, as after the merge).
    var storedUserId: String?
}

/// An answer to a request that came before the start-up load was merged (see `parkedAnswers`).
struct ParkedAnswer: Sendable {
    var flightId: Int
    var batch: [QueuedEvent]
    var encoded: [[UInt8]]
    var status: Int
}

extension ScoreClient {
    // MARK: - Writing the file (the queue writer, idle in the background)

    /// Whether the idle queue writer should write the next-batch file now: in the background,
    /// loaded and checked, no flush in flight, writing works, and the file is not already the
    /// log's current one. (`inout`: the state is read in place, never copied, under the lock.)
    func nextBatchDue(_ s: inout ClientState) -> Bool {
        s.inBackground && !s.nextBatchCurrent && s.loaded && !s.checkPending && s.flight == nil && !s.storeFailing
            && store is FileScoreStore
    }

    /// Whether a background task ending now is kept until the queue writer is done (see
    /// `ClientState.nextBatchTasks`): in the background with a file store, when the file is due or
    /// the writer runs (it may be writing the file: it ends the kept tasks when it has written it,
    /// and at the latest when it goes idle).
    func keepsTaskForNextBatch(_ s: inout ClientState) -> Bool {
        s.inBackground && (nextBatchDue(&s) || (s.writerRunning && store is FileScoreStore))
    }

    /// Ends the background tasks kept for the next-batch file (see `ClientState.nextBatchTasks`),
    /// outside the lock.
    func endNextBatchTasks() {
        let tasks = state.withLock { s in
            defer { s.nextBatchTasks = [] }
            return s.nextBatchTasks
        }
        for (source, id) in tasks { source.endBackgroundTask(id) }
    }

    /// The file to write for the queue as it is (under the lock, all its writes done), with the
    /// generation its offsets belong to; `nil` hint: remove the file (nothing to send, or an event
    /// of the batch is not on disk by location).
    func nextBatchSnapshot(_ s: inout ClientState) -> (NextBatchHint?, Int) {
        let limit = ScoreClient.maxBatchEvents
        var batch: [QueuedEvent] = []
        batch.reserveCapacity(limit)
        for e in s.queue where e.critical && allowed(e.requires, s.consent) {
            if batch.count == limit { break }
            batch.append(e)
        }
        if batch.count < limit {
            for e in s.queue where !e.critical && allowed(e.requires, s.consent) {
                if batch.count == limit { break }
                batch.append(e)
            }
        }
        guard let generation = batch.first?.location?.generation else { return (nil, 0) }
        var offsets: [Int] = []
        offsets.reserveCapacity(batch.count)
        for e in batch {
            guard e.persisted, !e.sending, let l = e.location, l.generation == generation else { return (nil, 0) }
            offsets.append(l.offset)
        }
        var oldest = Int64.max
        for e in s.queue where e.timestampMs < oldest { oldest = e.timestampMs }
        let hint = NextBatchHint(
            log: AppendLog.Fingerprint(bytes: 0, modifiedSeconds: 0, modifiedNanoseconds: 0, tailChecksum: 0),
            queued: s.queue.count, notices: s.noticeCount, oldestMs: oldest, consentMask: s.consent.mask, offsets: offsets)
        return (hint, generation)
    }

    // MARK: - Reading it at launch

    /// The load step's first move: reads the next-batch file and, when it is usable, keeps its
    /// batch ready, and starts the flush asked for meanwhile with it at once.
    func prepareEarlyBatch(_ file: FileScoreStore) {
        // The file's own conditions first: a batch the launch would not send is not read.
        guard state.withLock({ s in !s.loaded && s.flight == nil && s.provider == nil }),
            let (hint, records, identityBytes) = file.readNextBatch(accept: { h in state.withLock { earlyUsable($0, h) } })
        else { return }
        let identity = ScoreClient.parseIdentity(identityBytes)
        guard let anonymousId = identity.anonymousId, let events = ScoreClient.earlyEvents(hint, records, anonymousId) else {
            return
        }
        let start: (Int, [FlushMachine.Action])? = state.withLock { s in
            guard !s.loaded, s.flight == nil else { return nil }
            s.early = EarlyBatch(hint: hint, events: events, storedUserId: identity.userId)
            return s.flushBeforeLoad.requested ? startEarlyFlight(&s, waiter: nil) : nil
        }
        // On this thread: the request goes before the rest of the load.
        if let (id, after) = start { runAfterLock(id, after) }
    }

    /// The events of the batch's records (read as the quick load reads them, under the stored
    /// anonymous id); `nil` when a record is not an add record this SDK writes, an id comes twice,
    /// or an event is too large for any request.
    static func earlyEvents(_ hint: NextBatchHint, _ records: [[UInt8]], _ anonymousId: String) -> [QueuedEvent]? {
        var index = QuickIndex(anonymousId: anonymousId, epoch: 0)
        for (r, offset) in zip(records, hint.offsets) {
            guard r.count > 3, r[0] == 65, r.count - 3 + bodyOverhead <= maxBodyBytes else { return nil }
            // Checked by `readRecords` already; the index reads a checksum of remove records only.
            let ok = r.withUnsafeBufferPointer { index.visit(offset: offset, payload: $0, checksum: 0) }
            guard ok else { return nil }
        }
        guard index.resolve() else { return nil }
        var scratch = ClientState(consent: .none, anonymousId: anonymousId, sessionId: "")
        index.finish(into: &scratch)
        guard scratch.queue.count == records.count else { return nil }
        let events = Array(scratch.queue)
        for (e, r) in zip(events, records) { e.encoded = Array(r[3...]) }
        return events
    }

    /// Whether the launch would select the file's batch as its first one (see the comment at the top).
    func earlyUsable(_ s: ClientState, _ h: NextBatchHint) -> Bool {
        s.provider == nil && s.withdrawnBeforeLoad == 0 && s.consent.mask == h.consentMask
            && h.queued + s.queue.count < maxQueueSize && h.notices + s.noticeCount <= ScoreClient.maxNotices
            && clock.nowMs() - h.oldestMs <= retentionMs && !s.queue.contains(where: \.critical)
    }

    /// Starts a flush with the early batch, before the load is merged; `nil` when the batch is
    /// not usable now (the flush then waits for the merge, as without it).
    func startEarlyFlight(_ s: inout ClientState, waiter: CheckedContinuation<Result<Void, ScoreError>, Never>?)
        -> (Int, [FlushMachine.Action])?
    {
        guard let early = s.early, s.flight == nil else { return nil }
        s.early = nil
        guard earlyUsable(s, early.hint) else { return nil }
        let (machine, actions) = FlushMachine.start(needsPersist: false, hasProvider: false, batchLimit: ScoreClient.maxBatchEvents)
        let f = Flight(id: s.nextFlightId, machine: machine)
        s.nextFlightId += 1
        f.early = true
        s.earlyFlights += 1
        f.waiters = s.flushBeforeLoad.waiters
        if let waiter { f.waiters.append(waiter) }
        s.flushBeforeLoad = PendingFlush()
        f.selected = early.events
        s.earlyEvents = early.events
        s.earlyUserId = early.storedUserId
        s.flight = f
        return (f.id, runLocked(actions, &s, f))
    }

    // MARK: - The merge

    /// Puts the early batch's events in the loaded queue in place of the ones the load made for
    /// the same records (found by event id), taking their locations, or their bytes when the load
    /// kept those instead (a read-only log); an early event the load did not queue leaves (it
    /// cannot be: the log is the one the file described).
    static func adoptEarly(_ early: [QueuedEvent], into queue: inout EventQueue) {
        var byId: [CompactEventId: QueuedEvent] = [:]
        byId.reserveCapacity(early.count)
        var last = 0
        for e in early {
            byId[e.id] = e
            last = max(last, e.location?.offset ?? 0)
        }
        var i = queue.startIndex
        while i < queue.endIndex, !byId.isEmpty {
            let loaded = queue[i]
            // The stored events are in the log's order: past the batch's last offset, none is left.
            if let location = loaded.location, location.offset > last { break }
            if let e = byId.removeValue(forKey: loaded.id) {
                e.location = loaded.location
                e.encoded = loaded.location == nil ? loaded.encoded : nil
                queue.replace(at: i, with: e)
            }
            i += 1
        }
        for e in byId.values { e.inQueue = false }
    }

    /// After the merge: the early flight's selection goes on with the rest of the queue, as a
    /// flush started now would select it (critical events first); when some of those are not
    /// persisted yet, the flight waits for them before its next batch (persist before send).
    func completeEarlySelection(_ s: inout ClientState, _ f: Flight) {
        f.early = false
        let head = Set(f.selected.map { ObjectIdentifier($0) })
        var rest: [QueuedEvent] = []
        var critical = 0
        for e in s.queue where allowed(e.requires, s.consent) && !head.contains(ObjectIdentifier(e)) {
            if e.critical { critical += 1 }
            rest.append(e)
        }
        if critical > 0 && critical < rest.count { rest = rest.filter(\.critical) + rest.filter { !$0.critical } }
        if !s.storeFailing && rest.contains(where: { !$0.persisted }) { f.awaitsPersist = true }
        f.selected += rest
    }
}
