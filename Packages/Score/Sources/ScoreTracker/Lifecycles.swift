// The client's three background lifecycles besides the flush (`FlushMachine`): the start-up
// load, the queue writer and the queue log's sync. Each is a value with pure transitions: an
// event in, a decision out, no I/O, no clock, no lock (the client holds its lock around them,
// inside `ClientState`). The runtime (`QueuePersistence.swift`, `Startup.swift`) carries the decisions
// out; the machines are tested directly (`X_LifecycleMachineTests`).

/// The start-up load: not started, being read (by the step the constructor spawns, or by an
/// early `inspect()`), merged; a quick load is merged before its records' checksums are checked.
struct LoadMachine: Equatable {
    enum Phase: Equatable {
        case notStarted
        case reading
        /// Merged into the state. `quick`: by the quick load; `checking`: its records' check
        /// still runs (`inspect()` waits for it, and the queue is not compacted meanwhile).
        case merged(quick: Bool, checking: Bool)
    }

    /// What a caller that wants the load done does (see `ScoreClient.waitUntilLoaded()`).
    enum Claim: Equatable {
        /// Run it on this thread.
        case run
        /// Another caller runs it (or its check): wait for it.
        case wait
        /// Done.
        case done
    }

    private(set) var phase: Phase = .notStarted

    var loaded: Bool { if case .merged = phase { true } else { false } }
    var loadedQuickly: Bool { if case .merged(true, _) = phase { true } else { false } }
    var checkPending: Bool { if case .merged(_, true) = phase { true } else { false } }

    mutating func claim() -> Claim {
        switch phase {
        case .notStarted:
            phase = .reading
            return .run
        case .reading, .merged(_, true): return .wait
        case .merged(_, false): return .done
        }
    }

    /// The stored state is merged; `checking`: a quick load's records are checked next.
    mutating func merged(quick: Bool, checking: Bool) {
        phase = .merged(quick: quick, checking: quick && checking)
    }

    /// A quick load's check ended.
    mutating func checkEnded() {
        if case .merged(let quick, true) = phase { phase = .merged(quick: quick, checking: false) }
    }
}

/// The queue writer: one task at a time appends the backlog of write operations to the queue
/// log. When the backlog is empty it naps a few times (a burst of recording calls then only
/// appends to the backlog, no task is woken per call), then exits. A failed append stops it
/// until a retry timer (100 ms, doubling to 30 s).
///
/// Write operations are numbered in the order they are queued; the machine counts how many the
/// writer has written (appended, or found nothing to write for) and how many it has taken so far
/// (written, or in its hands). A *ticket* is such a count: whoever needs the operations queued
/// so far written (a flush waiting for its removal) takes ``ticket(backlog:)`` and is done once
/// ``written`` reaches it.
struct QueueWriterMachine {
    enum Phase: Equatable {
        case idle
        /// `naps`: naps taken since the backlog was last found non-empty.
        case running(naps: Int)
        /// A write failed: waiting for the retry timer.
        case backingOff
    }

    /// What the running writer does once its backlog is written.
    enum IdleStep: Equatable {
        /// Sync the appends first (due now), then look again.
        case syncFirst
        case nap(microseconds: Int)
        /// Exit; arm the sync timer for the unsynced appends when `armSyncTimerMs` is set.
        case exit(armSyncTimerMs: Int64?)
    }

