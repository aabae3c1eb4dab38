#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// Why an ``AppendLog`` operation failed.
public struct AppendLogError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The failing system call or step, e.g. `open`, `write`, `fsync`, `rename`.
    public let operation: String
    /// The `errno` value, 0 when none applies.
    public let errno: Int32

    /// Creates an error.
    public init(_ operation: String, errno: Int32) {
        self.operation = operation
        self.errno = errno
    }

    public var description: String { "append log \(operation) failed (errno \(errno))" }
}

/// A crash-safe append-only log of binary records in one owner-only (0600) file.
///
/// Each record is framed as `length (UInt32 LE) | CRC-32 of the payload (UInt32 LE) | payload`.
/// Loading reads frames in order. At a frame that is incomplete or does not match its checksum
/// it looks for the next intact frame further on (trying every byte offset): when one is found
/// the bytes in between are a damaged region, skipped and counted in ``damage``, and every
/// intact record after it is kept; when none follows, the bytes from the bad frame on are a
/// torn tail and are cut off the file. So a file cut at any byte loses at most the record that
/// was being written, a damaged record loses that record only, and later appends are never
/// blocked by a torn tail. ``rewrite(_:deferDirectorySync:)`` compacts by writing a new file,
/// syncing it and renaming it over the old one (which also drops the damaged regions).
///
/// No sync marker is needed to find frames again: a candidate frame must have a non-zero
/// length that fits in the file and a payload matching its CRC-32 (a chance of 2⁻³² for a
/// random candidate). An empty record directly after a damaged region is counted as damaged
/// (eight zero bytes are a valid empty frame, and zeroed blocks are a common kind of damage).
/// The format is the one earlier versions wrote, so their logs load unchanged.
///
/// An `AppendLog` is not thread-safe: its owner serialises the calls (an actor or a lock).
public final class AppendLog {
    /// What loading skipped or cut: damaged regions between intact records, and a torn tail.
    public struct Damage: Sendable, Equatable, CustomStringConvertible {
        /// Damaged regions skipped between intact records (each lost one record or more).
        public var skippedRegions: Int
        /// Bytes in those regions.
        public var skippedBytes: Int
        /// Bytes cut off the end: a record torn by a crash, or damage with no intact record after it.
        public var tornTailBytes: Int
        /// Whether the cut tail is more than one record torn by a crash: its first frame is
        /// complete (or claims an impossible length) and bytes follow it, so the tail is damage
        /// that runs to the end of the file (an overwritten file, say), worth a diagnostic like a
        /// skipped region. A crash tears at most the record being written: the file then ends
        /// inside that record's frame.
        public var tailBeyondOneRecord: Bool

        /// Creates a report.
        public init(skippedRegions: Int = 0, skippedBytes: Int = 0, tornTailBytes: Int = 0, tailBeyondOneRecord: Bool = false) {
            self.skippedRegions = skippedRegions
            self.skippedBytes = skippedBytes
            self.tornTailBytes = tornTailBytes
            self.tailBeyondOneRecord = tailBeyondOneRecord
        }

        /// Nothing skipped and nothing cut.
        public static let none = Damage()

        /// Whether intact-looking data was skipped in the middle of the log (a damaged file, not
        /// a crash: worth a diagnostic).
        public var hasSkippedRegions: Bool { skippedRegions > 0 }

        public var description: String {
            "\(skippedBytes) damaged byte(s) in \(skippedRegions) region(s) skipped, \(tornTailBytes) torn tail byte(s) cut"
        }
    }

    /// The result of ``scan(_:)``.
    public struct Scan: Sendable, Equatable {
        /// The intact records, in order.
        public var records: [[UInt8]]
        /// Their frame offsets.
        public var offsets: [Int]
        /// Where the last intact record ends: the file is cut here.
        public var end: Int
        /// What was skipped and what is cut.
        public var damage: Damage
    }

    /// The largest payload accepted in one record (64 MiB); a longer frame on disk counts as torn.
    public static let maxRecordBytes = 64 << 20
    /// Frame header size in bytes.
    public static let frameOverhead = 8

