import TrackerCore

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

// The quick start-up load of a `FileScoreStore` (issue 19: ready to send within 2 ms over
// 10,000 queued events). Checking every record's checksum before anything is sent costs about
// as much as the rest of the load together, so the load runs in two steps:
//
// 1. Index (before the merge): the log is read in chunks and its frames are found by following
//    their length fields (`AppendLog.openFollowingLengths`); each add record's id, name,
//    timestamp, flags and required categories are read from its bytes as the chunk goes by
//    (`QuickIndex`), and each remove record is checked against its checksum before it is
//    applied. No copy of the file is kept: each event keeps its record's location. This step
//    gives up, and the careful load (`FileScoreStore.load()`, which checks every checksum and
//    repairs) runs instead, when the frames do not tile the file, when a record is not one this
//    SDK writes, when a remove record is damaged, when an add record holds a NUL byte (its
//    length was damaged and took in the frames after it), or when an event id is added twice
//    while queued: in each of those cases the careful load's answer could differ from the index's.
//    A sealed segment (no longer the newest) with an intact seal (`SegmentSeal`) is indexed from
//    its seal instead: its records are not read at all.
// 2. Check (after the merge, while the first batch may already be on its way): every frame's
//    checksum, except those of the segments indexed from their seal (checked when sealed; each
//    record is checked again when read back to be sent). An add record that fails it is damaged: its event leaves the queue, as the careful
//    load would have skipped it, and the `storage` diagnostic names the damaged regions, with the
//    careful load's text. `inspect()` waits for this step, and no compaction runs meanwhile (the
//    check finds the damaged events by their location). When the merge itself would decide on the
//    stored events' fields (shed them for a cap, expire them), the check runs before it instead.
//
// A record sent meanwhile is read back through `FileScoreStore.readQueueRecord(at:)`, which checks
// its checksum: a damaged one is never sent (it is dropped as unreadable).

/// Step 1's index of the stored queue, built frame by frame (see the comment at the top).
struct QuickIndex {
    private let anonymousId: QueueRecord.AnonymousIdBytes
    private let epoch: UInt32
    private var names = NameInterner()
    /// The add records' events, in order, each located as it was indexed; a removed one is
    /// marked as not in the queue.
    private var events: [QueuedEvent] = []
    /// The notices among the events still queued.
    private var notices = 0
    /// The add records' ids, in order, and the ids of the remove records with how many add
    /// records came before each: the id table is built from them once the walk is over
    /// (``resolve()``), so that its random accesses do not compete for the cache with the file's
    /// bytes streaming through it.
    private var addedIds: [(UInt64, UInt64)] = []
    private var removedIds: [(afterAdds: Int, hi: UInt64, lo: UInt64)] = []
    private var slot: EventIdSlots
    private var removed = 0
    private var frames = 0
    private var tailMark = 0

    /// An index for events compared with `anonymousId` (recorded under the client's
    /// `anonymousEpoch` `epoch` when it is theirs); ``expect(fileBytes:)`` sizes its
    /// tables.
    init(anonymousId: String, epoch: UInt32) {
        self.anonymousId = QueueRecord.AnonymousIdBytes(anonymousId)
        self.epoch = epoch
        self.slot = EventIdSlots()
    }

    /// Before the first frame: sizes the tables for a log of `fileBytes` bytes (all its
    /// segments; about one event per ``QuickIndex/bytesPerEventEstimate`` bytes: a log of
    /// smaller records grows them once).
    mutating func expect(fileBytes: Int) {
        guard frames == 0 else { return }
        let expected = fileBytes / QuickIndex.bytesPerEventEstimate
        slot = EventIdSlots(expected: expected)
        events.reserveCapacity(expected)
        addedIds.reserveCapacity(expected)
    }

    /// About the size of one add record of a typical event (the SDK's own envelope with a few
    /// props is 400 to 500 bytes).
    static let bytesPerEventEstimate = 400

