import TrackerCore

/// The hand-over from the tracker disposed last on the storage key (<doc:HandOver>),
/// as an explicit state and pure transitions in the style of Core's `DeliveryMachine`: the
/// tracker keeps a ``Phase``, ``leftoverAnswered(_:accepted:_:)`` turns the predecessor's
/// leftover and the tracker's state into actions, and `adoptLeftover` only performs them.
enum HandoverMachine {
    /// Where the hand-over stands.
    enum Phase: Sendable {
        /// No predecessor handed anything over.
        case none
        /// The predecessor had the same destination: its run (if any) and outboxes are taken in;
        /// `leftoverPending` until its last attempts are answered.
        case accepted(HandedRun, leftoverPending: Bool)
        /// The predecessor had another destination: what it hands over is discarded.
        case refused(leftoverPending: Bool)

        /// The run the predecessor handed over (`.nothing` unless accepted).
        var handedRun: HandedRun {
            if case .accepted(let run, _) = self { return run }
            return .nothing
        }

        var isRefused: Bool {
            if case .refused = self { return true }
            return false
        }

        /// Whether the predecessor's last attempts are answered (true without a predecessor).
        var predecessorDone: Bool {
            switch self {
            case .none: true
            case .accepted(_, let pending), .refused(let pending): !pending
            }
        }

        /// The phase once the predecessor's leftover is answered.
        var leftoverAdopted: Phase {
            switch self {
            case .none: .none
            case .accepted(let run, _): .accepted(run, leftoverPending: false)
            case .refused: .refused(leftoverPending: false)
            }
        }
    }

    /// What the tracker knows when the predecessor's leftover is answered.
    struct Context: Sendable {
        var destinationChangedReported = false
        var settled: [String: Int] = [:]
        var outboxes: [String: Item] = [:]
        /// Outboxes held until the predecessor's last attempts are answered.
        var held: Set<String> = []
        var disposed = false
        /// With storage, a snapshot leaves only once a stored (or being written) state covers its
        /// seq (``mayLeave(_:storedRun:writing:)``).
        var hasStore = false
        /// The last finished write failed: only then can a snapshot be held (a write that has
        /// not finished yet never holds one past `persistTimeoutMs`, issue 29).
        var writeFailed = false
        var storedRun: StoredRunMark?
        var writing: StoredRunMark?
    }

    enum Action: Sendable {
        case diagnose(code: String, message: String)
        case destinationChangedReported
        /// The highest settled seq of a run is now this.
        case settled(String, Int)
        /// The predecessor's unsent snapshot becomes the run's outbox, held for now.
        case take(String, Item)
        /// An outbox already settled is dropped.
        case drop(String)
        /// Hand the outbox to its run's delivery.
        case deliver(String, Item)
        /// The run's delivery exists, but the snapshot waits for a write that covers its seq.
        case holdForStorage(String, Item)
        /// Nothing is held for the predecessor any more.
        case clearHeld
        case write
    }

    /// Whether `item` may go to delivery: no stored state known (landed or being written) could
    /// make a resumed run build its seq again (issue 14 item 5).
    static func mayLeave(_ item: Item, storedRun: StoredRunMark?, writing: StoredRunMark?) -> Bool {
        let id = item.payload.runId
        if let storedRun, !storedRun.covers(id, seq: item.seq) { return false }
        if let writing, !writing.covers(id, seq: item.seq) { return false }
        return true
    }

    /// The predecessor's last attempts are answered (<doc:HandOver>, S3 and X3).
    static func leftoverAnswered(_ left: Leftover, accepted: Bool, _ c: Context) -> [Action] {
        guard accepted else {
            guard !left.unsent.isEmpty, !c.destinationChangedReported else { return [] }
            return [
                .destinationChangedReported,
                .diagnose(
                    code: "destination-changed", message: "snapshots the previous tracker left for another destination are discarded unsent"
                ),
            ]
        }
        var out: [Action] = []
        var settled = c.settled
        for (id, seq) in left.settled.sorted(by: { $0.key < $1.key }) {
            let v = max(settled[id] ?? 0, seq)
            settled[id] = v
            out.append(.settled(id, v))
        }
        var outboxes = c.outboxes
        var held = c.held
        for (id, item) in left.unsent.sorted(by: { $0.key < $1.key }) {
            if let have = outboxes[id], have.seq >= item.seq { continue }
            outboxes[id] = item
            held.insert(id)
            out.append(.take(id, item))
        }
        var rewrite = false
        for id in held.sorted() {
            guard let item = outboxes[id] else { continue }
            if let s = settled[id], item.seq <= s {
                out.append(.drop(id))
                rewrite = true
                continue
            }
            guard !c.disposed else { continue }
            if c.hasStore && c.writeFailed && !mayLeave(item, storedRun: c.storedRun, writing: c.writing) {
                out.append(.holdForStorage(id, item))
            } else {
                out.append(.deliver(id, item))
            }
        }
        if !c.disposed { out.append(.clearHeld) }
        if rewrite { out.append(.write) }
        return out
    }
}
