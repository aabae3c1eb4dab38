import Foundation
import Testing
import TrackerCore
import TrackerCoreTestKit

@testable import ScoreTracker

// The quick start-up load of a file store (issue 19, `QuickLoad.swift`): the log's frames are
// found by following their lengths and the events indexed without checking checksums, which are
// checked right after the merge. Every case below compares it with the careful load (a store
// whose log opening is replaced, which never takes the quick path) on the same damaged file:
// the same events are queued, sent once each, and the same damage is reported.
//
// New scenarios:
// SC148 (in N_UnitTests) the quick scan reads the SDK's own envelopes as the general search does.
// SC149 a damaged add record whose frame is intact: the quick load queues, sends and reports
//       what the careful load does (the event is dropped, one `storage` diagnostic), and the
//       damaged record is never sent, even by a flush asked for before the load.
// SC150 the index gives up for the careful load on a torn tail, a damaged remove record, an id
//       added twice and a record of an unknown kind: the results are the careful load's.
// SC151 single bytes flipped anywhere in the file (seeded): quick and careful loads agree.
// SC152 the id table: duplicates refused, removal, re-adding after removal, growth, and ids
//       that all share one fingerprint.
// SC153 a reset before the quick load: the stored events keep the stored anonymous id.
// SC155 a diagnostic handler that calls `inspect()` when a quick load reports damage gets its
//       answer (no wait on the load it is called from) and sees the damaged event gone.
// SC156 the adds and removes are applied to the id table after the walk, in the log's order: an
//       id removed then added again is queued again, a remove before its id's add is ignored.
// SC154 a delivered batch of the oldest events leaves the queue's front without a pass over
//       the queue; a batch with events further back takes the general pass; order is kept.
@Suite struct QuickLoadTests {
    /// A log of `n` events, in a new directory; with `removed`, the first batch is delivered.
    private func makeLog(_ n: Int, removed: Int = 0) async throws -> String {
        let dir = NSTemporaryDirectory() + "score-quick-\(UUID().uuidString)"
        let h = Harness(store: FileScoreStore(directory: dir, sync: false))
        let c = h.client(granted: true)
        for _ in 0..<n { c.pv() }
        await h.settle()
        if removed > 0 {
            // The first batch delivered (its removal is logged), the next one refused.
            h.tx.script { _, i in i == 0 ? .status(200) : .status(400) }
            await h.flush(c)
            #expect(c.inspect().queue.depth == n - ScoreClient.maxBatchEvents)
        }
        return dir
    }

    private func copy(_ dir: String) throws -> String {
        let to = NSTemporaryDirectory() + "score-quick-\(UUID().uuidString)"
        try FileManager.default.copyItem(atPath: dir, toPath: to)
        return to
    }

    /// What a relaunch over `dir` sees: the queue's depth, the `storage` diagnostics about damage
    /// and the ids a flush then sends, with the quick load (`quick`) or the careful one.
    private struct Relaunch: Equatable {
        /// Whether the quick load ran (not compared: the rest must be the same either way).
        var quick: Bool
        var depth: Int
        var damageReports: [String]
        var sent: [String]

        static func == (a: Relaunch, b: Relaunch) -> Bool {
            a.depth == b.depth && a.damageReports == b.damageReports && a.sent == b.sent
        }
    }

    private func relaunch(_ dir: String, quick: Bool, flushFirst: Bool = false) async -> Relaunch {
        let store =
            quick
            ? FileScoreStore(directory: dir, sync: false)
            : FileScoreStore(directory: dir, sync: false, openForAppending: { path, sync in try AppendLog.open(path: path, sync: sync) })
        let h = Harness(store: store)
        let c = h.client(granted: true)
        var flushed: Task<Result<Void, Error>, Never>?
        if flushFirst { flushed = await h.startFlush(c) }
        let depth = flushFirst ? -1 : c.inspect().queue.depth
        await h.flush(c)
        _ = await flushed?.value
        let reports = h.diagnostics.all.filter { $0.code == "storage" && $0.message.contains("damaged") }.map(\.message)
        let sent = h.tx.batches.flatMap { $0 }
        return Relaunch(quick: c.state.withLock { $0.loadedQuickly }, depth: depth, damageReports: reports, sent: sent)
    }

    private func frames(_ path: String) throws -> (bytes: [UInt8], offsets: [Int]) {
        let bytes = try Array(Data(contentsOf: URL(fileURLWithPath: path)))
        return (bytes, AppendLog.parseWithOffsets(bytes).offsets)
    }

    private func write(_ bytes: [UInt8], _ path: String) throws {
        try Data(bytes).write(to: URL(fileURLWithPath: path))
    }

