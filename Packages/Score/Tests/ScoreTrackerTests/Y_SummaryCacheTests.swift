import Foundation
import Testing
import TrackerCore
import TrackerCoreTestKit

@testable import ScoreTracker

/// The summary cache (`queue.summaries`, issue 35: the first request after launch flat in queue
/// depth): a lazy launch takes each sealed segment's summary from one file instead of one read
/// per segment, when the segment's file is still the one the summary was taken from.
///
///   SC326 — the cache's bytes: what is written reads back; a file with any byte changed, cut
///           anywhere or with a byte more is ignored as a whole.
///   SC327 — through launches: the sync thread's seals write the cache; a lazy launch takes every
///           sealed segment's summary from it and sends every event once; without the file it
///           reads them from the segments and writes the file again; on a full disk the file is
///           not written (nor a temporary one left) until there is space again.
///   SC328 — an entry serves only the file it was taken from: a doctored summary under the
///           segment's own identity is used (the launch believes it), under another inode it is
///           not, and neither is an entry for a segment compacted since (a new file, same bytes).
@Suite struct SummaryCacheTests {
    typealias L = LaunchSealTests
    typealias LZ = LazyLaunchTests

    static func cachePath(_ dir: String) -> String { dir + "/" + SummaryCache.fileName }

    static func sample() -> SummaryCache {
        var m = LZ.summary(adds: 40, critical: 1, oldest: 6_000, removedHere: 3)
        m.end = 20_000
        m.removals = [(1, 2), (3, 4)]
        let key = SummaryCache.Key(
            inode: 77, size: 20_100, changedSec: 1_700_000_000, changedNsec: 5, modifiedSec: 1_700_000_000, modifiedNsec: 4)
        var c = SummaryCache()
        c.entries[3] = SummaryCache.Entry(key: key, summary: m)
        var other = key
        other.inode = 78
        c.entries[4] = SummaryCache.Entry(key: other, summary: LZ.summary(adds: 12))
        return c
    }

    @Test func SC326_aCacheFileThatDoesNotCheckIsIgnoredWhole() {
        let c = Self.sample()
        let bytes = c.encode()
        #expect(SummaryCache.decode(bytes) == c)
        #expect(SummaryCache.decode(SummaryCache().encode()) == SummaryCache())
        for i in bytes.indices {
            var changed = bytes
            changed[i] ^= 0x10
            #expect(SummaryCache.decode(changed) == nil, "byte \(i) changed")
            #expect(SummaryCache.decode(Array(bytes[..<i])) == nil, "cut at \(i)")
        }
        #expect(SummaryCache.decode(bytes + [0]) == nil)
    }

    /// A lazy relaunch over `dir` (head 50), everything then flushed; its read and what it sent.
    static func relaunch(_ dir: String) async -> (read: SegmentedQueueLog.LaunchRead, depth: Int, sent: [String]) {
        let store = LZ.store(dir)
        let h = Harness(store: store, startMs: T0 + 120_000, holdsOutsideWork: true)
        for _ in 0..<1_000 { _ = h.ids.newEventId(nowMs: 0) }
        let c = h.client(maxQueueSize: 10_000, granted: true)
        let depth = c.inspect().queue.depth
        await h.settle()
        let read = store.segments.launchRead
        h.tx.answerAll(.status(200))
        for _ in 0..<10 { await LZ.flushHeld(h, c) }
        return (read, depth, h.tx.batches.flatMap { $0 })
    }

    /// Every entry of `dir`'s cache file is its segment's summary, and every sealed segment has one.
    static func expectCacheMatches(_ dir: String) throws {
        let log = SegmentedQueueLog(directory: dir, sync: false)
        let cache = try #require(SummaryCache.read(directory: dir))
        let sealed = SegmentedQueueLog.listSegments(dir).dropLast()
        #expect(Set(cache.entries.keys) == Set(sealed))
        for n in sealed {
            #expect(cache.summary(of: n, path: log.path(n)) == SegmentSeal.readSummary(path: log.path(n)), "segment \(n)")
        }
    }

