import Dispatch
import TrackerCore

// The start-up load (issue 19): the constructor does no file I/O. It spawns one background step
// (the scheduler's I/O step) that reads the stored queue and identity and merges them into the
// state. Until the merge:
//
// - recording calls (`track`, `screen`, `identify`, `reset`, consent) run as usual on an
//   in-memory queue, stamped with a placeholder anonymous id (``ScoreClient/anonymousIdBeforeLoad``);
// - nothing is written (the writers are not started: the log is not read yet, and the identity
//   file must not be overwritten by an id nobody stored), nothing is sent (a flush asked for
//   meanwhile, by the app or by the lifecycle, waits and starts right after the merge), and
//   `inspect()` waits for the merge (it runs the load itself when the step has not started yet).
//
// The merge then makes the state exactly what the same calls made after the load would have
// made: the stored events first, then the ones recorded meanwhile, re-enqueued one by one (so
// the cap and the critical tier apply over both together); stored events whose category was
// withdrawn meanwhile removed; the events recorded before any `reset()` stamped with the stored
// anonymous id (or one minted now when none was stored) and, when they carry none, the stored
// userId; the stored identity kept unless `reset()` was called meanwhile, and a userId set by
// `identify` meanwhile winning over the stored one.
extension ScoreClient {
    /// The anonymous id events recorded before the start-up load carry until the merge replaces
    /// it (never written, sent or shown).
    static let anonymousIdBeforeLoad = "00000000-0000-0000-0000-000000000000"

    /// The background step the constructor spawns.
    func loadStoredIfUnclaimed() {
        if claimLoad() == .run { loadStored() }
    }

    /// Claims the start-up load (see ``LoadMachine/claim()``): a quick load's check still
    /// running is waited for too.
    private func claimLoad() -> LoadMachine.Claim {
        state.withLock { $0.load.claim() }
    }

    /// Returns once the start-up load is merged, running it on the calling thread when no step
    /// has claimed it yet (for `inspect()`).
    func waitUntilLoaded() {
        switch claimLoad() {
        case .done: return
        case .run: loadStored()
        case .wait: loadDone.wait()
        }
    }