    /// Relaunches over two copies of a log holding `damaged` (and `dir`'s identity file): the
    /// quick load's view and the careful one's.
    private func bothLoads(of damaged: [UInt8], identityFrom dir: String) async throws -> (quick: Relaunch, careful: Relaunch) {
        let a = NSTemporaryDirectory() + "score-quick-\(UUID().uuidString)"
        let b = NSTemporaryDirectory() + "score-quick-\(UUID().uuidString)"
        defer { for d in [a, b] { try? FileManager.default.removeItem(atPath: d) } }
        for d in [a, b] {
            try FileManager.default.createDirectory(atPath: d, withIntermediateDirectories: true)
            try write(damaged, d + "/queue.log")
            try FileManager.default.copyItem(atPath: dir + "/identity.json", toPath: d + "/identity.json")
        }
        return (await relaunch(a, quick: true), await relaunch(b, quick: false))
    }

    @Test func SC149_aDamagedAddRecordWithAnIntactFrameIsDroppedAndReportedAsByTheCarefulLoad() async throws {
        let dir = try await makeLog(40)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        var (bytes, offsets) = try frames(dir + "/queue.log")
        // A byte inside record 17's props: the frame still tiles the file, and the index reads
        // no byte there.
        bytes[offsets[17] + 8 + 280] ^= 0x01
        try write(bytes, dir + "/queue.log")
        let a = try copy(dir)
        let b = try copy(dir)
        let c = try copy(dir)
        defer { for d in [a, b, c] { try? FileManager.default.removeItem(atPath: d) } }

        let quick = await relaunch(a, quick: true)
        let careful = await relaunch(b, quick: false)
        #expect(quick.quick && !careful.quick)
        #expect(quick == careful)
        #expect(quick.depth == 39 && quick.damageReports.count == 1 && quick.sent.count == 39)
        #expect(Set(quick.sent).count == 39 && !quick.sent.contains(E(18)))
        // A flush asked for before the load: the damaged record is not sent either.
        let early = await relaunch(c, quick: true, flushFirst: true)
        #expect(Set(early.sent) == Set(careful.sent) && early.sent.count == 39)
    }

    @Test func SC150_theIndexGivesUpForTheCarefulLoadWhereTheirAnswersCouldDiffer() async throws {
        let dir = try await makeLog(250, removed: 100)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let (bytes, offsets) = try frames(dir + "/queue.log")
        let removeFrame = try #require(offsets.firstIndex { bytes[$0 + 8] == 82 })
        var cases: [(String, [UInt8])] = []
        // A torn tail: the last record cut in its middle.
        cases.append(("torn", Array(bytes[0..<(bytes.count - 30)])))
        // A damaged remove record: its events would come back.
        var damagedRemove = bytes
        damagedRemove[offsets[removeFrame] + 8 + 5] ^= 0x40
        cases.append(("remove", damagedRemove))
        // An id added twice while queued: a queued event's frame appended again.
        cases.append(("twice", bytes + Array(bytes[offsets[150]..<offsets[151]])))
        // A record of a kind this SDK does not write, with a good checksum.
        cases.append(("unknown", bytes + AppendLog.frame([[90, 1, 2, 3]])))
        for (name, damaged) in cases {
            let (quick, careful) = try await bothLoads(of: damaged, identityFrom: dir)
            // The index gave up: the careful load ran.
            #expect(!quick.quick, "\(name)")
            #expect(quick == careful, "\(name)")
            #expect(Set(quick.sent).count == quick.sent.count, "\(name): an event sent twice")
        }
    }

    @Test func SC156_removesAndAddsApplyInTheLogsOrder() async throws {
        let dir = try await makeLog(7)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let (bytes, offsets) = try frames(dir + "/queue.log")
        func add(_ k: Int) -> [UInt8] { Array(bytes[offsets[k]..<(k + 1 < offsets.count ? offsets[k + 1] : bytes.count)]) }
        func remove(_ n: Int) -> [UInt8] { AppendLog.frame([QueueRecord.remove([E(n)])]) }
        // E1...E5; E2 removed and added again; a remove of E7 before E7's add; E1 removed last.
        var log = Array(bytes[0..<offsets[5]])
        log += remove(2) + add(1) + remove(7) + add(6) + remove(1)
        let (quick, careful) = try await bothLoads(of: log, identityFrom: dir)
        #expect(quick.quick)
        #expect(quick == careful)
        #expect(quick.sent == [E(3), E(4), E(5), E(2), E(7)])
    }

    @Test func SC151_singleBytesFlippedAnywhereGiveWhatTheCarefulLoadGives() async throws {
        let dir = try await makeLog(30)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let (bytes, _) = try frames(dir + "/queue.log")
        var random = SplitMix64(seed: 151)
        var quickRuns = 0
        for _ in 0..<24 {
            let at = Int(random.next() % UInt64(bytes.count))
            var damaged = bytes
            damaged[at] ^= UInt8(truncatingIfNeeded: random.next() | 1)
            let (quick, careful) = try await bothLoads(of: damaged, identityFrom: dir)
            if quick.quick { quickRuns += 1 }
            #expect(quick == careful, "byte \(at)")
        }
        // Most flips land in an envelope's body, where the index does not look.
        #expect(quickRuns > 0)
    }

