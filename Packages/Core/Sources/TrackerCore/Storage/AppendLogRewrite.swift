#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// A compaction in two steps, so that the long part never holds the log's appends (issue 35):
/// ``AppendLog/prepareRewrite(path:records:sync:)`` writes and syncs the new file apart from
/// the live log (its owner need not hold its lock), then
/// ``AppendLog/completeRewrite(_:carryingFrom:deferDirectorySync:)`` (under the owner's lock, like
/// an append) copies the records appended since the snapshot onto the new file and renames it
/// over the log: no `fsync` and no rewrite of the kept records while appends wait.
extension AppendLog {
    /// A new file for a log, written (and synced when the log syncs) but not yet renamed over it.
    public final class PreparedRewrite: @unchecked Sendable {
        let path: String
        let tmp: String
        var fd: Int32
        /// The new file's length in bytes (the kept records).
        public let byteCount: Int
        /// The kept records' frame offsets in the new file.
        public let offsets: [Int]

        init(path: String, tmp: String, fd: Int32, byteCount: Int, offsets: [Int]) {
            self.path = path
            self.tmp = tmp
            self.fd = fd
            self.byteCount = byteCount
            self.offsets = offsets
        }

        deinit { discard() }

        /// Drops the new file (a compaction given up).
        public func discard() {
            guard fd >= 0 else { return }
            _ = FileFaults.close(fd)
            _ = FileFaults.unlink(tmp)
            fd = -1
        }
    }

    /// Writes `records` to the temporary file of the log at `path` (`<path>.tmp`, 0600) and
    /// syncs it when `sync`; the live log is not touched. One compaction at a time per log.
    public static func prepareRewrite(path: String, records: [[UInt8]], sync: Bool) throws(AppendLogError) -> PreparedRewrite {
        let tmp = path + ".tmp"
        let tfd = FileFaults.open(tmp, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        guard tfd >= 0 else { throw AppendLogError("open", errno: errno) }
        _ = fchmod(tfd, 0o600)
        let bytes = AppendLog.frame(records)
        do throws(AppendLogError) {
            try AppendLog.writeAll(tfd, bytes)
            if sync, FileFaults.fsync(tfd) != 0 { throw AppendLogError("fsync", errno: errno) }
        } catch {
            _ = FileFaults.close(tfd)
            _ = FileFaults.unlink(tmp)
            throw error
        }
        return PreparedRewrite(
            path: path, tmp: tmp, fd: tfd, byteCount: bytes.count, offsets: AppendLog.offsets(of: records, from: 0))
    }

    /// Completes `prepared` (made from this log's records up to byte `start`): copies the bytes
    /// appended since (`start` to the log's end) onto the new file, renames it over the log and
    /// appends to it from now on. Returns where the copied bytes begin in the new file: a record
    /// at offset `o >= start` in the old file is at `o - start + ` that value in the new one.
    ///
    /// The copied records are written, not synced: the next ``sync()`` syncs them (with the
    /// rename when `deferDirectorySync`), as it would have in the old file.
    @discardableResult
    public func completeRewrite(
        _ prepared: PreparedRewrite, carryingFrom start: Int, deferDirectorySync: Bool
    ) throws(AppendLogError) -> Int {
        guard prepared.fd >= 0, prepared.path == path, start <= byteCount else { throw AppendLogError("rewrite", errno: EINVAL) }
        var carried = [UInt8](repeating: 0, count: byteCount - start)
        if !carried.isEmpty {
            guard try AppendLog.preadAll(fd, &carried, at: start) else { throw AppendLogError("pread", errno: EIO) }
            do throws(AppendLogError) { try AppendLog.writeAll(prepared.fd, carried) } catch {
                prepared.discard()
                throw error
            }
        }
        guard FileFaults.rename(prepared.tmp, path) == 0 else {
            let e = errno
            prepared.discard()
            throw AppendLogError("rename", errno: e)
        }
        if syncs && deferDirectorySync {
            hasUnsyncedRename = true
        } else if syncs {
            if !carried.isEmpty { _ = FileFaults.fsync(prepared.fd) }
            AppendLog.syncDirectory(of: path)
            hasUnsyncedRename = false
        }
        _ = FileFaults.close(fd)
        fd = prepared.fd
        prepared.fd = -1
        byteCount = prepared.byteCount + carried.count
        _ = lseek(fd, off_t(byteCount), SEEK_SET)
        hasUnsyncedAppends = syncs && deferDirectorySync && !carried.isEmpty
        return prepared.byteCount
    }

    /// Replaces the whole log with `records` (compaction): writes `<path>.tmp` (0600), syncs
    /// it, renames it over the log and continues appending to the new file. A crash at any
    /// point leaves either the old or the new log. Returns the records' new frame offsets.
    ///
    /// The rename is synced at once (the directory's `fsync`) unless `deferDirectorySync` is
    /// true: then ``sync()`` does it, and until then a power loss or an OS crash may bring back
    /// the previous log, whole as far as it was synced, together with the appends made since.
    @discardableResult
    public func rewrite(_ records: [[UInt8]], deferDirectorySync: Bool = false) throws(AppendLogError) -> [Int] {
        // The two-step rewrite with nothing appended in between: nothing to carry over.
        let prepared = try AppendLog.prepareRewrite(path: path, records: records, sync: syncs)
        try completeRewrite(prepared, carryingFrom: byteCount, deferDirectorySync: deferDirectorySync)
        return prepared.offsets
    }
}
