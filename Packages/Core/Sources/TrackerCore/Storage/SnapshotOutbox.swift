/// What one write of a ``SnapshotOutbox`` stores, built when its turn comes.
public struct OutboxWrite: Sendable {
    /// The value to store (or remove, or skip).
    public var value: StoreWrite
    /// What it records, key → seq (the outbox's ledger); `nil` when it skips or keeps no ledger.
    public var records: [String: Int]?

    /// Creates a write.
    public init(_ value: StoreWrite, records: [String: Int]?) {
        self.value = value
        self.records = records
    }

    /// Leaves the stored value as it is.
    public static let skip = OutboxWrite(.skip, records: nil)
}

/// The snapshot outbox of a tracker that keeps its unsent snapshots under one storage key (the
/// onboarding and paywall trackers): the coalesced write, the ledger of what is stored and what
/// is being written, and the hand-over of each staged snapshot to delivery per its
/// ``HandOverPolicy``. Its rules are ``OutboxMachine``'s; this runtime carries out its actions.
///
/// Every write goes through one ``SerialStore`` (in call order with the store's other
/// operations, the tracker's first read included). The value of a write is built by the
/// `compose` of the latest request, when the write starts, so it is always the latest state; a
/// tracker stores each snapshot's wire bytes as they are (see ``OutboxEntries``), never a JSON
/// tree re-encoded. Nothing here blocks or throws.
public final class SnapshotOutbox: Sendable {
    private struct State: Sendable {
        var machine: OutboxMachine
        var compose: (@Sendable () -> OutboxWrite)?
        var handOvers: [UInt64: @Sendable (PersistResult) -> Void] = [:]
        var timers: [UInt64: TimerToken] = [:]
        var nextTicket: UInt64 = 1
        var lastError = ""
        var observer: (@Sendable (Bool) -> Void)?
    }

    /// The store every write goes through (a tracker reads its stored state through it first).
    public let store: SerialStore
    private let scheduler: any TrackerScheduler
    private let onError: @Sendable (String) -> Void
    private let state: Locked<State>

    /// Creates an outbox over `storage` and `key` (see ``SerialStore/init(storage:key:scheduler:sharedQueue:onError:)``
    /// for `sharedQueue`). `onError` receives each failed write's description (never the stored
    /// value) per `reportsEveryFailure` (otherwise only the first of each run of failures), and
    /// each failed read of the store.
    public init(
        storage: any KeyValueStorage, key: String, scheduler: any TrackerScheduler, sharedQueue: Bool = false,
        policy: HandOverPolicy, reportsEveryFailure: Bool, onError: @escaping @Sendable (String) -> Void
    ) {
        let state = Locked(State(machine: OutboxMachine(policy: policy, reportsEveryFailure: reportsEveryFailure)))
        self.state = state
        self.scheduler = scheduler
        self.onError = onError
        // The store's errors: a write's is reported when the machine says so (`reportFailure`),
        // any other at once.
        // Its writes run on the outbox thread (`spawnOutbox`): never on the shared concurrency pool,
        // never behind Score's syncs.
        store = SerialStore(storage: storage, key: key, scheduler: scheduler, sharedQueue: sharedQueue, outboxThread: true) { message in
            if message.hasPrefix("write failed") {
                state.withLock { $0.lastError = message }
            } else {
                onError(message)
            }
        }
    }

    /// The hand-over policy.
    public var policy: HandOverPolicy { state.withLock { $0.machine.policy } }

    /// Requests a write of the latest state; `compose` builds it when the write starts (the
    /// latest request's is the one used). `handOver`, when given, is a staged snapshot's: it runs
    /// exactly once, per the policy (at once with ``HandOverPolicy/sendAndWrite``; after the
    /// write, or at the timeout, with ``HandOverPolicy/writeThenSend(timeoutMs:)``). Never blocks.
    public func request(
        compose: @escaping @Sendable () -> OutboxWrite,
        handOver: (@Sendable (PersistResult) -> Void)? = nil
    ) {
        let actions = state.withLock { s -> [OutboxMachine.Action] in
            s.compose = compose
            var ticket: UInt64?
            if let handOver {
                ticket = s.nextTicket
                s.handOvers[s.nextTicket] = handOver
                s.nextTicket += 1
            }
            return s.machine.handle(.request(ticket: ticket))
        }
        perform(actions)
    }

    /// Whether snapshot `seq` of `key` is neither stored (by the last write that landed) nor
    /// recorded by the write under way: a failed write left it out.
    public func isUnstored(key: String, seq: Int) -> Bool {
        state.withLock { $0.machine.isUnstored(key: key, seq: seq) }
    }

    /// Records that storage holds exactly `records` (key → seq): read at launch, or handed over
    /// by the tracker this one replaces.
    public func setStored(_ records: [String: Int]) {
        _ = state.withLock { $0.machine.handle(.storedIs(records)) }
    }

    /// What the last landed write stored and what the write under way records (`nil`: none).
    public var ledger: (stored: [String: Int], writing: [String: Int]?) {
        state.withLock { ($0.machine.stored, $0.machine.writing) }
    }

    /// See ``OutboxMachine/covers(key:seq:)``.
    public func covers(key: String, seq: Int) -> Bool {
        state.withLock { $0.machine.covers(key: key, seq: seq) }
    }