    /// Reads the store and merges what it holds into the state (see the comment at the top).
    /// Run by the constructor's background step, or by an `inspect()` that found no step had
    /// started it.
    func loadStored() {
        var contents = ScoreStoreContents()
        var loadFailed = false
        var loadProtected = false
        // A file store's quick load (`QuickLoad.swift`), else the careful one.
        let mint = { [self] in state.withLock { $0.fallbackAnonymousId } ?? ids.newAnonymousId() }
        // The lazy launch (`LaunchTail.swift`): later sealed segments may be left unloaded (for
        // a load an `inspect()` runs too: it answers from the tail's count).
        let lazy = state.withLock { s in
            LaunchTailPlan.Inputs(
                nowMs: clock.nowMs(), retentionMs: retentionMs, maxQueueSize: maxQueueSize,
                withdrawnBeforeLoad: s.withdrawnBeforeLoad, recorded: s.queue.count)
        }
        // The lazy tail's count starts beside the load, on a thread of the lowest priority
        // (`TailCountJob`); under a test's scheduler the load does it itself, after the head.
        let countOn: (@escaping @Sendable () -> Void) -> Void =
            scheduler is SystemScheduler ? { IdleThread.run(named: "score.count", $0) } : { _ in }
        var quickly = (store as? FileScoreStore).flatMap {
            ScoreClient.loadQuickly($0, fallbackAnonymousId: mint, lazy: lazy, countOn: countOn)
        }
        if let (_, _, anon, indexed, tail) = quickly, tail != nil, let file = store as? FileScoreStore {
            // The merge would decide on the stored events (a cap, a notice cap, an expired
            // event): every segment is read (and checked) before it.
            let (recorded, notices) = state.withLock { s in (s.queue.count, s.noticeCount) }
            if mergeDecidesOnStoredFields(indexed, recorded: recorded, recordedNotices: notices, nowMs: clock.nowMs()) {
                tail?.countJob?.cancel()
                quickly = ScoreClient.loadQuickly(file, fallbackAnonymousId: { anon })
            }
        }
        var quick = quickly?.0
        let tail = quickly?.tail
        let identity: StoredIdentity
        let storedAnon: String
        var scratch: ClientState
        var checkedDamage: LoadedFrameDamage?
        if let (framed, quickIdentity, anon, indexed, _) = quickly {
            identity = quickIdentity
            storedAnon = anon
            scratch = indexed
            // When the merge would shed or expire stored events, their records are checked
            // first (see `mergeDecidesOnStoredFields`).
            let (recorded, notices) = state.withLock { s in (s.queue.count, s.noticeCount) }
            if mergeDecidesOnStoredFields(scratch, recorded: recorded, recordedNotices: notices, nowMs: clock.nowMs()) {
                checkedDamage = ScoreClient.damage(of: framed)
                if let d = checkedDamage { ScoreClient.removeDamaged(d, from: &scratch) }
                quick = nil
            }
        } else {
            do { contents = try store.load() } catch is StorageLocation.ProtectedDataUnavailable { loadProtected = true } catch {
                loadFailed = true
            }
            contents.queueLocations = ScoreClient.verifiedLocations(contents, store: store)
            identity = ScoreClient.parseIdentity(contents.identity)
            // The stored events, decoded outside the lock, as seen with the stored anonymous id.
            storedAnon = identity.anonymousId ?? mint()
            scratch = ClientState(consent: .none, anonymousId: storedAnon, sessionId: "")
            ScoreClient.loadQueue(contents.queueRecords, locations: contents.queueLocations, into: &scratch)
        }

        // A tail left unloaded: `inspect()` may wait for its splice (see `LaunchSplice.swift`).
        if tail != nil { tailDone.enter() }
        let (pendingFlush, background, starts) = state.withLock { s in
            s.load.merged(quick: quickly != nil, checking: quick != nil)
            return mergeLoaded(&s, scratch: scratch, contents: contents, identity: identity, storedAnon: storedAnon, tail: tail)
        }
        start(starts)
        var diagnostics: [Diagnostic] = []
        if loadFailed { diagnostics.append(Diagnostic(code: "storage", message: "could not read the stored queue; starting empty")) }
        if loadProtected {
            diagnostics.append(
                Diagnostic(
                    code: "storage",
                    message:
                        "the stored queue and identity are protected until the device is unlocked: they are left as they are for a later launch, and this one starts without them"
                ))
        }
        if contents.readOnly {
            diagnostics.append(
                Diagnostic(
                    code: "storage",
                    message:
                        "the queue can only be read (read-only storage): stored events are held until writing works again (their removal could not be recorded), new ones are sent from memory"
                ))
        }
        if !identity.discarded.isEmpty {
            diagnostics.append(
                Diagnostic(
                    code: "storage",
                    message: "the stored identity held invalid values, discarded: "
                        + identity.discarded.joined(separator: ", ")))
        }
        if contents.queueDamage.hasSkippedRegions {
            let d = contents.queueDamage
            diagnostics.append(ScoreClient.queueDamaged(bytes: d.skippedBytes, regions: d.skippedRegions))
        }
        if contents.queueDamage.tailBeyondOneRecord {
            diagnostics.append(ScoreClient.queueTailCut(bytes: contents.queueDamage.tornTailBytes))
        }
        if let d = checkedDamage { diagnostics.append(d.diagnostic) }
        guard let framed = quick else {
            for d in diagnostics { diagnose(d) }
            // `inspect()` waits until here: its caller sees the load's diagnostics too (a handler
            // that calls `inspect()` does not wait: the state is marked loaded).
            loadDone.leave()
            if let tail, let file = store as? FileScoreStore {
                // (The merge's rules were found to decide on the stored events after the plan:
                // the tail is spliced all the same.)
                startPending(pendingFlush, background)
                countTail(tail, file)
                spliceInBackground(file)
                return
            }
            reclaimSegmentsIfDue()
            startPending(pendingFlush, background)
            sealSegmentsFoundUnsealed()
            return
        }
        // After a quick load: the first batch may go while the records' checksums are checked.
        // `inspect()` waits for the check, so nothing that could call it runs on this thread
        // until then: the pending flushes start on the scheduler, and the diagnostics come after.
        if pendingFlush.requested || !background.isEmpty {
            scheduler.spawn { [self] in startPending(pendingFlush, background) }
        }
        if let damage = checkLoadedFrames(framed) { diagnostics.append(damage) }
        guard let tail, let file = store as? FileScoreStore else {
            finishQuickLoad(diagnostics)
            return
        }
        // The lazy launch's tail: counted from its seals, then the load ends (`inspect()`
        // answers from the count); it is read and spliced in a step of its own
        // (`LaunchSplice.swift`).
        countTail(tail, file)
        state.withLock { $0.load.checkEnded() }
        loadDone.leave()
        for d in diagnostics { diagnose(d) }
        spliceInBackground(file)
    }