    /// Takes in the frame at `location`; `false` when the careful load must run instead.
    mutating func visit(location: ScoreRecordLocation, payload r: UnsafeBufferPointer<UInt8>, checksum: UInt32) -> Bool {
        frames += 1
        // An empty frame holds no record (step 2 checks its checksum field).
        guard let kind = r.first else { return true }
        if kind == 65 && r.count > 3 {
            let b = UnsafeBufferPointer(rebasing: r[3...])
            // An envelope is JSON text: it holds no NUL byte, while every frame's length field
            // does (records are far below 16 MiB). A NUL means this frame's length was damaged
            // and took in the frames after it, which the careful load would find and keep.
            if memchr(b.baseAddress!, 0, b.count) != nil { return false }
            if let add = QueueRecord.canonicalAdd(b, anonymousId: anonymousId) {
                return append(
                    hi: add.hi, lo: add.lo, name: names.name(UnsafeBufferPointer(rebasing: b[add.name])), timestampMs: add.timestampMs,
                    sameAnonymous: add.sameAnonymous, flags: r[1], requires: r[2], location: location)
            }
        }
        if kind == 82 && CRC32.checksum(r) != checksum { return false }
        // A sealed segment's seal (`SegmentSeal`) or a compaction's padding read as a frame: no
        // event (its checksum is checked with the others after the merge).
        if kind == SegmentSeal.kind || kind == SegmentSeal.paddingKind { return true }
        switch QueueRecord.scan(r, anonymousId: anonymousId) {
        case .add(let id, let name, let timestampMs, let sameAnonymous, let flags, let requires)?:
            guard case .uuid(let hi, let lo) = id else { return false }
            return append(
                hi: hi, lo: lo, name: names.intern(name), timestampMs: timestampMs, sameAnonymous: sameAnonymous, flags: flags,
                requires: requires, location: location)
        case .remove(let ids)?:
            for case .uuid(let hi, let lo) in ids { removedIds.append((events.count, hi, lo)) }
            return true
        case nil:
            return false
        }
    }

    /// Takes in every frame of sealed segment `segment` from its seal (`SegmentSeal`): the same
    /// index as its frames give (``visit(location:payload:checksum:)``), from the seal's few
    /// bytes instead of the records. The seal record itself counts as a frame, as it does when
    /// the frames are followed.
    mutating func visit(seal: SegmentSeal, segment: Int) -> Bool {
        let same = seal.anonymousIds.map { anonymousId.utf8 == $0 }
        var names: [String] = []
        names.reserveCapacity(seal.names.count)
        for n in seal.names { names.append(self.names.intern(String(decoding: n, as: UTF8.self))) }
        frames += 1
        for f in seal.frames {
            frames += 1
            switch f {
            case .empty:
                continue
            case .add(let offset, let a):
                guard
                    append(
                        hi: a.hi, lo: a.lo, name: names[a.name], timestampMs: a.timestampMs, sameAnonymous: same[a.anonymousId],
                        flags: a.flags, requires: a.requires, location: ScoreRecordLocation(generation: segment, offset: offset))
                else { return false }
            case .remove(_, let ids):
                for (hi, lo) in ids { removedIds.append((events.count, hi, lo)) }
            }
        }
        return true
    }

    /// Takes in the removal ids of a sealed segment left unloaded (the lazy launch's tail, from
    /// its summary): they apply to the events indexed so far, as the segment's own removal
    /// records would.
    mutating func visit(removals ids: [(UInt64, UInt64)]) {
        for (hi, lo) in ids { removedIds.append((events.count, hi, lo)) }
    }

    /// Marks the end of the tail (see ``removalsSinceMark``).
    mutating func markTailEnd() { tailMark = removedIds.count }

    /// The removal ids taken in since ``markTailEnd()`` (those of the segments after the tail),
    /// before ``resolve()``.
    var removalsSinceMark: [(UInt64, UInt64)] {
        removedIds[min(tailMark, removedIds.count)...].map { ($0.hi, $0.lo) }
    }

    /// The event of an add record (``resolve()`` finds an id added twice).
    private mutating func append(
        hi: UInt64, lo: UInt64, name: String, timestampMs: Int64, sameAnonymous: Bool, flags: UInt8, requires: UInt8,
        location: ScoreRecordLocation
    ) -> Bool {
        addedIds.append((hi, lo))
        let e = QueuedEvent(
            id: .uuid(hi, lo), name: name, timestampMs: timestampMs,
            anonymousEpoch: sameAnonymous ? epoch : QueuedEvent.otherAnonymous,
            hasUserId: flags & 4 != 0, critical: flags & 1 != 0,
            notice: flags & 2 != 0, requires: requires, encoded: nil)
        e.persisted = true
        e.location = location
        if e.notice { notices += 1 }
        events.append(e)
        return true
    }

