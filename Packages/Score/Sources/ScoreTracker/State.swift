import TrackerCore

/// A flush in progress; guarded by the client's lock.
final class Flight: @unchecked Sendable {
    let id: Int
    var waiters: [CheckedContinuation<Result<Void, ScoreError>, Never>] = []
    var selected: [QueuedEvent] = []
    var cursor = 0
    var batchLimit = ScoreClient.maxBatchEvents
    var sent = 0
    var failed = false
    var waitingPersist = false
    var waitingToken = false
    var tokenTimer: TimerToken?
    var budgetTimer: TimerToken?
    var backgroundTasks: [(AppLifecycleSource, BackgroundTaskID)] = []

    init(id: Int) { self.id = id }
}

/// A buffered anonymously-sent event, for replay.
struct ReplayEntry: Sendable {
    var eventId: String
    var timestampMs: Int64
    var requires: UInt8
    var bytes: [UInt8]
}

enum WriteOp {
    case add(QueuedEvent)
    case remove([String])
    case compact
}

/// Everything mutable of a client, behind one lock.
struct ClientState {
    // consent
    var consent: ConsentState
    var droppedByConsent = 0
    var droppedByCategory = [0, 0, 0]
    // queue
    var queue: [QueuedEvent] = []
    var noticeCount = 0
    var nextSeq: UInt64 = 1
    var shed = 0
    var expired = 0
    var invalid = 0
    var criticalLost = 0
    // identity
    var anonymousId: String
    var sessionId: String
    var userId: String?
    /// Bumped whenever `anonymousId`, `sessionId` or `userId` changes.
    var identityGeneration = 0
    /// The identity part of an envelope (see `ScoreClient.identityBytes`) and its generation.
    var identityBytes: [UInt8] = []
    var identityBytesGeneration = -1
    var linked: Set<String> = []
    var token: String?
    var provider: (@Sendable () async throws -> String?)?
    var providerRunning = false
    var providerGeneration = 0
    var lastSkip: LinkSkipReason?
    var replay: [ReplayEntry] = []
    // last flush
    var lastFlushAt: Int64?
    var lastFlushOk: Bool?
    var lastFlushSent = 0
    var consecutiveFailures = 0
    // persistence
    var writeOps: [WriteOp] = []
    var writerRunning = false
    var deadRecords = 0
    var identityDirty = false
    var identityWriterRunning = false
    // flushing
    var flight: Flight?
    var nextFlightId = 1
    // lifecycle
    var autoFlushMs: Int64?
    var autoFlushTimer: TimerToken?
    var inBackground = false
    var backgroundSinceMs: Int64?
    var binding: LifecycleBinding?

    init(consent: ConsentState, anonymousId: String, sessionId: String) {
        self.consent = consent
        self.anonymousId = anonymousId
        self.sessionId = sessionId
    }
}
