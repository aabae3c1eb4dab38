import Foundation
import Testing
import TrackerCore
import TrackerCoreTestKit

@testable import ScoreTracker

/// A sealed segment's summary (issue 35 item 3, the lazy launch's first step): a seal written
/// now (`SQI2`) ends with what a launch needs to know of the segment without reading its adds.
///
///   SC310 — every seal of a chain holding adds and removals is a `SQI2` one; its summary, read
///           alone (the file's last 256 bytes, and the summary when longer: counted, not the
///           seal's adds), equals the one taken from its frames: adds, critical and notice adds,
///           required categories, oldest and newest timestamp, adds removed in the segment, and
///           every removal id in order (the sum over the chain is every id the flush removed).
///   SC311 — a seal of an earlier version (`SQI1`, no summary) still decodes to the same index
///           and a launch still indexes it from the seal; it has no summary (`nil`: such a
///           segment is read as before); a launch over `SQI1` seals sends every event once.
///   SC312 — a damaged summary (a byte flipped in it, in its footer, or a seal cut short) gives
///           no summary and no seal: the launch reads that segment's records (the cut one as a
///           torn tail, by the careful load), loses and duplicates nothing; a summary equal in length but altered fails its own checksum.
@Suite struct SealSummaryTests {
    typealias L = LaunchSealTests

    /// A chain in `dir`: `before` events, all flushed (their removal in the segment then the
    /// newest), then `after` more (rolling past it, so that removal is sealed); the ids still
    /// queued and the ids removed.
    static func chainWithRemovals(_ dir: String, before: Int, after: Int) async throws -> (queued: [String], removed: [String]) {
        let h = Harness(store: L.store(dir))
        let c = h.client(maxQueueSize: 10_000, granted: true)
        for i in 0..<before {
            c.pv()
            if i % 10 == 9 { await h.settle() }
        }
        await h.flush(c)
        let removed = h.tx.batches.flatMap { $0 }
        #expect(removed.count == before)
        for i in 0..<after {
            c.pv()
            if i % 10 == 9 { await h.settle() }
        }
        try await LaunchReadyTests.syncAndAwaitSealed(dir, h)
        let queued = try queuedIdsOnDisk(dir)
        #expect(queued.count == after)
        _ = c
        return (queued, removed)
    }

    static func idString(_ id: (UInt64, UInt64)) -> String { CompactEventId.uuid(id.0, id.1).string }

