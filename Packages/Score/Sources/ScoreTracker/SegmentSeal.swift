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
/// Payload: `S`, then the body, then the body's length (`UInt32`, little-endian) and the magic
/// `SQI1`. Body: where the frames end, frame count, name table, anonymous-id table, then per
/// frame its kind (0 empty, 1 add, 2 removal) and payload length, an add's id, timestamp,
/// flags, required categories, name and anonymous id (table indexes), a removal's canonical
/// UUID ids.
struct SegmentSeal: Equatable {
    /// The seal record's kind byte (`S`).
    static let kind: UInt8 = 83
    static let magic: [UInt8] = Array("SQI1".utf8)
    /// The kind byte of a compaction's padding frame (`SegmentedQueueLog.compact(_:keeping:)`):
    /// zeros over the records it dropped, no record.
    static let paddingKind: UInt8 = 0

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
    func payload() -> [UInt8] {
        var o: [UInt8] = [SegmentSeal.kind]
        o.reserveCapacity(64 + frames.count * 28)
        func varint(_ v: UInt64) {
            var v = v
            while v >= 0x80 {
                o.append(UInt8(truncatingIfNeeded: v) | 0x80)
                v >>= 7
            }
            o.append(UInt8(v))
        }
        func int(_ v: Int) { varint(UInt64(max(0, v))) }
        func u64(_ v: UInt64) { withUnsafeBytes(of: v.littleEndian) { o.append(contentsOf: $0) } }
        func bytes(_ v: [UInt8]) {
            int(v.count)
            o.append(contentsOf: v)
        }
        int(end)
        int(frames.count)
        int(names.count)
        for n in names { bytes(n) }
        int(anonymousIds.count)
        for a in anonymousIds { bytes(a) }
        var lastTs: Int64 = 0
        for (i, f) in frames.enumerated() {
            let next = i + 1 < frames.count ? frames[i + 1].offset : end
            let length = next - f.offset - AppendLog.frameOverhead
            switch f {
            case .empty:
                o.append(0)
                int(length)
            case .add(_, let a):
                o.append(1)
                int(length)
                u64(a.hi)
                u64(a.lo)
                let d = a.timestampMs &- lastTs
                lastTs = a.timestampMs
                varint(UInt64(bitPattern: (d << 1) ^ (d >> 63)))
                o.append(a.flags)
                o.append(a.requires)
                int(a.name)
                int(a.anonymousId)
            case .remove(_, let ids):
                o.append(2)
                int(length)
                int(ids.count)
                for (hi, lo) in ids {
                    u64(hi)
                    u64(lo)
                }
            }
        }
        withUnsafeBytes(of: UInt32(truncatingIfNeeded: o.count - 1).littleEndian) { o.append(contentsOf: $0) }
        o.append(contentsOf: SegmentSeal.magic)
        return o
    }

