/// One snapshot on its way: the full payload and the `seq` it carries. A retry reuses both.
public struct Outbound<Payload: Sendable>: Sendable {
    /// Sequence number of the snapshot within its run (≥ 1).
    public let seq: Int
    /// The snapshot.
    public let payload: Payload

    /// Creates an outbound snapshot.
    public init(seq: Int, payload: Payload) {
        self.seq = seq
        self.payload = payload
    }
}

/// Backoff between retries of a transient answer: `min(maxDelay, initialDelay × factor^(n−1))`
/// for the n-th consecutive transient answer.
public struct RetryPolicy: Sendable, Equatable {
    /// Delay before the first retry, in whole milliseconds (what the delivery counts in).
    /// Default 1,000 ms.
    @available(*, deprecated, message: "use initialDelay (a TimeInterval, in seconds)")
    public var initialDelayMs: Int64 {
        get { initialMs }
        set { initialMs = newValue }
    }
    /// Multiplier per further retry. Default 2.
    public var factor: Double
    /// Ceiling on the delay, in whole milliseconds. Default 60,000 ms.
    @available(*, deprecated, message: "use maxDelay (a TimeInterval, in seconds)")
    public var maxDelayMs: Int64 {
        get { maxMs }
        set { maxMs = newValue }
    }
    var initialMs: Int64
    var maxMs: Int64

    /// Delay before the first retry, in seconds (rounded to whole milliseconds: see
    /// ``Milliseconds/from(seconds:)``). Default 1 s.
    public var initialDelay: TimeInterval {
        get { Milliseconds.seconds(initialMs) }
        set { initialMs = Milliseconds.from(seconds: newValue) }
    }
    /// Ceiling on the delay, in seconds (rounded to whole milliseconds). Default 60 s.
    public var maxDelay: TimeInterval {
        get { Milliseconds.seconds(maxMs) }
        set { maxMs = Milliseconds.from(seconds: newValue) }
    }

    /// Creates a policy (defaults: 1 s doubling up to 60 s). Durations are in seconds, rounded to
    /// whole milliseconds (``Milliseconds/from(seconds:)``).
    public init(initialDelay: TimeInterval = 1, factor: Double = 2, maxDelay: TimeInterval = 60) {
        self.initialMs = Milliseconds.from(seconds: initialDelay)
        self.factor = factor
        self.maxMs = Milliseconds.from(seconds: maxDelay)
    }

    /// Creates a policy from milliseconds: ``init(initialDelay:factor:maxDelay:)`` in seconds.
    @available(*, deprecated, message: "use init(initialDelay:factor:maxDelay:), in seconds (TimeInterval)")
    @_disfavoredOverload
    public init(initialDelayMs: Int64 = 1000, factor: Double = 2, maxDelayMs: Int64 = 60_000) {
        self.initialMs = initialDelayMs
        self.factor = factor
        self.maxMs = maxDelayMs
    }

    /// The delay after the `failures`-th consecutive transient answer (1-based).
    public func delayMs(afterFailures failures: Int) -> Int64 {
        let raw = Double(initialMs) * pow(factor, Double(max(0, failures - 1)))
        guard raw.isFinite, raw < Double(maxMs) else { return maxMs }
        return max(0, Int64(raw))
    }
}

private func pow(_ base: Double, _ exponent: Double) -> Double {
    var result = 1.0
    var n = Int(exponent)
    var b = base
    while n > 0 {
        if n & 1 == 1 { result *= b }
        b *= b
        n >>= 1
        if !result.isFinite { return result }
    }
    return result
}

/// The latest-snapshot delivery rules for one run, as a pure state machine.
///
/// Feed it events; it answers with the actions to carry out. ``DeliveryRuntime`` runs it on a
/// sink and a scheduler. The rules:
/// - one attempt in flight at a time; a newer snapshot replaces an unsent older one; a snapshot
///   whose seq is not above the pending one or the highest settled one is ignored;
/// - a new snapshot is attempted at once unless an attempt is in flight or a backoff runs;
/// - a transient answer (or no answer within the attempt timeout) schedules a retry after the
///   backoff; the retry sends the newest pending snapshot; an answer that settles (accepted,
///   ignored, rejected) resets the backoff and removes the snapshot;
/// - `flush` skips a running backoff; `close` skips it once and never schedules a retry again:
///   each pending snapshot gets one last attempt and stays pending if that fails.
public struct DeliveryMachine<Payload: Sendable>: Sendable {
    /// Inputs.
    public enum Event: Sendable {
        /// A new snapshot.
        case enqueue(Outbound<Payload>)
        /// The sink answered attempt `attempt`.
        case answered(attempt: UInt64, SinkResult)
        /// Attempt `attempt` got no answer within the attempt timeout.
        case attemptTimedOut(attempt: UInt64)
        /// The retry backoff ended.
        case retryTimerFired
        /// Attempt now, skipping any backoff.
        case flush
        /// Wind down: one last attempt per pending snapshot, never a retry timer again.
        case close
        /// Wind down without a final attempt of what was tried already: a pending snapshot that
        /// never had an attempt gets one (after the attempt in flight, if any); one that had an
        /// attempt gets none. Never a retry timer again.
        case closeUnattempted
        /// Stop for good: no attempt and no timer any more (the pending snapshot is kept).
        case stop
    }