    @Test func SC310_aSealsSummaryIsReadAloneAndIsItsFrames() async throws {
        let dir = L.tempDir("sc310")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let (_, removed) = try await Self.chainWithRemovals(dir, before: 30, after: 150)
        let log = SegmentedQueueLog(directory: dir, sync: false)
        let segments = SegmentedQueueLog.listSegments(dir)
        try #require(segments.count > 3)
        var removals: [String] = []
        var adds = 0
        for n in segments.dropLast() {
            let path = log.path(n)
            let bytes = try Array(Data(contentsOf: URL(fileURLWithPath: path)))
            #expect(Array(bytes.suffix(4)) == Array("SQI2".utf8), "segment \(n) is not sealed with a summary")
            let seal = try #require(SegmentSeal.read(path: path))
            var read = 0
            let summary = try #require(SegmentSeal.readSummary(path: path, bytesRead: &read))
            #expect(summary == seal.summary)
            #expect(summary.end == seal.end)
            // Read alone: a small part of the seal (which holds about 25 bytes an add).
            let sealBytes = bytes.count - seal.end
            #expect(read > 0 && read <= SegmentSeal.summaryChunk + 64 + 16 * summary.removals.count)
            if summary.adds > 30 { #expect(read - 16 * summary.removals.count < sealBytes) }
            // Its counts are its frames'.
            var critical = 0
            var oldest = Int64.max
            var newest = Int64.min
            var frameAdds = 0
            for case .add(_, let a) in seal.frames {
                frameAdds += 1
                if a.flags & 1 != 0 { critical += 1 }
                oldest = min(oldest, a.timestampMs)
                newest = max(newest, a.timestampMs)
            }
            #expect(summary.adds == frameAdds && summary.critical == critical && summary.notices == 0)
            #expect(summary.requires == ConsentCategory.analytics.bit || frameAdds == 0)
            if frameAdds > 0 { #expect(summary.oldestMs == oldest && summary.newestMs == newest) }
            adds += summary.adds
            removals += summary.removals.map(Self.idString)
        }
        // Every id the flush removed, in order, is in some sealed segment's summary.
        #expect(removals == removed)
        #expect(adds > 0)
        // The summary's counts of removals within the segment.
        let removedSet = Set(removed)
        for n in segments.dropLast() {
            let seal = try #require(SegmentSeal.read(path: log.path(n)))
            var here = Set<String>()
            for case .add(_, let a) in seal.frames { here.insert(Self.idString((a.hi, a.lo))) }
            let summary = seal.summary
            let removedHere = summary.removals.map(Self.idString).filter { here.contains($0) }.count
            #expect(summary.removedHere == removedHere)
            #expect(removedHere <= removedSet.count)
        }
        // Encoded and decoded unchanged, with a critical add, a notice and a removal by hand.
        var seal = SegmentSeal()
        seal.names = [Array("c1".utf8)]
        seal.anonymousIds = [Array("a".utf8)]
        seal.frames = [
            .add(offset: 0, .init(hi: 1, lo: 2, timestampMs: 5_000, flags: 1, requires: 1, name: 0, anonymousId: 0)),
            .add(offset: 100, .init(hi: 3, lo: 4, timestampMs: 4_000, flags: 2, requires: 1, name: 0, anonymousId: 0)),
            .remove(offset: 200, ids: [(3, 4), (9, 9)]),
        ]
        seal.end = 300
        let m = seal.summary
        #expect(m.adds == 2 && m.critical == 1 && m.notices == 1 && m.oldestMs == 4_000 && m.newestMs == 5_000)
        #expect(m.removedHere == 1 && m.removals.count == 2)
        let payload = seal.payload()
        #expect(payload.withUnsafeBufferPointer { SegmentSeal.decode($0) } == seal)
        // The removal ids are written once (in the summary).
        #expect(payload.count < seal.payload(legacy: true).count + 40)
    }

    @Test func SC311_aSealOfAnEarlierVersionIsStillRead() async throws {
        let dir = L.tempDir("sc311")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let (queued, _) = try await Self.chainWithRemovals(dir, before: 20, after: 150)
        let log = SegmentedQueueLog(directory: dir, sync: false)
        let segments = SegmentedQueueLog.listSegments(dir)
        try #require(segments.count > 3)
        // Every seal rewritten in the earlier form (`SQI1`), as an earlier version wrote it.
        for n in segments.dropLast() {
            let path = log.path(n)
            let seal = try #require(SegmentSeal.read(path: path))
            var bytes = try Array(Data(contentsOf: URL(fileURLWithPath: path)))
            bytes.removeSubrange(seal.end...)
            bytes += AppendLog.frame([seal.payload(legacy: true)])
            try Data(bytes).write(to: URL(fileURLWithPath: path))
            #expect(Array(bytes.suffix(4)) == Array("SQI1".utf8))
            #expect(SegmentSeal.read(path: path) == seal)
            #expect(SegmentSeal.readSummary(path: path) == nil)
        }
        let (read, depth, _, sent, _) = await L.relaunchAndSend(dir)
        #expect(read.fromSeals == Array(segments.dropLast()))
        #expect(depth == queued.count)
        #expect(sent == queued)
    }

    @Test func SC312_aDamagedSummaryIsNoSummaryAndNothingIsLostOrDuplicated() async throws {
        let dir = L.tempDir("sc312")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let (queued, _) = try await Self.chainWithRemovals(dir, before: 20, after: 200)
        let log = SegmentedQueueLog(directory: dir, sync: false)
        let segments = SegmentedQueueLog.listSegments(dir)
        try #require(segments.count > 4)
        // Three segments damaged three ways: a byte of the summary, a byte of its footer's
        // summary length, the seal cut short by 3 bytes.
        let victims = [segments[1], segments[2], segments[3]]
        for (k, n) in victims.enumerated() {
            let path = log.path(n)
            var bytes = try Array(Data(contentsOf: URL(fileURLWithPath: path)))
            #expect(SegmentSeal.readSummary(path: path) != nil)
            switch k {
            case 0: bytes[bytes.count - SegmentSeal.footerBytes - 3] ^= 0x21
            case 1: bytes[bytes.count - SegmentSeal.footerBytes] ^= 0x01
            default: bytes.removeLast(3)
            }
            try Data(bytes).write(to: URL(fileURLWithPath: path))
            #expect(SegmentSeal.readSummary(path: path) == nil)
            #expect(SegmentSeal.read(path: path) == nil)
        }
        // A summary altered but read whole (its own checksum is what catches it).
        let seal = try #require(SegmentSeal.read(path: log.path(segments[0])))
        var summary = SegmentSeal.encode(seal.summary)
        summary[1] ^= 0x01
        var payload = seal.payload()
        let at = payload.count - SegmentSeal.footerBytes - summary.count
        payload.replaceSubrange(at..<(at + summary.count), with: summary)
        #expect(payload.withUnsafeBufferPointer { SegmentSeal.decode($0) } == nil)
        let (read, depth, _, sent, _) = await L.relaunchAndSend(dir)
        // No victim indexed from its seal (the seal cut short is a torn tail: the careful load
        // reads the whole chain then, cutting it off).
        #expect(Set(read.fromSeals).isDisjoint(with: victims))
        #expect(depth == queued.count)
        #expect(sent == queued)
        #expect(Set(sent).count == sent.count)
    }
}