    /// Counts the lazy launch's tail from its seals (``TailCount``), for `inspect()`: the seals
    /// were taken beside the load (``TailCountJob``, waited for here); what the load found (the
    /// ids it queued, the later removals) is applied now.
    private func countTail(_ tail: LazyTail, _ file: FileScoreStore) {
        var counted: TailCount?
        if let job = tail.countJob {
            if var counter = job.result() { counted = counter.finish(tail) }
        } else {
            counted = TailCount.read(tail) { file.segments.path($0) }
        }
        state.withLock { s in
            s.tail?.counted = counted
            s.tail?.countJob = nil
        }
    }

    /// Starts the step that reads and splices the lazy launch's tail (`LaunchSplice.swift`),
    /// unless an `inspect()` took it meanwhile.
    private func spliceInBackground(_ file: FileScoreStore) {
        if scheduler is SystemScheduler {
            ScoreClient.syncThread.run { [self] in
                if let t = claimSplice() { spliceAndFinish(t) }
            }
        } else {
            let hook = file.beforeSplice
            scheduler.spawnIO { [self] in
                await hook?()
                if let t = claimSplice() { spliceAndFinish(t) }
            }
        }
    }

    /// The end of a quick load that left no tail unloaded: its check done.
    private func finishQuickLoad(_ diagnostics: [Diagnostic]) {
        state.withLock { $0.load.checkEnded() }
        loadDone.leave()
        reclaimSegmentsIfDue()
        for d in diagnostics { diagnose(d) }
        sealSegmentsFoundUnsealed()
    }

    /// Seals the sealed segments the load found without a seal (a run killed before sealing
    /// them, or an earlier version's chain), for the next launch: on the sync thread (with the
    /// system scheduler), where the seals of rolled segments and the reclamations run too, so it
    /// never holds the load, the writer or an early `inspect()`, and never runs beside a
    /// reclamation that could rename a compacted file under it.
    func sealSegmentsFoundUnsealed() {
        guard let file = store as? FileScoreStore, file.segments.hasSegmentsToSeal else { return }
        let seal: @Sendable () -> Void = { file.segments.sealPending() }
        if scheduler is SystemScheduler {
            ScoreClient.syncThread.run(seal)
        } else {
            scheduler.spawnIO { seal() }
        }
    }

    /// Starts the flushes asked for before the load (the first starts one, the others join it)
    /// and attaches the background tasks given meanwhile.
    private func startPending(_ pendingFlush: PendingFlush, _ background: [DeferredBackground]) {
        if pendingFlush.requested {
            if pendingFlush.waiters.isEmpty { startFlush() }
            for w in pendingFlush.waiters { startFlush(waiter: w) }
        }
        for b in background { attachBackground(source: b.source, taskId: b.taskId, deadlineMs: b.deadlineMs) }
    }

