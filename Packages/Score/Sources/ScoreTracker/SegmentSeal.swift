import TrackerCore

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// A sealed segment's index (issue 35 item 3): what the start-up index (`QuickIndex`) takes
/// from each of the segment's frames, written once as the segment's last frame (a seal record,
/// kind `S`) after the segment was sealed (the next one created), so that a launch reads a
/// sealed segment's few index bytes instead of its events.
///
/// - Written off the append path: the queue log's sync (`SegmentedQueueLog.sync()`, on the sync
///   thread) seals the segments rolled since the last one, after syncing them; a launch seals the
///   sealed segments it found without a seal, in the background after the load.
/// - Crash-safe: the seal is one framed record appended to a segment no append reaches any more.
///   A kill before it is written leaves a segment without a seal, which the launch reads as
///   before (its frames followed one by one) and seals again; a torn or damaged seal is a
///   damaged last frame, which the launch takes as no seal and reads the segment as before
///   (the careful load then cuts the damaged seal off like a torn tail). The seal's checksum
///   (the frame's) and its own footer (length and magic, checked against the frame's header)
///   make a damaged seal read as none, never as an index.
/// - Equivalent: a segment is sealed only when every frame is intact and is a record the quick
///   index takes without giving up (an add of this SDK with a canonical UUID event id and an
///   unescaped anonymous id, a removal, or an empty frame); otherwise it is left unsealed and
///   read as before. The index built from a seal is the one its frames give.
/// - Readers of earlier versions ignore the record (an unknown kind is no event).
///
/// Payload (`SQI2`, written since issue 35 item 3's lazy launch): `S`, the body, the summary
/// (``Summary``), then the footer: the summary's length and its own CRC-32 (`UInt32`s,
/// little-endian), the length of everything between `S` and the last 8 bytes (`UInt32`) and the
/// magic `SQI2`. Body: where the frames end, frame count, name table, anonymous-id table, then
/// per frame its kind (0 empty, 1 add, 2 removal) and payload length, an add's id, timestamp,
/// flags, required categories, name and anonymous id (table indexes), a removal's id count (its
/// canonical UUID ids are the summary's, in order). The summary can be read alone
/// (``readSummary(path:)``: the footer, the frame's header and the summary, never the adds),
/// checked by its own CRC; the frame's checksum covers it too.
///
/// The earlier payload (`SQI1`, still read): `S`, the body with each removal's ids in place, the
/// body's length and `SQI1`; it has no summary (``readSummary(path:)`` gives `nil`: a launch reads
/// such a segment as before).
struct SegmentSeal: Equatable {
    /// The seal record's kind byte (`S`).
    static let kind: UInt8 = 83
    /// The magic of the seals written now (with a summary).
    static let magic: [UInt8] = Array("SQI2".utf8)
    /// The magic of the seals of earlier versions (no summary).
    static let magicV1: [UInt8] = Array("SQI1".utf8)
    /// The footer's size after a `SQI2` seal's summary (summary length, summary CRC, stated
    /// length, magic).
    static let footerBytes = 16

    struct Add: Equatable {
        var hi: UInt64
        var lo: UInt64
        var timestampMs: Int64
        var flags: UInt8
        var requires: UInt8
        var name: Int
        var anonymousId: Int
    }

    enum Frame: Equatable {
        case empty(offset: Int)
        case add(offset: Int, Add)
        case remove(offset: Int, ids: [(UInt64, UInt64)])

        var offset: Int {
            switch self {
            case .empty(let o), .add(let o, _), .remove(let o, _): o
            }
        }

        static func == (a: Frame, b: Frame) -> Bool {
            switch (a, b) {
            case (.empty(let x), .empty(let y)): x == y
            case (.add(let x, let p), .add(let y, let q)): x == y && p == q
            case (.remove(let x, let p), .remove(let y, let q)): x == y && p.elementsEqual(q) { $0 == $1 }
            default: false
            }
        }
    }

