import TrackerCore

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// The queue log as a chain of segment files (issue 35 item 1): appends go to the newest
/// segment, a segment is deleted once none of its records is live, and nothing on the append
/// path rewrites or syncs a whole file.
///
/// Layout, in one owner-only directory: segment 0 is `queue.log` (the single log of earlier
/// versions, adopted as it is: migration copies and renames nothing, so no kill can leave an
/// event twice or lose one), segment `n ≥ 1` is `queue.<n>.log` (`n` in decimal). Every segment
/// is an `AppendLog` (Core's frame format) and the queue is the records of the segments in
/// order, exactly as the single log was: removals stay records (tombstones) in the newest
/// segment, so a segment's removals may refer to events of older ones.
///
/// Deleting: never the newest. A segment is deleted once no live record is in it. When an older
/// segment still holds a live record (pinned: a critical event waiting, an event whose category
/// is not granted), it is first compacted to its live records (each at its own offset, the rest
/// a padding frame over a hole, renamed over it), so that the deleted segment's removals concern
/// no event still on disk and no event comes back; segments are handled oldest first (issue 35
/// item 2: one event that stays queued no longer keeps every later segment). Before deleting,
/// the appends written so far (the removals that made the segment dead) are synced, then each
/// step (an unlink, a compaction's rename) is followed by a directory sync: a power loss cannot
/// bring a segment back without the removals that emptied it. A kill between two steps leaves a
/// chain whose handled segments hold only live records or are gone, and the others whole.
///
/// Rolling: when the newest segment holds ``segmentBytes`` bytes or more, the next append
/// creates the next segment (an `open` with `O_CREAT`, no sync: the directory is synced with the
/// next ``sync()``). The bound is 512 KiB, about 1,070 of the SDK's events (490 bytes each on
/// disk): a queue at the default cap (1,000) sits in one or two segments, so a launch that
/// reads only the oldest segment holding unsent events reads what a launch at the default cap
/// reads today (the launch target is that figure); at most 512 KiB of delivered
/// records wait for their segment to be deleted; 100,000 queued events make about 100 files.
/// (128 KiB, about two batches, was the first choice: it made 400 files at 100,000 events, more
/// than an iOS app's default descriptor limit of 256 should a reader ever hold them all.)
///
/// Locking: one lock of its own guards the chain; it is held for an append's `write` and for
/// the bookkeeping of a roll or a deletion, never across an `fsync` (``sync()`` opens its own
/// descriptors and syncs outside it).
final class SegmentedQueueLog: @unchecked Sendable {
    /// What ``open()`` read: every intact record of every segment, in order, with its location
    /// (`generation` is the segment's number), and the damage skipped or cut, summed.
    struct Loaded {
        var records: [[UInt8]] = []
        var locations: [ScoreRecordLocation] = []
        var damage = AppendLog.Damage.none
        /// The segments found, oldest first.
        var segments: [Int] = []
    }

    /// A write accepted by ``submit(_:)``: covered by the first ``sync()`` that starts after it.
    struct Ticket: Comparable, Sendable {
        let value: Int
        static func < (a: Ticket, b: Ticket) -> Bool { a.value < b.value }
    }

    /// The chain's bookkeeping (internal: ``reclaim(live:before:)`` and ``compact(_:keeping:)``,
    /// in `QueueSegmentsReclaim.swift`, use it too).
    struct State {
        /// The segments, oldest first (the last is the newest, open for appending).
        var chain: SegmentChain
        var newest: AppendLog?
        /// Segments written since their last sync (the newest, and rolled ones).
        var unsynced: Set<Int> = []
        /// Whether a segment was created or deleted since the directory's last sync.
        var directoryUnsynced = false
        var submitted = 0
        var synced = 0
        /// One older segment kept open for reading back (flushes read a batch from one segment).
        var reader: (segment: Int, fd: Int32)?
        /// Sealed segments (no longer the newest) still to be sealed (`SegmentSeal`), by the
        /// next ``sealPending()``.
        /// With whether to verify the records' checksums (not for a segment this run rolled).
        var toSeal: [Int: Bool] = [:]
        /// The segment that was the newest when the chain was opened: it also holds an earlier
        /// run's records (one found damaged at start-up is still on disk), so its seal checks
        /// every record's checksum, unlike a segment begun by this run.
        var openedNewest: Int?
        /// The last compaction of a pinned segment failed (see ``reclaim(live:before:)``).
        var compactionFailing = false
        /// How the last start-up read (``openFollowingLengths(expect:visit:indexed:)``) took each
        /// segment: from its seal, or by following its frames (tests count them).
        var launchRead = LaunchRead()
        /// The sealed segments' summaries as last known (``SummaryCache``: filled by a lazy
        /// launch and by the seals), and whether its file lags behind them.
        var summaries = SummaryCache()
        var summariesUnwritten = false
    }