    /// After the walk: applies the adds and removes in the log's order to the id table; `false`
    /// when an id is added while it is queued already (an id added twice: the careful load must
    /// run instead). A remove of an id not queued is ignored.
    mutating func resolve() -> Bool {
        var r = 0
        for (k, id) in addedIds.enumerated() {
            while r < removedIds.count && removedIds[r].afterAdds == k {
                applyRemove(removedIds[r].hi, removedIds[r].lo)
                r += 1
            }
            guard slot.insert(id.0, id.1) else { return false }
        }
        while r < removedIds.count {
            applyRemove(removedIds[r].hi, removedIds[r].lo)
            r += 1
        }
        addedIds = []
        removedIds = []
        return true
    }

    private mutating func applyRemove(_ hi: UInt64, _ lo: UInt64) {
        if let k = slot.remove(hi, lo) {
            events[k].inQueue = false
            if events[k].notice { notices -= 1 }
            removed += 1
        }
    }

    /// The ids of the events queued (after ``resolve()``).
    var queuedIds: EventIdSlots { slot }

    /// Whether an event with id `id` is queued (after ``resolve()``).
    func isQueued(_ id: CompactEventId) -> Bool {
        guard case .uuid(let hi, let lo) = id else { return false }
        return slot.contains(hi, lo)
    }

    /// The indexed events still queued, in order, and the dead frames (after ``resolve()``; as
    /// ``finish(into:)`` without a state).
    mutating func finishEvents() -> (events: [QueuedEvent], dead: Int) {
        var queued = events
        events = []
        if removed > 0 { queued.removeAll { !$0.inQueue } }
        return (queued, frames - queued.count)
    }

    /// Puts the indexed events into `s`, which holds none (as
    /// ``ScoreClient/loadQueue(_:locations:into:)`` would with the same records): the array
    /// itself when no event was removed.
    mutating func finish(into s: inout ClientState) {
        var queued = events
        events = []
        if removed > 0 { queued.removeAll { !$0.inQueue } }
        s.queue = EventQueue(queued)
        s.noticeCount = notices
        s.writer.deadRecords = frames - s.queue.count
    }
}

/// One copy of each distinct event name, shared by the events a load makes that carry it.
struct NameInterner {
    private var interned: [String: String] = [:]
    private var last = ""
    private var lastBytes: [UInt8] = []

    /// The name whose UTF-8 bytes are `bytes`: the previous name when they are the same (no
    /// string is built), else ``intern(_:)``'s.
    mutating func name(_ bytes: UnsafeBufferPointer<UInt8>) -> String {
        let same =
            lastBytes.count == bytes.count
            && lastBytes.withUnsafeBufferPointer { previous in
                bytes.isEmpty || memcmp(previous.baseAddress!, bytes.baseAddress!, bytes.count) == 0
            }
        return same ? last : intern(String(decoding: bytes, as: UTF8.self))
    }

    /// `text`, or the copy already kept of it (small strings live inline: only longer ones are
    /// shared); remembered as the previous name.
    mutating func intern(_ text: String) -> String {
        if text == last { return last }
        var kept = text
        if text.utf8.count > 15 {
            if let known = interned[text] { kept = known } else { interned[text] = text }
        }
        last = kept
        lastBytes = Array(kept.utf8)
        return kept
    }
}

/// Event ids (canonical UUIDs, as two words) to their index in ``QuickIndex``. Open addressing
/// over one word per slot (a 32-bit fingerprint of the id and the index), so that the table of
/// 10,000 ids fits in a core's cache: a probe that meets a fingerprint checks the whole id in
/// `ids`, kept in index order.
struct EventIdSlots {
    /// `fingerprint << 32 | (index + 1)`; 0: empty; ``removed``: a removed id.
    private var slots: [UInt64] = []
    private var ids: [(UInt64, UInt64)] = []
    private var used = 0
    private var shift = 0
    private static let removed = UInt64(UInt32.max) << 32

