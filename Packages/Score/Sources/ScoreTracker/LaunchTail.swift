import Dispatch
import TrackerCore

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
    /// The ids queued by the launch's load (the head's and the newest segments'): a tail event
    /// with one of them is queued already (see `LaunchSplice.swift`).
    var loaded = EventIdSlots()
    /// Its events as the splice will queue them, counted from its seals before the splice (see
    /// ``TailCount``); `nil` until then, or when they could not be counted.
    var counted: TailCount?
    /// The count's first part, started beside the launch's load (see ``TailCountJob``); `nil`
    /// once taken (or for a tail built without one: ``TailCount/read(_:path:)`` counts it).
    var countJob: TailCountJob?
    /// Whether a step took the splice (the background step, or an `inspect()` that could not
    /// answer from ``counted``).
    var claimed = false

    /// Its first segment: a queued event located before it is before the tail.
    var first: Int { segments[0] }

    /// Whether ``counted`` still says what the splice will queue: nothing it decides on changed
    /// meanwhile (no category its events require withdrawn, the cap not reached).
    var countHolds: Bool {
        guard let c = counted else { return false }
        return withdrawn & c.requires == 0 && !capReached
    }

    /// Whether `e` lies before the tail (an event of the head).
    func isBefore(_ e: QueuedEvent) -> Bool {
        guard let location = e.location else { return false }
        return location.generation < first
    }
}

/// The tail's events as the splice will queue them (issue 35's "ready" at launch), counted from
/// the tail's seals without building its events: `inspect()` answers from it while the tail is
/// still unloaded, so that a launch is ready once the head is checked, whatever the queue's
/// depth. Exact: the seals' adds and removals in order with the removals of the segments after
/// the tail, as the splice's index applies them, less the events queued by the launch's load
/// already (the splice skips them); `nil` (not counted: `inspect()` waits for the splice) when
/// a seal does not read or an id is added twice while queued (the splice then reads the
/// segments' records one by one, which the count does not follow).
struct TailCount: Equatable, Sendable {
    /// The events the splice will queue.
    var live = 0
    /// The oldest of their timestamps (`nil` when none).
    var oldestMs: Int64?
    /// The OR of their required categories.
    var requires: UInt8 = 0

    /// The count of `tail` from its seals (oldest first, `nil` for one that did not read).
    static func of(_ tail: LazyTail, seals: [SegmentSeal?]) -> TailCount? {
        guard seals.count == tail.segments.count else { return nil }
        var counter = Counter(expected: tail.adds)
        for seal in seals {
            guard let seal else { return nil }
            for f in seal.frames { counter.take(f) }
        }
        return counter.finish(tail)
    }

    /// The count of `tail` from the seals of its segments' files (`path(n)`), each walked as it
    /// is read, never decoded whole (the same count as ``of(_:seals:)``).
    static func read(_ tail: LazyTail, path: (Int) -> String) -> TailCount? {
        guard var counter = take(segments: tail.segments, adds: tail.adds, path: path) else { return nil }
        return counter.finish(tail)
    }

    /// The count's first part: the seals of `segments` (oldest first, `adds` add records in all)
    /// taken in order, which needs nothing the launch's load finds (``Counter/finish(_:)`` then
    /// applies what it found); `nil` when a seal does not read. A launch runs it beside its load
    /// (``TailCountJob``).
    static func take(segments: [Int], adds: Int, path: (Int) -> String) -> Counter? {
        var counter = Counter(expected: adds)
        for n in segments {
            guard let (frame, frameStart) = SegmentSeal.readFrame(path: path(n)) else { return nil }
            var end = -1
            let whole = frame.withUnsafeBufferPointer { all in
                SegmentSeal.walk(
                    UnsafeBufferPointer(rebasing: all[AppendLog.frameOverhead...]), tables: { e, _, _, _ in end = e },
                    frame: { counter.take($0) })
            }
            guard whole, end == frameStart else { return nil }
        }
        return counter
    }

    /// The adds and removals of a tail's seals in order (see ``TailCount``): the adds in an
    /// array, found by id through an open-addressing table of their indexes (over the id's low
    /// word, which is random in a UUID), built for this one pass.
    struct Counter {
        private struct Entry {
            var hi: UInt64
            var lo: UInt64
            var timestampMs: Int64
            var requires: UInt8
            var removed: Bool
        }
        private var entries: [Entry] = []
        /// Index + 1 of an entry (0: empty); a removed entry stays in place (a later add of the
        /// same id takes its slot).
        private var table: [Int32]
        private let mask: Int
        /// An id added twice while queued: not counted.
        private var twice = false

        init(expected: Int) {
            var size = 1_024
            while size < expected * 2 { size <<= 1 }
            table = [Int32](repeating: 0, count: size)
            mask = size - 1
            entries.reserveCapacity(expected)
        }