    /// Calls `body` after each write that wrote or removed the value (not one that skipped), once
    /// the ledger is updated and before the write's hand-overs: `true` when it landed.
    public func observeWrites(_ body: @escaping @Sendable (Bool) -> Void) {
        state.withLock { $0.observer = body }
    }

    /// Holds snapshot `seq` of `key` until storage covers it (see ``OutboxMachine/covers(key:seq:)``):
    /// `release` runs at once when it does already, else after the first landed write that makes
    /// it covered (before that write's hand-overs); a newer held snapshot of the key, or
    /// ``dropHeld(key:olderThan:)``, drops it (it never runs).
    public func hold(key: String, seq: Int, release: @escaping @Sendable () -> Void) {
        let actions = state.withLock { s -> [OutboxMachine.Action] in
            let ticket = s.nextTicket
            s.nextTicket += 1
            s.handOvers[ticket] = { _ in release() }
            return s.machine.handle(.hold(key: key, seq: seq, ticket: ticket))
        }
        perform(actions)
    }

    /// A snapshot of `key` at `seq` left for delivery: drops an older one held for storage.
    public func dropHeld(key: String, olderThan seq: Int) {
        let actions = state.withLock { $0.machine.handle(.dropHeld(key: key, olderThan: seq)) }
        perform(actions)
    }

    /// Records that snapshot `seq` of `key` is in storage already (an entry read at launch).
    public func foundStored(key: String, seq: Int) {
        _ = state.withLock { $0.machine.handle(.foundStored([key: seq])) }
    }

    /// Resolves once the store's operations queued so far have finished.
    public func idle() async { await store.idle() }

    /// Requests so far and the writes they were coalesced into (for tests and benchmarks).
    public var counts: (requests: Int, writes: Int) { state.withLock { ($0.machine.requests, $0.machine.writes) } }

    private func perform(_ actions: [OutboxMachine.Action]) {
        for action in actions {
            switch action {
            case .enqueueWrite:
                let skipped = Locked(true)
                store.enqueueSaveWith(
                    { [self] in
                        let compose = state.withLock { s in
                            _ = s.machine.handle(.composing)
                            return s.compose
                        }
                        let write = compose?() ?? .skip
                        let records: [String: Int]?
                        if case .skip = write.value { records = nil } else { records = write.records }
                        if case .skip = write.value {} else { skipped.withLock { $0 = false } }
                        let more = state.withLock { $0.machine.handle(.writeStarted(records: records)) }
                        perform(more)
                        return write.value
                    },
                    done: { [self] ok in
                        let (more, message, observer) = state.withLock { s in
                            (s.machine.handle(.writeFinished(landed: ok)), s.lastError, s.observer)
                        }
                        if !skipped.value { observer?(ok) }
                        perform(more, message: message)
                    })
            case .handOver(let ticket, let result):
                let body = state.withLock { $0.handOvers.removeValue(forKey: ticket) }
                body?(result)
            case .armTimer(let ticket, let afterMs):
                let token = scheduler.schedule(afterMs: afterMs) { [self] in
                    let more = state.withLock { s -> [OutboxMachine.Action] in
                        s.timers[ticket] = nil
                        return s.machine.handle(.timerFired(ticket: ticket))
                    }
                    perform(more)
                }
                // The write may have finished already (cancelling nothing): cancel it then.
                let stale = state.withLock { s -> Bool in
                    guard s.machine.timed.contains(ticket) else { return true }
                    s.timers[ticket] = token
                    return false
                }
                if stale { scheduler.cancel(token) }
            case .cancelTimer(let ticket):
                if let token = state.withLock({ $0.timers.removeValue(forKey: ticket) }) { scheduler.cancel(token) }
            case .reportFailure:
                break  // carried out with its message below
            case .drop(let ticket):
                _ = state.withLock { $0.handOvers.removeValue(forKey: ticket) }
            }
        }
    }

    private func perform(_ actions: [OutboxMachine.Action], message: String) {
        if actions.contains(.reportFailure) { onError(message) }
        perform(actions)
    }
}

/// The stored form of a map of unsent snapshots, built from each snapshot's wire bytes as they
/// are: `{"<key>":{"seq":<n>,"body":<wire bytes>},…}` in the given order, compact, the same bytes
/// `WireJSON` writes for that map (so values stored before keep reading the same).
public enum OutboxEntries {
    /// The compact JSON text of `entries`, each body spliced in as its wire bytes.
    public static func encode(_ entries: [(key: String, seq: Int, body: [UInt8])]) -> String {
        var out: [UInt8] = []
        out.reserveCapacity(entries.reduce(2) { $0 + $1.body.count + $1.key.utf8.count + 24 })
        out.append(UInt8(ascii: "{"))
        for (i, e) in entries.enumerated() {
            if i > 0 { out.append(UInt8(ascii: ",")) }
            out.append(contentsOf: WireJSON.encode(.string(e.key)))
            out.append(contentsOf: Array(#":{"seq":"#.utf8))
            out.append(contentsOf: Array(String(e.seq).utf8))
            out.append(contentsOf: Array(#","body":"#.utf8))
            out.append(contentsOf: e.body)
            out.append(UInt8(ascii: "}"))
        }
        out.append(UInt8(ascii: "}"))
        return String(decoding: out, as: UTF8.self)
    }
}