    /// A table sized for `expected` ids.
    init(expected: Int = 0) {
        var bits = 10
        while (1 << bits) * 5 < expected * 8 { bits += 1 }
        slots = [UInt64](repeating: 0, count: 1 << bits)
        shift = 64 - bits
        ids.reserveCapacity(expected)
    }

    @inline(__always)
    private static func fingerprint(_ hi: UInt64, _ lo: UInt64) -> UInt64 {
        // Never all ones (the removed mark's fingerprint).
        UInt64(UInt32(truncatingIfNeeded: hi ^ (lo >> 32)) & 0xFFFF_FFFE)
    }

    private mutating func grow() {
        let old = slots
        slots = [UInt64](repeating: 0, count: old.count * 2)
        shift -= 1
        used = 0
        for slot in old where slot != 0 && slot != EventIdSlots.removed {
            let k = Int(slot & 0xFFFF_FFFF) - 1
            place(ids[k].0, ids[k].1, k)
        }
    }

    /// Puts index `k` of an id known to be absent.
    private mutating func place(_ h: UInt64, _ l: UInt64, _ k: Int) {
        let mask = slots.count - 1
        let shift = self.shift
        slots.withUnsafeMutableBufferPointer { t in
            var i = Int(truncatingIfNeeded: (l &* 0x9E37_79B9_7F4A_7C15) >> UInt64(shift))
            while t[i] != 0 && t[i] != EventIdSlots.removed { i = (i + 1) & mask }
            t[i] = EventIdSlots.fingerprint(h, l) << 32 | UInt64(k + 1)
        }
        used += 1
    }

    /// Adds the id as the next index (`count` so far); `false` when it is already there.
    mutating func insert(_ h: UInt64, _ l: UInt64) -> Bool {
        if (used + 1) * 8 > slots.count * 5 { grow() }
        let mask = slots.count - 1
        let shift = self.shift
        let f = EventIdSlots.fingerprint(h, l)
        let k = ids.count
        let found: Bool = ids.withUnsafeBufferPointer { known in
            slots.withUnsafeMutableBufferPointer { t in
                var i = Int(truncatingIfNeeded: (l &* 0x9E37_79B9_7F4A_7C15) >> UInt64(shift))
                var reuse = -1
                while t[i] != 0 {
                    if t[i] == EventIdSlots.removed {
                        if reuse < 0 { reuse = i }
                    } else if t[i] >> 32 == f, known[Int(t[i] & 0xFFFF_FFFF) - 1] == (h, l) {
                        return true
                    }
                    i = (i + 1) & mask
                }
                if reuse >= 0 {
                    i = reuse
                    used -= 1  // counted again below
                }
                t[i] = f << 32 | UInt64(k + 1)
                return false
            }
        }
        guard !found else { return false }
        used += 1
        ids.append((h, l))
        return true
    }

    /// Whether the id is there.
    func contains(_ h: UInt64, _ l: UInt64) -> Bool {
        let mask = slots.count - 1
        let f = EventIdSlots.fingerprint(h, l)
        var i = Int(truncatingIfNeeded: (l &* 0x9E37_79B9_7F4A_7C15) >> UInt64(shift))
        while slots[i] != 0 {
            if slots[i] != EventIdSlots.removed, slots[i] >> 32 == f, ids[Int(slots[i] & 0xFFFF_FFFF) - 1] == (h, l) { return true }
            i = (i + 1) & mask
        }
        return false
    }

    /// Removes the id; its index, or `nil` when it is not there.
    mutating func remove(_ h: UInt64, _ l: UInt64) -> Int? {
        let mask = slots.count - 1
        let shift = self.shift
        let f = EventIdSlots.fingerprint(h, l)
        return ids.withUnsafeBufferPointer { known in
            slots.withUnsafeMutableBufferPointer { t -> Int? in
                var i = Int(truncatingIfNeeded: (l &* 0x9E37_79B9_7F4A_7C15) >> UInt64(shift))
                while t[i] != 0 {
                    if t[i] != EventIdSlots.removed, t[i] >> 32 == f {
                        let k = Int(t[i] & 0xFFFF_FFFF) - 1
                        if known[k] == (h, l) {
                            t[i] = EventIdSlots.removed
                            return k
                        }
                    }
                    i = (i + 1) & mask
                }
                return nil
            }
        }
    }
}

