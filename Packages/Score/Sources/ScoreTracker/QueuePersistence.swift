import Dispatch
import TrackerCore

#if canImport(Darwin)
    import Foundation
#elseif canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

// The persistence internals (split out of `ScoreClient.swift`, issue 35 item 6): the queue
// writer, the log's sync, space reclamation and the identity writer, and reading the stored queue.
extension ScoreClient {
    // MARK: - Internals: persistence

    /// Starts the background writers when they have work.
    func kickWriters(_ s: inout ClientState) {
        start(claimWriters(&s))
    }

    /// Which background writers a caller claimed (marked running) and must start.
    struct WriterStarts {
        var queue = false
        var identity = false
    }

    /// Marks the writers that have work and are not running as running (under the lock); the
    /// caller starts them with ``start(_:)``, after the lock when it can (starting one wakes a
    /// thread: no lock should be held meanwhile).
    func claimWriters(_ s: inout ClientState) -> WriterStarts {
        var w = WriterStarts()
        // Before the start-up load nothing is written: the log is not read yet, and the events
        // recorded meanwhile still carry the placeholder anonymous id.
        guard s.loaded else { return w }
        w.queue = s.writer.claim(hasWork: !s.writer.backlog.isEmpty)
        w.identity = s.identityWriter.claim()
        return w
    }

    func start(_ w: WriterStarts) {
        if w.queue { scheduler.spawnIO { [self] in await runQueueWriter() } }
        if w.identity {
            if let file = store as? FileScoreStore, scheduler is SystemScheduler {
                ScoreClient.syncThread.run { [self] in runIdentityWriterBlocking(file) }
            } else {
                scheduler.spawnIO { [self] in await runIdentityWriter() }
            }
        }
    }