    /// How a start-up read took the segments (see ``launchRead``).
    struct LaunchRead: Equatable, Sendable {
        /// The segments indexed from their seal (only their seal was read).
        var fromSeals: [Int] = []
        /// The segments whose frames were followed (every record read).
        var followed: [Int] = []
        /// The sealed segments left unloaded (the lazy launch's tail: only their seal's summary
        /// was read; `LaunchTail.swift`).
        var deferred: [Int] = []
        /// The sealed segments whose summary came from the summary cache (``SummaryCache``).
        var summariesCached: [Int] = []
    }

    /// Opens (creating when absent) a segment for appending and reads its records: `AppendLog.open`
    /// (tests replace it to inject faults).
    typealias OpenSegment = @Sendable (_ path: String, _ sync: Bool) throws -> (AppendLog, [[UInt8]])

    let directory: String
    let syncs: Bool
    let openSegment: OpenSegment
    /// The size at which the newest segment rolls (see the type's comment).
    let segmentBytes: Int
    static let defaultSegmentBytes = 512 << 10
    let state: Locked<State>

    /// A chain in `directory` (which must exist before ``open()``). No file I/O here.
    init(
        directory: String, sync: Bool = true, segmentBytes: Int = SegmentedQueueLog.defaultSegmentBytes,
        openSegment: @escaping OpenSegment = { path, sync in try AppendLog.open(path: path, sync: sync) }
    ) {
        self.directory = directory
        self.syncs = sync
        self.segmentBytes = segmentBytes
        self.openSegment = openSegment
        self.state = Locked(State(chain: SegmentChain(segments: [], segmentBytes: segmentBytes)))
    }

    deinit {
        state.withLock { s in
            if let r = s.reader { _ = FileFaults.close(r.fd) }
            s.newest?.close()
        }
    }

    /// The file of segment `n`.
    func path(_ n: Int) -> String { n == 0 ? directory + "/queue.log" : directory + "/queue.\(n).log" }

    /// The segment number of the file named `name`, or `nil` when it is not a segment.
    static func segmentNumber(_ name: String) -> Int? {
        if name == "queue.log" { return 0 }
        let u = Array(name.utf8)
        guard u.count > 10, name.hasPrefix("queue."), name.hasSuffix(".log") else { return nil }
        let digits = u[6..<(u.count - 4)]
        guard digits.count <= 18, digits.first != 48, digits.allSatisfy({ $0 >= 48 && $0 <= 57 }) else { return nil }
        return digits.reduce(0) { $0 * 10 + Int($1 - 48) }
    }

    /// The segments in `directory`, oldest first (none when it cannot be listed).
    static func listSegments(_ directory: String) -> [Int] { listDirectory(directory).segments }