    /// Outputs, to carry out in order.
    public enum Action: Sendable {
        /// Call the sink with this snapshot; report its answer as `.answered(attempt:)`.
        case send(attempt: UInt64, Outbound<Payload>)
        /// Start the attempt timeout timer; on expiry report `.attemptTimedOut(attempt:)`.
        case startAttemptTimer(attempt: UInt64, afterMs: Int64)
        /// Cancel the attempt timeout timer.
        case cancelAttemptTimer(attempt: UInt64)
        /// Start the backoff timer; on expiry report `.retryTimerFired`.
        case scheduleRetry(afterMs: Int64)
        /// Cancel the backoff timer.
        case cancelRetry
        /// The snapshot was settled for good.
        case settled(Outbound<Payload>, SinkResult)
        /// An attempt answered transient (for observers; the machine handles the retry).
        case transient(Outbound<Payload>, SinkResult)
        /// The pending snapshot changed (to persist it).
        case pendingChanged(Outbound<Payload>?)
        /// No attempt is in flight any more.
        case idle
    }

    /// Backoff policy.
    public let retry: RetryPolicy
    /// Bound on one attempt.
    public let attemptTimeoutMs: Int64

    /// The newest snapshot not yet settled.
    public private(set) var pending: Outbound<Payload>?
    /// The snapshot of the attempt in flight.
    public private(set) var inFlight: (attempt: UInt64, item: Outbound<Payload>)?
    /// Highest seq settled so far.
    public private(set) var settledSeq = 0
    /// Consecutive transient answers.
    public private(set) var failures = 0
    /// Whether a backoff timer runs.
    public private(set) var retryScheduled = false
    /// Whether `close` was received.
    public private(set) var closed = false
    /// Whether `stop` was received.
    public private(set) var stopped = false
    private var nextAttempt: UInt64 = 1
    /// Seqs that already had their one attempt after `close`.
    private var lastAttemptSeq = 0
    /// The highest seq attempted so far.
    private var highestAttemptedSeq = 0

    /// Creates a machine.
    public init(retry: RetryPolicy = RetryPolicy(), attemptTimeoutMs: Int64 = 30_000) {
        self.retry = retry
        self.attemptTimeoutMs = attemptTimeoutMs
    }

    /// Whether an attempt is in flight.
    public var isBusy: Bool { inFlight != nil }

    /// Applies `event` and returns the actions to carry out.
    public mutating func handle(_ event: Event) -> [Action] {
        var actions: [Action] = []
        switch event {
        case .enqueue(let item):
            if item.seq <= settledSeq { break }
            if let p = pending, item.seq <= p.seq { break }
            pending = item
            actions.append(.pendingChanged(item))
            if !retryScheduled { attempt(&actions) }
        case .answered(let id, let result):
            guard let flight = inFlight, flight.attempt == id else { break }
            actions.append(.cancelAttemptTimer(attempt: id))
            finish(flight.item, result, &actions)
        case .attemptTimedOut(let id):
            guard let flight = inFlight, flight.attempt == id else { break }
            finish(flight.item, SinkResult(.transient, reason: "timeout"), &actions)
        case .retryTimerFired:
            guard retryScheduled else { break }
            retryScheduled = false
            attempt(&actions)
        case .flush:
            cancelRetry(&actions)
            attempt(&actions)
        case .close:
            guard !closed else { break }
            closed = true
            // The attempt in flight, if any, counts as its snapshot's last attempt.
            lastAttemptSeq = inFlight?.item.seq ?? 0
            cancelRetry(&actions)
            attempt(&actions)
        case .closeUnattempted:
            guard !closed else { break }
            closed = true
            lastAttemptSeq = highestAttemptedSeq
            cancelRetry(&actions)
            attempt(&actions)
        case .stop:
            stopped = true
            cancelRetry(&actions)
        }
        return actions
    }

    private mutating func cancelRetry(_ actions: inout [Action]) {
        if retryScheduled {
            retryScheduled = false
            actions.append(.cancelRetry)
        }
    }

    private mutating func attempt(_ actions: inout [Action]) {
        guard !stopped, inFlight == nil, let item = pending else { return }
        if closed {
            // After close every snapshot gets exactly one attempt.
            guard item.seq > lastAttemptSeq else { return }
            lastAttemptSeq = item.seq
        }
        cancelRetry(&actions)
        highestAttemptedSeq = max(highestAttemptedSeq, item.seq)
        let id = nextAttempt
        nextAttempt += 1
        inFlight = (id, item)
        actions.append(.startAttemptTimer(attempt: id, afterMs: attemptTimeoutMs))
        actions.append(.send(attempt: id, item))
    }

    private mutating func finish(_ item: Outbound<Payload>, _ result: SinkResult, _ actions: inout [Action]) {
        inFlight = nil
        if result.outcome == .transient {
            actions.append(.transient(item, result))
            if closed {
                attempt(&actions)  // a newer snapshot handed over meanwhile still gets its one attempt
            } else {
                failures += 1
                if !stopped {
                    retryScheduled = true
                    actions.append(.scheduleRetry(afterMs: retry.delayMs(afterFailures: failures)))
                }
            }
        } else {
            failures = 0
            settledSeq = max(settledSeq, item.seq)
            if let p = pending, p.seq <= item.seq {
                pending = nil
                actions.append(.pendingChanged(nil))
            }
            actions.append(.settled(item, result))
            attempt(&actions)
        }
        if inFlight == nil { actions.append(.idle) }
    }
}