    func runQueueWriter() async {
        // The writer takes the whole backlog of operations at once (a swap under the lock) and
        // writes it `writerBatch` operations per append, so a burst never holds a second copy
        // of the backlog's bytes and the lock is only ever held briefly.
        var pending: [WriteOp] = []
        var at = 0
        while true {
            if at >= pending.count {
                let now = clock.nowMs()
                let next: QueueWriterMachine.IdleStep?
                (pending, next) = state.withLock { s in
                    let ops = s.writer.takeBacklog()
                    if !ops.isEmpty { return (ops, nil) }
                    // Idle: appends left unsynced are synced now when due (then look again),
                    // otherwise by a timer.
                    let step = s.writer.backlogEmpty(
                        unsynced: s.sync.unsynced, syncWaitMs: s.sync.waitMs(now: now), syncTimerArmed: s.sync.timerArmed)
                    if case .exit(armSyncTimerMs: _?) = step { s.sync.armTimer() }
                    return (ops, step)
                }
                at = 0
                switch next {
                case nil:
                    break
                case .syncFirst?:
                    startQueueSync(now: now)
                    continue
                case .nap(let us)?:
                    let paused = await scheduler.pauseIO(microseconds: us)
                    state.withLock { $0.writer.napEnded(paused: paused) }
                    continue
                case .exit(let armSyncTimerMs)?:
                    if let wait = armSyncTimerMs {
                        scheduler.schedule(afterMs: wait) { [self] in
                            scheduler.spawnIO { [self] in await queueSyncTimerFired() }
                        }
                    }
                    releaseDropLaterOnExit()
                    return
                }
            }
            let end = min(pending.count, at + ScoreClient.writerBatch)
            let opCount = end - at
            var ops = Array(pending[at..<end])
            // Drop the backlog's hold on this batch (see `QueueWriterMachine.dropLater`).
            for k in at..<end { pending[k] = .remove([]) }
            at = end
            var toDrop: [QueuedEvent] = []
            var records: [[UInt8]] = []
            // Each added event with its encoding and record index (released after the
            // lock, not inside it).
            var added: [(QueuedEvent, [UInt8], Int)] = []
            var compact = false
            records.reserveCapacity(ops.count)
            added.reserveCapacity(ops.count)
            // Snapshot the adds' state, 16 at a time under the lock (short holds).
            var snapshot: [(Bool, [UInt8]?)] = []
            snapshot.reserveCapacity(ops.count)
            var c = 0
            while c < ops.count {
                state.withLock { _ in
                    var taken = 0
                    while c < ops.count && taken < 16 {
                        if case .add(let e) = ops[c] {
                            snapshot.append((e.inQueue, e.encoded))
                            if !e.inQueue { toDrop.append(e) }
                            taken += 1
                        }
                        c += 1
                    }
                }
            }
            var nextAdd = 0
            for op in ops {
                switch op {
                case .add(let e):
                    let (live, encoded) = snapshot[nextAdd]
                    nextAdd += 1
                    guard live else { continue }
                    let env = encoded ?? []
                    added.append((e, env, records.count))
                    records.append(QueueRecord.add(e, envelope: env))
                case .remove(let idList):
                    records.append(QueueRecord.remove(idList))
                case .compact:
                    compact = true
                }
            }
            var locations: [ScoreRecordLocation]?
            var appended = false
            if !records.isEmpty {
                do {
                    locations = try await store.appendQueueRecords(records)
                    appended = true
                } catch {
                    // Nothing of this append counts as written: its operations and the rest of
                    // the backlog go back to the front of the writer's backlog, in order, for a retry.
                    records = []
                    added = []
                    snapshot = []
                    writeFailed(retrying: ops + pending[at...], released: toDrop)
                    return
                }
                if locations?.count != records.count { locations = nil }
            }
            records = []
            var leftMeanwhile: [CompactEventId] = []
            var i = 0
            while i < added.count {
                let j = min(added.count, i + 16)
                state.withLock { _ in
                    for k in i..<j {
                        let (e, env, index) = added[k]
                        if let locations {
                            // On disk and readable back: keep only the location in memory (the
                            // bytes are released by a recording call, see `dropLater`).
                            e.location = locations[index]
                            toDrop.append(e)
                        } else {
                            e.encoded = env
                        }
                        e.persisted = true
                        if !e.inQueue { leftMeanwhile.append(e.id) }
                    }
                }
                i = j
            }
            added = []
            snapshot = []
            ops = []
            let flushes: FlushWakeups = state.withLock { s in
                _ = s.writer.wrote(opCount)
                if appended {
                    let recovered = s.storeFailing
                    s.writer.appended()
                    // The stored events held while writes failed can be sent again.
                    if recovered, s.periodic.everyMs != nil, s.periodic.timer == nil, hasAutoFlushWork(&s) { armAutoFlushIfIdle(&s) }
                }
                s.writer.dropLater.append(contentsOf: toDrop)
                if !leftMeanwhile.isEmpty { ScoreClient.logRemoval(&s, leftMeanwhile) }
                // Not while a quick load's check runs: it finds damaged events by their location.
                if !compact, !s.reclamationBlocked, s.writer.deadRecords > ScoreClient.compactionMinDead,
                    s.writer.deadRecords > ScoreClient.compactionDeadPerLive * s.queue.count
                {
                    compact = true
                }
                // A file store deletes whole segments: as soon as the oldest one can hold no
                // queued event (the oldest queued event lies in a later one), without waiting
                // for the dead records to pile up (a deletion is cheap: nothing is rewritten).
                if !compact, !s.reclamationBlocked, appended, let file = store as? FileScoreStore,
                    file.segments.hasSegmentBefore(s.queue.first.map { $0.location?.generation ?? Int.min } ?? Int.max)
                {
                    compact = true
                }
                // One compaction at a time: a later one is asked for again when it ends.
                if s.writer.compacting, compact {
                    s.writer.reclaimAsked = true
                    compact = false
                }
                if compact { s.writer.deadRecords = 0 }
                return writerProgressed(&s)
            }
            flushes.answer()
            toDrop = []
            // A file store's reclamation (deleting sent segments) runs off this path (appends go
            // on); any other store's compaction runs here, between appends.
            var compactedHere = false
            if compact, !compactOffThePath() {
                await compactLog()
                compactedHere = true
            }
            flushes.resume(self)
            // A compaction's rename is synced with the appends (see `FileScoreStore`).
            if appended || compactedHere {
                let now = clock.nowMs()
                let due = state.withLock { s in
                    s.sync.appended()
                    return s.sync.waitMs(now: now) <= 0
                }
                if due { startQueueSync(now: now) }
            }
        }
    }

