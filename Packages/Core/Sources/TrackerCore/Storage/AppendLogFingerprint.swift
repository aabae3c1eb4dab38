#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

extension AppendLog {
    /// What tells a log file's contents apart without reading them all: its size, its
    /// modification time and a checksum of its last ``Fingerprint/tailBytes`` bytes.
    ///
    /// A log only changes by appends (the size grows, the tail changes) and by rewrites (a new
    /// file, written later; a compaction drops records, so it is shorter). A file with the same
    /// fingerprint as before is taken to hold the same bytes: a caller that kept facts about the
    /// file (where its records are, what they hold) may use them without reading it again. File
    /// times can be coarse (a few milliseconds): only a rewrite to the very same bytes may keep
    /// the fingerprint, and that file is the same to a reader.
    public struct Fingerprint: Sendable, Equatable {
        /// How many bytes the fingerprint's checksum covers at the file's end (all of a shorter file).
        public static let tailBytes = 256

        /// The file's size in bytes.
        public var bytes: Int
        /// The file's modification time: seconds and nanoseconds since the epoch.
        public var modifiedSeconds: Int64
        public var modifiedNanoseconds: Int64
        /// CRC-32 of the file's last ``tailBytes`` bytes.
        public var tailChecksum: UInt32

        /// Creates a fingerprint.
        public init(bytes: Int, modifiedSeconds: Int64, modifiedNanoseconds: Int64, tailChecksum: UInt32) {
            self.bytes = bytes
            self.modifiedSeconds = modifiedSeconds
            self.modifiedNanoseconds = modifiedNanoseconds
            self.tailChecksum = tailChecksum
        }
    }

    /// The fingerprint of the log file at `path`; `nil` when it cannot be opened or read.
    public static func fingerprint(path: String) -> Fingerprint? {
        let fd = FileFaults.open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { _ = FileFaults.close(fd) }
        return fingerprint(fd)
    }

    /// The records framed at `offsets` in the log file at `path`, in that order, when the file's
    /// fingerprint is still `expected`; `nil` when it is not, when the file cannot be read, or when
    /// any frame is incomplete or does not match its checksum. One descriptor serves both, so the
    /// records come from the file that was fingerprinted. Neighbouring frames are read in one call.
    public static func readRecords(path: String, at offsets: [Int], ifFingerprint expected: Fingerprint) -> [[UInt8]]? {
        let fd = FileFaults.open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { _ = FileFaults.close(fd) }
        guard fingerprint(fd) == expected else { return nil }
        let size = expected.bytes
        guard let low = offsets.min(), let high = offsets.max(), low >= 0, high + frameOverhead <= size else {
            return offsets.isEmpty ? [] : nil
        }
        // One read from the lowest frame to a little past the highest one's header (the frames of
        // a queue's first batch sit together near the log's head); a frame running past it is
        // read on its own.
        let spanEnd = min(size, high + frameOverhead + 4_096)
        guard spanEnd - low <= spanLimit else { return readEach(fd, offsets, size: size) }
        var span = [UInt8](repeating: 0, count: spanEnd - low)
        guard (try? preadAll(fd, &span, at: low)) == true else { return nil }
        var out: [[UInt8]] = []
        out.reserveCapacity(offsets.count)
        for offset in offsets {
            let at = offset - low
            let len = Int(readU32(span, at))
            guard len <= maxRecordBytes, offset + frameOverhead + len <= size else { return nil }
            let payload: [UInt8]
            if at + frameOverhead + len <= span.count {
                payload = Array(span[(at + frameOverhead)..<(at + frameOverhead + len)])
            } else {
                var rest = [UInt8](repeating: 0, count: len)
                guard (try? preadAll(fd, &rest, at: offset + frameOverhead)) == true else { return nil }
                payload = rest
            }
            guard CRC32.checksum(payload) == readU32(span, at + 4) else { return nil }
            out.append(payload)
        }
        return out
    }

    /// The most ``readRecords(path:at:ifFingerprint:)`` reads in one call (1 MiB).
    static let spanLimit = 1 << 20

    private static func readEach(_ fd: Int32, _ offsets: [Int], size: Int) -> [[UInt8]]? {
        var out: [[UInt8]] = []
        for offset in offsets {
            var header = [UInt8](repeating: 0, count: frameOverhead)
            guard (try? preadAll(fd, &header, at: offset)) == true else { return nil }
            let len = Int(readU32(header, 0))
            guard len <= maxRecordBytes, offset + frameOverhead + len <= size else { return nil }
            var payload = [UInt8](repeating: 0, count: len)
            guard (try? preadAll(fd, &payload, at: offset + frameOverhead)) == true,
                CRC32.checksum(payload) == readU32(header, 4)
            else { return nil }
            out.append(payload)
        }
        return out
    }

    private static func fingerprint(_ fd: Int32) -> Fingerprint? {
        var st = stat()
        guard fstat(fd, &st) == 0 else { return nil }
        let size = Int(st.st_size)
        #if canImport(Darwin)
            let (seconds, nanoseconds) = (Int64(st.st_mtimespec.tv_sec), Int64(st.st_mtimespec.tv_nsec))
        #else
            let (seconds, nanoseconds) = (Int64(st.st_mtim.tv_sec), Int64(st.st_mtim.tv_nsec))
        #endif
        let n = min(size, Fingerprint.tailBytes)
        var tail = [UInt8](repeating: 0, count: n)
        if n > 0 {
            guard (try? preadAll(fd, &tail, at: size - n)) == true else { return nil }
        }
        return Fingerprint(
            bytes: size, modifiedSeconds: seconds, modifiedNanoseconds: nanoseconds, tailChecksum: CRC32.checksum(tail))
    }
}
