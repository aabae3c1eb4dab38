import Foundation
import Testing
import TrackerCore
import TrackerCoreTestKit

@testable import ScoreTracker

/// Sealed segments at launch (issue 35 item 3, `SegmentSeal`): a segment that is no longer the
/// newest gets a seal, its index as one last record, written off the append path; a launch
/// indexes it from the seal instead of reading its events.
///
///   SC260 — a launch over a chain of many segments reads the events of the newest segment only
///           (every sealed one from its seal: counted by the store, not timed), queues the same
///           events in the same order as the careful load, and sends each once, oldest first.
///   SC261 — a damaged seal (a byte flipped in it) is no index: the launch reads the segments
///           as before, loses and duplicates nothing, and the segment is sealed again for the
///           next launch.
///   SC262 — a kill between a segment's roll and its seal (the seal cut off the file) reads that
///           segment's events, the others from their seals; nothing lost or duplicated; the
///           launch seals it in its background step.
///   SC263 — a seal's index is the one its frames give: encoded and decoded unchanged (about 25
///           bytes an add; a cut or altered seal decodes to nothing or to a seal); a
///           segment holding a record the quick index does not take (or a damaged one) is not
///           sealed; a seal is never appended to a segment that grew since it was read.
///   SC264 — a record of a sealed segment damaged after its seal was written: the launch does not
///           read it (the start-up check reads the newest segment only), the flush that reads it
///           back drops it with a `storage` diagnostic and sends every other event once.
///   SC265 — the same damage with a merge that decides on the stored events (a full queue):
///           every segment is checked before it, as before (the damaged event takes no place).
@Suite struct LaunchSealTests {
    static let segmentBytes = 16 << 10

    static func tempDir(_ name: String) -> String {
        let dir = NSTemporaryDirectory() + "score-seal-\(name)-\(UUID().uuidString)"
        try? FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        return dir
    }

    static func store(_ dir: String) -> FileScoreStore {
        FileScoreStore(directory: dir, sync: false, segmentBytes: segmentBytes)
    }

    /// A chain of `n` events in `dir` (10 an append, about 40 a segment), every sealed segment
    /// sealed by the queue log's sync; the queued ids in order.
    static func chain(_ dir: String, events n: Int) async throws -> [String] {
        let h = Harness(store: store(dir))
        let c = h.client(maxQueueSize: 10_000, granted: true)
        for i in 0..<n {
            c.pv()
            if i % 10 == 9 { await h.settle() }
        }
        // Nothing of this client still runs when the caller reads the files.
        try await LaunchReadyTests.syncAndAwaitSealed(dir, h)
        let ids = try queuedIdsOnDisk(dir)
        #expect(ids.count == n)
        _ = c
        return ids
    }

    static func sealed(_ dir: String) -> [Int] {
        let log = SegmentedQueueLog(directory: dir, sync: false)
        return SegmentedQueueLog.listSegments(dir).filter { SegmentSeal.read(path: log.path($0)) != nil }
    }

    /// Relaunches over `dir` and flushes everything; the launch's read, the depth it showed, the
    /// segments sealed once it was loaded (before the flush deletes the sent ones) and the ids
    /// sent, in order.
    static func relaunchAndSend(_ dir: String) async -> (
        read: SegmentedQueueLog.LaunchRead, depth: Int, sealedAfterLoad: [Int], sent: [String], h: Harness
    ) {
        let store = store(dir)
        let h = Harness(store: store)
        let c = h.client(maxQueueSize: 10_000, granted: true)
        let depth = c.inspect().queue.depth
        let read = store.segments.launchRead
        await h.settle()
        let sealedAfterLoad = sealed(dir)
        await h.flush(c)
        return (read, depth, sealedAfterLoad, h.tx.batches.flatMap { $0 }, h)
    }

    @Test func SC260_aLaunchOverManySegmentsReadsTheNewestSegmentsEventsOnly() async throws {
        let dir = Self.tempDir("sc260")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let queued = try await Self.chain(dir, events: 300)
        let segments = SegmentedQueueLog.listSegments(dir)
        #expect(segments.count >= 6)
        // Every segment but the newest sealed by the run that rolled it.
        #expect(Self.sealed(dir) == Array(segments.dropLast()))
        let (read, depth, _, sent, _) = await Self.relaunchAndSend(dir)
        #expect(read.fromSeals == Array(segments.dropLast()))
        #expect(read.followed == [segments.last!])
        #expect(depth == 300)
        #expect(sent == queued)
        #expect(Set(sent).count == sent.count)
    }

