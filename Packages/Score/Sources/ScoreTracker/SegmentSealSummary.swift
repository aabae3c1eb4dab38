import TrackerCore

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// A `SQI2` seal's summary (see `SegmentSeal`): what a launch needs to know of a sealed segment
/// without reading its adds (the lazy launch, `LaunchTail.swift`).
extension SegmentSeal {
    /// What a launch needs to know of a sealed segment without reading its adds (`SQI2`): counts
    /// over every add record of the segment (removed or not, so upper bounds of what is still
    /// queued), and every removal id of its removal records, in order (a removal may concern an
    /// event of an older segment).
    struct Summary: Equatable, Sendable {
        /// Where the sealed frames end (the seal record's offset).
        var end = 0
        /// Add records.
        var adds = 0
        /// Add records of critical events.
        var critical = 0
        /// Add records of `delivery_failed` notices.
        var notices = 0
        /// The OR of the adds' required categories.
        var requires: UInt8 = 0
        /// The oldest and newest add's timestamp (`Int64.max` and `Int64.min` when none).
        var oldestMs = Int64.max
        var newestMs = Int64.min
        /// Adds removed by a removal record of the same segment.
        var removedHere = 0
        /// The canonical UUID ids of every removal record, in order.
        var removals: [(UInt64, UInt64)] = []

        static func == (a: Summary, b: Summary) -> Bool {
            a.end == b.end && a.adds == b.adds && a.critical == b.critical && a.notices == b.notices
                && a.requires == b.requires && a.oldestMs == b.oldestMs && a.newestMs == b.newestMs
                && a.removedHere == b.removedHere && a.removals.elementsEqual(b.removals) { $0 == $1 }
        }
    }
    /// The kind byte of a compaction's padding frame (`SegmentedQueueLog.compact(_:keeping:)`):
    /// zeros over the records it dropped, no record.
    static let paddingKind: UInt8 = 0

    /// The summary of this seal's frames (see ``Summary``).
    var summary: Summary {
        var out = Summary()
        out.end = end
        var added = Set<CompactPair>()
        for f in frames {
            switch f {
            case .empty:
                continue
            case .add(_, let a):
                out.adds += 1
                if a.flags & 1 != 0 { out.critical += 1 }
                if a.flags & 2 != 0 { out.notices += 1 }
                out.requires |= a.requires
                out.oldestMs = min(out.oldestMs, a.timestampMs)
                out.newestMs = max(out.newestMs, a.timestampMs)
                added.insert(CompactPair(hi: a.hi, lo: a.lo))
            case .remove(_, let ids):
                for (hi, lo) in ids {
                    out.removals.append((hi, lo))
                    if added.remove(CompactPair(hi: hi, lo: lo)) != nil { out.removedHere += 1 }
                }
            }
        }
        return out
    }

    /// An event id as two words, hashable (see ``summary``).
    struct CompactPair: Hashable {
        var hi: UInt64
        var lo: UInt64
    }

    /// A summary's bytes: where the frames end, adds, critical, notices, required categories,
    /// oldest and newest timestamp (zigzag), adds removed here, removal id count, then the ids
    /// (16 bytes each).
    static func encode(_ m: Summary) -> [UInt8] {
        var o: [UInt8] = []
        o.reserveCapacity(40 + m.removals.count * 16)
        int(m.end, &o)
        int(m.adds, &o)
        int(m.critical, &o)
        int(m.notices, &o)
        o.append(m.requires)
        for t in [m.oldestMs, m.newestMs] { varint(UInt64(bitPattern: (t << 1) ^ (t >> 63)), &o) }
        int(m.removedHere, &o)
        int(m.removals.count, &o)
        for (hi, lo) in m.removals {
            u64(hi, &o)
            u64(lo, &o)
        }
        return o
    }

    /// A reader of a payload's bytes in `[at, end)` (see ``decode(_:)``).
    struct Reader {
        let p: UnsafeBufferPointer<UInt8>
        var at: Int
        let end: Int

        mutating func varint() -> UInt64? {
            var v: UInt64 = 0
            var shift: UInt64 = 0
            while at < end && shift < 64 {
                let b = p[at]
                at += 1
                v |= UInt64(b & 0x7F) << shift
                if b & 0x80 == 0 { return v }
                shift += 7
            }
            return nil
        }

        mutating func int() -> Int? {
            guard let v = varint(), v <= UInt64(Int32.max) else { return nil }
            return Int(v)
        }

        mutating func zigzag() -> Int64? {
            guard let zz = varint() else { return nil }
            return Int64(bitPattern: zz >> 1) ^ -Int64(bitPattern: zz & 1)
        }

        mutating func u64() -> UInt64? {
            guard at + 8 <= end else { return nil }
            var v: UInt64 = 0
            for k in 0..<8 { v |= UInt64(p[at + k]) << (8 * k) }
            at += 8
            return v
        }

