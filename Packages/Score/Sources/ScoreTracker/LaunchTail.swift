/// The lazy launch (issue 35 item 3): a launch over many sealed segments reads the events of the
/// oldest ones (the head, what the first batches need) and of the unsealed newest ones, and
/// leaves the sealed segments between them unloaded (the tail) until a background step reads
/// them and splices their events into the queue at their place (`LaunchSplice.swift`).
///
/// Decided without I/O from the sealed segments' summaries (`SegmentSeal.Summary`), tested
/// directly (SC313). Every removal of every segment is known before anything is sent: a tail
/// segment's removal ids (its summary's) are applied to the head's events, and the removals of
/// the segments after the tail to the tail's events when it is spliced.
///
/// Anything that would need the tail's events at launch makes the launch read every segment as
/// before (``Fallback``); the rules that apply while the tail is unloaded are applied to it when
/// it is spliced (consent withdrawn meanwhile, retention, the queue cap), and the flush sends no
/// best-effort event located after the tail before it (FIFO).
struct LaunchTailPlan: Equatable, Sendable {
    /// The sealed segments whose events are read at launch, oldest first.
    var head: [Int]
    /// The sealed segments left unloaded, oldest first (the segments after the head).
    var tail: [Int]
    /// Their add records (an upper bound of their queued events).
    var tailAdds: Int

    /// Why a launch reads every segment (no tail).
    enum Fallback: Error, Equatable, Sendable {
        /// Fewer sealed segments than the head needs (nothing to leave unloaded).
        case nothingToDefer
        /// A sealed segment without a summary (a `SQI1` seal, none, or a damaged one).
        case noSummary(segment: Int)
        /// Consent was withdrawn before the load: the stored events requiring it leave at the
        /// merge.
        case consentWithdrawn
        /// A tail segment holds a critical event (critical events go first in every flush).
        case critical(segment: Int)
        /// A tail segment holds a `delivery_failed` notice (at most 100 are held: the oldest
        /// beyond are dropped at the merge).
        case notices(segment: Int)
        /// A tail segment holds an event past retention (it expires at the merge).
        case retention(segment: Int)
        /// The queue could reach its cap (every add counted, with the events recorded meanwhile
        /// and a margin for those recorded while the tail is read): the merge would shed.
        case cap
    }

    /// How many queued events the head holds at least (its segments' adds less those removed
    /// in the same segment): ten batches.
    static let defaultHeadEvents = 1_000
    /// The room the cap must leave for events recorded while the tail is unloaded.
    static let capMargin = 1_000

    /// What a launch needs besides the summaries.
    struct Inputs: Equatable, Sendable {
        var nowMs: Int64
        var retentionMs: Int64
        var maxQueueSize: Int
        /// Categories withdrawn before the load.
        var withdrawnBeforeLoad: UInt8 = 0
        /// Events recorded before the load (they join the queue at the merge).
        var recorded = 0
        var headEvents = LaunchTailPlan.defaultHeadEvents
    }

    /// The plan over the sealed segments (oldest first, each with its summary when it has one),
    /// or why every segment is read.
    static func plan(sealed: [(segment: Int, summary: SegmentSeal.Summary?)], _ inputs: Inputs) -> Result<LaunchTailPlan, Fallback> {
        var head: [Int] = []
        var headLive = 0
        var k = 0
        while k < sealed.count && headLive < inputs.headEvents {
            guard let m = sealed[k].summary else { return .failure(.noSummary(segment: sealed[k].segment)) }
            head.append(sealed[k].segment)
            headLive += m.adds - m.removedHere
            k += 1
        }
        guard k < sealed.count else { return .failure(.nothingToDefer) }
        guard inputs.withdrawnBeforeLoad == 0 else { return .failure(.consentWithdrawn) }
        var plan = LaunchTailPlan(head: head, tail: [], tailAdds: 0)
        var allAdds = 0
        for (n, summary) in sealed {
            guard let m = summary else { return .failure(.noSummary(segment: n)) }
            allAdds += m.adds
        }
        for (n, summary) in sealed[k...] {
            let m = summary!
            if m.critical > 0 { return .failure(.critical(segment: n)) }
            if m.notices > 0 { return .failure(.notices(segment: n)) }
            if m.adds > 0 && inputs.nowMs - m.oldestMs > inputs.retentionMs { return .failure(.retention(segment: n)) }
            plan.tail.append(n)
            plan.tailAdds += m.adds
        }
        guard fits(adds: allAdds + inputs.recorded, inputs) else { return .failure(.cap) }
        return .success(plan)
    }

    /// Whether `adds` events (an upper bound of the queue at the merge) leave the cap's margin.
    static func fits(adds: Int, _ inputs: Inputs) -> Bool {
        adds + capMargin <= inputs.maxQueueSize
    }
}

/// The tail while it is unloaded (see ``LaunchTailPlan``), in the client's state.
struct LazyTail: Sendable {
    /// Its segments, oldest first.
    var segments: [Int]
    /// Their add records.
    var adds: Int
    /// The anonymous id its events were recorded under (the stored one).
    var storedAnonymousId: String
    /// The removal ids of the segments after it (applied to its events when spliced).
    var laterRemovals: [(UInt64, UInt64)]
    /// Categories withdrawn while it was unloaded.
    var withdrawn: UInt8 = 0
    /// Whether the queue reached its cap (counting the tail's adds) while it was unloaded: the
    /// cap is applied when it is spliced.
    var capReached = false

    /// Its first segment: a queued event located before it is before the tail.
    var first: Int { segments[0] }

    /// Whether `e` lies before the tail (an event of the head).
    func isBefore(_ e: QueuedEvent) -> Bool {
        guard let location = e.location else { return false }
        return location.generation < first
    }
}