    /// First retry of a failed queue-log write, in milliseconds (soon: a full disk often frees
    /// space within moments); each failure in a row doubles it up to ``writeRetryMaxMs``.
    static let writeRetryMs: Int64 = 100
    static let writeRetryMaxMs: Int64 = 30_000

    /// A queue-log append failed (ENOSPC, EROFS, EIO…): `ops` (the failed operations, then the
    /// rest of the writer's backlog) go back to the front of the writer's backlog unpersisted, and the
    /// writer stops until a retry timer (100 ms, doubling to 30 s) starts it again. Recording calls
    /// keep queueing meanwhile and a flush sends without waiting for them to be stored (they
    /// cannot be). Diagnosed once per run of failures.
    func writeFailed(retrying ops: some Collection<WriteOp>, released: [QueuedEvent]) {
        let (first, delay, flushes): (Bool, Int64, FlushWakeups) = state.withLock { s in
            s.writer.putBack(Array(ops))
            s.writer.dropLater.append(contentsOf: released)
            let (first, delay) = s.writer.appendFailed(retryMs: ScoreClient.writeRetryMs, retryMaxMs: ScoreClient.writeRetryMaxMs)
            // The removals cannot be written now: the flushes waiting for them go on, and the
            // one waiting for persistence sends from memory.
            return (first, delay, writerProgressed(&s))
        }
        flushes.answer()
        if first {
            diagnose(Diagnostic(code: "storage", message: "could not persist the queue; events stay in memory and writing is retried"))
        }
        scheduler.schedule(afterMs: delay) { [self] in
            state.withLock { s in
                s.writer.retryTimerFired()
                ScoreClient.probeStoreIfHolding(&s)
                kickWriters(&s)
            }
        }
        flushes.resume(self)
        releaseDropLaterOnExit()
    }

    /// The thread every client's queue-log `fsync` runs on in production (see
    /// ``startQueueSync(now:)``): one of its own, on every OS version, so that an `fsync` never
    /// blocks the writer's thread (appends go on meanwhile) nor a thread of Swift's shared pool.
    static let syncThread = SerialThread(name: "score.sync")

    /// Syncs the queue log's unsynced appends to the device apart from the writer: the writer
    /// goes on appending while an `fsync` runs, so an event reaches the file (and survives the
    /// app being killed) without waiting for the device. With the system scheduler and a
    /// ``FileScoreStore`` the sync runs on ``syncThread``; otherwise (a custom store, whose
    /// `syncQueue()` is async, or a test's scheduler) on a task of its own.
    func startQueueSync(now: Int64) {
        let start = state.withLock { $0.sync.claim(now: now) }
        guard start else { return }
        if let file = store as? FileScoreStore, scheduler is SystemScheduler {
            ScoreClient.syncThread.run { [self] in
                while true {
                    var ok = true
                    do { try file.syncNow() } catch { ok = false }
                    if !queueSyncEnded(ok: ok) { return }
                }
            }
        } else {
            scheduler.spawn { [self] in await runQueueSync() }
        }
    }

    func runQueueSync() async {
        while true {
            var ok = true
            do { try await store.syncQueue() } catch { ok = false }
            if !queueSyncEnded(ok: ok) { return }
        }
    }

