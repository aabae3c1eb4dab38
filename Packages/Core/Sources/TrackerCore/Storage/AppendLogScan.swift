/// Reading framed records out of bytes already in memory: parsing, damage scanning and frame
/// checks (split from `AppendLog.swift`).
extension AppendLog {
    /// Splits `bytes` into the intact records (skipping damaged regions between them) and the
    /// offset where the last intact record ends.
    public static func parse(_ bytes: [UInt8]) -> (records: [[UInt8]], end: Int) {
        let (records, _, end) = parseWithOffsets(bytes)
        return (records, end)
    }

    /// Splits `bytes` into the intact records, their frame offsets, and where intact data ends.
    public static func parseWithOffsets(_ bytes: [UInt8]) -> (records: [[UInt8]], offsets: [Int], end: Int) {
        let s = scan(bytes)
        return (s.records, s.offsets, s.end)
    }

    /// Splits `bytes` into the intact records (skipping damaged regions between them), their
    /// frame offsets, where the last intact record ends, and what was skipped or is cut.
    public static func scan(_ bytes: [UInt8]) -> Scan {
        var records: [[UInt8]] = []
        var offsets: [Int] = []
        var damage = Damage()
        var at = 0
        bytes.withUnsafeBufferPointer { buf in
            while buf.count - at >= frameOverhead {
                if let len = frameLength(buf, at, allowEmpty: true) {
                    let start = at + frameOverhead
                    records.append(Array(buf[start..<(start + len)]))
                    offsets.append(at)
                    at = start + len
                    continue
                }
                // A bad frame: damage in the middle when an intact frame follows, else the tail.
                var next = at + 1
                var found: Int?
                while buf.count - next >= frameOverhead {
                    if frameLength(buf, next, allowEmpty: false) != nil {
                        found = next
                        break
                    }
                    next += 1
                }
                guard let resume = found else { break }
                damage.skippedRegions += 1
                damage.skippedBytes += resume - at
                at = resume
            }
        }
        damage.tornTailBytes = bytes.count - at
        damage.tailBeyondOneRecord = tailBeyondOneRecord(bytes, from: at)
        return Scan(records: records, offsets: offsets, end: at, damage: damage)
    }

    /// Whether the bytes of `bytes` from `at` on (a tail with no intact frame) hold more than
    /// one torn record (see ``Damage/tailBeyondOneRecord``).
    static func tailBeyondOneRecord(_ bytes: [UInt8], from at: Int) -> Bool {
        let tail = bytes.count - at
        guard tail >= frameOverhead else { return false }
        let len = Int(readU32(bytes, at))
        return len > maxRecordBytes || frameOverhead + len < tail
    }

    /// The payload length of the intact frame at `at`, or `nil` when none starts there.
    @inline(__always)
    static func frameLength(_ buf: UnsafeBufferPointer<UInt8>, _ at: Int, allowEmpty: Bool) -> Int? {
        let b = buf.baseAddress!
        let len = Int(UInt32(b[at]) | UInt32(b[at + 1]) << 8 | UInt32(b[at + 2]) << 16 | UInt32(b[at + 3]) << 24)
        guard len <= maxRecordBytes, buf.count - at - frameOverhead >= len, allowEmpty || len > 0 else { return nil }
        let crc = UInt32(b[at + 4]) | UInt32(b[at + 5]) << 8 | UInt32(b[at + 6]) << 16 | UInt32(b[at + 7]) << 24
        let start = at + frameOverhead
        return CRC32.checksum(UnsafeBufferPointer(rebasing: buf[start..<(start + len)])) == crc ? len : nil
    }
}