extension ScoreClient {
    /// Step 1 for a file store (see the comment at the top): the identity, then the queue log
    /// indexed as it is read. `nil` when the careful load must run.
    /// With `lazy` (the launch's inputs), sealed segments may be left unloaded (`LaunchTail.swift`):
    /// they are returned as the tail, with the removal ids of the segments after them. When the
    /// events read show that the plan does not hold (the queue could reach its cap), the load runs
    /// again without it.
    static func loadQuickly(
        _ store: FileScoreStore, fallbackAnonymousId: () -> String, lazy: LaunchTailPlan.Inputs? = nil,
        countOn: @escaping (@escaping @Sendable () -> Void) -> Void = { $0() }
    )
        -> (FileScoreStore.FramedContents, StoredIdentity, storedAnon: String, scratch: ClientState, tail: LazyTail?)?
    {
        guard store.opensQuickly else { return nil }
        let identity = parseIdentity(store.loadIdentity())
        // Protected files (a launch before the first unlock): the careful load says so.
        guard !store.storedDataProtected else { return nil }
        let storedAnon = identity.anonymousId ?? fallbackAnonymousId()
        var index = QuickIndex(anonymousId: storedAnon, epoch: 0)
        var inputs = lazy
        inputs?.headEvents = store.launchHeadEvents
        var plan: LaunchTailPlan?
        var job: TailCountJob?
        // A job not handed over with the tail (a return without one, or the fallback's second
        // load) is cancelled: its thread, if not started yet, reads nothing.
        var handedOver = false
        defer { if !handedOver { job?.cancel() } }
        var deferredCount = 0
        guard
            let framed = store.loadFollowingLengths(
                expect: { index.expect(fileBytes: $0) },
                visit: { location, payload, checksum in
                    index.visit(location: location, payload: payload, checksum: checksum)
                },
                indexed: { segment, seal in index.visit(seal: seal, segment: segment) },
                chooseTail: inputs.map { inputs in
                    { sealed in
                        guard case .success(let p) = LaunchTailPlan.plan(sealed: sealed, inputs) else { return [] }
                        plan = p
                        // The tail's count starts now, beside the head's read (`TailCountJob`).
                        let segments = store.segments
                        job = TailCountJob(segments: p.tail, adds: p.tailAdds, path: { segments.path($0) }, run: countOn)
                        return p.tail
                    }
                },
                deferred: { _, summary in
                    index.visit(removals: summary.removals)
                    deferredCount += 1
                    if let plan, deferredCount == plan.tail.count { index.markTailEnd() }
                })
        else { return nil }
        var tail = plan.map { plan in
            LazyTail(
                segments: plan.tail, adds: plan.tailAdds, storedAnonymousId: storedAnon, laterRemovals: index.removalsSinceMark,
                countJob: job)
        }
        // An id added twice: the log was opened for nothing; the careful load opens it again.
        guard index.resolve() else { return nil }
        tail?.loaded = index.queuedIds
        var scratch = ClientState(consent: .none, anonymousId: storedAnon, sessionId: "")
        index.finish(into: &scratch)
        if let t = tail, let inputs, !LaunchTailPlan.fits(adds: scratch.queue.count + t.adds + inputs.recorded, inputs) {
            // The cap could be reached: read every segment (the job cancelled first).
            job?.cancel()
            return loadQuickly(store, fallbackAnonymousId: { storedAnon })
        }
        handedOver = true
        return (framed, identity, storedAnon, scratch, tail)
    }

    /// The damaged frames of a quick load: the locations of their records, and the diagnostic.
    struct LoadedFrameDamage {
        var locations: Set<ScoreRecordLocation>
        var diagnostic: Diagnostic
    }

