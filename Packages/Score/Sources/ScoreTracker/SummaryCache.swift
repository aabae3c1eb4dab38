import TrackerCore

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// The sealed segments' summaries kept together in one file, `queue.summaries` (issue 35: the
/// first request after launch flat in queue depth). A lazy launch needs every sealed segment's
/// summary before its first batch (`LaunchTailPlan`). Read one by one, that is an open, a seek,
/// a read and a close per segment: about 1 ms at 100,000 queued events (some 80 segments). With
/// this file, the launch makes one read for all of them and one `stat` per segment.
///
/// A cache, never the truth:
/// - Each entry holds a segment's summary with the identity of the file it was read from (inode,
///   size, change and modification times, taken through the descriptor that read or wrote the
///   seal). A launch uses an entry only when the segment's file has that identity now. Any write
///   changes the size or the times, and a compaction makes a new file (a new inode), so a file
///   with the same identity holds the same bytes, and a summary is a function of those bytes.
///   Any other segment's summary is read from its file as before.
/// - Written whole to a temporary file and renamed over the old one, without a sync. A kill
///   leaves the old file or the new one. After a power loss the file may be stale, or its bytes
///   lost: it ends with a CRC-32 of everything before it, and a file that does not check (or
///   does not parse exactly) is ignored as a whole.
/// - Written by the sync thread after it seals segments, and after a launch that had to read
///   some summary from its segment (``SegmentedQueueLog/sealPending()``); never on the append
///   path. Earlier versions ignore the file, and deleting it only costs one slower launch.
///
/// Format (`SQM1`, little-endian): the magic, the entry count (`UInt32`), then per entry the
/// segment number (`UInt32`), the inode (`UInt64`), the size, the change time's seconds and
/// nanoseconds and the modification time's (`Int64`s), the summary's length (`UInt32`) and the
/// summary (`SegmentSeal.encode(_:)`); then the CRC-32 of all of it (`UInt32`).
struct SummaryCache: Equatable, Sendable {
    /// A segment file's identity (see the type's comment).
    struct Key: Equatable, Sendable {
        var inode: UInt64
        var size: Int64
        var changedSec: Int64
        var changedNsec: Int64
        var modifiedSec: Int64
        var modifiedNsec: Int64
    }

    struct Entry: Equatable, Sendable {
        var key: Key
        var summary: SegmentSeal.Summary
    }

    /// The entries, by segment number.
    var entries: [Int: Entry] = [:]

    static let fileName = "queue.summaries"
    static let magic: [UInt8] = Array("SQM1".utf8)

    // MARK: - Identity

    /// The identity of the file open as `fd`; `nil` when `fstat` fails.
    static func key(fd: Int32) -> Key? {
        var st = stat()
        guard fstat(fd, &st) == 0 else { return nil }
        return key(st)
    }

    /// The identity of the file at `path`; `nil` when there is none (or `stat` fails).
    static func key(path: String) -> Key? {
        var st = stat()
        guard stat(path, &st) == 0 else { return nil }
        return key(st)
    }

    private static func key(_ st: stat) -> Key {
        #if canImport(Darwin)
            Key(
                inode: UInt64(st.st_ino), size: Int64(st.st_size),
                changedSec: Int64(st.st_ctimespec.tv_sec), changedNsec: Int64(st.st_ctimespec.tv_nsec),
                modifiedSec: Int64(st.st_mtimespec.tv_sec), modifiedNsec: Int64(st.st_mtimespec.tv_nsec))
        #else
            Key(
                inode: UInt64(st.st_ino), size: Int64(st.st_size),
                changedSec: Int64(st.st_ctim.tv_sec), changedNsec: Int64(st.st_ctim.tv_nsec),
                modifiedSec: Int64(st.st_mtim.tv_sec), modifiedNsec: Int64(st.st_mtim.tv_nsec))
        #endif
    }

    /// The summary of segment `n` whose file is at `path`, when an entry holds it and the file
    /// still has the entry's identity.
    func summary(of n: Int, path: String) -> SegmentSeal.Summary? {
        guard let e = entries[n], SummaryCache.key(path: path) == e.key else { return nil }
        return e.summary
    }

