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
// SC157 a length field that grew to take in the frames after it (an add, a remove record): the
//       index gives up (the envelope holds a NUL byte, as every frame header does) and the
//       careful load finds and keeps them.
// SC158 when the merge would shed (the queue's cap) or expire (retention) stored events, their
//       records are checked first: a damaged one takes no place and sends no notice.
// SC159 the check cannot read the log back: one `storage` diagnostic, the events stay queued and
//       are sent (each is checked when read back).
// SC164 no compaction while the check runs (it finds damaged events by their location): a
//       writer that runs meanwhile over a log due for compaction leaves it for later.
// SC165 the index counts the notices still queued (a removed one is not counted) and hands its
//       events to the queue as the careful load queues them.
// SC154 a delivered batch of the oldest events leaves the queue's front without a pass over
//       the queue; a batch with events further back takes the general pass; order is kept.
@Suite struct QuickLoadTests {
    /// A log of `n` events, in a new directory; with `removed`, the first batch is delivered.
    private func makeLog(_ n: Int, removed: Int = 0, critical: Bool = false) async throws -> String {
        let dir = NSTemporaryDirectory() + "score-quick-\(UUID().uuidString)"
        let h = Harness(store: FileScoreStore(directory: dir, sync: false))
        let c = h.client(granted: true)
        for _ in 0..<n { if critical { c.critical("c") } else { c.pv() } }
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
        /// The notices among the queued events after the load (-1 with `flushFirst`).
        var notices: Int
        var damageReports: [String]
        var sent: [String]

        static func == (a: Relaunch, b: Relaunch) -> Bool {
            a.depth == b.depth && a.notices == b.notices && a.damageReports == b.damageReports && a.sent == b.sent
        }
    }

    /// `recordFirst`: one event recorded before the load; `maxQueueSize` and `startMs` for the
    /// relaunched client.
    private func relaunch(
        _ dir: String, quick: Bool, flushFirst: Bool = false, recordFirst: Bool = false, maxQueueSize: Int = 1_000,
        startMs: Int64 = T0
    ) async -> Relaunch {
        let store =
            quick
            ? FileScoreStore(directory: dir, sync: false)
            : FileScoreStore(directory: dir, sync: false, openForAppending: { path, sync in try AppendLog.open(path: path, sync: sync) })
        // The constructor's load step held until the first settle: `granted` comes before the
        // load, whose retention and cap decisions depend on consent.
        let h = Harness(store: store, startMs: startMs, holdsOutsideWork: true)
        let c = h.client(maxQueueSize: maxQueueSize, granted: true)
        if recordFirst {
            // Held until the settle: recorded before the load.
            c.pv()
            await h.settle()
        }
        var flushed: Task<Result<Void, Error>, Never>?
        if flushFirst { flushed = await h.startFlush(c) }
        let depth = flushFirst ? -1 : c.inspect().queue.depth
        let notices = flushFirst ? -1 : c.state.withLock { $0.noticeCount }
        // (Held outside work released: the flush's steps start from this thread.)
        await h.clock.withOutsideWorkReleased { await h.flush(c) }
        if let flushed { _ = await bounded(flushed, "the flush") }
        let reports = h.diagnostics.all.filter { $0.code == "storage" && $0.message.contains("damaged") }.map(\.message)
        let sent = h.tx.batches.flatMap { $0 }
        return Relaunch(
            quick: c.state.withLock { $0.loadedQuickly }, depth: depth, notices: notices, damageReports: reports, sent: sent)
    }

    private func frames(_ path: String) throws -> (bytes: [UInt8], offsets: [Int]) {
        let bytes = try Array(Data(contentsOf: URL(fileURLWithPath: path)))
        return (bytes, AppendLog.parseWithOffsets(bytes).offsets)
    }

    /// Where frame `k` of a log read by ``frames(_:)`` ends.
    private func frameEnd(_ log: (bytes: [UInt8], offsets: [Int]), _ k: Int) -> Int {
        k + 1 < log.offsets.count ? log.offsets[k + 1] : log.bytes.count
    }

    /// `dir`'s log with a byte inside record `k`'s props flipped: the frame still tiles the file,
    /// and the index reads no byte there (a damaged add record in an intact frame).
    private func withDamagedProps(_ dir: String, record k: Int) throws -> [UInt8] {
        var (bytes, offsets) = try frames(dir + "/queue.log")
        bytes[offsets[k] + 8 + 280] ^= 0x01
        return bytes
    }

    private func write(_ bytes: [UInt8], _ path: String) throws {
        try Data(bytes).write(to: URL(fileURLWithPath: path))
    }