    /// Nap lengths, in microseconds (see `ScoreClient.writerNapsUs`).
    let napsUs: [Int]
    private(set) var phase: Phase = .idle
    /// Whether the last append failed (a full disk, a read-only directory): a flush does not
    /// wait for events to be persisted meanwhile, nor for a delivered batch's removal.
    private(set) var failing = false
    /// Failed appends in a row.
    private(set) var failures = 0
    /// Whether the scheduler cannot pause (no naps then).
    private(set) var napsUnavailable = false
    /// Operations written (see the type's comment).
    private(set) var written = 0
    /// Operations taken: operation `taken + k` is the backlog's `k`th.
    private(set) var taken = 0
    /// The operations queued and not taken yet, in order.
    private(set) var backlog: [WriteOp] = []
    /// The index in `backlog` of its removal operation, if any (see ``queueRemoval(_:)``).
    private var pendingRemoval: Int?
    /// Events the writer is done with, released a few per recording call: the bytes of events
    /// now located on disk and the last references of events that left the queue. They were
    /// allocated on the recording thread; freeing them there rather than on the writer's thread
    /// keeps the two threads from contending for the allocator's lock (a recording call's
    /// slowest cases). The writer empties it itself when it goes idle.
    var dropLater: [QueuedEvent] = []
    /// Dead records in the log (removed events and removal records): a compaction is due when
    /// they pile up.
    var deadRecords = 0
    /// Whether a compaction's new file is being written off the writer's path (see
    /// `ScoreClient.compactOffThePath`): one at a time.
    var compacting = false
    /// A reclamation was asked for while one ran (refused: one at a time): asked again when that
    /// one ends, whatever it deleted (its live set may predate the removals that asked).
    var reclaimAsked = false
    /// A segment of the lazy launch's tail could not be read (`LaunchSplice.swift`): its events
    /// are only on disk, and nothing in memory keeps its segment, so no segment is deleted or
    /// compacted for the rest of the run (the next launch reads it again).
    var reclaimHeld = false

    init(napsUs: [Int]) { self.napsUs = napsUs }

    var running: Bool { if case .running = phase { true } else { false } }

    /// Work was queued: whether the caller must start the writer's task.
    mutating func claim(hasWork: Bool) -> Bool {
        guard hasWork, phase == .idle else { return false }
        phase = .running(naps: 0)
        return true
    }

    /// Queues an operation.
    mutating func queue(_ op: WriteOp) { backlog.append(op) }

    /// Queues the removal of persisted events: joined to the removal still waiting to be
    /// written, when there is one (one record and one allocation per write instead of one per
    /// event). Any place in the backlog is safe: the events' add records are already on disk.
    mutating func queueRemoval(_ ids: [CompactEventId]) {
        deadRecords += ids.count
        if let i = pendingRemoval, i < backlog.count, case .remove(var joined) = backlog[i] {
            backlog[i] = .compact  // placeholder while `joined` is uniquely held
            joined.append(contentsOf: ids)
            backlog[i] = .remove(joined)
        } else {
            pendingRemoval = backlog.count
            backlog.append(.remove(ids))
            deadRecords += 1
        }
    }

    /// Takes the whole backlog (the writer's task; see ``took(_:)``).
    mutating func takeBacklog() -> [WriteOp] {
        let ops = backlog
        backlog = []
        pendingRemoval = nil
        took(ops.count)
        return ops
    }

    /// An append failed: `ops` (the failed operations, then the rest of what the writer took)
    /// go back to the backlog's front, in order, numbered as before.
    mutating func putBack(_ ops: [WriteOp]) {
        backlog = ops + backlog
        pendingRemoval = nil
    }

    /// The start-up merge replaces what was queued before the load (nothing is written before).
    mutating func clearBacklog() {
        backlog = []
        pendingRemoval = nil
    }

    /// The writer took a non-empty backlog.
    mutating func tookWork() {
        if case .running = phase { phase = .running(naps: 0) }
    }

    /// The writer took a backlog of `count` operations (`0`: it found none).
    mutating func took(_ count: Int) {
        taken = written + count
        if count > 0 { tookWork() }
    }

    /// The writer is done with `count` more operations; returns ``written``.
    mutating func wrote(_ count: Int) -> Int {
        written += count
        return written
    }

    /// The ticket of the operations queued so far, `backlog` of them not taken yet.
    func ticket(backlog: Int) -> Int { taken + backlog }