    @Test func SC261_aDamagedSealIsNoIndexAndNothingIsLostOrDuplicated() async throws {
        let dir = Self.tempDir("sc261")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let queued = try await Self.chain(dir, events: 200)
        let segments = SegmentedQueueLog.listSegments(dir)
        let log = SegmentedQueueLog(directory: dir, sync: false)
        let victim = log.path(segments[2])
        let seal = try #require(SegmentSeal.read(path: victim))
        var bytes = try Array(Data(contentsOf: URL(fileURLWithPath: victim)))
        // A byte of the seal's index flipped (its frame's checksum no longer matches).
        bytes[seal.end + AppendLog.frameOverhead + 20] ^= 0x5A
        try Data(bytes).write(to: URL(fileURLWithPath: victim))
        #expect(SegmentSeal.read(path: victim) == nil)
        let (_, depth, sealedAfterLoad, sent, h) = await Self.relaunchAndSend(dir)
        #expect(depth == 200)
        #expect(sent == queued)
        // Sealed again by the launch: the next one reads it from its seal.
        #expect(sealedAfterLoad == Array(segments.dropLast()))
        #expect(h.diagnostics.all.allSatisfy { !$0.message.contains("skipped") })
    }

    @Test func SC262_aKillBetweenARollAndItsSealReadsThatSegmentOnly() async throws {
        let dir = Self.tempDir("sc262")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let queued = try await Self.chain(dir, events: 200)
        let segments = SegmentedQueueLog.listSegments(dir)
        let log = SegmentedQueueLog(directory: dir, sync: false)
        try #require(segments.count > 2)
        let victim = segments[segments.count - 2]
        // The run killed after rolling past `victim`, before sealing it: no seal at its end.
        let seal = try #require(SegmentSeal.read(path: log.path(victim)))
        let fd = open(log.path(victim), O_WRONLY)
        #expect(ftruncate(fd, off_t(seal.end)) == 0)
        close(fd)
        #expect(!Self.sealed(dir).contains(victim))
        let (read, depth, sealedAfterLoad, sent, _) = await Self.relaunchAndSend(dir)
        #expect(read.followed == [victim, segments.last!])
        #expect(read.fromSeals == segments.filter { $0 != victim && $0 != segments.last! })
        #expect(depth == 200)
        #expect(sent == queued)
        #expect(Set(sent).count == 200)
        #expect(sealedAfterLoad == Array(segments.dropLast()))
    }