    /// A queue-log sync ended: whether to sync again (appends came meanwhile).
    func queueSyncEnded(ok: Bool) -> Bool {
        // Not retried: after a failed fsync the system may already have dropped the pages.
        // Diagnosed once per run of failures (a sync may run every 50 ms).
        let (first, again) = state.withLock { $0.sync.syncEnded(ok: ok) }
        if first { diagnose(Diagnostic(code: "storage", message: "could not sync the queue log to the device")) }
        return again
    }

    /// The idle writer's sync timer: syncs unless a running writer will (it syncs before it
    /// goes idle again).
    func queueSyncTimerFired() async {
        let sync = state.withLock { s in s.sync.timerFired(writerRunning: s.writer.running) }
        if sync { startQueueSync(now: clock.nowMs()) }
    }

    /// Starts a ``FileScoreStore``'s space reclamation, when the store is one and every queued
    /// persisted event is located; returns whether it did. Runs on the queue writer, between
    /// appends, so every record written so far is accounted for: the live locations and the
    /// newest segment are taken here; the deletion of the oldest segments holding none of them
    /// (after a sync of the removals) runs on ``syncThread`` (a task of the scheduler's with a
    /// test's scheduler). Nothing is rewritten and no event moves: appends go on meanwhile.
    func compactOffThePath() -> Bool {
        guard let file = store as? FileScoreStore else { return false }
        let live: [ScoreRecordLocation]? = state.withLock { s in
            var out: [ScoreRecordLocation] = []
            out.reserveCapacity(s.queue.count)
            for e in s.queue where e.persisted {
                guard let location = e.location else { return nil }
                out.append(location)
            }
            s.writer.compacting = true
            return out
        }
        guard let live else { return false }
        let bound: Int?
        do {
            bound = try file.reclaimBound()
        } catch {
            compactionEnded(failed: true)
            return true
        }
        let finish: @Sendable () -> Void = { [self] in
            do {
                let deleted = try file.reclaim(live: live, before: bound)
                compactionEnded(failed: false, deletedSome: !deleted.isEmpty)
            } catch {
                compactionEnded(failed: true)
            }
        }
        if scheduler is SystemScheduler {
            ScoreClient.syncThread.run(finish)
        } else {
            scheduler.spawnIO { finish() }
        }
        return true
    }

    /// After the start-up load (and its check): asks the writer for a reclamation when a
    /// ``FileScoreStore`` holds a segment older than the oldest queued event's, which a launch
    /// with nothing to append would otherwise keep (a previous run killed after its last
    /// removals, before deleting the segments they emptied).
    func reclaimSegmentsIfDue() {
        guard let file = store as? FileScoreStore else { return }
        state.withLock { s in
            guard s.loaded, !s.reclamationBlocked,
                file.segments.hasSegmentBefore(s.queue.first.map { $0.location?.generation ?? Int.min } ?? Int.max)
            else { return }
            guard !s.writer.compacting else {
                s.writer.reclaimAsked = true
                return
            }
            s.writer.queue(.compact)
            kickWriters(&s)
        }
    }

    /// A reclamation begun by ``compactOffThePath()`` ended (it synced what it deleted itself).
    ///
    /// A reclamation asked for while this one ran was refused (one at a time), and the writes
    /// that could ask again may all be done: when one was refused meanwhile, or this one deleted
    /// something, the next is asked for here if a segment older than the oldest queued event's
    /// remains (SC287: the refused one's removals may be newer than this one's live set).
    func compactionEnded(failed: Bool, deletedSome: Bool = false) {
        let asked = state.withLock { s -> Bool in
            s.writer.compacting = false
            defer { s.writer.reclaimAsked = false }
            return s.writer.reclaimAsked
        }
        if failed { diagnose(Diagnostic(code: "storage", message: "could not reclaim the queue log's space")) }
        if deletedSome || (asked && !failed) { reclaimSegmentsIfDue() }
    }

