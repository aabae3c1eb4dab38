import Foundation
import Testing
import TrackerCore
import TrackerCoreTestKit

@testable import ScoreTracker

/// The queue log's segment chain (`SegmentedQueueLog`, issue 35 items 1 and 2).
///
///   SC250 — appends go to the newest segment, which rolls at its size bound into
///           `queue.<n>.log` (0600); every record is read back at its location and a reopen
///           reads them all once, in order; no append rewrites or syncs a whole file.
///   SC251 — the oldest segments holding no live record are deleted, in order, after the
///           removals are synced; never the newest, never one after a segment still holding a
///           live record; a reopen finds the same queue.
///   SC252 — migration: a `queue.log` written by the single-file store of earlier versions is
///           segment 0, adopted as it is: every event in it is queued once, later appends roll
///           past it and it is deleted once its events are removed.
///   SC253 — migration with a kill at every step: the first launch over a legacy `queue.log`
///           (open, removals, appends that roll, the deletion of `queue.log`) stopped after
///           step k for every k (every later file call fails, as after a kill), then a fresh
///           open: every event once, none twice, none whose removal was written back.
///   SC255 — migration through the client: a relaunch over a legacy `queue.log` larger than a
///           segment (1,200 events in one file, as the single-file store wrote them) queues every
///           event once, sends each once, and once they are all sent `queue.log` is deleted and a
///           relaunch finds nothing.
///   SC256 — the chain's decisions without I/O (`SegmentChain`): an append rolls only when the
///           newest segment is at its bound and the append holds records; a reclamation deletes
///           the oldest segments up to the first pinned one, below its bound, never the newest.
///   SC257 — a launch with nothing to append deletes the segments a previous run emptied but
///           was killed before deleting (every event in them sent, their removals written).
///   SC254 — a damaged segment (a byte flipped, or the whole file overwritten) is reported in
///           the load's damage and its intact records are kept; the other segments are
///           unaffected; nothing crashes.
@Suite struct QueueSegmentsTests {
    static func tempDir(_ name: String) -> String {
        let dir = NSTemporaryDirectory() + "score-seg-\(name)-\(UUID().uuidString)"
        try? FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        return dir
    }

    /// An add record of test event `i` (padded to about 100 bytes) and a removal of `ids`.
    static func add(_ i: Int) -> [UInt8] { [65] + Array("event-\(i)".utf8) + [UInt8](repeating: 46, count: 90) }
    static func remove(_ ids: [Int]) -> [UInt8] { [82] + ids.flatMap { Array("|\($0)".utf8) } }

    /// The live ids of `records` (adds in order, removals clear them).
    static func live(_ records: [[UInt8]]) -> [Int] {
        var order: [Int] = []
        var alive = Set<Int>()
        for r in records {
            let text = String(decoding: r.dropFirst(), as: UTF8.self)
            if r.first == 65, let id = Int(text.dropFirst(6).prefix { $0 != "." }) {
                if !alive.contains(id) { order.append(id) }
                alive.insert(id)
            } else if r.first == 82 {
                for part in text.split(separator: "|") { if let id = Int(part) { alive.remove(id) } }
            }
        }
        return order.filter { alive.contains($0) }
    }