    private func mergeLoaded(
        _ s: inout ClientState, scratch: ClientState, contents: ScoreStoreContents,
        identity: StoredIdentity, storedAnon: String, tail: LazyTail?
    )
        -> (PendingFlush, [DeferredBackground], WriterStarts)
    {
        // A `reset()` that ran after the read minted the id to use when none was stored.
        let storedAnon = identity.anonymousId ?? s.fallbackAnonymousId ?? storedAnon
        let recorded = Array(s.queue)
        let resetMeanwhile = s.anonymousEpoch != 0
        // Identity: the stored one, unless `reset()` replaced it meanwhile.
        // (After a `reset()` the stored events, recorded under the stored anonymous id, keep
        // the epoch 0 they were indexed with: not the current one.)
        if !resetMeanwhile {
            s.anonymousId = storedAnon
            if s.userId == nil { s.userId = identity.userId }
        }
        s.linked.formUnion(identity.linked)
        s.identityGeneration += 1
        publishView(&s)
        if identity.anonymousId == nil || !identity.discarded.isEmpty { s.identityWriter.changed() }

        // The queue: the stored events first, then the recorded ones one by one.
        s.queue = scratch.queue
        s.noticeCount = scratch.noticeCount
        s.writer.deadRecords = scratch.writer.deadRecords
        s.writer.clearBacklog()
        s.tail = tail
        // Withdrawn while the load ran: the tail's events leave when it is spliced.
        s.tail?.withdrawn |= s.withdrawnBeforeLoad
        if s.withdrawnBeforeLoad != 0 {
            let withdrawn = s.withdrawnBeforeLoad
            let gone = s.queue.filter { $0.requires & withdrawn != 0 }
            if !gone.isEmpty { removeFromQueue(&s, gone) }
        }
        for e in recorded where e.inQueue {
            let stamped = e.anonymousEpoch == 0 ? restamped(e, anonymousId: storedAnon, userId: identity.userId) : e
            enqueue(&s, stamped)
        }
        if contents.readOnly {
            // Diagnosed once, by the load: the failing writes that follow are not diagnosed again.
            s.writer.knownFailing()
            // The stored events are held until a write succeeds: probe for it.
            ScoreClient.probeStoreIfHolding(&s)
        }
        applyRetention(&s, now: clock.nowMs())
        if s.periodic.everyMs != nil && s.periodic.timer == nil && hasAutoFlushWork(&s) { armAutoFlushIfIdle(&s) }
        let pending = s.flushBeforeLoad
        s.flushBeforeLoad = PendingFlush()
        let background = s.backgroundBeforeLoad
        s.backgroundBeforeLoad = []
        return (pending, background, claimWriters(&s))
    }

    /// `e` (recorded before the load, before any `reset()`) with the stored anonymous id in
    /// place of the placeholder, and the stored userId when it carries none.
    private func restamped(_ e: QueuedEvent, anonymousId: String, userId storedUserId: String?) -> QueuedEvent {
        let addUser = !e.hasUserId ? storedUserId : nil
        var encoded = e.encoded
        var layout = e.layout
        if let bytes = encoded, let known = EnvelopeLayout.of(bytes, known: layout) {
            var (edited, moved) = EnvelopeBytes.replacingAnonymousId(bytes, known, with: anonymousId)
            if let addUser { edited = EnvelopeBytes.withUserId(edited, moved, addUser) }
            (encoded, layout) = (edited, moved)
        }
        return QueuedEvent(
            id: e.id, name: e.name, timestampMs: e.timestampMs, anonymousEpoch: e.anonymousEpoch,
            hasUserId: e.hasUserId || addUser != nil, critical: e.critical, notice: e.notice,
            requires: e.requires, encoded: encoded, layout: layout)
    }
}

/// Flushes asked for before the start-up load (see `ScoreClient.loadStored()`).
struct PendingFlush: Sendable {
    var requested = false
    var waiters: [CheckedContinuation<Result<Void, ScoreError>, Never>] = []
}

/// A background flush asked for before the start-up load: its background task and the end of
/// its budget, attached to the flush that starts after the merge.
struct DeferredBackground: Sendable {
    var source: AppLifecycleSource?
    var taskId: BackgroundTaskID?
    var deadlineMs: Int64
}
