import Foundation
import Testing
import TrackerCore
import TrackerCoreTestKit

@testable import ScoreTracker

/// The file store keeps queued events on disk only (read back when sent) and compacts its log.
///
///   SC187 — a reclamation never loses a record appended after its live locations were taken:
///           it deletes only segments older than the newest one at that moment, and the records
///           appended meanwhile stay readable where their append put them; a relaunch finds them
///           once (issue 35 items 1 and 2; before the segments, the records appended during a
///           compaction were carried onto its new file).
@Suite struct FileStoreTests {
    @Test func SC187_recordsAppendedDuringAReclamationAreKept() async throws {
        let dir = NSTemporaryDirectory() + "score-sc187-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let store = FileScoreStore(directory: dir)
        _ = try store.load()
        // 300 KB records: two fill `queue.log` past its 512 KiB bound, the third rolls.
        func big(_ k: UInt8) -> [UInt8] { [65, k] + [UInt8](repeating: k, count: 300_000) }
        let first = try #require(try await store.appendQueueRecords([big(1)]))
        _ = try await store.appendQueueRecords([big(2)])
        let third = try #require(try await store.appendQueueRecords([big(3)]))
        #expect(first[0].generation == 0 && third[0].generation == 1)
        // The live locations are taken (none: records 1 to 3 delivered), then records are
        // appended before the reclamation runs, into the newest segment and a new one.
        let bound = try store.reclaimBound()
        let during = try #require(try await store.appendQueueRecords([[82, 1], big(4), big(5)]))
        #expect(Set(during.map(\.generation)) == [1] || Set(during.map(\.generation)) == [1, 2])
        #expect(try store.reclaim(live: [], before: bound) == [0])
        #expect(!FileManager.default.fileExists(atPath: dir + "/queue.log"))
        for (loc, r) in zip(during, [[82, 1], big(4), big(5)]) { #expect(try store.readQueueRecord(at: loc) == r) }
        _ = try await store.appendQueueRecords([[65, 6]])
        let reloaded = try FileScoreStore(directory: dir).load()
        #expect(reloaded.queueRecords == [big(3), [82, 1], big(4), big(5), [65, 6]])
    }

    /// Tracks `e1` to `e700`, about 1.4 KB each, settling every 100: `queue.log` (512 KiB) rolls
    /// by the 400th. A segment rolls between two appends, never inside one: tracked all at once,
    /// a backlog the writer took in one append could all go to `queue.log`, and the tests then
    /// depended on how far the writer had got (`eventsAreReadBackFromDiskAndTheLogCompacts`
    /// failed so under TSan in CI).
    static func fillTwoSegments(_ h: Harness, _ c: ScoreClient) async {
        let pad = String(repeating: "p", count: 1000)
        for n in 1...700 {
            c.track("e\(n)", properties: ["n": n, "pad": pad])
            if n % 100 == 0 { await h.settle() }
        }
    }

    /// SC287: a reclamation asked for while another runs is asked again when that one ends, even
    /// when it deleted nothing (its live set was taken before the removals that made a segment
    /// deletable): before, the deletion waited for some later write (found by
    /// `eventsAreReadBackFromDiskAndTheLogCompacts` failing under TSan in CI).
    @Test func SC287_aReclamationRefusedWhileAnotherRanIsAskedAgainWhenItEnds() async throws {
        let dir = NSTemporaryDirectory() + "score-sc287-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let h = Harness(store: FileScoreStore(directory: dir, sync: false))
        let c = h.client(granted: true)
        await Self.fillTwoSegments(h, c)
        #expect(FileManager.default.fileExists(atPath: dir + "/queue.1.log"))
        // A reclamation runs (held here): the removals written meanwhile cannot start another.
        c.state.withLock { $0.writer.compacting = true }
        h.tx.answerAll(.status(200))
        await h.flush(c)
        await h.settle()
        #expect(c.inspect().queue.depth == 0)
        #expect(FileManager.default.fileExists(atPath: dir + "/queue.log"), "refused while the other runs")
        // The running one ends having deleted nothing: the refused one runs now.
        c.compactionEnded(failed: false)
        await h.settle()
        #expect(!FileManager.default.fileExists(atPath: dir + "/queue.log"))
    }

    @Test func eventsAreReadBackFromDiskAndTheLogCompacts() async throws {
        let dir = NSTemporaryDirectory() + "score-lazy-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let h = Harness(store: FileScoreStore(directory: dir, sync: false))
        let c = h.client(granted: true)
        await Self.fillTwoSegments(h, c)
        let firstRolled = c.state.withLock { s in s.queue.first { $0.location?.generation == 1 }.map { $0.name } }
        #expect(firstRolled.flatMap { Int($0.dropFirst()) }.map { $0 <= 401 } == true, "\(String(describing: firstRolled))")
        // Persisted events hold no bytes in memory.
        let held = c.state.withLock { s in s.queue.filter { $0.encoded != nil }.count }
        #expect(held == 0)
        let sizeBefore = try queueLogBytes(dir).count
        #expect(FileManager.default.fileExists(atPath: dir + "/queue.1.log"))
        // Six batches succeed, the seventh fails: 606 dead records > 100 live ones → the
        // segments holding only delivered events (here `queue.log`) are deleted.
        h.tx.script { _, i in i < 6 ? .status(200) : .status(500) }
        await h.flush(c)
        #expect(c.inspect().queue.depth == 100)
        await h.settle()
        #expect(!FileManager.default.fileExists(atPath: dir + "/queue.log"))
        let sizeAfter = try queueLogBytes(dir).count
        #expect(sizeAfter < sizeBefore * 3 / 4)
        // The remaining events are read back from their new locations.
        h.tx.answerAll(.status(200))
        await h.flush(c)
        let sent = h.tx.eventRequests.suffix(1).flatMap(\.names)
        #expect(sent == (601...700).map { "e\($0)" })
        #expect(h.tx.eventRequests.last?.events.first?["props"]?["n"] == 601)
        // Nothing comes back after a relaunch.
        let c2 = h.client(granted: true)
        #expect(c2.inspect().queue.depth == 0)
    }

    // SC146: the identity is written atomically (temp file, rename); a kill before the rename
    // leaves `identity.json.tmp-<uuid>`, which the next load removes once it is stale. A young
    // one (a write in flight) and files that are not the identity's stay.
    @Test func SC146_staleIdentityTemporaryFilesAreRemovedAtLoad() async throws {
        let dir = NSTemporaryDirectory() + "score-tmp-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let store = FileScoreStore(directory: dir, sync: false)
        _ = try store.load()
        let stale = dir + "/identity.json.tmp-" + IDs.uuidV4()
        let young = dir + "/identity.json.tmp-" + IDs.uuidV4()
        let foreign = [dir + "/notes.json.tmp-" + IDs.uuidV4(), dir + "/identity.json.tmp-short"]
        for p in [stale, young] + foreign { _ = FileManager.default.createFile(atPath: p, contents: Data("x".utf8)) }
        let old = Date(timeIntervalSinceNow: -Double(FileScoreStore.staleTemporaryFileAge) - 5)
        for p in [stale] + foreign { try FileManager.default.setAttributes([.modificationDate: old], ofItemAtPath: p) }
        _ = try FileScoreStore(directory: dir, sync: false).load()
        let names = Set(try FileManager.default.contentsOfDirectory(atPath: dir))
        #expect(!names.contains(String(stale.split(separator: "/").last!)))
        for p in [young] + foreign { #expect(names.contains(String(p.split(separator: "/").last!))) }
    }

    @Test func aCorruptedRecordIsDroppedWithADiagnosticAndTheRestIsSent() async throws {
        let dir = NSTemporaryDirectory() + "score-corrupt-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let h = Harness(store: FileScoreStore(directory: dir, sync: false))
        let c = h.client(granted: true)
        c.pv()
        c.pv()
        c.pv()
        await h.settle()
        // Flip a byte inside the second record's payload behind the client's back.
        let path = dir + "/queue.log"
        var bytes = try Array(Data(contentsOf: URL(fileURLWithPath: path)))
        let second = AppendLog.parseWithOffsets(bytes).offsets[1]
        bytes[second + 40] ^= 0x20
        let fh = try FileHandle(forWritingTo: URL(fileURLWithPath: path))
        try fh.seek(toOffset: 0)
        try fh.write(contentsOf: Data(bytes))
        try fh.close()
        await h.flush(c)
        #expect(h.tx.batches == [[E(1), E(3)]])
        #expect(h.diagnostics.all.contains { $0.code == "storage" })
        #expect(c.inspect().queue.depth == 0)
    }

    /// Forwards to a file store and notes each queue write and sync with the manual time.
    final class SyncSpyStore: ScoreStore, @unchecked Sendable {
        let inner: FileScoreStore
        let clock: ManualClock
        let calls = Locked<[String]>([])
        init(_ inner: FileScoreStore, clock: ManualClock) {
            self.inner = inner
            self.clock = clock
        }
        private func note(_ s: String) { calls.withLock { $0.append("\(s)@\(clock.nowMs() - T0)") } }
        func load() throws -> ScoreStoreContents { try inner.load() }
        func appendQueueRecords(_ records: [[UInt8]]) async throws -> [ScoreRecordLocation]? {
            note("write")
            return try await inner.appendQueueRecords(records)
        }
        func syncQueue() async throws {
            note("sync")
            try await inner.syncQueue()
        }
        func readQueueRecord(at location: ScoreRecordLocation) throws -> [UInt8]? { try inner.readQueueRecord(at: location) }
        func compactQueue(keeping: [ScoreRecordLocation]) async throws -> [ScoreRecordLocation?]? {
            note("compact")
            return try await inner.compactQueue(keeping: keeping)
        }
        func rewriteQueue(_ records: [[UInt8]]) async throws {
            note("rewrite")
            try await inner.rewriteQueue(records)
        }
        func saveIdentity(_ bytes: [UInt8]) async throws { try await inner.saveIdentity(bytes) }

        /// How many calls of `kind` were made.
        func count(_ kind: String) -> Int { calls.withLock { $0.filter { $0.hasPrefix(kind) }.count } }
    }

    /// A harness whose store is a spied file store in a fresh directory (removed by `cleanUp`).
    private func spiedHarness(_ tag: String) -> (h: Harness, spy: SyncSpyStore, dir: String) {
        let dir = NSTemporaryDirectory() + "score-\(tag)-\(UUID().uuidString)"
        let h = Harness()
        let spy = SyncSpyStore(FileScoreStore(directory: dir), clock: h.clock)
        h.store = spy
        return (h, spy, dir)
    }

    @Test func writesReachTheFileAtOnceAndShareOneSyncPerInterval() async throws {
        let (h, spy, dir) = spiedHarness("sync")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let c = h.client(granted: true)
        c.pv()
        await h.settle()
        let first = spy.calls.withLock { $0 }
        #expect(first.count == 2 && first[0].hasPrefix("write") && first[1].hasPrefix("sync"))
        // Three more within the interval: written at once (readable after a crash), not synced.
        c.pv()
        c.pv()
        c.pv()
        await h.settle()
        #expect(try AppendLog.open(path: dir + "/queue.log").records.count == 4)
        #expect(spy.count("sync") == 1)
        // The idle writer's timer syncs them once the interval since the last sync is over.
        await h.advance(ScoreClient.queueSyncIntervalMs - 1)
        #expect(spy.count("sync") == 1)
        await h.advance(1)
        #expect(spy.count("sync") == 2)
        // Nothing left to sync: no more syncs, however long the wait.
        await h.advance(10 * ScoreClient.queueSyncIntervalMs)
        #expect(spy.count("sync") == 2)
        // A write after a quiet interval is synced at once again.
        c.pv()
        await h.settle()
        #expect(spy.calls.withLock { $0.suffix(2).map { String($0.prefix(4)) } } == ["writ", "sync"])
        #expect(c.inspect().queue.depth == 5)
    }

    @Test func aCompactionIsFollowedByASyncOfItsRename() async throws {
        let (h, spy, dir) = spiedHarness("sync-compact")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let c = h.client(granted: true)
        for n in 1...700 { c.track("e\(n)") }
        await h.settle()
        // Six batches succeed, the seventh fails: 606 dead records > 3 × 100 live → compaction.
        h.tx.script { _, i in i < 6 ? .status(200) : .status(500) }
        await h.flush(c)
        #expect(c.inspect().queue.depth == 100)
        await h.advance(ScoreClient.queueSyncIntervalMs)
        let calls = spy.calls.withLock { $0 }
        let compact = try #require(calls.lastIndex { $0.hasPrefix("compact") })
        #expect(calls[(compact + 1)...].contains { $0.hasPrefix("sync") })
    }

    @Test func aQueueThatKeepsSheddingCompactsOnceDeadRecordsOutnumberTheQueueThreeToOne() async throws {
        let (h, spy, dir) = spiedHarness("shed-compact")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let c = h.client(maxQueueSize: 200, granted: true)
        for n in 1...200 {
            c.track("e\(n)")
            await h.settle()
        }
        // Each shed of a written event leaves two dead records (its add and its removal): 300
        // sheds leave 600, not more than 3 × 200 queued; the 301st compacts.
        for n in 201...500 {
            c.track("e\(n)")
            await h.settle()
        }
        #expect(spy.count("compact") == 0)
        c.track("e501")
        await h.settle()
        #expect(spy.count("compact") == 1)
        #expect(c.inspect().queue.depth == 200)
        // Nothing to delete yet (one segment, the newest): the log still loads the 200 queued.
        #expect(try queuedIdsOnDisk(dir).count == 200)
    }

    /// The manual clock, except that I/O steps are counted and do pause (without real time):
    /// the system scheduler's behaviour, under test control.
    final class NappingScheduler: TrackerScheduler, @unchecked Sendable {
        let clock: ManualClock
        let ioSpawns = Locked(0)
        let naps = Locked(0)
        /// Runs (once) inside the next pause.
        let duringNextNap = Locked<(@Sendable () -> Void)?>(nil)
        init(_ clock: ManualClock) { self.clock = clock }
        func schedule(afterMs: Int64, _ work: @escaping @Sendable () -> Void) -> TimerToken {
            clock.schedule(afterMs: afterMs, work)
        }
        func cancel(_ token: TimerToken) { clock.cancel(token) }
        func spawn(_ work: @escaping @Sendable () async -> Void) { clock.spawn(work) }
        func spawnIO(_ work: @escaping @Sendable () async -> Void) {
            ioSpawns.withLock { $0 += 1 }
            clock.spawn(work)
        }
        func pauseIO(microseconds: Int) async -> Bool {
            naps.withLock { $0 += 1 }
            duringNextNap.withLock { hook in
                let h = hook
                hook = nil
                return h
            }?()
            return true
        }
    }

    @Test func theWriterNapsBeforeGoingIdleSoThatCallsMeanwhileStartNothing() async throws {
        let h = Harness()
        let scheduler = NappingScheduler(h.clock)
        let c = ScoreClient(
            configuration: ScoreConfiguration(
                publishableKey: "pk_test_1", siteId: "urc-ios", endpoint: "https://score.test",
                store: h.store, transport: h.tx, clock: h.clock, scheduler: scheduler, idSource: h.ids))
        c.grantAllConsent()
        await h.settle()
        // The identity file's writer has run; count the queue writers from here.
        let before = scheduler.ioSpawns.withLock { $0 }
        c.pv()
        await h.settle()
        // One writer, which napped through every step before going idle.
        #expect(scheduler.ioSpawns.withLock { $0 } == before + 1)
        #expect(scheduler.naps.withLock { $0 } == ScoreClient.writerNapsUs.count)
        // Events recorded while it naps are written by it: no second writer is started for them.
        scheduler.duringNextNap.withLock {
            $0 = {
                c.pv()
                c.pv()
            }
        }
        c.pv()
        await h.settle()
        #expect(scheduler.ioSpawns.withLock { $0 } == before + 2)
        // The first writer's naps, then the second's: 1 nap that found the two events, then all again.
        #expect(scheduler.naps.withLock { $0 } == 2 * ScoreClient.writerNapsUs.count + 1)
        let adds = h.memoryStore.queueRecords.filter { $0.first == 65 }
        #expect(adds.count == 4 && c.inspect().queue.depth == 4)
    }
}