    // MARK: - Bytes

    func encode() -> [UInt8] {
        var o = SummaryCache.magic
        func u32(_ v: UInt32) { withUnsafeBytes(of: v.littleEndian) { o.append(contentsOf: $0) } }
        func u64(_ v: UInt64) { withUnsafeBytes(of: v.littleEndian) { o.append(contentsOf: $0) } }
        u32(UInt32(entries.count))
        for (n, e) in entries.sorted(by: { $0.key < $1.key }) {
            u32(UInt32(n))
            u64(e.key.inode)
            for v in [e.key.size, e.key.changedSec, e.key.changedNsec, e.key.modifiedSec, e.key.modifiedNsec] {
                u64(UInt64(bitPattern: v))
            }
            let m = SegmentSeal.encode(e.summary)
            u32(UInt32(m.count))
            o += m
        }
        u32(CRC32.checksum(o))
        return o
    }

    /// The cache in `bytes`; `nil` unless they check and parse exactly.
    static func decode(_ bytes: [UInt8]) -> SummaryCache? {
        guard bytes.count >= magic.count + 8, Array(bytes[0..<magic.count]) == magic else { return nil }
        let body = bytes.count - 4
        let crc = bytes.withUnsafeBufferPointer { CRC32.checksum(UnsafeBufferPointer(rebasing: $0[0..<body])) }
        guard crc == u32(bytes, body) else { return nil }
        var at = magic.count
        func take32() -> UInt32? {
            guard at + 4 <= body else { return nil }
            defer { at += 4 }
            return u32(bytes, at)
        }
        func take64() -> UInt64? {
            guard at + 8 <= body else { return nil }
            defer { at += 8 }
            return UInt64(u32(bytes, at)) | UInt64(u32(bytes, at + 4)) << 32
        }
        guard let count = take32() else { return nil }
        var out = SummaryCache()
        for _ in 0..<count {
            guard let n = take32(), let inode = take64(), let size = take64(), let cs = take64(), let cn = take64(),
                let ms = take64(), let mn = take64(), let length = take32(), Int(length) <= body - at
            else { return nil }
            let summary = bytes.withUnsafeBufferPointer { b in
                SegmentSeal.decodeSummary(UnsafeBufferPointer(rebasing: b[at..<(at + Int(length))]))
            }
            guard let summary, out.entries[Int(n)] == nil else { return nil }
            at += Int(length)
            let key = Key(
                inode: inode, size: Int64(bitPattern: size), changedSec: Int64(bitPattern: cs),
                changedNsec: Int64(bitPattern: cn), modifiedSec: Int64(bitPattern: ms), modifiedNsec: Int64(bitPattern: mn))
            out.entries[Int(n)] = Entry(key: key, summary: summary)
        }
        return at == body ? out : nil
    }

    private static func u32(_ b: [UInt8], _ at: Int) -> UInt32 {
        UInt32(b[at]) | UInt32(b[at + 1]) << 8 | UInt32(b[at + 2]) << 16 | UInt32(b[at + 3]) << 24
    }

    // MARK: - File

    /// The cache file of `directory`; `nil` when there is none or it does not check.
    static func read(directory: String) -> SummaryCache? {
        guard let bytes = try? FileIO.readBytes(directory + "/" + fileName) else { return nil }
        return decode(bytes)
    }

    /// Writes the cache as `directory`'s file: a temporary file renamed over it (no sync: see the
    /// type's comment). `false` when it was not written (the old file, if any, stays).
    @discardableResult
    func write(directory: String) -> Bool {
        let bytes = encode()
        let final = directory + "/" + SummaryCache.fileName
        let temp = final + ".tmp"
        let fd = FileFaults.open(temp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        guard fd >= 0 else { return false }
        let written = (try? FileIO.writeAll(fd, bytes)) != nil
        _ = FileFaults.close(fd)
        guard written, FileFaults.rename(temp, final) == 0 else {
            _ = FileFaults.unlink(temp)
            return false
        }
        return true
    }
}