    /// Rewrites the queue log with the queued events only.
    ///
    /// When every persisted event is located, the store compacts by location (bytes stay on
    /// disk). When some hold their bytes in memory (their append returned no locations), the
    /// located ones are read back and the whole queue is rewritten from memory: compacting by
    /// location alone would erase the in-memory events' records from the log.
    func compactLog() async {
        let snapshot: [(QueuedEvent, [UInt8]?, ScoreRecordLocation?)] = state.withLock { s in
            s.queue.compactMap { e in
                guard e.persisted else { return nil }
                // Located first: a located event may still hold bytes `dropLater` will release.
                if let location = e.location { return (e, nil, location) }
                if let bytes = e.encoded { return (e, bytes, nil) }
                return nil
            }
        }
        do {
            if !snapshot.isEmpty, snapshot.allSatisfy({ $0.1 == nil }) {
                let kept = snapshot.map(\.0)
                let locations = snapshot.map { $0.2! }
                guard let moved = try await store.compactQueue(keeping: locations), moved.count == kept.count else {
                    return
                }
                state.withLock { _ in
                    for (e, loc) in zip(kept, moved) { e.location = loc }
                }
                return
            }
            var records: [[UInt8]] = []
            records.reserveCapacity(snapshot.count)
            var readBack: [(QueuedEvent, [UInt8])] = []
            for (e, bytes, location) in snapshot {
                var envelope = bytes
                if envelope == nil, let location {
                    envelope = readEnvelope(location)
                    if envelope == nil, let moved = state.withLock({ _ in e.location }), moved != location {
                        envelope = readEnvelope(moved)
                    }
                }
                // An unreadable record stays as it is (dropped with a diagnostic when sent).
                guard let envelope else { continue }
                if bytes == nil { readBack.append((e, envelope)) }
                records.append(QueueRecord.add(e, envelope: envelope))
            }
            // The read-back bytes are held in memory before the rewrite makes their locations stale.
            state.withLock { _ in for (e, envelope) in readBack { e.encoded = envelope } }
            try await store.rewriteQueue(records)
            state.withLock { _ in for (e, _) in readBack { e.location = nil } }
        } catch {
            diagnose(Diagnostic(code: "storage", message: "could not compact the queue log"))
        }
    }

    func runIdentityWriter() async {
        while let bytes = nextIdentityBytes() {
            do { try await store.saveIdentity(bytes) } catch { identityWriteFailed() }
        }
    }

    /// ``runIdentityWriter()`` for a ``FileScoreStore`` with the system scheduler, on
    /// ``syncThread``: the identity's atomic write syncs twice (its file, then the directory),
    /// and must not hold the queue writer's thread meanwhile.
    func runIdentityWriterBlocking(_ file: FileScoreStore) {
        while let bytes = nextIdentityBytes() {
            do { try file.saveIdentityNow(bytes) } catch { identityWriteFailed() }
        }
    }

    /// The identity file's next contents, or `nil` (and the writer marked idle) when it is
    /// written.
    func nextIdentityBytes() -> [UInt8]? {
        state.withLock { s in
            guard s.identityWriter.take() else { return nil }
            var o = JSONObject()
            o.appendUnchecked("anonymousId", .string(s.anonymousId))
            o.appendUnchecked("userId", s.userId.map { .string($0) } ?? .null)
            o.appendUnchecked("linked", .array(s.linked.sorted().map { .string($0) }))
            return WireJSON.encode(.object(o))
        }
    }

    func identityWriteFailed() {
        diagnose(Diagnostic(code: "storage", message: "could not persist the identity"))
    }

    struct StoredIdentity {
        var anonymousId: String?
        var userId: String?
        var linked: Set<String> = []
        /// What was discarded as invalid (oversized or empty), for one diagnostic.
        var discarded: [String] = []
    }