    /// Relaunches over two copies of a log holding `damaged` (and `dir`'s identity file): the
    /// quick load's view and the careful one's.
    private func bothLoads(
        of damaged: [UInt8], identityFrom dir: String, recordFirst: Bool = false, maxQueueSize: Int = 1_000, startMs: Int64 = T0
    ) async throws -> (quick: Relaunch, careful: Relaunch) {
        let a = NSTemporaryDirectory() + "score-quick-\(UUID().uuidString)"
        let b = NSTemporaryDirectory() + "score-quick-\(UUID().uuidString)"
        defer { for d in [a, b] { try? FileManager.default.removeItem(atPath: d) } }
        for d in [a, b] {
            try FileManager.default.createDirectory(atPath: d, withIntermediateDirectories: true)
            try write(damaged, d + "/queue.log")
            try FileManager.default.copyItem(atPath: dir + "/identity.json", toPath: d + "/identity.json")
        }
        return (
            await relaunch(a, quick: true, recordFirst: recordFirst, maxQueueSize: maxQueueSize, startMs: startMs),
            await relaunch(b, quick: false, recordFirst: recordFirst, maxQueueSize: maxQueueSize, startMs: startMs)
        )
    }

    @Test func SC149_aDamagedAddRecordWithAnIntactFrameIsDroppedAndReportedAsByTheCarefulLoad() async throws {
        let dir = try await makeLog(40)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        try write(try withDamagedProps(dir, record: 17), dir + "/queue.log")
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
        let read = try frames(dir + "/queue.log")
        let (bytes, offsets) = read
        func add(_ k: Int) -> [UInt8] { Array(bytes[offsets[k]..<frameEnd(read, k)]) }
        func remove(_ n: Int) -> [UInt8] { AppendLog.frame([QueueRecord.remove([E(n)])]) }
        // E1...E5; E2 removed and added again; a remove of E7 before E7's add; E1 removed last.
        var log = Array(bytes[0..<offsets[5]])
        log += remove(2) + add(1) + remove(7) + add(6) + remove(1)
        let (quick, careful) = try await bothLoads(of: log, identityFrom: dir)
        #expect(quick.quick)
        #expect(quick == careful)
        #expect(quick.sent == [E(3), E(4), E(5), E(2), E(7)])
    }

    @Test func SC165_theIndexCountsTheNoticesStillQueued() async throws {
        let dir = try await makeLog(4)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let read = try frames(dir + "/queue.log")
        func payload(_ k: Int) -> [UInt8] { Array(read.bytes[(read.offsets[k] + AppendLog.frameOverhead)..<frameEnd(read, k)]) }
        func notice(_ k: Int) -> [UInt8] {
            var p = payload(k)
            p[1] |= 2  // the record's notice flag
            return p
        }
        // E1 and E2 are notices, E1 is removed; E3 and E4 are not notices.
        let log = AppendLog.frame([notice(0), notice(1), payload(2), payload(3), QueueRecord.remove([E(1)])])
        let (quick, careful) = try await bothLoads(of: log, identityFrom: dir)
        #expect(quick.quick)
        #expect(quick == careful)
        #expect(quick.notices == 1)
        #expect(quick.sent == [E(2), E(3), E(4)])
        // Nothing removed: the index's array is the queue.
        let (whole, wholeCareful) = try await bothLoads(of: AppendLog.frame([notice(0), payload(1)]), identityFrom: dir)
        #expect(whole == wholeCareful)
        #expect(whole.notices == 1)
        #expect(whole.sent == [E(1), E(2)])
    }

    @Test func SC157_aLengthThatGrewOverTheNextFrameMakesTheIndexGiveUp() async throws {
        let dir = try await makeLog(250, removed: 100)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let read = try frames(dir + "/queue.log")
        let (bytes, offsets) = read
        let removeFrame = try #require(offsets.firstIndex { bytes[$0 + 8] == 82 })
        func length(_ k: Int) -> Int { frameEnd(read, k) - offsets[k] - 8 }
        /// Frame `k`'s length grown to end where frame `k + 1` ends: the frames still tile the file.
        func grown(_ k: Int) -> [UInt8] {
            var b = bytes
            let n = UInt32(length(k) + 8 + length(k + 1))
            for i in 0..<4 { b[offsets[k] + i] = UInt8(truncatingIfNeeded: n >> (8 * UInt32(i))) }
            return b
        }
        // Over an add record (kept by the careful load), then over the remove record (whose
        // events the careful load keeps removed).
        let last = offsets.count - 1
        for (name, k) in [("add", last - 2), ("remove", removeFrame - 1)] {
            let (quick, careful) = try await bothLoads(of: grown(k), identityFrom: dir)
            #expect(!quick.quick, "\(name)")
            #expect(quick == careful, "\(name)")
            #expect(Set(quick.sent).count == quick.sent.count, "\(name): an event sent twice")
        }
        // The add taken in is one the careful load keeps.
        let (_, careful) = try await bothLoads(of: grown(last - 2), identityFrom: dir)
        #expect(careful.sent.contains(E(250)) && !careful.sent.contains(E(249)))
    }