    /// Reads a seal record's payload; `nil` when it is not one, or is not whole.
    static func decode(_ p: UnsafeBufferPointer<UInt8>) -> SegmentSeal? {
        guard p.count >= 1 + 5 + 8, p[0] == kind, Array(p[(p.count - 4)...]) == magic else { return nil }
        var at = 1
        let bodyEnd = p.count - 8
        func varint() -> UInt64? {
            var v: UInt64 = 0
            var shift: UInt64 = 0
            while at < bodyEnd && shift < 64 {
                let b = p[at]
                at += 1
                v |= UInt64(b & 0x7F) << shift
                if b & 0x80 == 0 { return v }
                shift += 7
            }
            return nil
        }
        func int() -> Int? {
            guard let v = varint(), v <= UInt64(Int32.max) else { return nil }
            return Int(v)
        }
        func u64() -> UInt64? {
            guard at + 8 <= bodyEnd else { return nil }
            var v: UInt64 = 0
            for k in 0..<8 { v |= UInt64(p[at + k]) << (8 * k) }
            at += 8
            return v
        }
        func u8() -> UInt8? {
            guard at < bodyEnd else { return nil }
            at += 1
            return p[at - 1]
        }
        func bytes() -> [UInt8]? {
            guard let n = int(), n <= bodyEnd - at else { return nil }
            at += n
            return Array(p[(at - n)..<at])
        }
        var stated: UInt32 = 0
        for k in 0..<4 { stated |= UInt32(p[bodyEnd + k]) << (8 * k) }
        guard Int(stated) == bodyEnd - 1 else { return nil }
        var seal = SegmentSeal()
        guard let end = int(), let frameCount = int(), frameCount <= bodyEnd - at, let nameCount = int(),
            nameCount <= bodyEnd - at
        else { return nil }
        seal.end = end
        for _ in 0..<nameCount {
            guard let n = bytes() else { return nil }
            seal.names.append(n)
        }
        guard let anonCount = int(), anonCount <= bodyEnd - at else { return nil }
        for _ in 0..<anonCount {
            guard let a = bytes() else { return nil }
            seal.anonymousIds.append(a)
        }
        seal.frames.reserveCapacity(frameCount)
        var offset = 0
        var lastTs: Int64 = 0
        for _ in 0..<frameCount {
            guard let kind = u8(), let length = int() else { return nil }
            switch kind {
            case 0:
                seal.frames.append(.empty(offset: offset))
            case 1:
                guard let hi = u64(), let lo = u64(), let zz = varint(), let flags = u8(), let requires = u8(), let name = int(),
                    let anon = int(), name < seal.names.count, anon < seal.anonymousIds.count
                else { return nil }
                let d = Int64(bitPattern: zz >> 1) ^ -Int64(bitPattern: zz & 1)
                lastTs = lastTs &+ d
                seal.frames.append(
                    .add(
                        offset: offset,
                        Add(hi: hi, lo: lo, timestampMs: lastTs, flags: flags, requires: requires, name: name, anonymousId: anon)))
            case 2:
                guard let n = int(), n <= (bodyEnd - at) / 16 else { return nil }
                var ids: [(UInt64, UInt64)] = []
                ids.reserveCapacity(n)
                for _ in 0..<n {
                    guard let hi = u64(), let lo = u64() else { return nil }
                    ids.append((hi, lo))
                }
                seal.frames.append(.remove(offset: offset, ids: ids))
            default:
                return nil
            }
            offset += AppendLog.frameOverhead + length
        }
        guard at == bodyEnd, offset == end else { return nil }
        return seal
    }

    // MARK: - Files

    /// The seal at the end of the segment file at `path` (one descriptor, three reads: the
    /// footer, then the frame), checked against its frame's checksum and header; `nil` when the
    /// file ends with no intact seal.
    static func read(path: String) -> SegmentSeal? {
        let fd = FileFaults.open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { _ = FileFaults.close(fd) }
        let size = Int(lseek(fd, 0, SEEK_END))
        guard size >= AppendLog.frameOverhead + 16 else { return nil }
        var footer = [UInt8](repeating: 0, count: 8)
        guard preadAll(fd, &footer, at: size - 8), Array(footer[4...]) == magic else { return nil }
        let body = Int(UInt32(footer[0]) | UInt32(footer[1]) << 8 | UInt32(footer[2]) << 16 | UInt32(footer[3]) << 24)
        let payloadCount = 1 + body + 8
        let frameStart = size - payloadCount - AppendLog.frameOverhead
        guard body >= 0, frameStart >= 0, payloadCount <= AppendLog.maxRecordBytes else { return nil }
        var frame = [UInt8](repeating: 0, count: AppendLog.frameOverhead + payloadCount)
        guard preadAll(fd, &frame, at: frameStart) else { return nil }
        let len = Int(UInt32(frame[0]) | UInt32(frame[1]) << 8 | UInt32(frame[2]) << 16 | UInt32(frame[3]) << 24)
        let crc = UInt32(frame[4]) | UInt32(frame[5]) << 8 | UInt32(frame[6]) << 16 | UInt32(frame[7]) << 24
        guard len == payloadCount else { return nil }
        return frame.withUnsafeBufferPointer { all -> SegmentSeal? in
            let payload = UnsafeBufferPointer(rebasing: all[AppendLog.frameOverhead...])
            guard CRC32.checksum(payload) == crc, let seal = decode(payload), seal.end == frameStart else { return nil }
            return seal
        }
    }

    /// Appends the seal to the segment file at `path`, which must still end where the sealed
    /// frames end (nothing was appended since it was read); synced when `sync`. `false` when it
    /// was not written (the file is cut back to its length on a failed write).
    static func write(_ seal: SegmentSeal, path: String, sync: Bool) -> Bool {
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
        return true
    }

    private static func preadAll(_ fd: Int32, _ buffer: inout [UInt8], at offset: Int) -> Bool {
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
