import TrackerCore

/// A flush, from its start until its callers are answered; guarded by the client's lock.
final class Flight: @unchecked Sendable {
    let id: Int
    /// Where the flush is (see ``FlushMachine``); the fields below are the runtime's data.
    var machine: FlushMachine
    var waiters: [CheckedContinuation<Result<Void, ScoreError>, Never>] = []
    var selected: [QueuedEvent] = []
    var cursor = 0
    var sent = 0
    var tokenTimer: TimerToken?
    var budgetTimer: TimerToken?
    /// The timeout of the wait for the removal (``FlushMachine/Phase/awaitingRemoval(ticket:ok:)``).
    var removalTimer: TimerToken?
    var backgroundTasks: [(AppLifecycleSource, BackgroundTaskID)] = []
    /// Selected while the lazy launch's tail was unloaded (`LaunchTail.swift`): the best-effort
    /// events after the tail wait in `afterTail`, and join the selection after the tail's when it
    /// is spliced; `parkedForTail`: the selection ran out before that (the flush waits for it).
    var deferredForTail = false
    var afterTail: [QueuedEvent] = []
    var parkedForTail = false

    init(id: Int, machine: FlushMachine) {
        self.id = id
        self.machine = machine
    }

    /// The callers' answer and the background tasks, taken out of the flight: deliver it with
    /// ``FlightAnswer/deliver()`` (after the client's lock when it can).
    func takeAnswer(ok: Bool) -> FlightAnswer {
        let answer = FlightAnswer(
            result: ok ? .success(()) : .failure(.flushFailed("some events could not be delivered; they stay queued")),
            waiters: waiters, backgroundTasks: backgroundTasks)
        waiters = []
        backgroundTasks = []
        return answer
    }
}

/// A completed flush's answer to its callers (see ``Flight/takeAnswer(ok:)``).
struct FlightAnswer {
    let result: Result<Void, ScoreError>
    let waiters: [CheckedContinuation<Result<Void, ScoreError>, Never>]
    let backgroundTasks: [(AppLifecycleSource, BackgroundTaskID)]

    /// Completes the callers and ends the background tasks.
    func deliver() {
        for w in waiters { w.resume(returning: result) }
        for (source, task) in backgroundTasks { source.endBackgroundTask(task) }
    }
}

/// A buffered anonymously-sent event, for replay.
struct ReplayEntry: Sendable {
    var eventId: String
    var timestampMs: Int64
    var requires: UInt8
    var bytes: [UInt8]
    /// Where the identity sits in `bytes` (a replay copy edits it by offset).
    var layout: EnvelopeLayout
}

enum WriteOp {
    case add(QueuedEvent)
    case remove([CompactEventId])
    case compact
}

/// Everything mutable of a client, behind one lock.
struct ClientState {
    // consent
    var consent: ConsentState
    /// What `inspect()` reports as counts.
    var counts = QueueCounts()
    // queue
    var queue = EventQueue()
    var noticeCount = 0
    // identity
    var anonymousId: String
    /// Bumped with each new `anonymousId`: queued events remember the epoch they were recorded
    /// in, not the id itself (16 bytes less per event).
    var anonymousEpoch: UInt32 = 0
    var sessionId: String
    var userId: String?
    /// Bumped whenever `anonymousId`, `sessionId` or `userId` changes.
    var identityGeneration = 0
    /// The identity part of an envelope (see `ScoreClient.identityBytes`), encoded for the
    /// generation it holds.
    var identityCache: (generation: Int, bytes: [UInt8]) = (-1, [])
    var linked: Set<String> = []
    var tokens = TokenSource()
    var lastSkip: LinkSkipReason?
    var replay: [ReplayEntry] = []
    var lastFlush = FlushOutcome()
    // persistence
    /// The queue writer's lifecycle and data (its backlog, the log's dead records, …) and the
    /// log sync's (see `Lifecycles.swift`).
    var writer = QueueWriterMachine(napsUs: ScoreClient.writerNapsUs)
    var sync = QueueSyncMachine(intervalMs: ScoreClient.queueSyncIntervalMs)
    /// Whether the last queue-log write failed: the failed operations wait at the front of
    /// the writer's backlog for a retry, and a flush does not wait for events to be persisted
    /// meanwhile.
    var storeFailing: Bool { writer.failing }
    var writerRunning: Bool { writer.running }
    var identityWriter = IdentityWriterMachine()
    // flushing
    /// The flush in flight (sending).
    var flight: Flight?
    /// Flushes done sending whose callers wait for their removal to be written, oldest first
    /// (``FlushMachine/Phase/awaitingRemoval(ticket:ok:)``).
    var finishing: [Flight] = []
    var nextFlightId = 1
    /// The periodic flush and the lifecycle (see `ScoreClient.armAutoFlushIfIdle`).
    var periodic = PeriodicFlush()
    // start-up load (see `ScoreClient.loadStored()`)
    /// Where the load is (see ``LoadMachine``). Until it is merged nothing is written, sent
    /// or shown.
    var load = LoadMachine()
    var loaded: Bool { load.loaded }
    /// Whether the start-up load was the quick one (`QuickLoad.swift`; tests read it).
    var loadedQuickly: Bool { load.loadedQuickly }
    /// Whether a quick load's records are still being checked (`inspect()` waits for it).
    var checkPending: Bool { load.checkPending }
    /// Whether no segment may be deleted or compacted now: a quick load's check runs (it finds
    /// damaged events by their location), the lazy launch's tail is not spliced yet (nothing in
    /// memory keeps its segments), or a tail segment could not be read this run.
    var reclamationBlocked: Bool { load.checkPending || tail != nil || writer.reclaimHeld }
    /// The anonymous id for the events recorded before the load when the store holds none,
    /// minted by a `reset()` before the load (see `ScoreClient.reset()`).
    var fallbackAnonymousId: String?
    /// Categories withdrawn before the load: the stored events requiring one leave at the merge.
    var withdrawnBeforeLoad: UInt8 = 0
    /// Flushes asked for before the load, started after the merge.
    var flushBeforeLoad = PendingFlush()
    /// Background flushes asked for before the load.
    var backgroundBeforeLoad: [DeferredBackground] = []
    /// The lazy launch's tail while it is unloaded (`LaunchTail.swift`).
    var tail: LazyTail?

