/// When a staged snapshot goes to delivery, relative to the write that records it: the one
/// policy that differs between the trackers that keep unsent snapshots (DESIGN, "the snapshot
/// outbox").
public enum HandOverPolicy: Sendable, Equatable {
    /// Write first, then send: a snapshot is handed over once the first write that started after
    /// it was staged has finished (landed or failed), or `timeoutMs` passed first (`<= 0`: no
    /// bound). The onboarding tracker's: a resumed run must never reuse a seq.
    case writeThenSend(timeoutMs: Int64)
    /// Send and write together: a snapshot is handed over when it is staged, and its write starts
    /// at the same moment. The paywall tracker's (paywall spec 10.2): a presentation is never
    /// resumed, so nothing needs to wait for a write.
    case sendAndWrite
}

/// How the write that had to record a staged snapshot ended, as reported to its hand-over.
public enum PersistResult: Sendable, Equatable {
    /// The write landed (or had nothing to write: persistence is off, or another store owns the key).
    case landed
    /// The write failed; the store reported it.
    case failed
    /// The write had not finished when the persist timeout passed.
    case timedOut
    /// Handed over when staged, without waiting for the write (``HandOverPolicy/sendAndWrite``).
    case sentBeforeWrite
}

/// The rules of a ``SnapshotOutbox``, as a pure machine: events in, actions out, no I/O, no
/// clock. The runtime carries out the actions on its store and scheduler.
///
/// - **Coalesced writes:** a write requested while another one is queued (not yet started)
///   joins it; the queued write builds its value when it starts, so it records every change
///   requested before that. At most one write of the outbox runs and at most one waits.
/// - **Ledger:** what the last landed write stored (`stored`, key → seq) and what the write under
///   way records (`writing`), so a tracker can tell whether a snapshot is on disk or on its way.
/// - **Hand-over:** per ``HandOverPolicy``.
/// - **Failures:** with `reportsEveryFailure` off, a failed write is reported only when it starts
///   a run of failures; a landed write ends the run.
public struct OutboxMachine: Sendable, Equatable {
    /// Inputs.
    public enum Event: Sendable, Equatable {
        /// A write of the latest state is requested; `ticket`, when given, is a snapshot staged
        /// with it, to hand over per the policy.
        case request(ticket: UInt64?)
        /// The queued write begins building its value: a request from here on may be missed by
        /// it, so it queues the next write. Given in the same critical section that reads the
        /// compose closure (a request between that read and ``writeStarted(records:)`` was
        /// otherwise never written).
        case composing
        /// The queued write started: its value is built; `records` is what it records
        /// (key → seq), `nil` when it skips (nothing written). Implies ``composing`` when that
        /// was not given.
        case writeStarted(records: [String: Int]?)
        /// The write under way finished.
        case writeFinished(landed: Bool)
        /// The persist timeout of `ticket` passed.
        case timerFired(ticket: UInt64)
        /// These entries are in storage already (read at launch), key → seq.
        case foundStored([String: Int])
        /// Storage holds exactly these entries (read at launch, or handed over by a predecessor).
        case storedIs([String: Int])
        /// Hold snapshot `seq` of `key` (`ticket`) until the storage covers it (``covers(key:seq:)``):
        /// handed over at once when it does already, else by the first landed write that makes it
        /// covered. Only the newest held snapshot of a key is kept.
        case hold(key: String, seq: Int, ticket: UInt64)
        /// A snapshot of `key` at `seq` left: an older one held is not worth sending any more.
        case dropHeld(key: String, olderThan: Int)
    }

    /// Outputs, to carry out in order.
    public enum Action: Sendable, Equatable {
        /// Queue a write on the store (it builds its value when its turn comes).
        case enqueueWrite
        /// Hand the snapshot of `ticket` to delivery.
        case handOver(ticket: UInt64, PersistResult)
        /// Start the persist timeout of `ticket`.
        case armTimer(ticket: UInt64, afterMs: Int64)
        /// Cancel the persist timeout of `ticket`.
        case cancelTimer(ticket: UInt64)
        /// Report the failed write (`storage`).
        case reportFailure
        /// Forget `ticket`: its snapshot is never handed over.
        case drop(ticket: UInt64)
    }

    /// A snapshot held until storage covers it.
    public struct Held: Sendable, Equatable {
        /// Its ticket.
        public var ticket: UInt64
        /// Its seq.
        public var seq: Int
    }

    /// The hand-over policy.
    public let policy: HandOverPolicy
    /// Whether every failed write is reported, or only the first of each run of failures.
    public let reportsEveryFailure: Bool