    /// The backlog is empty. `unsynced`: appends wait for a sync, due in `syncWaitMs` (0 or
    /// less: now); `syncTimerArmed`: the idle writer's sync timer is armed. The caller arms the
    /// timer when told to (and records that it is armed).
    mutating func backlogEmpty(unsynced: Bool, syncWaitMs: Int64, syncTimerArmed: Bool) -> IdleStep {
        guard case .running(let naps) = phase else { return .exit(armSyncTimerMs: nil) }
        if unsynced && syncWaitMs <= 0 { return .syncFirst }
        // Still running while it naps: a recording call meanwhile only appends to the backlog.
        if !napsUnavailable && naps < napsUs.count { return .nap(microseconds: napsUs[naps]) }
        phase = .idle
        return .exit(armSyncTimerMs: unsynced && !syncTimerArmed ? syncWaitMs : nil)
    }

    /// A nap ended; `paused`: the scheduler really paused (else it cannot, and the writer stops
    /// napping).
    mutating func napEnded(paused: Bool) {
        guard case .running(let naps) = phase else { return }
        if paused {
            phase = .running(naps: naps + 1)
        } else {
            napsUnavailable = true
        }
    }

    /// The load found the store read-only: appends are expected to fail, and their first
    /// failure is not diagnosed again (the load was).
    mutating func knownFailing() { failing = true }

    /// An append succeeded.
    mutating func appended() {
        failing = false
        failures = 0
    }

    /// An append failed: returns whether it is the first of a run of failures (diagnosed once)
    /// and the retry delay.
    mutating func appendFailed(retryMs: Int64, retryMaxMs: Int64) -> (first: Bool, retryAfterMs: Int64) {
        let first = !failing
        failing = true
        failures += 1
        // The operations in the writer's hands go back to the backlog.
        taken = written
        phase = .backingOff
        return (first, min(retryMaxMs, retryMs << Int64(min(9, failures - 1))))
    }

    /// The retry timer fired: the writer may be started again.
    mutating func retryTimerFired() {
        if phase == .backingOff { phase = .idle }
    }
}

/// The queue log's sync: appends reach the file at once and are synced to the device
/// (`fsync`) within `intervalMs`, by a task of their own so that the writer goes on appending
/// meanwhile.
struct QueueSyncMachine: Equatable {
    let intervalMs: Int64
    /// Appends written and not yet covered by a sync that started after them.
    private(set) var unsynced = false
    /// When the last sync started.
    private(set) var syncedAtMs: Int64?
    /// Whether the idle writer's sync timer is armed.
    private(set) var timerArmed = false
    /// Whether a sync task runs, and whether appends written meanwhile want another sync.
    private(set) var running = false
    private(set) var again = false
    /// Whether the last sync failed (diagnosed once per run of failures).
    private(set) var failing = false

    init(intervalMs: Int64) { self.intervalMs = intervalMs }

    /// Records were appended (or the log compacted).
    mutating func appended() { unsynced = true }

    /// How long until a sync is due, at `now` (0 or less: due).
    func waitMs(now: Int64) -> Int64 {
        guard let last = syncedAtMs else { return 0 }
        return last + intervalMs - now
    }

    /// A sync of the unsynced appends is claimed at `now`: returns whether the caller starts
    /// the sync task (none runs; one running syncs again when it ends).
    mutating func claim(now: Int64) -> Bool {
        unsynced = false
        syncedAtMs = now
        if running {
            again = true
            return false
        }
        running = true
        return true
    }

    /// A sync ended: whether to diagnose its failure (the first of a run) and whether the task
    /// syncs again (appends came meanwhile); otherwise it ends.
    mutating func syncEnded(ok: Bool) -> (diagnose: Bool, syncAgain: Bool) {
        let diagnose = !ok && !failing
        failing = !ok
        if again {
            again = false
            return (diagnose, true)
        }
        running = false
        return (diagnose, false)
    }

    /// The idle writer armed the sync timer.
    mutating func armTimer() { timerArmed = true }

    /// The sync timer fired: whether to sync now (unless a running writer will: it syncs
    /// before it goes idle again).
    mutating func timerFired(writerRunning: Bool) -> Bool {
        timerArmed = false
        return unsynced && !writerRunning
    }
}