    init(consent: ConsentState, anonymousId: String, sessionId: String) {
        self.consent = consent
        self.anonymousId = anonymousId
        self.sessionId = sessionId
    }
}

/// Consent and the identity to stamp, as a recording call first reads them (see
/// `ScoreClient.view`).
final class RecordingView: Sendable {
    let consent: ConsentState
    let anonymousEpoch: UInt32
    let hasUserId: Bool
    /// The identity part of an envelope (see `EnvelopeWriter.identity`).
    let identity: [UInt8]
    /// Where the userId sits in `identity` (see ``EnvelopeLayout``); -1 if unknown.
    let userIdOffset: Int
    let generation: Int

    init(consent: ConsentState, anonymousEpoch: UInt32, hasUserId: Bool, identity: [UInt8], generation: Int) {
        self.consent = consent
        self.anonymousEpoch = anonymousEpoch
        self.hasUserId = hasUserId
        self.identity = identity
        self.userIdOffset = identity.withUnsafeBufferPointer { EnvelopeLayout.userIdOffset(inIdentity: $0) } ?? -1
        self.generation = generation
    }
}

/// The queued events in order.
///
/// Removing the first one (what a full queue does on every new event) moves a front index instead
/// of shifting the whole array; the dead front is cut off once ``frontSlack`` long, its references
/// handed to the caller's release list (see `QueueWriterMachine.dropLater`) rather than freed all at once.
struct EventQueue: RandomAccessCollection {
    /// How many removed events the front holds at most before it is cut off.
    static let frontSlack = 64

    private var storage: [QueuedEvent] = []
    private var head = 0

    init() {}

    /// A queue of `events`, in order.
    init(_ events: [QueuedEvent]) { storage = events }

    var startIndex: Int { head }
    var endIndex: Int { storage.count }
    subscript(i: Int) -> QueuedEvent { storage[i] }

    mutating func append(_ e: QueuedEvent) { storage.append(e) }
    /// Inserts `events` before index `i` (an index of this collection, or its end).
    mutating func insert(contentsOf events: [QueuedEvent], at i: Int) { storage.insert(contentsOf: events, at: i) }
    mutating func reserveCapacity(_ n: Int) { storage.reserveCapacity(n) }

    /// Removes the event at `i` (an index of this collection); a front cut-off moves the removed
    /// front's references to `released`.
    mutating func remove(at i: Int, releasing released: inout [QueuedEvent]) {
        guard i == head else {
            storage.remove(at: i)
            return
        }
        head += 1
        if head >= EventQueue.frontSlack || head == storage.count {
            released.append(contentsOf: storage[0..<head])
            storage.removeFirst(head)
            head = 0
        }
    }

    /// Removes the first `count` events (the front is cut off once it holds more removed events
    /// than the queue holds live ones, so draining the queue batch by batch stays linear).
    mutating func removeFirst(_ count: Int) {
        head += count
        if head == storage.count {
            storage.removeAll(keepingCapacity: true)
            head = 0
        } else if head >= EventQueue.frontSlack && head >= storage.count - head {
            storage.removeFirst(head)
            head = 0
        }
    }

    /// Removes every event matching `shouldRemove`.
    mutating func removeAll(where shouldRemove: (QueuedEvent) throws -> Bool) rethrows {
        if head > 0 {
            storage.removeFirst(head)
            head = 0
        }
        try storage.removeAll(where: shouldRemove)
    }
}
