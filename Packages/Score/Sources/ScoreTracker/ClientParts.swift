import TrackerCore

// The parts of `ClientState` that belong together (issue 35 item 6: the client's state as a few
// values, each with the transitions that change it, instead of one bag of fields): the counts
// `inspect()` reports, the last flush's outcome, the token and its provider, the identity file's
// writer and the periodic flush. Pure values: no I/O, no clock, no lock (the client holds its
// lock around them).

/// What the client counts for `inspect()`.
struct QueueCounts: Equatable {
    /// Events dropped because their consent was not granted, in all and per category
    /// (analytics, personalization, advertising: `ConsentCategory.allCases` order).
    var droppedByConsent = 0
    var droppedByCategory = [0, 0, 0]
    /// Events shed by the queue cap, expired by retention, dropped as invalid.
    var shed = 0
    var expired = 0
    var invalid = 0
    /// Critical events lost (shed or expired).
    var criticalLost = 0
}

/// The last completed flush, for `inspect()`.
struct FlushOutcome: Equatable {
    var at: Int64?
    var ok: Bool?
    var sent = 0
    /// Failed flushes in a row.
    var consecutiveFailures = 0

    /// A flush completed at `at`, having delivered `sent` events.
    mutating func record(ok: Bool, sent: Int, at: Int64) {
        self.at = at
        self.ok = ok
        self.sent = sent
        consecutiveFailures = ok ? 0 : consecutiveFailures + 1
    }
}

/// The last known token and the provider that refreshes it, consulted by one flush at a time
/// (single-flight: a flush that finds it running waits for the same answer).
struct TokenSource {
    var token: String?
    var provider: (@Sendable () async throws -> String?)?
    /// Whether the provider runs, and the number of its current run.
    private(set) var running = false
    private(set) var generation = 0

    /// A flush consults the provider: the run's number when the caller must start it (none
    /// runs), else `nil`.
    mutating func claim() -> Int? {
        guard provider != nil, !running else { return nil }
        running = true
        generation += 1
        return generation
    }

    /// Run `generation` answered `token` (`nil`: none, or it threw; the last token stays).
    mutating func finished(generation: Int, token: String?) {
        if generation == self.generation { running = false }
        if let token { self.token = token }
    }
}

/// The identity file's writer: one task at a time writes the latest identity; a change while
/// it runs makes it write again.
struct IdentityWriterMachine: Equatable {
    /// The identity changed since it was last taken for writing.
    private(set) var dirty = false
    private(set) var running = false

    /// The identity changed (identify, reset, a link, a load that minted or discarded one).
    mutating func changed() { dirty = true }

    /// Whether the caller must start the writer's task (work and none running).
    mutating func claim() -> Bool {
        guard dirty, !running else { return false }
        running = true
        return true
    }

    /// The running writer looks for work: whether to write the identity now (else it ends).
    mutating func take() -> Bool {
        guard dirty else {
            running = false
            return false
        }
        dirty = false
        return true
    }
}

/// The periodic flush and the app's lifecycle as the client sees it (see `FlushLifecycle.swift`).
struct PeriodicFlush {
    /// The period, when the periodic flush is on.
    var everyMs: Int64?
    /// The armed timer (only while there is work: an idle client has none).
    var timer: TimerToken?
    /// When the current period started: a timer armed after an idle spell fires on the
    /// period's next tick.
    var anchorMs: Int64 = 0
    var inBackground = false
    /// Since when the app is in the background (a new session after 30 minutes).
    var backgroundSinceMs: Int64?
    /// The lifecycle binding, when bound.
    var binding: LifecycleBinding?
}