    @Test func SC263_aSealIsTheIndexItsFramesGive() async throws {
        let dir = Self.tempDir("sc263")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        _ = try await Self.chain(dir, events: 120)
        let segments = SegmentedQueueLog.listSegments(dir)
        let log = SegmentedQueueLog(directory: dir, sync: false)
        let path = log.path(segments[0])
        let seal = try #require(SegmentSeal.read(path: path))
        // Encoded and decoded unchanged.
        let payload = seal.payload()
        #expect(payload.withUnsafeBufferPointer { SegmentSeal.decode($0) } == seal)
        // About 25 bytes an add (a twentieth of an event's record).
        let adds = seal.frames.filter { if case .add = $0 { true } else { false } }.count
        #expect(adds > 10 && payload.count < 64 + 28 * seal.frames.count)
        // A cut or altered payload decodes to nothing or to a seal, never crashes.
        for n in stride(from: 0, to: payload.count, by: 5) {
            #expect(Array(payload.prefix(n)).withUnsafeBufferPointer { SegmentSeal.decode($0) } == nil)
        }
        for i in stride(from: 1, to: payload.count - 8, by: 3) {
            var altered = payload
            altered[i] ^= 0xFF
            _ = altered.withUnsafeBufferPointer { SegmentSeal.decode($0) }
        }
        // The quick index from the seal equals the one from the frames (the seal's own frame
        // counted as a frame in both).
        let anon = try #require(ScoreClient.parseIdentity(try FileIO.readBytes(dir + "/identity.json")).anonymousId)
        var fromSeal = QuickIndex(anonymousId: anon, epoch: 0)
        let tookSeal = fromSeal.visit(seal: seal, segment: segments[0])
        #expect(tookSeal)
        var fromFrames = QuickIndex(anonymousId: anon, epoch: 0)
        let walked = try AppendLog.followLengths(path: path) { _, o, p, c in
            fromFrames.visit(location: ScoreRecordLocation(generation: segments[0], offset: o), payload: p, checksum: c)
        }
        #expect(walked != nil)
        let resolved = (fromSeal.resolve(), fromFrames.resolve())
        #expect(resolved == (true, true))
        var a = ClientState(consent: .none, anonymousId: anon, sessionId: "")
        var b = ClientState(consent: .none, anonymousId: anon, sessionId: "")
        fromSeal.finish(into: &a)
        fromFrames.finish(into: &b)
        #expect(a.queue.count == b.queue.count && a.writer.deadRecords == b.writer.deadRecords && a.noticeCount == b.noticeCount)
        for (x, y) in zip(a.queue, b.queue) {
            #expect(x.id == y.id && x.name == y.name && x.timestampMs == y.timestampMs && x.critical == y.critical)
            #expect(x.location == y.location && x.anonymousEpoch == y.anonymousEpoch && x.requires == y.requires)
        }
        // Already sealed: not sealed twice.
        #expect(SegmentSeal.build(path: path) == nil)
        // A seal read before the segment grew is not appended.
        var unsealed = try Array(Data(contentsOf: URL(fileURLWithPath: path)))
        unsealed.removeSubrange(seal.end...)
        try Data(unsealed).write(to: URL(fileURLWithPath: path))
        let again = try #require(SegmentSeal.build(path: path))
        #expect(again == seal)
        let grown = try FileHandle(forWritingTo: URL(fileURLWithPath: path))
        grown.seekToEndOfFile()
        grown.write(Data(AppendLog.frame([[]])))
        try grown.close()
        #expect(!SegmentSeal.write(again, path: path, sync: false))
        // A record the quick index does not take: no seal.
        let other = dir + "/other.log"
        try Data(AppendLog.frame([[65, 0, 0] + Array("not json".utf8)])).write(to: URL(fileURLWithPath: other))
        #expect(SegmentSeal.build(path: other) == nil)
        // A damaged record: no seal.
        var damaged = unsealed
        damaged[AppendLog.frameOverhead + 40] ^= 0x01
        try Data(damaged).write(to: URL(fileURLWithPath: other))
        #expect(SegmentSeal.build(path: other) == nil)
    }

    /// Flips a byte inside the first add record of sealed segment `n` (its envelope, after the
    /// seal was written: the seal still reads, the record fails its checksum).
    static func damageFirstAdd(ofSealed n: Int, in dir: String) throws {
        let victim = SegmentedQueueLog(directory: dir, sync: false).path(n)
        let seal = try #require(SegmentSeal.read(path: victim))
        let offset = try #require(
            seal.frames.lazy.compactMap { frame -> Int? in if case .add(let o, _) = frame { o } else { nil } }.first,
            "no add in the segment")
        var bytes = try Array(Data(contentsOf: URL(fileURLWithPath: victim)))
        bytes[offset + AppendLog.frameOverhead + 100] ^= 0x20
        try Data(bytes).write(to: URL(fileURLWithPath: victim))
    }

    @Test func SC264_aRecordDamagedAfterItsSealIsDroppedWhenReadBack() async throws {
        let dir = Self.tempDir("sc264")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let queued = try await Self.chain(dir, events: 200)
        let segments = SegmentedQueueLog.listSegments(dir)
        try Self.damageFirstAdd(ofSealed: segments[1], in: dir)
        let intact = Set(try queuedIdsOnDisk(dir))
        let damagedId = try #require(queued.first { !intact.contains($0) })
        let (read, depth, _, sent, h) = await Self.relaunchAndSend(dir)
        #expect(read.fromSeals.contains(segments[1]))
        #expect(depth == 200)
        #expect(sent == queued.filter { $0 != damagedId })
        #expect(h.diagnostics.all.contains { $0.message.contains("could not be read back") })
    }

    @Test func SC265_aFullQueueChecksEverySegmentBeforeTheMerge() async throws {
        let dir = Self.tempDir("sc264b")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let queued = try await Self.chain(dir, events: 200)
        let segments = SegmentedQueueLog.listSegments(dir)
        try Self.damageFirstAdd(ofSealed: segments[1], in: dir)
        // A cap of 200: the merge would shed, so every record is checked before it.
        let h = Harness(store: Self.store(dir))
        let c = h.client(maxQueueSize: 200, granted: true)
        #expect(c.inspect().queue.depth == 199)
        #expect(h.diagnostics.all.contains { $0.message.contains("skipped") })
        await h.flush(c)
        #expect(h.tx.batches.flatMap { $0 }.count == 199)
        #expect(Set(h.tx.batches.flatMap { $0 }).isSubset(of: Set(queued)))
    }
}