        /// The slot of `id`'s entry, or the empty slot where it goes.
        @inline(__always)
        private func slot(_ hi: UInt64, _ lo: UInt64) -> Int {
            var i = Int(truncatingIfNeeded: ((lo ^ hi) &* 0x9E37_79B9_7F4A_7C15) >> 40) & mask
            return table.withUnsafeBufferPointer { t in
                entries.withUnsafeBufferPointer { e in
                    while t[i] != 0 {
                        let k = Int(t[i]) - 1
                        if e[k].lo == lo && e[k].hi == hi { return i }
                        i = (i + 1) & mask
                    }
                    return i
                }
            }
        }

        mutating func take(_ f: SegmentSeal.Frame) {
            guard !twice else { return }
            switch f {
            case .empty:
                return
            case .add(_, let a):
                let i = slot(a.hi, a.lo)
                if table[i] != 0 && !entries[Int(table[i]) - 1].removed {
                    twice = true
                    return
                }
                guard entries.count < Int(Int32.max) else {
                    twice = true
                    return
                }
                entries.append(Entry(hi: a.hi, lo: a.lo, timestampMs: a.timestampMs, requires: a.requires, removed: false))
                table[i] = Int32(entries.count)
                // More adds than the summaries said (the table's size): not counted.
                if entries.count * 2 > table.count { twice = true }
            case .remove(_, let r):
                for (hi, lo) in r { remove(hi, lo) }
            }
        }

        private mutating func remove(_ hi: UInt64, _ lo: UInt64) {
            let i = slot(hi, lo)
            if table[i] != 0 { entries[Int(table[i]) - 1].removed = true }
        }

        /// After the seals: the removals of the segments after the tail, then the count, less
        /// the events the launch's load queued already; `nil` for an id added twice.
        mutating func finish(_ tail: LazyTail) -> TailCount? {
            guard !twice else { return nil }
            for (hi, lo) in tail.laterRemovals { remove(hi, lo) }
            var out = TailCount()
            var oldest = Int64.max
            for e in entries where !e.removed && !tail.loaded.contains(e.hi, e.lo) {
                out.live += 1
                oldest = min(oldest, e.timestampMs)
                out.requires |= e.requires
            }
            if out.live > 0 { out.oldestMs = oldest }
            return out
        }
    }
}

/// The first part of a lazy launch's tail count (``TailCount/take(segments:adds:path:)``), started
/// as soon as the launch has chosen its tail, on a thread of the lowest priority while the launch
/// reads and checks the head: on a device with a processor free, the launch is ready after the
/// longer of the two rather than after both, and the thread never takes a processor from the
/// app or from the launch's first request. The launch takes the result (``result()``) before it
/// ends: when the thread has not started by then, the launch does the work itself (a thread of
/// this priority may wait long on a busy device); when it has, the launch waits for it. A launch
/// that falls back to reading every segment cancels the job (``cancel()``): a thread that has not
/// started on it does nothing.
final class TailCountJob: Sendable {
    private enum Phase {
        case pending
        case running
        case done(TailCount.Counter?)
    }
    private let phase = Locked<Phase>(.pending)
    private let finished = DispatchGroup()
    private let work: @Sendable () -> TailCount.Counter?

    /// Starts the job through `run`, which runs its closure once on another thread, or never
    /// (the launch then does the work in ``result()``).
    init(segments: [Int], adds: Int, path: @escaping @Sendable (Int) -> String, run: (@escaping @Sendable () -> Void) -> Void) {
        work = { TailCount.take(segments: segments, adds: adds, path: path) }
        finished.enter()
        run { [self] in runUnlessTaken() }
    }

    /// Does the work unless it was taken already (by the thread or by ``result()``).
    private func runUnlessTaken() {
        let mine = phase.withLock { p -> Bool in
            guard case .pending = p else { return false }
            p = .running
            return true
        }
        guard mine else { return }
        let counter = work()
        phase.withLock { $0 = .done(counter) }
        finished.leave()
    }

    /// Drops the job (a launch that reads every segment after all): a thread that has not
    /// started on it yet does nothing; one that has ends as it would have (it only reads seals).
    /// ``result()`` then gives `nil`.
    func cancel() {
        let mine = phase.withLock { p -> Bool in
            guard case .pending = p else { return false }
            p = .done(nil)
            return true
        }
        if mine { finished.leave() }
    }

    /// The seals taken (`nil` when one did not read): done here when no thread has started on
    /// them yet, else waited for.
    func result() -> TailCount.Counter? {
        runUnlessTaken()
        finished.wait()
        return phase.withLock { p in
            guard case .done(let counter) = p else { return nil }
            return counter
        }
    }
}