    /// Checks every frame `framed` read against its checksum, one segment at a time (each read
    /// through a descriptor of its own, closed once checked); `nil` when all pass. When a segment
    /// cannot be read back to check it, no location, and a diagnostic saying so (each record is
    /// still checked when it is read back to be sent: a damaged one is never sent).
    ///
    /// `sealed: false` leaves out the segments indexed from their seal (`SegmentSeal`): every
    /// record of theirs was checked when the seal was written, and is checked again when it is
    /// read back to be sent (a record damaged since is dropped then, with a `storage`
    /// diagnostic), so that the start-up's check reads the newest segment's records only.
    static func damage(of framed: FileScoreStore.FramedContents, sealed: Bool = true) -> LoadedFrameDamage? {
        var regions = 0
        var bytes = 0
        var damaged = Set<ScoreRecordLocation>()
        for segment in framed.segments where sealed || !segment.fromSeal {
            let bad: [Int]
            do {
                bad = try AppendLog.FrameReader.open(path: segment.path, offsets: segment.offsets, end: segment.end).damagedFrames()
            } catch {
                return LoadedFrameDamage(
                    locations: [],
                    diagnostic: Diagnostic(
                        code: "storage",
                        message: "could not read the stored queue back to check it (\(error)); each event is checked when it is sent"))
            }
            let offsets = segment.offsets
            // Regions: runs of neighbouring damaged frames, as the careful load counts them.
            var previous = -2
            for i in bad {
                if i != previous + 1 { regions += 1 }
                previous = i
                damaged.insert(ScoreRecordLocation(generation: segment.number, offset: offsets[i]))
                bytes += (i + 1 < offsets.count ? offsets[i + 1] : segment.end) - offsets[i]
            }
        }
        guard !damaged.isEmpty else { return nil }
        return LoadedFrameDamage(locations: damaged, diagnostic: queueDamaged(bytes: bytes, regions: regions))
    }

    /// Takes the events whose add record is damaged out of `s` (their locations do not change
    /// while the check runs: no segment is deleted meanwhile, see `checkPending`).
    static func removeDamaged(_ damage: LoadedFrameDamage, from s: inout ClientState) {
        guard !damage.locations.isEmpty else { return }
        let damaged = s.queue.filter { e in
            guard let location = e.location else { return false }
            return damage.locations.contains(location)
        }
        guard !damaged.isEmpty else { return }
        // Not logged as removed: the careful load would not have seen these events at all.
        for e in damaged {
            e.inQueue = false
            if e.notice { s.noticeCount -= 1 }
        }
        s.queue.removeAll { !$0.inQueue }
        // `deadRecords` stays: the index counted the damaged frames as live, and the careful
        // load counts neither them nor their events.
    }

    /// Step 2 (see the comment at the top), after the merge: removes the events whose add record
    /// is damaged; the diagnostic to report, if any.
    func checkLoadedFrames(_ framed: FileScoreStore.FramedContents) -> Diagnostic? {
        guard let damage = ScoreClient.damage(of: framed, sealed: false) else { return nil }
        state.withLock { s in ScoreClient.removeDamaged(damage, from: &s) }
        return damage.diagnostic
    }

    /// Whether the merge of `stored` would decide on the stored events' fields beyond their order
    /// (step 1 reads them from records not checked yet): when the queue cap or the notices' cap
    /// would shed (the stored events and the `recorded` ones meanwhile, `recordedNotices` of
    /// them notices), or when a stored event is past retention at `nowMs`. The check then runs
    /// before the merge, so that a damaged record takes no place and sends no notice.
    func mergeDecidesOnStoredFields(_ stored: ClientState, recorded: Int, recordedNotices: Int, nowMs: Int64) -> Bool {
        if stored.queue.count + recorded >= maxQueueSize { return true }
        if stored.noticeCount + recordedNotices > ScoreClient.maxNotices { return true }
        let retentionMs = self.retentionMs
        return stored.queue.contains { nowMs - $0.timestampMs > retentionMs }
    }

    /// The `storage` diagnostic of a queue log with damaged regions the load skipped.
    /// Damage that ran to the end of the log (more than the one record a crash can tear) was
    /// cut off: reported like a skipped region.
    static func queueTailCut(bytes: Int) -> Diagnostic {
        Diagnostic(
            code: "storage",
            message: "queue log damaged at its end: \(bytes) byte(s) cut (more than one torn record); the records before them are kept")
    }

    static func queueDamaged(bytes: Int, regions: Int) -> Diagnostic {
        Diagnostic(
            code: "storage",
            message: "queue log damaged: \(bytes) byte(s) in \(regions) region(s) skipped; the intact records after them are kept")
    }
}