/// SC270 (found by review): the launch's sealing of segments found without a seal runs off the
/// load (on the sync thread; here, a background step), never on the thread of an early
/// `inspect()` or before the writer may append.
@Suite struct LaunchSealOffTheLoadTests {
    @Test func SC270_segmentsFoundUnsealedAreSealedInABackgroundStepNotInTheLoad() async throws {
        let dir = LaunchSealTests.tempDir("sc270")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        _ = try await LaunchSealTests.chain(dir, events: 200)
        let segments = SegmentedQueueLog.listSegments(dir)
        let log = SegmentedQueueLog(directory: dir, sync: false)
        try #require(segments.count > 3)
        // Cut every seal: an earlier version's chain, or a run killed before sealing.
        for n in segments.dropLast() {
            let seal = try #require(SegmentSeal.read(path: log.path(n)))
            let fd = open(log.path(n), O_WRONLY)
            #expect(ftruncate(fd, off_t(seal.end)) == 0)
            close(fd)
        }
        #expect(LaunchSealTests.sealed(dir).isEmpty)
        // Background steps are held until settled: the constructor's load has not run, so
        // inspect() runs the load on this thread.
        let h = Harness(store: LaunchSealTests.store(dir), holdsOutsideWork: true)
        let c = h.client(maxQueueSize: 10_000, granted: true)
        #expect(c.inspect().queue.depth == 200)
        #expect(LaunchSealTests.sealed(dir).isEmpty, "sealing ran inline on the inspect() caller's thread")
        await h.clock.settle()
        #expect(LaunchSealTests.sealed(dir) == Array(segments.dropLast()))
    }

    /// SC271 (found by review): the segment that was the newest at launch also holds an earlier
    /// run's records, so when this run rolls it, its seal checks every record: one damaged (its
    /// length intact) is not indexed by the seal and comes back at no later launch.
    @Test func SC271_theSegmentNewestAtLaunchIsCheckedWhenThisRunSealsIt() async throws {
        let dir = LaunchSealTests.tempDir("sc271")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        // The chain written, and its client idle before the files are read (as `chain` does,
        // then settled).
        let h = Harness(store: LaunchSealTests.store(dir))
        let c = h.client(maxQueueSize: 10_000, granted: true)
        for i in 0..<200 {
            c.pv()
            if i % 10 == 9 { await h.settle() }
        }
        try await LaunchReadyTests.syncAndAwaitSealed(dir, h)
        let removal = QueueRecord.remove(["00000000-0000-4000-8000-000000000000"])
        var first = SegmentedQueueLog(directory: dir, sync: false, segmentBytes: LaunchSealTests.segmentBytes)
        var loaded = try first.open()
        var newest = try #require(loaded.segments.last)
        if loaded.locations.filter({ $0.generation == newest }).count < 2 {
            // A damaged last record reads as a torn tail (cut, not skipped): the newest segment
            // gets a record after it (the writer's batching decides how many it holds; the test
            // failed when it held one).
            _ = try first.submit([removal])
            first = SegmentedQueueLog(directory: dir, sync: false, segmentBytes: LaunchSealTests.segmentBytes)
            loaded = try first.open()
            newest = try #require(loaded.segments.last)
        }
        try #require(loaded.locations.filter { $0.generation == newest }.count >= 2)
        let index = try #require(loaded.locations.firstIndex { $0.generation == newest })
        let victim = loaded.locations[index]
        var bytes = try Array(Data(contentsOf: URL(fileURLWithPath: first.path(newest))))
        // A byte near the record's end (inside the envelope's JSON, not a field the index reads).
        bytes[victim.offset + AppendLog.frameOverhead + loaded.records[index].count - 12] ^= 0x01
        try Data(bytes).write(to: URL(fileURLWithPath: first.path(newest)))

        // A later run opens the chain (the damaged record is skipped), appends until the newest
        // segment rolls, and seals it.
        let log = SegmentedQueueLog(directory: dir, sync: false, segmentBytes: LaunchSealTests.segmentBytes)
        let reopened = try log.open()
        #expect(reopened.records.count == loaded.records.count - 1)
        // Fill it with valid removals (of an id never queued) until it rolls.
        while log.segments.last == newest { _ = try log.submit([removal]) }
        log.sealPending()
        #expect(SegmentSeal.read(path: log.path(newest)) == nil, "the seal indexed a record that fails its checksum")
        _ = c
    }

}