    var names: [[UInt8]] = []
    var anonymousIds: [[UInt8]] = []
    var frames: [Frame] = []
    /// Where the sealed frames end (the seal record's own offset).
    var end = 0

    private var nameIndex: [[UInt8]: Int] = [:]
    private var anonymousIndex: [[UInt8]: Int] = [:]
    /// The anonymous id the last add not read quickly was scanned with, its index in the table,
    /// and the last name's index (see ``take(offset:payload:checksum:)``).
    private var scanAnonymous: QueueRecord.AnonymousIdBytes?
    private var lastAnonymous = 0
    private var lastName: Int?

    static func == (a: SegmentSeal, b: SegmentSeal) -> Bool {
        a.names == b.names && a.anonymousIds == b.anonymousIds && a.frames == b.frames && a.end == b.end
    }

    /// The frame offsets, in order (for the start-up check of the records' checksums).
    var offsets: [Int] { frames.map(\.offset) }

    // MARK: - Building

    /// Takes in one frame of the segment; `false` when the segment cannot be sealed (see the
    /// type's comment).
    /// `verify: false` skips the checksum (records this process wrote in this run, see
    /// ``build(path:verify:)``).
    mutating func take(offset: Int, payload r: UnsafeBufferPointer<UInt8>, checksum: UInt32, verify: Bool = true) -> Bool {
        guard !verify || CRC32.checksum(r) == checksum else { return false }
        guard let kind = r.first, kind != SegmentSeal.paddingKind else {
            frames.append(.empty(offset: offset))
            return true
        }
        switch kind {
        case 65:
            guard r.count > 3 else { return false }
            let b = UnsafeBufferPointer(rebasing: r[3...])
            if memchr(b.baseAddress!, 0, b.count) != nil { return false }
            // Most adds carry the previous add's anonymous id and name: compared in place, read
            // by the quick (canonical) reading, nothing allocated.
            if let last = scanAnonymous, let add = QueueRecord.canonicalAdd(b, anonymousId: last), add.sameAnonymous {
                let name = nameIndex(UnsafeBufferPointer(rebasing: b[add.name]))
                frames.append(
                    .add(
                        offset: offset,
                        Add(
                            hi: add.hi, lo: add.lo, timestampMs: add.timestampMs, flags: r[1], requires: r[2], name: name,
                            anonymousId: lastAnonymous)))
                return true
            }
            // Otherwise scanned with its own anonymous id (the id only decides `sameAnonymous`,
            // which the seal does not keep).
            guard let anon = SegmentSeal.rawAnonymousId(b) else { return false }
            let scanned = QueueRecord.AnonymousIdBytes(String(decoding: anon, as: UTF8.self))
            guard case .add(let id, let name, let ts, _, let flags, let requires)? = QueueRecord.scan(r, anonymousId: scanned),
                case .uuid(let hi, let lo) = id
            else { return false }
            scanAnonymous = scanned
            lastAnonymous = intern(anon, &anonymousIds, &anonymousIndex)
            let n = Array(name.utf8).withUnsafeBufferPointer { nameIndex($0) }
            frames.append(
                .add(
                    offset: offset,
                    Add(hi: hi, lo: lo, timestampMs: ts, flags: flags, requires: requires, name: n, anonymousId: lastAnonymous)))
            return true
        case 82:
            guard case .remove(let ids)? = QueueRecord.scan(r, anonymousId: QueueRecord.AnonymousIdBytes("")) else {
                return false
            }
            // The quick index applies the canonical ids only (a text id removes nothing there).
            var packed: [(UInt64, UInt64)] = []
            for case .uuid(let hi, let lo) in ids { packed.append((hi, lo)) }
            frames.append(.remove(offset: offset, ids: packed))
            return true
        default:
            // A seal already, or a record this SDK does not write.
            return false
        }
    }