    /// Tickets waiting for the queued write; `nil` when no write is queued.
    public private(set) var queued: [UInt64]?
    /// Tickets waiting for the write under way; `nil` when none runs.
    public private(set) var running: [UInt64]?
    /// Tickets whose timer runs.
    public private(set) var timed: Set<UInt64> = []
    /// Key → seq, as of the last write that landed.
    public private(set) var stored: [String: Int] = [:]
    /// What the write under way records (`nil`: none, or one that skips).
    public private(set) var writing: [String: Int]?
    /// Snapshots held until storage covers them, per key (the newest only).
    public private(set) var held: [String: Held] = [:]
    /// Whether the last write failed (a run of failures is going on).
    public private(set) var failing = false
    /// Requests so far, and the writes they were coalesced into.
    public private(set) var requests = 0
    /// Writes started so far.
    public private(set) var writes = 0

    /// Creates a machine.
    public init(policy: HandOverPolicy, reportsEveryFailure: Bool) {
        self.policy = policy
        self.reportsEveryFailure = reportsEveryFailure
    }

    /// Whether the snapshot `seq` of `key` is neither stored nor recorded by the write under way
    /// (a write that failed left it out): it should be written again.
    public func isUnstored(key: String, seq: Int) -> Bool {
        (stored[key] ?? 0) < seq && (writing?[key] ?? 0) < seq
    }

    /// Whether neither what is stored nor what the write under way records holds `key` past
    /// `seq`: a state read back from either can never build snapshot `seq` of `key` again (the
    /// onboarding tracker's seq reservation; a key absent from a write constrains nothing).
    public func covers(key: String, seq: Int) -> Bool {
        (stored[key].map { seq <= $0 } ?? true) && (writing?[key].map { seq <= $0 } ?? true)
    }

    /// Applies `event` and returns the actions to carry out.
    public mutating func handle(_ event: Event) -> [Action] {
        var actions: [Action] = []
        switch event {
        case .request(let ticket):
            requests += 1
            var waiting: UInt64?
            if let ticket {
                switch policy {
                case .sendAndWrite:
                    actions.append(.handOver(ticket: ticket, .sentBeforeWrite))
                case .writeThenSend(let timeoutMs):
                    waiting = ticket
                    if timeoutMs > 0 {
                        timed.insert(ticket)
                        actions.append(.armTimer(ticket: ticket, afterMs: timeoutMs))
                    }
                }
            }
            if var q = queued {
                if let waiting { q.append(waiting) }
                queued = q
            } else {
                queued = waiting.map { [$0] } ?? []
                actions.append(.enqueueWrite)
            }
        case .composing:
            // From here on a new request queues the next write: this one may already miss it.
            if running == nil {
                running = queued ?? []
                queued = nil
            }
        case .writeStarted(let records):
            if running == nil {
                running = queued ?? []
                queued = nil
            }
            writing = records
            writes += 1
        case .writeFinished(let landed):
            if landed {
                if let w = writing { stored = w }
                failing = false
            } else {
                if reportsEveryFailure || !failing { actions.append(.reportFailure) }
                failing = true
            }
            writing = nil
            if landed {
                for key in held.keys.sorted() {
                    guard let h = held[key], covers(key: key, seq: h.seq) else { continue }
                    held[key] = nil
                    actions.append(.handOver(ticket: h.ticket, .landed))
                }
            }
            for t in running ?? [] {
                if timed.remove(t) != nil { actions.append(.cancelTimer(ticket: t)) }
                actions.append(.handOver(ticket: t, landed ? .landed : .failed))
            }
            running = nil
        case .foundStored(let entries):
            stored.merge(entries) { max($0, $1) }
        case .storedIs(let entries):
            stored = entries
        case .hold(let key, let seq, let ticket):
            if covers(key: key, seq: seq) {
                actions.append(.handOver(ticket: ticket, .landed))
                break
            }
            if let h = held[key] {
                guard h.seq < seq else {
                    actions.append(.drop(ticket: ticket))
                    break
                }
                actions.append(.drop(ticket: h.ticket))
            }
            held[key] = Held(ticket: ticket, seq: seq)
        case .dropHeld(let key, let seq):
            if let h = held[key], h.seq < seq {
                held[key] = nil
                actions.append(.drop(ticket: h.ticket))
            }
        case .timerFired(let ticket):
            guard timed.remove(ticket) != nil else { break }
            queued?.removeAll { $0 == ticket }
            running?.removeAll { $0 == ticket }
            actions.append(.handOver(ticket: ticket, .timedOut))
        }
        return actions
    }
}