    @Test func SC158_capAndRetentionDecideOnCheckedRecordsOnly() async throws {
        // The cap: 40 stored, one damaged, one recorded before the load, a cap of 40.
        do {
            let dir = try await makeLog(40)
            defer { try? FileManager.default.removeItem(atPath: dir) }
            let damaged = try withDamagedProps(dir, record: 17)
            let (quick, careful) = try await bothLoads(of: damaged, identityFrom: dir, recordFirst: true, maxQueueSize: 40)
            #expect(quick.quick)
            #expect(quick == careful)
            // Nothing shed: 39 stored and the new one.
            #expect(quick.sent.count == 40 && quick.sent.contains(E(1)))
        }
        // Retention: 10 critical events stored, one damaged, relaunched once they are all past
        // retention: one notice per lost event the careful load saw.
        do {
            let dir = try await makeLog(10, critical: true)
            defer { try? FileManager.default.removeItem(atPath: dir) }
            var (bytes, offsets) = try frames(dir + "/queue.log")
            bytes[offsets[5] - 6] ^= 0x01  // inside record 4's sdk version
            let retentionHours = Harness().client().inspect().queue.retentionHours
            let later = T0 + Int64(retentionHours + 1) * 3_600_000
            let (quick, careful) = try await bothLoads(of: bytes, identityFrom: dir, startMs: later)
            #expect(quick.quick)
            #expect(quick == careful)
            #expect(quick.sent.count == 9 && quick.damageReports.count == 1)
        }
    }

    @Test func SC158_theMergeChecksFirstOnlyWhenItWouldShedOrExpire() {
        let c = Harness().client(maxQueueSize: 10)
        func stored(_ n: Int, notices: Int = 0, ageMs: Int64 = 0) -> ClientState {
            var s = ClientState(consent: .none, anonymousId: A(1), sessionId: "")
            for k in 0..<n {
                s.queue.append(
                    QueuedEvent(
                        eventId: E(k + 1), name: "e", timestampMs: T0 - ageMs, anonymousEpoch: 0, hasUserId: false,
                        critical: false, notice: k < notices, requires: 1, fields: nil, encoded: nil))
            }
            s.noticeCount = notices
            return s
        }
        // Below every cap, nothing past retention: the check may wait.
        #expect(!c.mergeDecidesOnStoredFields(stored(5), recorded: 4, recordedNotices: 0, nowMs: T0))
        // The queue's cap reached by stored and recorded events together.
        #expect(c.mergeDecidesOnStoredFields(stored(6), recorded: 4, recordedNotices: 0, nowMs: T0))
        // The notices' cap.
        #expect(!c.mergeDecidesOnStoredFields(stored(0), recorded: 0, recordedNotices: ScoreClient.maxNotices, nowMs: T0))
        #expect(c.mergeDecidesOnStoredFields(stored(1, notices: 1), recorded: 0, recordedNotices: ScoreClient.maxNotices, nowMs: T0))
        // A stored event past retention.
        #expect(!c.mergeDecidesOnStoredFields(stored(1, ageMs: c.retentionMs), recorded: 0, recordedNotices: 0, nowMs: T0))
        #expect(c.mergeDecidesOnStoredFields(stored(1, ageMs: c.retentionMs + 1), recorded: 0, recordedNotices: 0, nowMs: T0))
    }

    @Test func SC159_aCheckThatCannotReadTheLogLeavesTheEventsQueued() async throws {
        let dir = try await makeLog(30)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        /// Fails the first read of the log after the quick open (its last call is an `unlink` of
        /// the compaction's temporary file): the check's.
        final class FailTheCheck: FileFaultPolicy, @unchecked Sendable {
            let lock = NSLock()
            var armed = false
            var failed = 0
            func fault(_ call: FileCall, path: String, bytes: Int) -> Int32? {
                lock.lock()
                defer { lock.unlock() }
                if call == .unlink && path.hasSuffix("/queue.log.tmp") { armed = true }
                guard call == .read, armed, path.hasSuffix("/queue.log") else { return nil }
                armed = false
                failed += 1
                return EIO
            }
        }
        let policy = FailTheCheck()
        let installed = FileFaults.install(policy, under: dir)
        defer { installed.remove() }
        let h = Harness(store: FileScoreStore(directory: dir, sync: false))
        let c = h.client(granted: true)
        #expect(c.inspect().queue.depth == 30)
        #expect(c.state.withLock { $0.loadedQuickly && !$0.checkPending })
        #expect(policy.lock.withLock { policy.failed } == 1)
        // The load's diagnostics come right after the check that `inspect()` waited for, on the
        // loading step (a handler may call `inspect()` there): the settle waits for that step.
        func reports() -> [Diagnostic] {
            h.diagnostics.all.filter { $0.message.contains("could not read the stored queue back to check it") }
        }
        await h.settle()
        #expect(reports().count == 1 && reports().first?.code == "storage")
        await h.flush(c)
        #expect(Set(h.tx.batches.flatMap { $0 }).count == 30)
    }