    /// The name table's index of the name whose bytes are `bytes` (the previous add's when they
    /// are the same: compared in place, nothing allocated).
    private mutating func nameIndex(_ bytes: UnsafeBufferPointer<UInt8>) -> Int {
        if let k = lastName, names[k].count == bytes.count,
            bytes.isEmpty || names[k].withUnsafeBufferPointer({ memcmp($0.baseAddress!, bytes.baseAddress!, bytes.count) == 0 })
        {
            return k
        }
        let k = intern(Array(bytes), &names, &nameIndex)
        lastName = k
        return k
    }

    private func intern(_ v: [UInt8], _ table: inout [[UInt8]], _ index: inout [[UInt8]: Int]) -> Int {
        if let k = index[v] { return k }
        index[v] = table.count
        table.append(v)
        return table.count - 1
    }

    private static let anonymousIdMarker: [UInt8] = Array(#","anonymousId":""#.utf8)

    /// The raw bytes of the envelope's first `anonymousId` value (the strings before it are
    /// escaped, so they cannot hold the marker); `nil` when it holds an escape.
    static func rawAnonymousId(_ b: UnsafeBufferPointer<UInt8>) -> [UInt8]? {
        let m = anonymousIdMarker
        guard b.count > m.count else { return nil }
        var i = 0
        let last = b.count - m.count
        while i <= last {
            if b[i] == m[0] && m.withUnsafeBufferPointer({ memcmp($0.baseAddress!, b.baseAddress! + i, m.count) == 0 }) {
                var at = i + m.count
                let start = at
                while at < b.count && b[at] != 34 {
                    if b[at] == 92 { return nil }
                    at += 1
                }
                return at < b.count ? Array(b[start..<at]) : nil
            }
            i += 1
        }
        return nil
    }

    /// The seal of the segment file at `path`, built from its frames (each checked against its
    /// checksum); `nil` when it cannot be sealed or is sealed already.
    ///
    /// `verify: false` (a segment this process rolled in this run, every record of it written by
    /// this run's queue writer) skips the records' checksums, the bulk of the work: the last
    /// frame is still checked (a torn tail is no seal), and each record is checked when it is
    /// read back to be sent. A segment found at start-up without a seal is verified.
    static func build(path: String, verify: Bool = true) -> SegmentSeal? {
        var seal = SegmentSeal()
        var ok = true
        guard
            let walked =
                (try? AppendLog.followLengths(
                    path: path,
                    visit: { _, offset, payload, checksum in
                        ok = seal.take(offset: offset, payload: payload, checksum: checksum, verify: verify)
                        return ok
                    })) ?? nil,
            ok
        else { return nil }
        seal.end = walked.end
        return seal
    }

    // MARK: - Encoding

    /// The seal record's payload (see the type's comment): integers as LEB128 varints, each
    /// frame by its payload's length (its offset follows from the previous frames', the first at
    /// 0), timestamps as the zigzag difference from the previous add's; about 25 bytes an add.
    /// `legacy: true` writes the earlier `SQI1` form (no summary; tests of the migration).
    func payload(legacy: Bool = false) -> [UInt8] {
        var o: [UInt8] = [SegmentSeal.kind]
        o.reserveCapacity(64 + frames.count * 28)
        SegmentSeal.int(end, &o)
        SegmentSeal.int(frames.count, &o)
        SegmentSeal.int(names.count, &o)
        for n in names { SegmentSeal.bytes(n, &o) }
        SegmentSeal.int(anonymousIds.count, &o)
        for a in anonymousIds { SegmentSeal.bytes(a, &o) }
        var lastTs: Int64 = 0
        for (i, f) in frames.enumerated() {
            let next = i + 1 < frames.count ? frames[i + 1].offset : end
            let length = next - f.offset - AppendLog.frameOverhead
            switch f {
            case .empty:
                o.append(0)
                SegmentSeal.int(length, &o)
            case .add(_, let a):
                o.append(1)
                SegmentSeal.int(length, &o)
                SegmentSeal.u64(a.hi, &o)
                SegmentSeal.u64(a.lo, &o)
                let d = a.timestampMs &- lastTs
                lastTs = a.timestampMs
                SegmentSeal.varint(UInt64(bitPattern: (d << 1) ^ (d >> 63)), &o)
                o.append(a.flags)
                o.append(a.requires)
                SegmentSeal.int(a.name, &o)
                SegmentSeal.int(a.anonymousId, &o)
            case .remove(_, let ids):
                o.append(2)
                SegmentSeal.int(length, &o)
                SegmentSeal.int(ids.count, &o)
                // `SQI2`: the ids are the summary's.
                if legacy {
                    for (hi, lo) in ids {
                        SegmentSeal.u64(hi, &o)
                        SegmentSeal.u64(lo, &o)
                    }
                }
            }
        }
        if legacy {
            withUnsafeBytes(of: UInt32(truncatingIfNeeded: o.count - 1).littleEndian) { o.append(contentsOf: $0) }
            o.append(contentsOf: SegmentSeal.magicV1)
            return o
        }
        let summary = SegmentSeal.encode(self.summary)
        o.append(contentsOf: summary)
        withUnsafeBytes(of: UInt32(truncatingIfNeeded: summary.count).littleEndian) { o.append(contentsOf: $0) }
        withUnsafeBytes(of: CRC32.checksum(summary).littleEndian) { o.append(contentsOf: $0) }
        withUnsafeBytes(of: UInt32(truncatingIfNeeded: o.count - 1).littleEndian) { o.append(contentsOf: $0) }
        o.append(contentsOf: SegmentSeal.magic)
        return o
    }

    static func varint(_ v: UInt64, _ o: inout [UInt8]) {
        var v = v
        while v >= 0x80 {
            o.append(UInt8(truncatingIfNeeded: v) | 0x80)
            v >>= 7
        }
        o.append(UInt8(v))
    }

    static func int(_ v: Int, _ o: inout [UInt8]) { varint(UInt64(max(0, v)), &o) }

    static func u64(_ v: UInt64, _ o: inout [UInt8]) { withUnsafeBytes(of: v.littleEndian) { o.append(contentsOf: $0) } }

    private static func bytes(_ v: [UInt8], _ o: inout [UInt8]) {
        int(v.count, &o)
        o.append(contentsOf: v)
    }

    /// Reads a seal record's payload (`SQI2` or `SQI1`); `nil` when it is not one, or is not
    /// whole (a `SQI2` summary that fails its own checksum included).
    static func decode(_ p: UnsafeBufferPointer<UInt8>) -> SegmentSeal? {
        var seal = SegmentSeal()
        let whole = walk(
            p,
            tables: { end, names, anonymousIds, frameCount in
                (seal.end, seal.names, seal.anonymousIds) = (end, names, anonymousIds)
                seal.frames.reserveCapacity(frameCount)
            },
            frame: { seal.frames.append($0) })
        return whole ? seal : nil
    }

    /// Walks a seal record's payload (`SQI2` or `SQI1`) without keeping its frames: `tables`
    /// gets where the frames end, the name and anonymous-id tables and the frame count, then
    /// `frame` each frame in order (an add's name and anonymous id are table indexes, checked).
    /// `false` when the payload is not a seal or is not whole (a `SQI2` summary that fails its
    /// own checksum included; the frames visited so far are then to be dropped).
    static func walk(
        _ p: UnsafeBufferPointer<UInt8>, tables: (_ end: Int, _ names: [[UInt8]], _ anonymousIds: [[UInt8]], _ frameCount: Int) -> Void,
        frame: (Frame) -> Void
    ) -> Bool {
        guard p.count >= 1 + 5 + 8, p[0] == kind else { return false }
        let tail = Array(p[(p.count - 4)...])
        let v2 = tail == magic
        guard v2 || tail == magicV1 else { return false }
        var stated: UInt32 = 0
        for k in 0..<4 { stated |= UInt32(p[p.count - 8 + k]) << (8 * k) }
        guard Int(stated) == p.count - 9 else { return false }
        var bodyEnd = p.count - 8
        var summary: Summary?
        if v2 {
            guard p.count >= 1 + footerBytes else { return false }
            let (length, crc) = summaryFooter(UnsafeBufferPointer(rebasing: p[(p.count - footerBytes)...]))
            bodyEnd = p.count - footerBytes - length
            guard length >= 0, bodyEnd >= 1 else { return false }
            let bytes = UnsafeBufferPointer(rebasing: p[bodyEnd..<(p.count - footerBytes)])
            guard CRC32.checksum(bytes) == crc, let m = decodeSummary(bytes) else { return false }
            summary = m
        }
        var r = Reader(p: p, at: 1, end: bodyEnd)
        guard let end = r.int(), let frameCount = r.int(), frameCount <= bodyEnd - r.at, let nameCount = r.int(),
            nameCount <= bodyEnd - r.at
        else { return false }
        var names: [[UInt8]] = []
        for _ in 0..<nameCount {
            guard let n = r.bytes() else { return false }
            names.append(n)
        }
        guard let anonCount = r.int(), anonCount <= bodyEnd - r.at else { return false }
        var anonymousIds: [[UInt8]] = []
        for _ in 0..<anonCount {
            guard let a = r.bytes() else { return false }
            anonymousIds.append(a)
        }
        tables(end, names, anonymousIds, frameCount)
        var offset = 0
        var lastTs: Int64 = 0
        var nextRemoval = 0
        for _ in 0..<frameCount {
            guard let kind = r.u8(), let length = r.int() else { return false }
            switch kind {
            case 0:
                frame(.empty(offset: offset))
            case 1:
                guard let hi = r.u64(), let lo = r.u64(), let d = r.zigzag(), let flags = r.u8(), let requires = r.u8(),
                    let name = r.int(), let anon = r.int(), name < nameCount, anon < anonCount
                else { return false }
                lastTs = lastTs &+ d
                frame(
                    .add(
                        offset: offset,
                        Add(hi: hi, lo: lo, timestampMs: lastTs, flags: flags, requires: requires, name: name, anonymousId: anon)))
            case 2:
                guard let n = r.int() else { return false }
                var ids: [(UInt64, UInt64)] = []
                if let summary {
                    guard n <= summary.removals.count - nextRemoval else { return false }
                    ids = Array(summary.removals[nextRemoval..<(nextRemoval + n)])
                    nextRemoval += n
                } else {
                    guard n <= (bodyEnd - r.at) / 16 else { return false }
                    ids.reserveCapacity(n)
                    for _ in 0..<n {
                        guard let hi = r.u64(), let lo = r.u64() else { return false }
                        ids.append((hi, lo))
                    }
                }
                frame(.remove(offset: offset, ids: ids))
            default:
                return false
            }
            offset += AppendLog.frameOverhead + length
        }
        guard r.at == bodyEnd, offset == end else { return false }
        if let summary {
            // Its removals are the frames' (its counts were taken from the same frames when it was
            // written, and the frame's checksum covers both).
            guard nextRemoval == summary.removals.count, summary.end == end else { return false }
        }
        return true
    }

    // MARK: - Files

    /// The seal at the end of the segment file at `path` (one descriptor, three reads: the
    /// footer, then the frame), checked against its frame's checksum and header; `nil` when the
    /// file ends with no intact seal.
    static func read(path: String) -> SegmentSeal? {
        guard let (frame, frameStart) = readFrame(path: path) else { return nil }
        return frame.withUnsafeBufferPointer { all -> SegmentSeal? in
            guard let seal = decode(UnsafeBufferPointer(rebasing: all[AppendLog.frameOverhead...])), seal.end == frameStart else {
                return nil
            }
            return seal
        }
    }

    /// The seal frame at the end of the segment file at `path` (its header, then its payload),
    /// checked against its checksum and header, and where it starts (see ``read(path:)``); `nil`
    /// when the file ends with no intact seal frame.
    static func readFrame(path: String) -> (frame: [UInt8], frameStart: Int)? {
        let fd = FileFaults.open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { _ = FileFaults.close(fd) }
        let size = Int(lseek(fd, 0, SEEK_END))
        guard size >= AppendLog.frameOverhead + 16 else { return nil }
        var footer = [UInt8](repeating: 0, count: 8)
        guard preadAll(fd, &footer, at: size - 8), Array(footer[4...]) == magic || Array(footer[4...]) == magicV1 else {
            return nil
        }
        let body = Int(UInt32(footer[0]) | UInt32(footer[1]) << 8 | UInt32(footer[2]) << 16 | UInt32(footer[3]) << 24)
        let payloadCount = 1 + body + 8
        let frameStart = size - payloadCount - AppendLog.frameOverhead
        guard body >= 0, frameStart >= 0, payloadCount <= AppendLog.maxRecordBytes else { return nil }
        var frame = [UInt8](repeating: 0, count: AppendLog.frameOverhead + payloadCount)
        guard preadAll(fd, &frame, at: frameStart) else { return nil }
        let len = Int(UInt32(frame[0]) | UInt32(frame[1]) << 8 | UInt32(frame[2]) << 16 | UInt32(frame[3]) << 24)
        let crc = UInt32(frame[4]) | UInt32(frame[5]) << 8 | UInt32(frame[6]) << 16 | UInt32(frame[7]) << 24
        guard len == payloadCount else { return nil }
        let intact = frame.withUnsafeBufferPointer { all in
            CRC32.checksum(UnsafeBufferPointer(rebasing: all[AppendLog.frameOverhead...])) == crc
        }
        return intact ? (frame, frameStart) : nil
    }

    /// Appends the seal to the segment file at `path`, which must still end where the sealed
    /// frames end (nothing was appended since it was read); synced when `sync`. `false` when it
    /// was not written (the file is cut back to its length on a failed write). `key` gets the
    /// identity of the file written (for ``SummaryCache``), when it was.
    @discardableResult
    static func write(_ seal: SegmentSeal, path: String, sync: Bool, key: UnsafeMutablePointer<SummaryCache.Key?>? = nil) -> Bool {
        let payload = seal.payload()
        var frame: [UInt8] = []
        frame.reserveCapacity(AppendLog.frameOverhead + payload.count)
        withUnsafeBytes(of: UInt32(payload.count).littleEndian) { frame.append(contentsOf: $0) }
        withUnsafeBytes(of: CRC32.checksum(payload).littleEndian) { frame.append(contentsOf: $0) }
        frame.append(contentsOf: payload)
        let fd = FileFaults.open(path, O_WRONLY | O_CLOEXEC)
        guard fd >= 0 else { return false }
        defer { _ = FileFaults.close(fd) }
        guard Int(lseek(fd, 0, SEEK_END)) == seal.end else { return false }
        var done = 0
        while done < frame.count {
            let n = frame.withUnsafeBytes { FileFaults.write(fd, $0.baseAddress! + done, frame.count - done) }
            if n < 0 && errno == EINTR { continue }
            if n <= 0 {
                _ = FileFaults.ftruncate(fd, off_t(seal.end))
                return false
            }
            done += n
        }
        if sync && FileFaults.fsync(fd) != 0 { return false }
        key?.pointee = SummaryCache.key(fd: fd)
        return true
    }

    static func preadAll(_ fd: Int32, _ buffer: inout [UInt8], at offset: Int) -> Bool {
        var done = 0
        let count = buffer.count
        while done < count {
            let n = buffer.withUnsafeMutableBytes { FileFaults.pread(fd, $0.baseAddress! + done, count - done, off_t(offset + done)) }
            if n < 0 && errno == EINTR { continue }
            if n <= 0 { return false }
            done += n
        }
        return true
    }
}