    /// The log file's path.
    public let path: String
    var fd: Int32
    /// The file's length in bytes after the last complete record.
    public internal(set) var byteCount: Int
    /// Whether each append and rewrite is followed by `fsync`.
    public let syncs: Bool
    /// The frame offsets of the records returned by ``open(path:sync:)``, in order.
    public private(set) var loadedOffsets: [Int] = []
    /// Whether an append made with `sync: false` has not been synced yet (see ``sync()``).
    public internal(set) var hasUnsyncedAppends = false
    /// Whether a ``rewrite(_:deferDirectorySync:)`` made with `deferDirectorySync: true` has not
    /// had its rename synced yet (see ``sync()``).
    public internal(set) var hasUnsyncedRename = false
    /// What ``open(path:sync:)`` skipped and cut; a damaged region stays in the file (skipped
    /// again at each load) until the next ``rewrite(_:deferDirectorySync:)``.
    public private(set) var damage = Damage.none

    private init(path: String, fd: Int32, byteCount: Int, syncs: Bool) {
        self.path = path
        self.fd = fd
        self.byteCount = byteCount
        self.syncs = syncs
    }

    deinit { if fd >= 0 { _ = FileFaults.close(fd) } }

    /// Opens (creating when absent, with mode 0600) the log at `path`, returns it with every
    /// intact record in order, skips damaged regions between intact records (reported in
    /// ``damage``) and cuts a torn or damaged tail off the file.
    public static func open(path: String, sync: Bool = true) throws(AppendLogError) -> (log: AppendLog, records: [[UInt8]]) {
        let fd = FileFaults.open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw AppendLogError("open", errno: errno) }
        _ = fchmod(fd, 0o600)
        let bytes: [UInt8]
        do { bytes = try readAll(fd) } catch {
            _ = FileFaults.close(fd)
            throw error
        }
        // A compaction killed before its rename leaves its temporary file: never read, remove it.
        _ = FileFaults.unlink(path + ".tmp")
        let scanned = scan(bytes)
        let (records, offsets, goodEnd) = (scanned.records, scanned.offsets, scanned.end)
        if goodEnd < bytes.count {
            guard FileFaults.ftruncate(fd, off_t(goodEnd)) == 0 else {
                let e = errno
                _ = FileFaults.close(fd)
                throw AppendLogError("ftruncate", errno: e)
            }
            if sync { _ = FileFaults.fsync(fd) }
        }
        guard lseek(fd, off_t(goodEnd), SEEK_SET) >= 0 else {
            let e = errno
            _ = FileFaults.close(fd)
            throw AppendLogError("lseek", errno: e)
        }
        let log = AppendLog(path: path, fd: fd, byteCount: goodEnd, syncs: sync)
        log.loadedOffsets = offsets
        log.damage = scanned.damage
        return (log, records)
    }

    /// Reads the frames of a log file as it was when ``openFollowingLengths(path:sync:expect:visit:)``
    /// opened it, through a descriptor of its own: appends made later are not seen (the walk
    /// stops where the file ended then), and a compaction's rename does not affect it.
    public final class FrameReader: @unchecked Sendable {
        private let fd: Int32
        /// The frame offsets, in order.
        public let offsets: [Int]
        /// Where the last frame ends (the file's length when it was opened).
        public let end: Int

        init(fd: Int32, offsets: [Int], end: Int) {
            self.fd = fd
            self.offsets = offsets
            self.end = end
        }

        deinit { _ = FileFaults.close(fd) }

        /// Calls `body` with each frame in order, its index, offset, payload and stored
        /// checksum, reading the file in chunks; stops early when `body` returns `false`.
        /// Returns whether it went through every frame.
        public func forEachFrame(_ body: (_ index: Int, _ offset: Int, _ payload: UnsafeBufferPointer<UInt8>, _ checksum: UInt32) -> Bool)
            throws(AppendLogError) -> Bool
        {
            try AppendLog.walkFrames(fd, limit: end, body) != nil
        }

        /// The indices of the frames whose payload does not match its checksum, in order (an empty
        /// frame whose checksum field is not zero counts as damaged).
        public func damagedFrames() throws(AppendLogError) -> [Int] {
            var bad: [Int] = []
            _ = try forEachFrame { index, _, payload, checksum in
                if CRC32.checksum(payload) != checksum { bad.append(index) }
                return true
            }
            return bad
        }
    }

    /// Opens the log at `path` like ``open(path:sync:)``, for a start-up that must be quick: it
    /// reads the file in chunks and follows the frames' length fields, calling `visit` with each
    /// frame (index, offset, payload, stored checksum) as it goes, without checking the
    /// checksums except the last frame's. The caller checks the others later, with
    /// ``FrameReader/damagedFrames()``; ``read(at:)`` checks a record's when it is read back.
    /// No buffer of the file's size is held.
    ///
    /// Returns `nil`, having closed the file, when the frames do not tile the file exactly (a
    /// torn tail, a length that runs past the end, a last frame that is empty or does not match
    /// its checksum) or when `visit` returns `false`. The caller then calls ``open(path:sync:)``,
    /// which checks every frame and repairs the file. A damaged length inside the file most
    /// likely breaks the tiling. When it does not, the frame it belongs to fails its checksum, and
    /// a length that grew takes in the frames after it, which are then not visited (the careful
    /// open would find and keep them): a caller whose records cannot hold a frame's header rules
    /// this out as it visits them (every length field below 16 MiB holds a zero byte; Score's
    /// envelopes, JSON text, hold none).
    ///
    /// `expect` is called once, before the first frame, with the file's size in bytes (for the
    /// caller to size its tables once).
    public static func openFollowingLengths(
        path: String, sync: Bool = true, expect: (_ fileBytes: Int) -> Void = { _ in },
        visit: (_ index: Int, _ offset: Int, _ payload: UnsafeBufferPointer<UInt8>, _ checksum: UInt32) -> Bool
    ) throws(AppendLogError) -> (log: AppendLog, frames: FrameReader)? {
        let fd = FileFaults.open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw AppendLogError("open", errno: errno) }
        _ = fchmod(fd, 0o600)
        // The walk reads with `pread`: the file position is set to the end of the frames below.
        let size = Int(lseek(fd, 0, SEEK_END))
        expect(max(0, size))
        let walked: (offsets: [Int], end: Int)?
        do { walked = try walkFrames(fd, limit: nil, fileBytes: size >= 0 ? size : nil, visit) } catch {
            _ = FileFaults.close(fd)
            throw error
        }
        guard let (offsets, end) = walked, lastFrameIsIntact(fd, offsets: offsets, end: end),
            lseek(fd, off_t(end), SEEK_SET) >= 0
        else {
            _ = FileFaults.close(fd)
            return nil
        }
        let own = FileFaults.dup(fd)
        guard own >= 0 else {
            _ = FileFaults.close(fd)
            return nil
        }
        _ = FileFaults.unlink(path + ".tmp")
        let log = AppendLog(path: path, fd: fd, byteCount: end, syncs: sync)
        log.loadedOffsets = offsets
        return (log, FrameReader(fd: own, offsets: offsets, end: end))
    }

    /// The chunk ``walkFrames(_:limit:fileBytes:_:)`` reads at a time (a frame longer than it is read whole).
    static let walkChunkBytes = 256 << 10

    /// Follows the frames of the file behind `fd` from its start to its end (or to `limit`),
    /// reading with `pread` in chunks, and calls `body` with each; their offsets and where the
    /// last one ends, or `nil` when the frames do not tile the file (or `body` said stop).
    ///
    /// `fileBytes`: the file's size when known: a frame whose length runs past it (or past
    /// `limit`) ends the walk before any buffer is grown for it (a damaged length may claim up to
    /// ``maxRecordBytes``).
    static func walkFrames(
        _ fd: Int32, limit: Int?, fileBytes: Int? = nil,
        _ body: (_ index: Int, _ offset: Int, _ payload: UnsafeBufferPointer<UInt8>, _ checksum: UInt32) -> Bool
    ) throws(AppendLogError) -> (offsets: [Int], end: Int)? {
        var buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: walkChunkBytes, alignment: 8)
        defer { buffer.deallocate() }
        var offsets: [Int] = []
        var bufferStart = 0  // the file offset of buffer[0]
        var filled = 0  // bytes read into the buffer
        var at = 0  // the next frame's file offset
        var atEnd = false
        /// Keeps the bytes from `at` on, at the buffer's start, grown to hold `need` bytes, and
        /// reads after them; `false` at the end of the file.
        func refill(need: Int) throws(AppendLogError) -> Bool {
            let keep = filled - (at - bufferStart)
            if need > buffer.count {
                let grown = UnsafeMutableRawBufferPointer.allocate(byteCount: need, alignment: 8)
                if keep > 0 { grown.baseAddress!.copyMemory(from: buffer.baseAddress! + (at - bufferStart), byteCount: keep) }
                buffer.deallocate()
                buffer = grown
            } else if keep > 0 && at > bufferStart {
                buffer.baseAddress!.copyMemory(from: buffer.baseAddress! + (at - bufferStart), byteCount: keep)
            }
            bufferStart = at
            filled = keep
            var want = buffer.count - filled
            if let limit { want = min(want, limit - (bufferStart + filled)) }
            if want <= 0 { return false }
            while true {
                let n = FileFaults.pread(fd, buffer.baseAddress! + filled, want, off_t(bufferStart + filled))
                if n < 0 {
                    if errno == EINTR { continue }
                    throw AppendLogError("pread", errno: errno)
                }
                filled += n
                return n > 0
            }
        }
        while true {
            var rel = at - bufferStart
            if filled - rel < frameOverhead {
                if atEnd { break }
                if try !refill(need: frameOverhead) { atEnd = true }
                continue
            }
            let b = UnsafeRawBufferPointer(rebasing: buffer[rel..<filled])
            let len = Int(b.loadUnaligned(fromByteOffset: 0, as: UInt32.self).littleEndian)
            let checksum = b.loadUnaligned(fromByteOffset: 4, as: UInt32.self).littleEndian
            guard len <= maxRecordBytes else { return nil }
            if let end = limit ?? fileBytes, at + frameOverhead + len > end { return nil }
            if filled - rel < frameOverhead + len {
                // The frame runs past what is read: read on, or it runs past the end.
                if atEnd { return nil }
                if try !refill(need: frameOverhead + len) { atEnd = true }
                continue
            }
            rel += frameOverhead
            let payload = UnsafeRawBufferPointer(rebasing: buffer[rel..<(rel + len)]).bindMemory(to: UInt8.self)
            if !body(offsets.count, at, payload, checksum) { return nil }
            offsets.append(at)
            at += frameOverhead + len
        }
        // Bytes after the last frame that are too few for a header: not a tiling.
        guard filled - (at - bufferStart) == 0 else { return nil }
        return (offsets, at)
    }

    /// Whether the last of `offsets` is a non-empty frame matching its checksum (read back).
    static func lastFrameIsIntact(_ fd: Int32, offsets: [Int], end: Int) -> Bool {
        guard let last = offsets.last else { return true }
        var frame = [UInt8](repeating: 0, count: end - last)
        guard (try? preadAll(fd, &frame, at: last)) == true, frame.count > frameOverhead else { return false }
        return frame.withUnsafeBufferPointer { frameLength($0, 0, allowEmpty: false) } == frame.count - frameOverhead
    }

    /// Reads back the record framed at `offset` (as returned by ``append(_:sync:)``,
    /// ``rewrite(_:deferDirectorySync:)`` or ``loadedOffsets``); `nil` when no intact record
    /// starts there.
    public func read(at offset: Int) throws(AppendLogError) -> [UInt8]? {
        guard fd >= 0 else { throw AppendLogError("read", errno: EBADF) }
        guard offset >= 0, offset + AppendLog.frameOverhead <= byteCount else { return nil }
        var header = [UInt8](repeating: 0, count: AppendLog.frameOverhead)
        guard try AppendLog.preadAll(fd, &header, at: offset) else { return nil }
        let len = Int(AppendLog.readU32(header, 0))
        let crc = AppendLog.readU32(header, 4)
        guard len <= AppendLog.maxRecordBytes, offset + AppendLog.frameOverhead + len <= byteCount else { return nil }
        var payload = [UInt8](repeating: 0, count: len)
        guard try AppendLog.preadAll(fd, &payload, at: offset + AppendLog.frameOverhead) else { return nil }
        return CRC32.checksum(payload) == crc ? payload : nil
    }

    static func preadAll(_ fd: Int32, _ buffer: inout [UInt8], at offset: Int) throws(AppendLogError) -> Bool {
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

    /// The framed bytes of `records`, as they are written to the file.
    public static func frame(_ records: [[UInt8]]) -> [UInt8] {
        let total = records.reduce(0) { $0 + $1.count + frameOverhead }
        // Written in place (one exact-size buffer): no per-byte appends for the frame headers.
        return ByteArrays.make(count: total) { buf, initialized in
            guard var at = buf.baseAddress else { return }
            for r in records {
                r.withUnsafeBufferPointer { src in
                    let raw = UnsafeMutableRawPointer(at)
                    raw.storeBytes(of: UInt32(src.count).littleEndian, as: UInt32.self)
                    raw.storeBytes(of: CRC32.checksum(src).littleEndian, toByteOffset: 4, as: UInt32.self)
                    if let from = src.baseAddress, src.count > 0 {
                        (at + frameOverhead).initialize(from: from, count: src.count)
                    }
                }
                at += frameOverhead + r.count
            }
            initialized = total
        }
    }

    /// Appends `records` in one write (then `fsync` when the log syncs) and returns their frame
    /// offsets. On failure the file is cut back to its previous length, so a failed append leaves
    /// no partial record behind.
    ///
    /// With `sync: false` the records are written (so they survive the app crashing or being
    /// killed) but not synced to the device: ``sync()`` does that later, for many appends at
    /// once. Until then a power loss or an OS crash may lose them; the log stays readable.
    @discardableResult
    public func append(_ records: [[UInt8]], sync syncNow: Bool = true) throws(AppendLogError) -> [Int] {
        guard !records.isEmpty else { return [] }
        for r in records where r.count > AppendLog.maxRecordBytes { throw AppendLogError("record-too-large", errno: 0) }
        let bytes = AppendLog.frame(records)
        do throws(AppendLogError) {
            try AppendLog.writeAll(fd, bytes)
            if syncs && syncNow {
                if FileFaults.fsync(fd) != 0 { throw AppendLogError("fsync", errno: errno) }
                hasUnsyncedAppends = false
            } else if syncs {
                hasUnsyncedAppends = true
            }
        } catch {
            _ = FileFaults.ftruncate(fd, off_t(byteCount))
            _ = lseek(fd, off_t(byteCount), SEEK_SET)
            throw error
        }
        let offsets = AppendLog.offsets(of: records, from: byteCount)
        byteCount += bytes.count
        return offsets
    }

    static func offsets(of records: [[UInt8]], from start: Int) -> [Int] {
        var out: [Int] = []
        out.reserveCapacity(records.count)
        var at = start
        for r in records {
            out.append(at)
            at += frameOverhead + r.count
        }
        return out
    }

    /// Syncs the appends made with `sync: false` to the device (one `fsync` for all of them),
    /// then a deferred rename (see ``rewrite(_:deferDirectorySync:)``); does nothing when there
    /// is neither or the log does not sync.
    public func sync() throws(AppendLogError) {
        guard syncs else { return }
        if hasUnsyncedAppends {
            guard FileFaults.fsync(fd) == 0 else { throw AppendLogError("fsync", errno: errno) }
            hasUnsyncedAppends = false
        }
        if hasUnsyncedRename {
            AppendLog.syncDirectory(of: path)
            hasUnsyncedRename = false
        }
    }

    /// Closes the file; later calls fail.
    public func close() {
        if fd >= 0 { _ = FileFaults.close(fd) }
        fd = -1
    }

    // MARK: helpers

    static func syncDirectory(of path: String) {
        var dir = path
        if let slash = dir.lastIndex(of: "/") { dir = String(dir[..<slash]) } else { dir = "." }
        if dir.isEmpty { dir = "/" }
        let dfd = FileFaults.open(dir, O_RDONLY | O_CLOEXEC, 0)
        if dfd >= 0 {
            _ = FileFaults.fsync(dfd)
            _ = FileFaults.close(dfd)
        }
    }

    /// The whole file from its start: read straight into a buffer of the file's size (one copy),
    /// then in chunks should the file be longer than `fstat` said.
    static func readAll(_ fd: Int32) throws(AppendLogError) -> [UInt8] {
        guard lseek(fd, 0, SEEK_SET) >= 0 else { throw AppendLogError("lseek", errno: errno) }
        var st = stat()
        let size = fstat(fd, &st) == 0 && st.st_size > 0 ? Int(st.st_size) : 0
        var failure: Int32 = 0
        var atEnd = false
        var out = ByteArrays.make(count: size) { buffer, count in
            count = 0
            while count < size {
                let n = FileFaults.read(fd, buffer.baseAddress! + count, size - count)
                if n < 0 {
                    if errno == EINTR { continue }
                    failure = errno
                    return
                }
                if n == 0 {
                    atEnd = true
                    return
                }
                count += n
            }
        }
        if failure != 0 { throw AppendLogError("read", errno: failure) }
        if atEnd { return out }
        var chunk = [UInt8](repeating: 0, count: 1 << 16)
        while true {
            let n = chunk.withUnsafeMutableBytes { FileFaults.read(fd, $0.baseAddress, $0.count) }
            if n < 0 {
                if errno == EINTR { continue }
                throw AppendLogError("read", errno: errno)
            }
            if n == 0 { break }
            out.append(contentsOf: chunk[0..<n])
        }
        return out
    }

    static func writeAll(_ fd: Int32, _ bytes: [UInt8]) throws(AppendLogError) {
        var written = 0
        while written < bytes.count {
            let n = bytes.withUnsafeBytes { FileFaults.write(fd, $0.baseAddress! + written, bytes.count - written) }
            if n < 0 {
                if errno == EINTR { continue }
                throw AppendLogError("write", errno: errno)
            }
            written += n
        }
    }

    @inline(__always) static func readU32(_ b: [UInt8], _ at: Int) -> UInt32 {
        UInt32(b[at]) | UInt32(b[at + 1]) << 8 | UInt32(b[at + 2]) << 16 | UInt32(b[at + 3]) << 24
    }
}