    @Test func SC164_noCompactionWhileTheCheckRuns() async throws {
        // 700 events, the first 600 removed (a log due for compaction), record 650 damaged.
        let dir = try await makeLog(700)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let bytes = try withDamagedProps(dir, record: 650) + AppendLog.frame([QueueRecord.remove((1...600).map { E($0) })])
        try write(bytes, dir + "/queue.log")
        /// Holds the check's first read (the first read of the log after the quick open, on the
        /// loading thread) until `release` is signalled.
        final class HoldTheCheck: FileFaultPolicy, @unchecked Sendable {
            let lock = NSLock()
            var loader: pthread_t?
            let blocked = DispatchSemaphore(value: 0)
            let release = DispatchSemaphore(value: 0)
            func fault(_ call: FileCall, path: String, bytes: Int) -> Int32? {
                let hold: Bool = lock.withLock {
                    if call == .unlink && path.hasSuffix("/queue.log.tmp") { loader = pthread_self() }
                    guard call == .read, path.hasSuffix("/queue.log"), let l = loader, pthread_equal(l, pthread_self()) != 0
                    else { return false }
                    loader = nil
                    return true
                }
                if hold {
                    blocked.signal()
                    release.wait()
                }
                return nil
            }
        }
        let policy = HoldTheCheck()
        let installed = FileFaults.install(policy, under: dir)
        defer { installed.remove() }
        let h = Harness(store: FileScoreStore(directory: dir, sync: false), holdsOutsideWork: true)
        let c = h.client(granted: true)
        // The load on a thread of its own (the constructor's step is held), held in its check.
        let loaded = DispatchSemaphore(value: 0)
        let depth = Locked(-1)
        Thread {
            depth.withLock { $0 = c.inspect().queue.depth }
            loaded.signal()
        }.start()
        await wait(policy.blocked)
        #expect(c.state.withLock { $0.loaded && $0.checkPending })
        // A write meanwhile: the writer runs over a log with 601 dead records and 100 queued.
        c.pv()
        await h.settle()
        policy.release.signal()
        await wait(loaded)
        #expect(depth.withLock { $0 } == 100)
        #expect(h.diagnostics.all.filter { $0.message.contains("damaged") }.count == 1)
        await h.clock.withOutsideWorkReleased { await h.flush(c) }
        let sent = h.tx.batches.flatMap { $0 }
        #expect(sent.count == 100 && !sent.contains(E(651)))
        #expect(!h.diagnostics.all.contains { $0.message.contains("could not be read back") })
    }

    /// Waits for `semaphore` without blocking a thread of the test's pool.
    private func wait(_ semaphore: DispatchSemaphore) async {
        await withCheckedContinuation { (k: CheckedContinuation<Void, Never>) in
            DispatchQueue.global().async {
                semaphore.wait()
                k.resume()
            }
        }
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
        _ = await bounded(flushed, "the flush")
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
        try write(try withDamagedProps(dir, record: 4), dir + "/queue.log")
        let client = Locked<ScoreClient?>(nil)
        let depths = Locked<[Int]>([])
        // The load held until the settle: the handler can reach the client by then.
        let h = Harness(holdsOutsideWork: true)
        let c = ScoreClient(
            configuration: ScoreConfiguration(
                publishableKey: "pk_test_1", siteId: "urc-ios", endpoint: "https://score.test", appVersion: "4.2.0", os: "iOS 18.1",
                device: "iPhone", locale: "en-GB", store: FileScoreStore(directory: dir, sync: false), transport: h.tx,
                clock: h.clock, scheduler: h.clock, idSource: h.ids,
                onDiagnostic: { d in
                    guard d.message.contains("damaged"), let c = client.withLock({ $0 }) else { return }
                    let depth = c.inspect().queue.depth
                    depths.withLock { $0.append(depth) }
                }))
        client.withLock { $0 = c }
        await h.settle()
        #expect(c.inspect().queue.depth == 11)
        #expect(depths.withLock { $0 } == [11])
        #expect(c.state.withLock { $0.loadedQuickly })
    }
}
