/// The queue log's segment chain as a value: where an append goes and which segments a
/// reclamation deletes, decided without I/O (``SegmentedQueueLog`` carries the decisions out
/// under its lock). Tested directly (SC256).
struct SegmentChain: Equatable, Sendable {
    /// The segments' numbers, oldest first; the last is the newest, open for appending.
    private(set) var segments: [Int]
    /// The size at which the newest segment rolls.
    let segmentBytes: Int

    /// Where an append goes.
    enum Placement: Equatable, Sendable {
        /// Into the newest segment, `segment`.
        case newest(segment: Int)
        /// Into a new segment, `into`, created first: `from` (the newest until now) is full.
        case roll(from: Int, into: Int)
    }

    init(segments: [Int], segmentBytes: Int) {
        self.segments = segments
        self.segmentBytes = segmentBytes
    }

    /// The newest segment, if any.
    var newest: Int? { segments.last }

    /// Whether segment `n` is in the chain.
    func contains(_ n: Int) -> Bool { segments.contains(n) }

    /// Where an append of `recordCount` records goes when the newest segment holds
    /// `newestBytes` bytes: a new segment when the newest is at its bound (an empty append
    /// never rolls). `nil` for a chain with no segment (not opened).
    func place(recordCount: Int, newestBytes: Int) -> Placement? {
        guard let n = segments.last else { return nil }
        if newestBytes >= segmentBytes && recordCount > 0 { return .roll(from: n, into: n + 1) }
        return .newest(segment: n)
    }

    /// The next segment, created and now the newest (after ``place(recordCount:newestBytes:)``
    /// said roll, or for a rewrite of the whole queue).
    mutating func appendSegment() -> Int {
        let next = (segments.last ?? -1) + 1
        segments.append(next)
        return next
    }

    /// The oldest segments a reclamation deletes, in order: those before the first one holding a
    /// record of `pinned` (the segments of the live locations), below `bound` (the newest segment
    /// when they were taken), never the newest.
    func deletable(pinned: Set<Int>, below bound: Int?) -> [Int] {
        var out: [Int] = []
        for n in segments.dropLast() {
            if pinned.contains(n) { break }
            if let bound, n >= bound { break }
            out.append(n)
        }
        return out
    }

    /// A reclamation's plan past pinned segments (issue 35 item 2): every segment below `bound`
    /// (never the newest) holding no record of `pinned` is deleted, also one after a pinned
    /// segment, provided each pinned segment before the last deleted one is first compacted to
    /// its live records (`compact`, oldest first): a deleted segment's removals may concern
    /// events of an older segment, which must then no longer hold them. Without a dead segment
    /// after a pinned one this is ``deletable(pinned:below:)`` with nothing to compact.
    func reclaimPlan(pinned: Set<Int>, below bound: Int?) -> (compact: [Int], delete: [Int]) {
        var delete: [Int] = []
        for n in segments.dropLast() {
            if let bound, n >= bound { break }
            if !pinned.contains(n) { delete.append(n) }
        }
        guard let last = delete.last else { return ([], []) }
        let compact = segments.filter { $0 < last && pinned.contains($0) }
        return (compact, delete)
    }

    /// Segment `n`, which left the chain, could not be unlinked: back at its place.
    mutating func restore(_ n: Int) {
        guard !segments.contains(n) else { return }
        segments.insert(n, at: segments.firstIndex { $0 > n } ?? segments.count)
    }

    /// Segment `n` left the chain (before its file is unlinked).
    mutating func remove(_ n: Int) {
        segments.removeAll { $0 == n }
    }

    /// Segment `n`, which left the chain, could not be unlinked: back at the front (the
    /// segments older than it are gone).
    mutating func restoreOldest(_ n: Int) {
        segments.insert(n, at: 0)
    }

    /// Whether a segment other than the newest is numbered below `segment`.
    func hasSegment(before segment: Int) -> Bool {
        segments.count > 1 && segments[0] < segment
    }
}