/// CRC-32 (IEEE 802.3, reflected polynomial `0xEDB88320`), as zlib's `crc32`; slicing-by-16.
public enum CRC32 {
    /// 16 tables of 256 entries: `tables[k * 256 + b]` is the CRC of byte `b` followed by `k`
    /// zero bytes.
    private static let tables: [UInt32] = {
        var t = [UInt32](repeating: 0, count: 16 * 256)
        for i in 0..<256 {
            var c = UInt32(i)
            for _ in 0..<8 { c = (c & 1) != 0 ? 0xEDB8_8320 ^ (c >> 1) : c >> 1 }
            t[i] = c
        }
        for i in 0..<256 {
            for k in 1..<16 {
                let prev = t[(k - 1) * 256 + i]
                t[k * 256 + i] = t[Int(prev & 0xFF)] ^ (prev >> 8)
            }
        }
        return t
    }()

    /// The CRC-32 of `bytes`.
    public static func checksum(_ bytes: [UInt8]) -> UInt32 {
        bytes.withUnsafeBufferPointer { checksum($0) }
    }

    /// The CRC-32 of `bytes`.
    public static func checksum(_ bytes: UnsafeBufferPointer<UInt8>) -> UInt32 {
        guard let base = bytes.baseAddress else { return 0 }
        var c: UInt32 = 0xFFFF_FFFF
        tables.withUnsafeBufferPointer { tb in
            let t = tb.baseAddress!
            /// Table `k`'s entry for the low byte of `v`.
            @inline(__always) func at(_ k: Int, _ v: UInt32) -> UInt32 { t[k &* 256 &+ Int(v & 0xFF)] }
            var p = UnsafeRawPointer(base)
            var n = bytes.count
            // 16 bytes a step, read as four little-endian words.
            while n >= 16 {
                let a = UInt32(littleEndian: p.loadUnaligned(as: UInt32.self)) ^ c
                let b = UInt32(littleEndian: p.loadUnaligned(fromByteOffset: 4, as: UInt32.self))
                let d = UInt32(littleEndian: p.loadUnaligned(fromByteOffset: 8, as: UInt32.self))
                let e = UInt32(littleEndian: p.loadUnaligned(fromByteOffset: 12, as: UInt32.self))
                c = at(15, a) ^ at(14, a >> 8) ^ at(13, a >> 16) ^ at(12, a >> 24)
                c ^= at(11, b) ^ at(10, b >> 8) ^ at(9, b >> 16) ^ at(8, b >> 24)
                c ^= at(7, d) ^ at(6, d >> 8) ^ at(5, d >> 16) ^ at(4, d >> 24)
                c ^= at(3, e) ^ at(2, e >> 8) ^ at(1, e >> 16) ^ at(0, e >> 24)
                p += 16
                n -= 16
            }
            let q = p.assumingMemoryBound(to: UInt8.self)
            for i in 0..<n { c = t[Int((c ^ UInt32(q[i])) & 0xFF)] ^ (c >> 8) }
        }
        return c ^ 0xFFFF_FFFF
    }
}
