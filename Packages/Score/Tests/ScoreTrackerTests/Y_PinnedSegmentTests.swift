import Foundation
import Testing
import TrackerCore
import TrackerCoreTestKit

@testable import ScoreTracker

/// A pinned segment no longer blocks deletion (issue 35 item 2).
///
///   SC266 — one record that stays queued in an old segment (a critical event waiting, say)
///           no longer keeps that segment's dead neighbours: the pinned segment is compacted
///           to its live records, each at its own offset (its location unchanged, the queue's
///           order kept, the space between them a padding frame over a hole), and every dead
///           segment below the bound is deleted, also those after it; a reopen finds the same
///           queue in the same order; the chain's plan is decided without I/O.
///   SC267 — the same reclamation killed after every file call (every later one fails, as after
///           a kill), then a fresh open: every live event once, in order; no event whose
///           removal was written comes back, also when that removal sits in a pinned segment
///           that is compacted (the dead segment before it is deleted first).
///   SC269 — a pinned segment that cannot be compacted (a live record of it no longer reads
///           back) ends the reclamation there without failing it: the segments after it stay
///           whole, nothing is lost beyond the damaged record.
///   SC268 — through the client: an event that stays queued (its category not granted at the
///           next launch) in the oldest segment no longer keeps the segments of the 600 events
///           sent after it; a relaunch with the category granted sends it once.
@Suite struct PinnedSegmentTests {
    typealias T = QueueSegmentsTests

    /// A chain of five segments (about ten records each) holding events 0-49 and a sixth, with every event
    /// but `kept` removed; the log and the locations by event.
    /// With `early`, events 10-19 (the second segment) are removed right after they are
    /// written, so their removal sits in the third segment, among its events.
    static func pinnedChain(_ dir: String, kept: [Int], early: Bool = false) throws -> (SegmentedQueueLog, [Int: ScoreRecordLocation]) {
        let log = SegmentedQueueLog(directory: dir, segmentBytes: 1000)
        _ = try log.open()
        var at: [Int: ScoreRecordLocation] = [:]
        for i in 0..<50 {
            at[i] = try log.submit([T.add(i)]).locations[0]
            if early && i == 19 { _ = try log.submit([T.remove(Array(10..<20))]) }
        }
        let removedEarly = early ? Array(10..<20) : []
        _ = try log.submit([T.remove((0..<50).filter { !kept.contains($0) && !removedEarly.contains($0) })])
        return (log, at)
    }

    @Test func SC266_aPinnedSegmentIsCompactedAndTheDeadOnesAfterItDeleted() throws {
        let dir = T.tempDir("sc266")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        // Event 3 (the first segment) and 45-49 (the newest) stay queued.
        let kept = [3] + Array(45..<50)
        let (log, at) = try Self.pinnedChain(dir, kept: kept)
        // Five segments of events (0-9, 10-19… 40-49) and the newest, holding the removal.
        let before = log.segments
        #expect(before.count == 6)
        let deleted = try log.reclaim(live: kept.map { at[$0]! })
        #expect(deleted == Array(before[1..<4]))
        #expect(log.segments == [before[0], before[4], before[5]])
        // The pinned segment holds event 3 at its place and padding only.
        let records = AppendLog.parseWithOffsets(try Array(Data(contentsOf: URL(fileURLWithPath: log.path(before[0])))))
        #expect(records.records.filter { $0.first != SegmentSeal.paddingKind } == [T.add(3)])
        #expect(zip(records.records, records.offsets).contains { $0.0 == T.add(3) && $0.1 == at[3]!.offset })
        #expect(try log.read(at: at[3]!) == T.add(3))
        #expect(T.live(try SegmentedQueueLog(directory: dir, segmentBytes: 1000).open().records) == kept)
        // Appends go on; a later reclamation with event 3 gone deletes the compacted segment.
        _ = try log.submit([T.remove([3])])
        #expect(try log.reclaim(live: Array(45..<50).map { at[$0]! }) == [before[0]])
        #expect(log.segments == [before[4], before[5]])
        #expect(T.live(try SegmentedQueueLog(directory: dir, segmentBytes: 1000).open().records) == Array(45..<50))
        // The plan, without I/O.
        let chain = SegmentChain(segments: [0, 1, 2, 3, 4], segmentBytes: 1000)
        #expect(chain.reclaimPlan(pinned: [0, 4], below: nil) == ([0], [1, 2, 3]))
        #expect(chain.reclaimPlan(pinned: [2, 4], below: nil) == ([2], [0, 1, 3]))
        #expect(chain.reclaimPlan(pinned: [0, 4], below: 2) == ([0], [1]))
        #expect(chain.reclaimPlan(pinned: [0, 1], below: nil) == ([0, 1], [2, 3]))
        #expect(chain.reclaimPlan(pinned: [0, 1, 2, 3], below: nil) == ([], []))
        #expect(chain.reclaimPlan(pinned: [1], below: nil) == ([1], [0, 2, 3]))
    }

