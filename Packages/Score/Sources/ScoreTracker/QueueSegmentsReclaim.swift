import TrackerCore

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// Space reclamation of the segment chain (issue 35 items 1 and 2): dead segments deleted, pinned
/// ones compacted to their live records first.
extension SegmentedQueueLog {
    /// Reclaims the space of the segments below `bound` (the newest segment when `live` was
    /// taken: records appended since may be in it; never the newest) that hold none of the `live`
    /// locations (every record of the queue still wanted, as of a moment when every record
    /// written so far was accounted for): see `SegmentChain.reclaimPlan(pinned:below:)`. A dead
    /// segment after a pinned one is deleted too (issue 35 item 2: one event that stays queued
    /// no longer keeps every later segment), once each pinned segment before it is compacted to
    /// its live records (``compact(_:keeping:)``). First syncs what was written (the removals
    /// that made them dead), then compacts, then unlinks each, then syncs the directory; all
    /// outside the append lock but the bookkeeping. Returns the deleted segments' numbers. Runs
    /// on one thread at a time (the caller's rule), off the append path.
    @discardableResult
    func reclaim(live: some Sequence<ScoreRecordLocation>, before bound: Int? = nil) throws -> [Int] {
        var pinned: [Int: [Int]] = [:]
        for l in live { pinned[l.generation, default: []].append(l.offset) }
        let plan = state.withLock { s in s.chain.reclaimPlan(pinned: Set(pinned.keys), below: bound) }
        guard !plan.delete.isEmpty else { return [] }
        try sync()
        // Oldest first, so that at every step (a kill, or a power loss: each step's directory
        // change is synced before the next) the segments done hold no dead add and no removal,
        // and the others are whole: a dead event's removal is in a segment not done yet
        // whenever its add still is.
        let toCompact = Set(plan.compact)
        var deleted: [Int] = []
        for n in (plan.compact + plan.delete).sorted() {
            if toCompact.contains(n) {
                // A compaction that fails (a live record that no longer reads back, no space for
                // the new file) ends the reclamation there: the segments after it stay, whole.
                // The first failure of a run of them is thrown (one `storage` diagnostic), the
                // next ones end the reclamation quietly until one runs to its end.
                do {
                    try compact(n, keeping: pinned[n] ?? [])
                } catch {
                    let first = state.withLock { s in
                        defer { s.compactionFailing = true }
                        return !s.compactionFailing
                    }
                    if syncs && !deleted.isEmpty { FileIO.syncDirectory(directory) }
                    if first { throw error }
                    return deleted
                }
                continue
            }
            do { try deleteSegment(n) } catch {
                // Still on disk (back in the chain): the deletions so far are made durable.
                if syncs && !deleted.isEmpty { FileIO.syncDirectory(directory) }
                throw error
            }
            deleted.append(n)
            // A compaction next drops removals that may concern this segment's events.
            if syncs && toCompact.contains(where: { $0 > n }) { FileIO.syncDirectory(directory) }
        }
        if syncs { FileIO.syncDirectory(directory) }
        state.withLock { $0.compactionFailing = false }
        return deleted
    }

    /// Compacts sealed segment `n` to the records at `offsets` (issue 35 item 2): a new file,
    /// `queue.<n>.log.tmp`, holds each of them at its own offset (so no location changes and a
    /// read in progress reads the same bytes), the space between them one padding frame (a
    /// header, then a hole: a payload of zeros never written, kind 0, no record), and a new seal;
    /// it is synced, renamed over the segment and the directory synced. A kill before the rename
    /// leaves the segment as it was (the temporary file is removed by the next open); after it,
    /// the segment holds its live records only, in their places, so the queue's order is kept.
    func compact(_ n: Int, keeping offsets: [Int]) throws {
        let source = FileFaults.open(path(n), O_RDONLY | O_CLOEXEC)
        guard source >= 0 else { throw AppendLogError("open", errno: errno) }
        var kept: [(offset: Int, payload: [UInt8])] = []
        for o in Set(offsets).sorted() {
            guard let payload = try SegmentedQueueLog.readFrame(source, at: o) else {
                _ = FileFaults.close(source)
                throw AppendLogError("read", errno: EIO)
            }
            kept.append((o, payload))
        }
        _ = FileFaults.close(source)
        let temp = path(n) + ".tmp"
        let fd = FileFaults.open(temp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw AppendLogError("open", errno: errno) }
        var ok = false
        defer {
            _ = FileFaults.close(fd)
            if !ok { _ = FileFaults.unlink(temp) }
        }
        var at = 0
        func put(_ bytes: [UInt8], at offset: Int) throws {
            guard lseek(fd, off_t(offset), SEEK_SET) == off_t(offset) else { throw AppendLogError("lseek", errno: errno) }
            var done = 0
            while done < bytes.count {
                let w = bytes.withUnsafeBytes { FileFaults.write(fd, $0.baseAddress! + done, bytes.count - done) }
                if w < 0 && errno == EINTR { continue }
                if w <= 0 { throw AppendLogError("write", errno: w < 0 ? errno : EIO) }
                done += w
            }
        }
        for (offset, payload) in kept {
            if offset > at {
                // A padding frame over the dropped records: its header only, its zeros a hole.
                let length = offset - at - AppendLog.frameOverhead
                let crc = CRC32.checksum([UInt8](repeating: 0, count: length))
                var header: [UInt8] = []
                withUnsafeBytes(of: UInt32(length).littleEndian) { header.append(contentsOf: $0) }
                withUnsafeBytes(of: crc.littleEndian) { header.append(contentsOf: $0) }
                try put(header, at: at)
            }
            try put(AppendLog.frame([payload]), at: offset)
            at = offset + AppendLog.frameOverhead + payload.count
        }
        if let seal = SegmentSeal.build(path: temp) { _ = SegmentSeal.write(seal, path: temp, sync: false) }
        if syncs && FileFaults.fsync(fd) != 0 { throw AppendLogError("fsync", errno: errno) }
        guard FileFaults.rename(temp, path(n)) == 0 else { throw AppendLogError("rename", errno: errno) }
        ok = true
        state.withLock { s in
            if let r = s.reader, r.segment == n {
                _ = FileFaults.close(r.fd)
                s.reader = nil
            }
        }
        // The rename durable before any later segment (whose removals concern the dropped
        // records) is deleted.
        if syncs { FileIO.syncDirectory(directory) }
    }
}