    @Test func SC152_theIdTableRefusesDuplicatesAndFindsEveryIdItHolds() {
        var t = EventIdSlots(expected: 4)
        // 3,000 ids (past the first table's size), all with the same fingerprint (the low 32
        // bits of `hi ^ lo >> 32` are 0): every probe that meets one compares the whole id.
        var ids: [(UInt64, UInt64)] = []
        for i in 0..<3_000 { ids.append((UInt64(i) ^ UInt64(i % 2) << 40, UInt64(i) << 32 | 0x1234)) }
        for (k, id) in ids.enumerated() {
            let added = t.insert(id.0, id.1)
            #expect(added, "insert \(k)")
        }
        for id in ids {
            let again = t.insert(id.0, id.1)
            #expect(!again)
        }
        let removed = t.remove(ids[7].0, ids[7].1)
        let removedAgain = t.remove(ids[7].0, ids[7].1)
        let absent = t.remove(1, 2)
        #expect(removed == 7 && removedAgain == nil && absent == nil)
        // Re-added after its removal: the next index.
        let readded = t.insert(ids[7].0, ids[7].1)
        let readdedIndex = t.remove(ids[7].0, ids[7].1)
        #expect(readded && readdedIndex == 3_000)
        for (k, id) in ids.enumerated() where k != 7 {
            let index = t.remove(id.0, id.1)
            #expect(index == k)
        }
    }

    @Test func SC153_aResetBeforeTheQuickLoadKeepsTheStoredEventsUnderTheStoredId() async throws {
        let dir = try await makeLog(5)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let h = Harness(store: FileScoreStore(directory: dir, sync: false), holdsOutsideWork: true)
        let c = h.client(granted: true)
        // Held until the next settle: the reset and the event come before the load.
        #expect(!c.state.withLock { $0.loaded })
        c.reset()
        c.pv()
        await h.settle()
        #expect(c.inspect().queue.depth == 6)
        #expect(c.state.withLock { $0.loadedQuickly })
        let flushed = await h.startFlush(c)
        await h.settle()
        _ = await flushed.value
        let sent = h.tx.eventRequests.flatMap(\.events)
        #expect(sent.count == 6)
        // The stored events carry the id they were recorded with, the new one the reset's.
        let anonymous = sent.compactMap { $0["anonymousId"]?.stringValue }
        #expect(Set(anonymous[0..<5]).count == 1 && anonymous[5] != anonymous[0])
    }
    @Test func SC154_aDeliveredBatchAtTheFrontIsCutOffAndOrderIsKept() {
        func event(_ n: Int) -> QueuedEvent {
            QueuedEvent(
                eventId: E(n), name: "e", timestampMs: T0, anonymousEpoch: 0, hasUserId: false, critical: false,
                notice: false, requires: 1, fields: nil, encoded: nil)
        }
        var q = EventQueue()
        let events = (1...300).map(event)
        for e in events { q.append(e) }
        // The first 100 marked as left: they are the front.
        for e in events[0..<100] { e.inQueue = false }
        #expect(ScoreClient.leavingFront(q, 100) == 100)
        q.removeFirst(100)
        #expect(q.count == 200 && q.first === events[100])
        // Marked events further back (a critical one sent first, say): not the front.
        events[150].inQueue = false
        events[100].inQueue = false
        #expect(ScoreClient.leavingFront(q, 2) == nil)
        q.removeAll { !$0.inQueue }
        #expect(q.map(\.eventId) == (102...300).filter { $0 != 151 }.map { E($0) })
        // Cutting the front again and again stays in order, down to empty.
        var expected = Array(q)
        while !expected.isEmpty {
            let n = min(37, expected.count)
            for e in expected[0..<n] { e.inQueue = false }
            #expect(ScoreClient.leavingFront(q, n) == n)
            q.removeFirst(n)
            expected.removeFirst(n)
            #expect(q.map(\.eventId) == expected.map(\.eventId))
        }
        #expect(q.isEmpty)
    }

    @Test func SC155_aHandlerCallingInspectOnTheQuickLoadsDamageReportIsAnswered() async throws {
        let dir = try await makeLog(12)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        var (bytes, offsets) = try frames(dir + "/queue.log")
        bytes[offsets[4] + 8 + 280] ^= 0x01
        try write(bytes, dir + "/queue.log")
        final class Box: @unchecked Sendable {
            var client: ScoreClient?
            var depths: [Int] = []
        }
        let box = Box()
        let h = Harness()
        let c = ScoreClient(
            publishableKey: "pk_test_1", siteId: "urc-ios", endpoint: "https://score.test", appVersion: "4.2.0", os: "iOS 18.1",
            device: "iPhone", locale: "en-GB", store: FileScoreStore(directory: dir, sync: false), transport: h.tx,
            clock: h.clock, scheduler: h.clock, idSource: h.ids,
            onDiagnostic: { d in
                if d.message.contains("damaged"), let c = box.client { box.depths.append(c.inspect().queue.depth) }
            })
        box.client = c
        await h.settle()
        #expect(c.inspect().queue.depth == 11)
        #expect(box.depths == [11])
        #expect(c.state.withLock { $0.loadedQuickly })
    }
}