    /// The stored identity, each value checked: an `anonymousId` that is not a lowercase UUID
    /// (damaged, oversized) and a `userId` that `identify` would reject are discarded (a new
    /// `anonymousId` is minted; the fan is anonymous until the next `identify`), and so is a
    /// linked pair holding one.
    static func parseIdentity(_ bytes: [UInt8]?) -> StoredIdentity {
        guard let bytes, let v = try? WireJSONDecoderShim.decode(bytes) else { return StoredIdentity() }
        var out = StoredIdentity()
        if let anon = v["anonymousId"]?.stringValue {
            // Section 2: a lowercase UUID (a flipped byte may still parse as a string).
            if IDs.isLowercaseUUID(anon) {
                out.anonymousId = anon
            } else {
                out.discarded.append("anonymousId")
            }
        }
        if let user = v["userId"]?.stringValue {
            if validUserId(user) { out.userId = user } else { out.discarded.append("userId") }
        }
        var droppedPairs = 0
        for pair in (v["linked"]?.arrayValue ?? []).compactMap(\.stringValue) {
            let parts = pair.split(separator: "\u{1F}", maxSplits: 1, omittingEmptySubsequences: false)
            if parts.count == 2, IDs.isLowercaseUUID(String(parts[0])), validUserId(String(parts[1])) {
                out.linked.insert(pair)
            } else {
                droppedPairs += 1
            }
        }
        if droppedPairs > 0 { out.discarded.append("\(droppedPairs) linked pair(s)") }
        return out
    }

    /// The loaded locations when `store` can actually read records back at them, else `nil` (the
    /// queued events then keep their envelopes in memory). A store that forwards `load()` to a
    /// ``FileScoreStore`` but answers `readQueueRecord(at:)` with `nil` (a wrapper that does not
    /// read back) hands over locations it cannot serve; trusting them dropped the whole queue
    /// after a relaunch. One record is read back and compared (one `pread`).
    static func verifiedLocations(_ contents: ScoreStoreContents, store: any ScoreStore) -> [ScoreRecordLocation]? {
        guard let locations = contents.queueLocations, locations.count == contents.queueRecords.count,
            let last = locations.last
        else { return nil }
        guard let back = try? store.readQueueRecord(at: last), back == contents.queueRecords[contents.queueRecords.count - 1] else {
            return nil
        }
        return locations
    }

    static func loadQueue(_ records: [[UInt8]], locations: [ScoreRecordLocation]?, into s: inout ClientState) {
        let located = locations?.count == records.count ? locations : nil
        var names = NameInterner()
        // Each add becomes its event at once; a later removal (or a second add of the same id)
        // only clears its slot.
        var events: [QueuedEvent?] = []
        events.reserveCapacity(records.count)
        var slot: [CompactEventId: Int] = [:]
        slot.reserveCapacity(records.count)
        for (i, r) in records.enumerated() {
            switch QueueRecord.scan(r, anonymousId: s.anonymousId) {
            case .add(let id, let name, let timestampMs, let sameAnonymous, let flags, let requires)?:
                let location = located?[i]
                let envelope: [UInt8]? = location == nil ? Array(r[3...]) : nil
                let e = QueuedEvent(
                    id: id, name: names.intern(name), timestampMs: timestampMs,
                    anonymousEpoch: sameAnonymous ? s.anonymousEpoch : QueuedEvent.otherAnonymous,
                    hasUserId: flags & 4 != 0, critical: flags & 1 != 0,
                    notice: flags & 2 != 0, requires: requires, encoded: envelope)
                e.location = location
                e.persisted = true
                if let k = slot[id] {
                    // The first add's place in the order, the last add's contents.
                    events[k] = e
                } else {
                    slot[id] = events.count
                    events.append(e)
                }
            case .remove(let ids)?:
                for id in ids {
                    if let k = slot.removeValue(forKey: id) { events[k] = nil }
                }
            case nil: break
            }
        }
        s.queue.reserveCapacity(slot.count)
        for case let e? in events {
            s.queue.append(e)
            if e.notice { s.noticeCount += 1 }
        }
        s.writer.deadRecords = records.count - s.queue.count
    }
}