    @Test func SC267_aKillAtEveryStepOfAPinnedReclamationLosesNothingAndResurrectsNothing() throws {
        for early in [false, true] { try killAtEveryStep(early: early) }
    }

    /// SC267 over one chain: events 3 and 25 (and 14 when not `early`) and 45-49 stay queued.
    func killAtEveryStep(early: Bool) throws {
        let made = T.tempDir("sc267-made")
        defer { try? FileManager.default.removeItem(atPath: made) }
        let kept = (early ? [3, 25] : [3, 14, 25]) + Array(45..<50)
        let (made0, at) = try Self.pinnedChain(made, kept: kept, early: early)
        let segments = made0.segments
        var k = 0
        var completed = false
        while !completed && k < 100 {
            let dir = T.tempDir("sc267-\(k)")
            defer { try? FileManager.default.removeItem(atPath: dir) }
            try FileManager.default.removeItem(atPath: dir)
            try FileManager.default.copyItem(atPath: made, toPath: dir)
            let log = SegmentedQueueLog(directory: dir, segmentBytes: 1000)
            _ = try log.open()
            let policy = QueueSegmentsTests.KillAfter(k)
            let installed = FileFaults.install(policy, under: dir)
            _ = try? log.reclaim(live: kept.map { at[$0]! })
            completed = !policy.killed
            installed.remove()
            let records = try SegmentedQueueLog(directory: dir, segmentBytes: 1000).open().records
            #expect(T.live(records) == kept, "k=\(k)")
            let adds = records.filter { $0.first == 65 }.count
            #expect(adds >= kept.count, "k=\(k)")
            // Done: the segments of the kept events are left (the older ones compacted).
            if completed {
                let left = Set(kept.map { at[$0]!.generation }).union([segments.last!])
                #expect(SegmentedQueueLog.listSegments(dir) == left.sorted(), "k=\(k)")
            }
            #expect(!T.files(dir).contains { $0.hasSuffix(".tmp") } || !completed, "k=\(k)")
            k += 1
        }
        #expect(completed, "the scenario never ran to its end")
        #expect(k > 5)
    }

    @Test func SC268_aQueuedEventNoLongerKeepsTheSentSegmentsAfterIt() async throws {
        let dir = T.tempDir("sc268")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let h1 = Harness(store: FileScoreStore(directory: dir, sync: false, segmentBytes: 16 << 10))
        let c1 = h1.client(maxQueueSize: 2_000, granted: true)
        c1.track("perso", requires: [.personalization])
        for i in 0..<600 {
            c1.pv()
            if i % 20 == 19 { await h1.settle() }
        }
        await h1.settle()
        let before = SegmentedQueueLog.listSegments(dir)
        #expect(before.count >= 10)
        // Launch 2: personalization not granted, so `perso` stays queued while the rest goes.
        let h2 = Harness(store: FileScoreStore(directory: dir, sync: false, segmentBytes: 16 << 10))
        let c2 = h2.client(
            initialConsent: ConsentState(analytics: true, personalization: false, advertising: false), maxQueueSize: 2_000)
        h2.tx.answerAll(.status(200))
        await h2.flush(c2)
        await h2.settle()
        #expect(h2.tx.batches.flatMap { $0 }.count == 600)
        #expect(c2.inspect().queue.depth == 1)
        let after = SegmentedQueueLog.listSegments(dir)
        #expect(after.first == before.first)
        #expect(after.count <= 3, "\(after)")
        // Launch 3: granted, `perso` is sent once.
        let h3 = Harness(store: FileScoreStore(directory: dir, sync: false, segmentBytes: 16 << 10))
        let c3 = h3.client(maxQueueSize: 2_000, granted: true)
        #expect(c3.inspect().queue.depth == 1)
        h3.tx.answerAll(.status(200))
        await h3.flush(c3)
        #expect(h3.tx.eventRequests.flatMap(\.names) == ["perso"])
        _ = (c1, c2)
    }

    @Test func SC269_aCompactionThatFailsEndsTheReclamationThere() throws {
        let dir = T.tempDir("sc269")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let kept = [3, 25] + Array(45..<50)
        let (log, at) = try Self.pinnedChain(dir, kept: kept)
        let before = log.segments
        // Event 25's record (the third segment) damaged: that segment cannot be compacted.
        let path = log.path(at[25]!.generation)
        var bytes = try Array(Data(contentsOf: URL(fileURLWithPath: path)))
        bytes[at[25]!.offset + AppendLog.frameOverhead + 20] ^= 0x01
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        // The first segment is compacted and the second deleted; the rest stays. The first
        // failure of a run is thrown (the client reports it once, as `storage`); the next
        // reclamation ends there quietly.
        #expect(throws: (any Error).self) { try log.reclaim(live: kept.map { at[$0]! }) }
        #expect(log.segments == [before[0]] + Array(before[2...]))
        #expect(try log.reclaim(live: kept.map { at[$0]! }) == [])
        #expect(log.segments == [before[0]] + Array(before[2...]))
        #expect(T.live(try SegmentedQueueLog(directory: dir, segmentBytes: 1000).open().records) == kept.filter { $0 != 25 })
    }
}