    /// The segments in `directory`, oldest first, and the temporary files of compactions killed
    /// before their rename (`queue.<n>.log.tmp`, `queue.log.tmp`), by name.
    static func listDirectory(_ directory: String) -> (segments: [Int], temporaries: [String]) {
        guard let dir = opendir(directory) else { return ([], []) }
        defer { closedir(dir) }
        var out: [Int] = []
        var temporaries: [String] = []
        while let entry = readdir(dir) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
            }
            if let n = segmentNumber(name) {
                out.append(n)
            } else if name.hasSuffix(".log.tmp"), segmentNumber(String(name.dropLast(4))) != nil {
                temporaries.append(name)
            }
        }
        return (out.sorted(), temporaries)
    }

    /// Opens the chain for appending (creating `queue.log` when there is no segment) and reads
    /// every segment, cutting torn tails (see `AppendLog.open(path:sync:)`); older segments are
    /// closed again once read. A compaction's temporary file left by earlier versions is removed.
    func open() throws -> Loaded {
        var loaded = Loaded()
        var segments = SegmentedQueueLog.listSegments(directory)
        if segments.isEmpty { segments = [0] }
        var newest: AppendLog?
        var unsealed: Set<Int> = []
        for (i, n) in segments.enumerated() {
            let (log, records) = try openSegment(path(n), syncs)
            if i < segments.count - 1 && records.last?.first != SegmentSeal.kind { unsealed.insert(n) }
            loaded.records += records
            loaded.locations += log.loadedOffsets.map { ScoreRecordLocation(generation: n, offset: $0) }
            loaded.damage.skippedRegions += log.damage.skippedRegions
            loaded.damage.skippedBytes += log.damage.skippedBytes
            loaded.damage.tornTailBytes += log.damage.tornTailBytes
            loaded.damage.tailBeyondOneRecord = loaded.damage.tailBeyondOneRecord || log.damage.tailBeyondOneRecord
            if i == segments.count - 1 { newest = log } else { log.close() }
        }
        loaded.segments = segments
        state.withLock { s in
            if let r = s.reader { _ = FileFaults.close(r.fd) }
            s.newest?.close()
            s = State(chain: SegmentChain(segments: segments, segmentBytes: segmentBytes))
            s.newest = newest
            s.openedNewest = s.chain.newest
            s.toSeal = Dictionary(uniqueKeysWithValues: unsealed.map { ($0, true) })
        }
        return loaded
    }

    /// The intact records of every segment in `directory`, read without opening anything for
    /// writing (a read-only directory or file system); `nil` when no segment can be read.
    static func readOnly(_ directory: String) -> (records: [[UInt8]], damage: AppendLog.Damage)? {
        var records: [[UInt8]] = []
        var damage = AppendLog.Damage.none
        var read = false
        for n in listSegments(directory) {
            let p = n == 0 ? directory + "/queue.log" : directory + "/queue.\(n).log"
            guard let bytes = try? FileIO.readBytes(p) else { continue }
            read = true
            let scanned = AppendLog.scan(bytes)
            records += scanned.records
            damage.skippedRegions += scanned.damage.skippedRegions
            damage.skippedBytes += scanned.damage.skippedBytes
            damage.tornTailBytes += scanned.damage.tornTailBytes
            damage.tailBeyondOneRecord = damage.tailBeyondOneRecord || scanned.damage.tailBeyondOneRecord
        }
        return read ? (records, damage) : nil
    }

    /// Writes `records` to the newest segment (rolling first when it is full) without syncing
    /// them: they survive the app being killed at once, and a power loss once a ``sync()``
    /// that starts after this call ends. Returns their locations and the write's ticket.
    func submit(_ records: [[UInt8]]) throws -> (locations: [ScoreRecordLocation], ticket: Ticket) {
        try state.withLock { s in
            guard let log = s.newest, let placement = s.chain.place(recordCount: records.count, newestBytes: log.byteCount) else {
                throw AppendLogError("append", errno: EBADF)
            }
            var current = log
            let number: Int
            switch placement {
            case .newest(let n):
                number = n
            case .roll(let from, let next):
                let (created, _) = try openSegment(path(next), syncs)
                log.close()
                s.newest = created
                _ = s.chain.appendSegment()
                s.directoryUnsynced = true
                s.toSeal[from] = from == s.openedNewest
                current = created
                number = next
            }
            let offsets = try current.append(records, sync: false)
            if !records.isEmpty { s.unsynced.insert(number) }
            s.submitted += 1
            return (offsets.map { ScoreRecordLocation(generation: number, offset: $0) }, Ticket(value: s.submitted))
        }
    }

    /// Whether every write up to `ticket` has been synced to the device.
    func isSynced(through ticket: Ticket) -> Bool {
        state.withLock { $0.synced >= ticket.value }
    }

    /// Syncs the segments written since their last sync, then the directory when a segment was
    /// created or deleted, each through a descriptor of its own and outside the lock (appends go
    /// on meanwhile). Covers the writes submitted before it started.
    func sync() throws {
        guard syncs else {
            state.withLock { $0.synced = $0.submitted }
            return
        }
        let (segments, directoryToo, ticket) = state.withLock { s in
            defer {
                s.unsynced = []
                s.directoryUnsynced = false
            }
            return (s.unsynced.sorted(), s.directoryUnsynced, s.submitted)
        }
        var failure: AppendLogError?
        for n in segments {
            let fd = FileFaults.open(path(n), O_RDONLY | O_CLOEXEC)
            if fd < 0 {
                // Deleted meanwhile: nothing of it is needed any more.
                if errno != ENOENT { failure = AppendLogError("open", errno: errno) }
                continue
            }
            if FileFaults.fsync(fd) != 0 { failure = AppendLogError("fsync", errno: errno) }
            _ = FileFaults.close(fd)
        }
        if directoryToo { FileIO.syncDirectory(directory) }
        if let failure { throw failure }
        state.withLock { $0.synced = max($0.synced, ticket) }
    }

    /// Seals (`SegmentSeal`) the segments sealed since the last call, oldest first: each is read
    /// once and its seal appended (synced when the log syncs); the records' checksums are checked
    /// for a segment found unsealed at start-up and for the one that was the newest then, not for
    /// one this run began (its records were all written by this run's writer; see
    /// `SegmentSeal.build(path:verify:)`). A segment
    /// that cannot be sealed (damaged, or holding records the quick index does not take) is left
    /// as it is; one deleted meanwhile is skipped. Never the newest. Runs off the append path,
    /// after a ``sync()`` that covered the segments' last appends (`FileScoreStore.syncNow()`,
    /// on the sync thread) or in the start-up's background step; not in a reclamation's sync.
    func sealPending() {
        let todo = state.withLock { s -> [(Int, Bool)] in
            defer { s.toSeal = [:] }
            return s.toSeal.filter { s.chain.contains($0.key) && $0.key != s.chain.newest }.sorted { $0.key < $1.key }
        }
        for (n, verify) in todo {
            guard let seal = SegmentSeal.build(path: path(n), verify: verify), state.withLock({ $0.chain.contains(n) }) else {
                continue
            }
            var key: SummaryCache.Key?
            if SegmentSeal.write(seal, path: path(n), sync: syncs, key: &key), let key {
                let summary = seal.summary
                state.withLock { s in
                    s.summaries.entries[n] = SummaryCache.Entry(key: key, summary: summary)
                    s.summariesUnwritten = true
                }
            }
        }
        writeSummaryCacheIfBehind()
    }

    /// Writes the summary cache's file (``SummaryCache``) when it lags behind what this run
    /// knows, without the segments gone since (deleted when none is left).
    func writeSummaryCacheIfBehind() {
        let cache: SummaryCache? = state.withLock { s in
            guard s.summariesUnwritten else { return nil }
            s.summariesUnwritten = false
            s.summaries.entries = s.summaries.entries.filter { s.chain.contains($0.key) }
            return s.summaries
        }
        guard let cache else { return }
        if cache.entries.isEmpty {
            // No sealed segment left: no file (one that cannot be deleted serves nothing).
            _ = FileFaults.unlink(directory + "/" + SummaryCache.fileName)
        } else if !cache.write(directory: directory) {
            state.withLock { $0.summariesUnwritten = true }
        }
    }

    /// Whether some sealed segment waits for its seal, or the summary cache's file for an update
    /// (see ``sealPending()``).
    var hasSegmentsToSeal: Bool { state.withLock { !$0.toSeal.isEmpty || $0.summariesUnwritten } }

    /// How the last start-up read took each segment (tests).
    var launchRead: LaunchRead { state.withLock { $0.launchRead } }

    /// Reads back the record at `location`; `nil` when its segment is gone or no intact record
    /// starts there.
    func read(at location: ScoreRecordLocation) throws -> [UInt8]? {
        try state.withLock { s -> [UInt8]? in
            guard s.chain.contains(location.generation) else { return nil }
            if location.generation == s.chain.newest, let log = s.newest {
                return try log.read(at: location.offset)
            }
            if s.reader?.segment != location.generation {
                if let r = s.reader { _ = FileFaults.close(r.fd) }
                s.reader = nil
                let fd = FileFaults.open(path(location.generation), O_RDONLY | O_CLOEXEC)
                guard fd >= 0 else { throw AppendLogError("open", errno: errno) }
                s.reader = (location.generation, fd)
            }
            return try SegmentedQueueLog.readFrame(s.reader!.fd, at: location.offset)
        }
    }

    /// The payload of the intact frame at `offset` of the file behind `fd`, or `nil`.
    static func readFrame(_ fd: Int32, at offset: Int) throws -> [UInt8]? {
        guard offset >= 0 else { return nil }
        var header = [UInt8](repeating: 0, count: AppendLog.frameOverhead)
        guard try preadAll(fd, &header, at: offset) else { return nil }
        let len = Int(UInt32(header[0]) | UInt32(header[1]) << 8 | UInt32(header[2]) << 16 | UInt32(header[3]) << 24)
        let crc = UInt32(header[4]) | UInt32(header[5]) << 8 | UInt32(header[6]) << 16 | UInt32(header[7]) << 24
        guard len <= AppendLog.maxRecordBytes else { return nil }
        var payload = [UInt8](repeating: 0, count: len)
        guard try preadAll(fd, &payload, at: offset + AppendLog.frameOverhead) else { return nil }
        return CRC32.checksum(payload) == crc ? payload : nil
    }

    private static func preadAll(_ fd: Int32, _ buffer: inout [UInt8], at offset: Int) throws -> Bool {
        var done = 0
        let count = buffer.count
        while done < count {
            let n = buffer.withUnsafeMutableBytes { FileFaults.pread(fd, $0.baseAddress! + done, count - done, off_t(offset + done)) }
            if n < 0 {
                if errno == EINTR { continue }
                throw AppendLogError("pread", errno: errno)
            }
            if n == 0 { return false }
            done += n
        }
        return true
    }

    /// The segments, oldest first.
    var segments: [Int] { state.withLock { $0.chain.segments } }

    /// Whether a segment other than the newest is numbered below `segment` (one that
    /// ``reclaim(live:before:)`` may delete when the oldest live record is in `segment`).
    func hasSegmentBefore(_ segment: Int) -> Bool {
        state.withLock { s in s.chain.hasSegment(before: segment) }
    }

    /// The newest segment's number (see ``reclaim(live:before:)``).
    var newestSegment: Int? { state.withLock { $0.chain.newest } }

    /// Replaces the whole queue with `records` (the client's rewrite of events it holds in
    /// memory): they are written to a new segment, which is synced with the directory, then
    /// every older segment is deleted, oldest first. A kill in between leaves the older segments
    /// too: their events then come back with the same ids as the new segment's, which the load
    /// takes once (an id's first place, its last record). Returns the records' locations.
    func replaceAll(_ records: [[UInt8]]) throws -> [ScoreRecordLocation] {
        let (older, locations): ([Int], [ScoreRecordLocation]) = try state.withLock { s in
            let next = (s.chain.newest ?? -1) + 1
            let (created, _) = try openSegment(path(next), syncs)
            let offsets: [Int]
            do { offsets = try created.append(records, sync: false) } catch {
                created.close()
                _ = FileFaults.unlink(path(next))
                throw error
            }
            s.newest?.close()
            let older = s.chain.segments
            s.newest = created
            _ = s.chain.appendSegment()
            s.directoryUnsynced = true
            s.unsynced.insert(next)
            s.submitted += 1
            return (older, offsets.map { ScoreRecordLocation(generation: next, offset: $0) })
        }
        try sync()
        for n in older { try deleteSegment(n) }
        if syncs && !older.isEmpty { FileIO.syncDirectory(directory) }
        return locations
    }

    /// Takes segment `n` out of the chain (a read of it then finds nothing rather than a file
    /// going away) and unlinks it; when the unlink fails, puts it back at its place and throws.
    func deleteSegment(_ n: Int) throws {
        state.withLock { s in
            s.chain.remove(n)
            s.unsynced.remove(n)
            if let r = s.reader, r.segment == n {
                _ = FileFaults.close(r.fd)
                s.reader = nil
            }
        }
        if FileFaults.unlink(path(n)) != 0 && errno != ENOENT {
            let e = errno
            state.withLock { s in s.chain.restore(n) }
            throw AppendLogError("unlink", errno: e)
        }
    }

    /// One segment as the quick start-up read found it: its frames' offsets and their end.
    struct FollowedSegment: Sendable {
        var number: Int
        var path: String
        var offsets: [Int]
        var end: Int
        /// Whether it was indexed from its seal (its records were checked when it was sealed).
        var fromSeal = false
    }

    /// The quick start-up read (see `FileScoreStore.loadFollowingLengths(expect:visit:indexed:)`):
    /// every segment's frames, oldest first, passed to `visit` with their segment's number as
    /// they are followed by their length fields, except a sealed segment's with an intact seal
    /// (`SegmentSeal`), passed whole to `indexed` instead (only its seal is read). The older
    /// segments are read through read-only descriptors closed at once, the newest opened for
    /// appending (``openSegment`` is not used: only the store that does not replace it reads
    /// quickly). `expect` is called first with the segments' total size (estimated for a chain).
    /// `nil` (nothing opened) when some segment's frames do not tile it or a visit said stop;
    /// the caller then calls ``open()``, which checks and repairs. The sealed segments found
    /// without a seal are sealed by the next ``sealPending()``.
    ///
    /// `chooseTail` (the lazy launch, `LaunchTail.swift`), when given and the chain has two
    /// sealed segments or more, gets every sealed segment's summary (`SegmentSeal.readSummary`)
    /// and answers the segments to leave unloaded: each of those is passed to `deferred` with its
    /// summary instead of being read.
    func openFollowingLengths(
        expect: (_ totalBytes: Int) -> Void,
        visit: (_ segment: Int, _ offset: Int, _ payload: UnsafeBufferPointer<UInt8>, _ checksum: UInt32) -> Bool,
        indexed: (_ segment: Int, _ seal: SegmentSeal) -> Bool = { _, _ in false },
        chooseTail: ((_ sealed: [(segment: Int, summary: SegmentSeal.Summary?)]) -> [Int])? = nil,
        deferred: (_ segment: Int, _ summary: SegmentSeal.Summary) -> Void = { _, _ in }
    ) -> [FollowedSegment]? {
        let listed = SegmentedQueueLog.listDirectory(directory)
        var numbers = listed.segments
        if numbers.isEmpty { numbers = [0] }
        // A compaction killed before its rename: its temporary file is never read.
        for name in listed.temporaries { _ = FileFaults.unlink(directory + "/" + name) }
        var out: [FollowedSegment] = []
        var read = LaunchRead()
        var unsealed: Set<Int> = []
        var tail: [Int: SegmentSeal.Summary] = [:]
        var summaries = SummaryCache()
        var summariesUnwritten = false
        if let chooseTail, numbers.count > 2 {
            // Each summary from the cache when the segment's file is the one it was taken from,
            // else from the file (and the cache's file is written again later).
            let cached = SummaryCache.read(directory: directory)
            let sealed = numbers.dropLast().map { n -> (segment: Int, summary: SegmentSeal.Summary?) in
                if let m = cached?.summary(of: n, path: path(n)) {
                    summaries.entries[n] = cached?.entries[n]
                    read.summariesCached.append(n)
                    return (n, m)
                }
                var key: SummaryCache.Key?
                let m = SegmentSeal.readSummary(path: path(n), key: &key)
                if let m, let key {
                    summaries.entries[n] = SummaryCache.Entry(key: key, summary: m)
                    summariesUnwritten = true
                }
                return (n, m)
            }
            if cached.map({ $0.entries.count != summaries.entries.count }) ?? false { summariesUnwritten = true }
            for n in chooseTail(sealed) {
                if let m = sealed.first(where: { $0.segment == n })?.summary { tail[n] = m }
            }
        }
        // A single segment reports its own size; a chain, about a full segment each (those read).
        if numbers.count > 1 { expect((numbers.count - tail.count) * segmentBytes) }
        for n in numbers.dropLast() {
            if let m = tail[n] {
                deferred(n, m)
                out.append(FollowedSegment(number: n, path: path(n), offsets: [], end: m.end, fromSeal: true))
                read.deferred.append(n)
                continue
            }
            if let seal = SegmentSeal.read(path: path(n)) {
                guard indexed(n, seal) else { return nil }
                out.append(FollowedSegment(number: n, path: path(n), offsets: seal.offsets, end: seal.end, fromSeal: true))
                read.fromSeals.append(n)
                continue
            }
            guard let walked = (try? AppendLog.followLengths(path: path(n), visit: { _, o, p, c in visit(n, o, p, c) })) ?? nil
            else { return nil }
            out.append(FollowedSegment(number: n, path: path(n), offsets: walked.offsets, end: walked.end))
            read.followed.append(n)
            unsealed.insert(n)
        }
        let n = numbers[numbers.count - 1]
        guard
            let (log, frames) =
                (try? AppendLog.openFollowingLengths(
                    path: path(n), sync: syncs, expect: numbers.count == 1 ? expect : { _ in },
                    visit: { _, o, p, c in visit(n, o, p, c) })) ?? nil
        else { return nil }
        out.append(FollowedSegment(number: n, path: path(n), offsets: frames.offsets, end: frames.end))
        read.followed.append(n)
        // A compaction of earlier versions killed before its rename (`queue.log.tmp`): the
        // newest segment's open removed it when it is `queue.log`.
        if n != 0 { _ = FileFaults.unlink(directory + "/queue.log.tmp") }
        state.withLock { s in
            if let r = s.reader { _ = FileFaults.close(r.fd) }
            s.newest?.close()
            s = State(chain: SegmentChain(segments: numbers, segmentBytes: segmentBytes))
            s.newest = log
            s.openedNewest = s.chain.newest
            s.toSeal = Dictionary(uniqueKeysWithValues: unsealed.map { ($0, true) })
            s.launchRead = read
            s.summaries = summaries
            s.summariesUnwritten = summariesUnwritten
        }
        return out
    }
}