    /// The files of `dir` but the summary cache (`SummaryCache`: written by the sync thread
    /// after seals, whenever that runs; its entries are checked against the segments' files).
    static func files(_ dir: String) -> [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: dir)) ?? []).filter { $0 != SummaryCache.fileName }.sorted()
    }

    @Test func SC250_appendsRollIntoNewSegmentsAndAReopenReadsEveryRecordOnce() throws {
        let dir = Self.tempDir("sc188")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let log = SegmentedQueueLog(directory: dir, segmentBytes: 1000)
        #expect(try log.open().records.isEmpty)
        var locations: [ScoreRecordLocation] = []
        var tickets: [SegmentedQueueLog.Ticket] = []
        for i in stride(from: 0, to: 60, by: 3) {
            let (l, t) = try log.submit([Self.add(i), Self.add(i + 1), Self.add(i + 2)])
            locations += l
            tickets.append(t)
        }
        // 60 records of about 107 bytes framed, three an append, 1000 bytes a segment: four
        // appends (12 records) each, the fourth going past the bound, the next one rolling.
        #expect(log.segments == [0, 1, 2, 3, 4])
        #expect(Self.files(dir) == log.segments.map { $0 == 0 ? "queue.log" : "queue.\($0).log" }.sorted())
        #expect(Set(locations.map(\.generation)).count == log.segments.count)
        for (i, l) in locations.enumerated() { #expect(try log.read(at: l) == Self.add(i)) }
        for n in log.segments {
            let mode = try FileManager.default.attributesOfItem(atPath: log.path(n))[.posixPermissions] as? NSNumber
            #expect(mode?.intValue == 0o600)
            // No segment grows past the bound by more than one append.
            let size = try FileManager.default.attributesOfItem(atPath: log.path(n))[.size] as? NSNumber
            #expect((size?.intValue ?? 0) < 1000 + 3 * 108)
        }
        #expect(!log.isSynced(through: tickets.last!))
        try log.sync()
        #expect(log.isSynced(through: tickets.last!))
        let reopened = try SegmentedQueueLog(directory: dir, segmentBytes: 1000).open()
        #expect(reopened.records == (0..<60).map(Self.add))
        #expect(reopened.locations == locations)
        #expect(reopened.damage == .none)
    }

    @Test func SC251_deadSegmentsAreDeletedOldestFirstAndNeverPastALiveOne() throws {
        let dir = Self.tempDir("sc189")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let log = SegmentedQueueLog(directory: dir, segmentBytes: 1000)
        _ = try log.open()
        var at: [Int: ScoreRecordLocation] = [:]
        for i in 0..<50 { at[i] = try log.submit([Self.add(i)]).locations[0] }
        let segmentsBefore = log.segments
        #expect(segmentsBefore.count == 5)
        // Events 0-24 and 35-39 delivered: segments 0 and 1 dead, 2 pinned by 25-29, 3 dead
        // but after a live one, 4 the newest.
        _ = try log.submit([Self.remove(Array(0..<25) + Array(35..<40))])
        let liveIds = Array(25..<35) + Array(40..<50)
        let deleted = try log.reclaim(live: liveIds.map { at[$0]! })
        #expect(deleted == Array(segmentsBefore.prefix(2)))
        #expect(log.segments.first == segmentsBefore[2])
        #expect(!FileManager.default.fileExists(atPath: log.path(segmentsBefore[0])))
        // A deleted segment's records read as gone; the live ones still read back.
        #expect(try log.read(at: at[0]!) == nil)
        for i in liveIds { #expect(try log.read(at: at[i]!) == Self.add(i)) }
        #expect(Self.live(try SegmentedQueueLog(directory: dir, segmentBytes: 1000).open().records) == liveIds)
        // Everything delivered: every segment but the newest goes.
        _ = try log.submit([Self.remove(liveIds)])
        try log.reclaim(live: [])
        #expect(log.segments.count == 1)
        let reopened = try SegmentedQueueLog(directory: dir, segmentBytes: 1000).open()
        #expect(Self.live(reopened.records).isEmpty)
        // Appends go on in the newest segment.
        _ = try log.submit([Self.add(99)])
        #expect(Self.live(try SegmentedQueueLog(directory: dir, segmentBytes: 1000).open().records) == [99])
    }

    /// A legacy log: `total` events tracked through today's single-file store, the first batch
    /// of 100 delivered (its removal written). Returns the directory and the queued event ids.
    static func legacyLog(_ name: String, total: Int) async throws -> (dir: String, queued: [String]) {
        let dir = tempDir(name)
        let h = Harness(store: FileScoreStore(directory: dir, sync: false))
        let c = h.client(granted: true)
        for _ in 0..<total { c.pv() }
        await h.settle()
        h.tx.script { _, i in i == 0 ? .status(200) : .status(400) }
        await h.flush(c)
        let queued = h.tx.eventRequests.dropFirst().first?.ids ?? []
        #expect(c.inspect().queue.depth == total - ScoreClient.maxBatchEvents)
        return (dir, queued)
    }

    /// The ids of the events a record list queues, in order (the client's own reading).
    static func queuedIds(_ records: [[UInt8]]) -> [String] {
        var s = ClientState(consent: .none, anonymousId: "a", sessionId: "")
        ScoreClient.loadQueue(records, locations: nil, into: &s)
        return s.queue.map { $0.id.string }
    }

    @Test func SC252_aLegacyQueueLogIsAdoptedAsTheFirstSegment() async throws {
        let (dir, queued) = try await Self.legacyLog("sc190", total: 150)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        #expect(Self.files(dir).contains("queue.log"))
        let log = SegmentedQueueLog(directory: dir, segmentBytes: 4096)
        let loaded = try log.open()
        let ids = Self.queuedIds(loaded.records)
        #expect(ids.count == 50 && Set(ids).count == 50)
        if !queued.isEmpty { #expect(Array(ids.prefix(queued.count)) == queued) }
        // The legacy file is over the bound: the next append rolls past it.
        _ = try log.submit([Self.add(1)])
        #expect(log.segments == [0, 1])
        // Its events delivered: it goes.
        let removal = QueueRecord.remove(ids)
        _ = try log.submit([removal])
        let later = try log.submit([Self.add(2)]).locations
        #expect(try log.reclaim(live: later) == [0])
        #expect(!Self.files(dir).contains("queue.log"))
        #expect(Self.queuedIds(try SegmentedQueueLog(directory: dir).open().records).isEmpty)
    }

    /// Lets the first `allowed` file-changing calls under a directory run, then fails every
    /// call (a process killed after step `allowed`: nothing more reaches the disk).
    final class KillAfter: FileFaultPolicy, @unchecked Sendable {
        let lock = NSLock()
        let allowed: Int
        var steps = 0
        var killed = false
        init(_ allowed: Int) { self.allowed = allowed }
        func fault(_ call: FileCall, path: String, bytes: Int) -> Int32? {
            lock.lock()
            defer { lock.unlock() }
            if killed { return EIO }
            switch call {
            case .write, .fsync, .ftruncate, .rename, .unlink, .openForWriting, .mkdir:
                if steps == allowed {
                    killed = true
                    return EIO
                }
                steps += 1
                return nil
            default:
                return nil
            }
        }
    }

    @Test func SC253_aKillAtEveryStepOfTheMigrationLosesNoEventAndDuplicatesNone() async throws {
        let (legacy, _) = try await Self.legacyLog("sc191", total: 150)
        defer { try? FileManager.default.removeItem(atPath: legacy) }
        let original = Self.queuedIds(try AppendLog.open(path: legacy + "/queue.log").records)
        #expect(original.count == 50)
        var k = 0
        var completed = false
        while !completed && k < 200 {
            let dir = Self.tempDir("sc191-\(k)")
            defer { try? FileManager.default.removeItem(atPath: dir) }
            try FileManager.default.removeItem(atPath: dir)
            try FileManager.default.copyItem(atPath: legacy, toPath: dir)
            let policy = KillAfter(k)
            let installed = FileFaults.install(policy, under: dir)
            // The first launch: open, deliver the first 20 (their removal), append new events
            // until the log rolls, deliver the other 30, reclaim.
            var removedWritten = Set<String>()
            var newIds = Set<Int>()
            var newLocations: [ScoreRecordLocation] = []
            do {
                let log = SegmentedQueueLog(directory: dir, segmentBytes: 2048)
                let ids = Self.queuedIds(try log.open().records)
                _ = try log.submit([QueueRecord.remove(Array(ids.prefix(20)))])
                removedWritten.formUnion(ids.prefix(20))
                for i in 0..<30 {
                    newLocations += try log.submit([Self.add(i)]).locations
                    newIds.insert(i)
                }
                try log.sync()
                _ = try log.submit([QueueRecord.remove(Array(ids.dropFirst(20)))])
                removedWritten.formUnion(ids.dropFirst(20))
                // Only the new events are live now: `queue.log` and the segments holding
                // nothing but removals go.
                try log.reclaim(live: newLocations)
            } catch {}
            completed = !policy.killed
            installed.remove()
            // A fresh launch.
            let records = try SegmentedQueueLog(directory: dir, segmentBytes: 2048).open().records
            let events = Self.queuedIds(records)
            #expect(Set(events).count == events.count, "k=\(k): an event twice")
            #expect(Set(events) == Set(original).subtracting(removedWritten), "k=\(k)")
            #expect(Set(Self.live(records)) == newIds, "k=\(k)")
            if completed { #expect(!Self.files(dir).contains("queue.log"), "the legacy file, emptied, is deleted") }
            k += 1
        }
        #expect(completed, "the scenario never ran to its end")
        #expect(k > 10)
    }

    @Test func SC255_aRelaunchOverALegacyLogSendsEveryEventOnceThenDeletesIt() async throws {
        let made = Self.tempDir("sc193-made")
        let dir = Self.tempDir("sc193")
        defer {
            try? FileManager.default.removeItem(atPath: made)
            try? FileManager.default.removeItem(atPath: dir)
        }
        // 1,200 events: today's store writes them in two segments; one file holding their records
        // in order is what the single-file store wrote.
        let h1 = Harness(store: FileScoreStore(directory: made, sync: false))
        let c1 = h1.client(maxQueueSize: 2_000, granted: true)
        for _ in 0..<1_200 { c1.pv() }
        await h1.settle()
        let tracked = try queuedIdsOnDisk(made)
        #expect(tracked.count == 1_200)
        try Data(try queueLogBytes(made)).write(to: URL(fileURLWithPath: dir + "/queue.log"))
        try FileManager.default.copyItem(atPath: made + "/identity.json", toPath: dir + "/identity.json")
        #expect(Self.files(dir) == ["identity.json", "queue.log"])
        let h = Harness(store: FileScoreStore(directory: dir, sync: false))
        let c = h.client(maxQueueSize: 2_000, granted: true)
        #expect(c.inspect().queue.depth == 1_200)
        h.tx.answerAll(.status(200))
        for _ in 0..<12 { await h.flush(c) }
        await h.settle()
        let sent = h.tx.batches.flatMap { $0 }
        #expect(sent.count == 1_200 && Set(sent) == Set(tracked))
        #expect(c.inspect().queue.depth == 0)
        // The removals rolled the log past `queue.log`, whose events are all sent: deleted.
        #expect(!Self.files(dir).contains("queue.log"), "\(Self.files(dir))")
        let h2 = Harness(store: FileScoreStore(directory: dir, sync: false))
        #expect(h2.client(maxQueueSize: 2_000, granted: true).inspect().queue.depth == 0)
    }

    @Test func SC256_theChainDecidesRollsAndDeletionsOnValues() {
        var chain = SegmentChain(segments: [0], segmentBytes: 100)
        #expect(chain.place(recordCount: 1, newestBytes: 99) == .newest(segment: 0))
        #expect(chain.place(recordCount: 0, newestBytes: 100) == .newest(segment: 0))
        #expect(chain.place(recordCount: 1, newestBytes: 100) == .roll(from: 0, into: 1))
        #expect(SegmentChain(segments: [], segmentBytes: 100).place(recordCount: 1, newestBytes: 0) == nil)
        for _ in 0..<4 { _ = chain.appendSegment() }
        #expect(chain.segments == [0, 1, 2, 3, 4])
        // Nothing live: all but the newest; below a bound: only those.
        #expect(chain.deletable(pinned: [], below: nil) == [0, 1, 2, 3])
        #expect(chain.deletable(pinned: [], below: 2) == [0, 1])
        // A pinned segment stops the deletion: the dead ones after it stay.
        #expect(chain.deletable(pinned: [1, 4], below: nil) == [0])
        #expect(chain.deletable(pinned: [0], below: nil) == [])
        #expect(chain.hasSegment(before: 2) && !chain.hasSegment(before: 0))
        chain.remove(0)
        chain.remove(1)
        chain.restoreOldest(1)
        #expect(chain.segments == [1, 2, 3, 4])
        #expect(!SegmentChain(segments: [7], segmentBytes: 100).hasSegment(before: 9))
    }

    @Test func SC257_aLaunchDeletesTheSegmentsAKilledRunEmptied() async throws {
        let dir = Self.tempDir("sc195")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let h1 = Harness(store: FileScoreStore(directory: dir, sync: false))
        let c1 = h1.client(maxQueueSize: 2_000, granted: true)
        for n in 1...1_500 {
            c1.pv()
            if n % 250 == 0 { await h1.settle() }  // a segment rolls between appends only
        }
        #expect(Self.files(dir) == ["identity.json", "queue.1.log", "queue.log"])
        // Every event sent, its removal written, then the run killed before any deletion.
        let log = SegmentedQueueLog(directory: dir, sync: false)
        _ = try log.submit([QueueRecord.remove(Self.queuedIds(try log.open().records))])
        #expect(Self.files(dir) == ["identity.json", "queue.1.log", "queue.log"])
        let h = Harness(store: FileScoreStore(directory: dir, sync: false))
        let c = h.client(maxQueueSize: 2_000, granted: true)
        #expect(c.inspect().queue.depth == 0)
        await h.settle()
        #expect(Self.files(dir) == ["identity.json", "queue.1.log"])
        _ = c1
    }

    @Test func SC254_aDamagedSegmentIsReportedAndSkipped() throws {
        let dir = Self.tempDir("sc192")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let log = SegmentedQueueLog(directory: dir, segmentBytes: 1000)
        _ = try log.open()
        var locations: [ScoreRecordLocation] = []
        for i in 0..<40 { locations += try log.submit([Self.add(i)]).locations }
        let segments = log.segments
        #expect(segments.count == 4)
        let second = log.path(segments[1])
        let intact = try Array(Data(contentsOf: URL(fileURLWithPath: second)))
        // A byte flipped inside the segment's third record: that record alone is lost.
        var flipped = intact
        flipped[2 * 107 + 50] ^= 0xFF
        try Data(flipped).write(to: URL(fileURLWithPath: second))
        var loaded = try SegmentedQueueLog(directory: dir, segmentBytes: 1000).open()
        #expect(loaded.damage.skippedRegions == 1)
        #expect(Self.live(loaded.records) == (0..<40).filter { $0 != 12 })
        // The whole segment overwritten: reported as damage cut at its end, the others kept.
        try Data([UInt8](repeating: 0x78, count: intact.count)).write(to: URL(fileURLWithPath: second))
        loaded = try SegmentedQueueLog(directory: dir, segmentBytes: 1000).open()
        #expect(loaded.damage.tailBeyondOneRecord)
        #expect(loaded.damage.tornTailBytes == intact.count)
        #expect(Self.live(loaded.records) == Array(0..<10) + Array(20..<40))
    }
}

/// The queue log's bytes as one frame sequence: its segments' files, oldest first.
func queueLogBytes(_ dir: String) throws -> [UInt8] {
    try SegmentedQueueLog.listSegments(dir).flatMap { n in
        try Array(Data(contentsOf: URL(fileURLWithPath: n == 0 ? dir + "/queue.log" : dir + "/queue.\(n).log")))
    }
}

/// The ids of the events the queue log in `dir` holds, in order (the client's own reading).
func queuedIdsOnDisk(_ dir: String) throws -> [String] {
    QueueSegmentsTests.queuedIds(AppendLog.parse(try queueLogBytes(dir)).records)
}