    @Test func SC327_aLazyLaunchTakesTheSummariesFromTheCache() async throws {
        let dir = L.tempDir("sc327")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let queued = try await L.chain(dir, events: 300)
        let sealed = Array(SegmentedQueueLog.listSegments(dir).dropLast())
        try Self.expectCacheMatches(dir)

        let copy = dir + "-copy"
        try FileManager.default.copyItem(atPath: dir, toPath: copy)
        defer { try? FileManager.default.removeItem(atPath: copy) }
        let full = dir + "-full"
        try FileManager.default.copyItem(atPath: dir, toPath: full)
        defer { try? FileManager.default.removeItem(atPath: full) }
        let (read, depth, sent) = await Self.relaunch(dir)
        #expect(!read.deferred.isEmpty)
        #expect(read.summariesCached == sealed)
        #expect(depth == 300 && sent == queued)

        // Without the file (a copy keeps none of the files' identities either): every summary
        // read from its segment, and the file written again.
        try FileManager.default.removeItem(atPath: Self.cachePath(copy))
        let store = LZ.store(copy)
        let h = Harness(store: store, startMs: T0 + 120_000, holdsOutsideWork: true)
        let c = h.client(maxQueueSize: 10_000, granted: true)
        #expect(c.inspect().queue.depth == 300)
        #expect(!store.segments.launchRead.deferred.isEmpty && store.segments.launchRead.summariesCached.isEmpty)
        await h.settle()
        try await LaunchReadyTests.awaitSealed(copy, h)
        try Self.expectCacheMatches(copy)

        // A full disk when the cache is due: no file, no temporary file left, the launch as
        // before; written once there is space again.
        try FileManager.default.removeItem(atPath: Self.cachePath(full))
        let fs = FaultyFileSystem(directory: full, condition: .diskFull)
        defer { fs.uninstall() }
        let fullStore = LZ.store(full)
        let hf = Harness(store: fullStore, startMs: T0 + 120_000, holdsOutsideWork: true)
        let cf = hf.client(maxQueueSize: 10_000, granted: true)
        #expect(cf.inspect().queue.depth == 300)
        #expect(!fullStore.segments.launchRead.deferred.isEmpty)
        await hf.settle()
        try await LaunchReadyTests.awaitSealed(full, hf)
        #expect(!FileManager.default.fileExists(atPath: Self.cachePath(full)))
        #expect(!FileManager.default.fileExists(atPath: Self.cachePath(full) + ".tmp"))
        #expect(fullStore.segments.hasSegmentsToSeal, "the cache is still due")
        fs.set(.healthy)
        fullStore.segments.sealPending()
        try Self.expectCacheMatches(full)
    }

    /// `cache`'s summaries of `dir`'s sealed segments under the identities of their files in
    /// `copy` (a copy of `dir`).
    static func copied(_ cache: SummaryCache, from dir: String, to copy: String) throws -> SummaryCache {
        let log = SegmentedQueueLog(directory: copy, sync: false)
        var out = SummaryCache()
        for n in SegmentedQueueLog.listSegments(dir).dropLast() {
            let key = try #require(SummaryCache.key(path: log.path(n)))
            out.entries[n] = SummaryCache.Entry(key: key, summary: try #require(cache.entries[n]).summary)
        }
        return out
    }

    @Test func SC328_anEntryServesOnlyTheFileItWasTakenFrom() async throws {
        let dir = L.tempDir("sc328")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let queued = try await L.chain(dir, events: 300)
        let log = SegmentedQueueLog(directory: dir, sync: false)
        let segments = SegmentedQueueLog.listSegments(dir)
        let doctored = segments[segments.count - 2]  // a tail segment
        let original = try #require(SummaryCache.read(directory: dir))
        var cache = original
        cache.entries[doctored]?.summary.critical = 1

        // Under the segment's own identity: believed (a critical event in the tail: every
        // segment is read; nothing is lost all the same).
        let believed = dir + "-believed"
        try FileManager.default.copyItem(atPath: dir, toPath: believed)
        defer { try? FileManager.default.removeItem(atPath: believed) }
        let here = try Self.copied(cache, from: dir, to: believed)
        #expect(here.write(directory: believed))
        let (read1, depth1, sent1) = await Self.relaunch(believed)
        #expect(read1.summariesCached == Array(segments.dropLast()))
        #expect(read1.deferred.isEmpty)
        #expect(depth1 == 300 && sent1 == queued)

        // Under another inode: not used (its summary read from the segment: the tail deferred).
        let moved = dir + "-moved"
        try FileManager.default.copyItem(atPath: dir, toPath: moved)
        defer { try? FileManager.default.removeItem(atPath: moved) }
        var elsewhere = try Self.copied(cache, from: dir, to: moved)
        elsewhere.entries[doctored]?.key.inode &+= 1
        #expect(elsewhere.write(directory: moved))
        let (read2, depth2, sent2) = await Self.relaunch(moved)
        #expect(!read2.deferred.isEmpty)
        #expect(read2.summariesCached == segments.dropLast().filter { $0 != doctored })
        #expect(depth2 == 300 && sent2 == queued)

        // A segment compacted since (the same bytes in a new file renamed over it): not used.
        let compacted = dir + "-compacted"
        try FileManager.default.copyItem(atPath: dir, toPath: compacted)
        defer { try? FileManager.default.removeItem(atPath: compacted) }
        let before = try Self.copied(cache, from: dir, to: compacted)
        #expect(before.write(directory: compacted))
        let target = log.path(doctored).replacingOccurrences(of: dir, with: compacted)
        try FileManager.default.copyItem(atPath: target, toPath: target + ".tmp")
        #expect(rename(target + ".tmp", target) == 0)
        let (read3, _, sent3) = await Self.relaunch(compacted)
        #expect(!read3.deferred.isEmpty)
        #expect(read3.summariesCached == segments.dropLast().filter { $0 != doctored })
        #expect(sent3 == queued)
    }
}