        mutating func u8() -> UInt8? {
            guard at < end else { return nil }
            at += 1
            return p[at - 1]
        }

        mutating func bytes() -> [UInt8]? {
            guard let n = int(), n <= end - at else { return nil }
            at += n
            return Array(p[(at - n)..<at])
        }
    }

    /// Reads a summary's bytes (see ``encode(_:)``); `nil` when they are not one, or not whole.
    static func decodeSummary(_ p: UnsafeBufferPointer<UInt8>) -> Summary? {
        var r = Reader(p: p, at: 0, end: p.count)
        var m = Summary()
        guard let end = r.int(), let adds = r.int(), let critical = r.int(), let notices = r.int(), let requires = r.u8(),
            let oldest = r.zigzag(), let newest = r.zigzag(), let removedHere = r.int(), let count = r.int(),
            count <= (r.end - r.at) / 16
        else { return nil }
        (m.end, m.adds, m.critical, m.notices, m.requires) = (end, adds, critical, notices, requires)
        (m.oldestMs, m.newestMs, m.removedHere) = (oldest, newest, removedHere)
        m.removals.reserveCapacity(count)
        for _ in 0..<count {
            guard let hi = r.u64(), let lo = r.u64() else { return nil }
            m.removals.append((hi, lo))
        }
        return r.at == r.end ? m : nil
    }

    /// A `SQI2` footer's summary length and summary checksum (its first 8 bytes).
    static func summaryFooter(_ f: UnsafeBufferPointer<UInt8>) -> (length: Int, crc: UInt32) {
        var length: UInt32 = 0
        var crc: UInt32 = 0
        for k in 0..<4 {
            length |= UInt32(f[k]) << (8 * k)
            crc |= UInt32(f[4 + k]) << (8 * k)
        }
        return (Int(length), crc)
    }

    /// The summary (``Summary``) of the `SQI2` seal at the end of the segment file at `path`,
    /// read without its adds: the file's last ``summaryChunk`` bytes (the footer and, unless it
    /// holds many removal ids, the summary; else a second read), checked by the summary's own
    /// checksum and by where it says the frames end (the seal frame's start, from the footer). The
    /// frame's checksum, over the whole seal, is checked when the seal is read whole (at the
    /// splice: a seal damaged elsewhere then reads as none, and the segment is read from its
    /// frames or intact records). `nil` when the file ends with no intact `SQI2` seal (none, a
    /// `SQI1` one, a torn or damaged one): such a segment is read as before. One descriptor,
    /// three calls besides its open and close. `bytesRead` adds the bytes read (tests); `key`
    /// gets the identity of the file read (for ``SummaryCache``; one call more), when a summary
    /// is read.
    static func readSummary(
        path: String, bytesRead: UnsafeMutablePointer<Int>? = nil, key: UnsafeMutablePointer<SummaryCache.Key?>? = nil
    ) -> Summary? {
        let fd = FileFaults.open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { _ = FileFaults.close(fd) }
        guard let m = readSummary(fd: fd, bytesRead: bytesRead) else { return nil }
        key?.pointee = SummaryCache.key(fd: fd)
        return m
    }

    private static func readSummary(fd: Int32, bytesRead: UnsafeMutablePointer<Int>?) -> Summary? {
        let size = Int(lseek(fd, 0, SEEK_END))
        guard size >= AppendLog.frameOverhead + 1 + footerBytes else { return nil }
        let chunk = min(size, summaryChunk)
        var last = [UInt8](repeating: 0, count: chunk)
        guard preadAll(fd, &last, at: size - chunk), Array(last[(chunk - 4)...]) == magic else { return nil }
        bytesRead?.pointee += chunk
        let f = chunk - footerBytes
        let stated = Int(UInt32(last[f + 8]) | UInt32(last[f + 9]) << 8 | UInt32(last[f + 10]) << 16 | UInt32(last[f + 11]) << 24)
        let (length, crc) = last.withUnsafeBufferPointer { summaryFooter(UnsafeBufferPointer(rebasing: $0[f...])) }
        let payloadCount = 1 + stated + 8
        let frameStart = size - payloadCount - AppendLog.frameOverhead
        guard frameStart >= 0, payloadCount <= AppendLog.maxRecordBytes, length <= stated - 8 else { return nil }
        var bytes: [UInt8]
        if length <= f {
            bytes = Array(last[(f - length)..<f])
        } else {
            bytes = [UInt8](repeating: 0, count: length)
            guard preadAll(fd, &bytes, at: size - footerBytes - length) else { return nil }
            bytesRead?.pointee += length
        }
        return bytes.withUnsafeBufferPointer { b -> Summary? in
            guard CRC32.checksum(b) == crc, let m = decodeSummary(b), m.end == frameStart else { return nil }
            return m
        }
    }

    /// How many bytes ``readSummary(path:bytesRead:)`` reads first from a segment's end: the
    /// footer and a summary of up to about 14 removal ids.
    static let summaryChunk = 256
}
