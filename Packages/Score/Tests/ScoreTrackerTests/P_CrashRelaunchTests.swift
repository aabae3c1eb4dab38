import Foundation
import Testing
import TrackerCore
import TrackerCoreTestKit

@testable import ScoreTracker

/// A store that forwards the writes to a ``FileScoreStore`` (like a host's logging or metrics
/// wrapper) but does not read back: its appends are durable at once and return no location, and
/// it reads nothing back by location, although its `load()` hands the file store's locations
/// through.
final class ForwardingStore: ScoreStore {
    let base: any ScoreStore
    init(_ base: any ScoreStore) { self.base = base }
    func load() throws -> ScoreStoreContents { try base.load() }
    func appendQueueRecords(_ records: [[UInt8]]) async throws -> [ScoreRecordLocation]? {
        _ = try await base.appendQueueRecords(records)
        try await base.syncQueue()
        return nil
    }
    func syncQueue() async throws {}
    func readQueueRecord(at location: ScoreRecordLocation) throws -> [UInt8]? { nil }
    func compactQueue(keeping: [ScoreRecordLocation]) async throws -> [ScoreRecordLocation?]? { nil }
    func rewriteQueue(_ records: [[UInt8]]) async throws { try await base.rewriteQueue(records) }
    func saveIdentity(_ bytes: [UInt8]) async throws { try await base.saveIdentity(bytes) }
}

/// A store that reads back by location but returns no location from its appends and does not
/// compact (so the client holds a mix of located events and events kept in memory).
final class HalfLocatedStore: ScoreStore {
    let base: FileScoreStore
    init(_ base: FileScoreStore) { self.base = base }
    func load() throws -> ScoreStoreContents { try base.load() }
    func appendQueueRecords(_ records: [[UInt8]]) async throws -> [ScoreRecordLocation]? {
        _ = try await base.appendQueueRecords(records)
        try await base.syncQueue()
        return nil
    }
    func syncQueue() async throws {}
    func compactQueue(keeping: [ScoreRecordLocation]) async throws -> [ScoreRecordLocation?]? { nil }
    func rewriteQueue(_ records: [[UInt8]]) async throws { try await base.rewriteQueue(records) }
    func saveIdentity(_ bytes: [UInt8]) async throws { try await base.saveIdentity(bytes) }
    func readQueueRecord(at location: ScoreRecordLocation) throws -> [UInt8]? { try base.readQueueRecord(at: location) }
}

/// Ids that never collide with ``TestIds``' (a third launch's event).
final class LaterIds: ScoreIdSource {
    static let event = "01900000-0000-7000-9000-000000000001"
    func newEventId(nowMs: Int64) -> String { Self.event }
    func newAnonymousId() -> String { "0000000a-0000-4000-9000-000000000001" }
    func newSessionId() -> String { "00000005-0000-4000-9000-000000000001" }
}

/// A crash (the process dies with the client and its store) followed by a relaunch on the same
/// directory: every event whose add record is durably in the queue log is sent, none is reported
/// dropped. No child process: the first client is abandoned (its clock is never advanced again)
/// and a new store and client are created on the directory.
@Suite struct CrashRelaunchTests {
    static func tempDir(_ tag: String) -> String {
        let dir = NSTemporaryDirectory() + "score-relaunch-\(tag)-\(UUID().uuidString)"
        try? FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        return dir
    }

    /// Relaunches on `store` with a fresh clock and recording transport, flushes until the queue
    /// is empty (or stops shrinking) and returns the sent ids and the storage diagnostics.
    static func relaunch(_ store: any ScoreStore) async -> (sent: [String], storage: [Diagnostic], depthAfter: Int) {
        let h = Harness(store: store)
        let c = h.client(granted: true)
        var last = Int.max
        while true {
            await h.flush(c)
            let depth = c.inspect().queue.depth
            if depth == 0 || depth >= last { break }
            last = depth
        }
        return (
            h.tx.eventRequests.flatMap(\.ids), h.diagnostics.all.filter { $0.code == "storage" },
            c.inspect().queue.depth
        )
    }

    /// The events a relaunch must send from `bytes` (the log as the crash left it): the adds
    /// of the intact prefix not removed by a later intact record, in order.
    static func expectedIds(_ bytes: [UInt8]) -> [String] {
        var order: [String] = []
        var live: Set<String> = []
        for r in AppendLog.parse(bytes).records {
            switch QueueRecord.parse(r) {
            case .add(let a)?:
                if !live.contains(a.eventId) { order.append(a.eventId) }
                live.insert(a.eventId)
            case .remove(let ids)?: for id in ids { live.remove(id) }
            case nil: break
            }
        }
        return order.filter { live.contains($0) }
    }

    /// First life: `count` events, durably written, nothing delivered (unreachable server).
    static func firstLife(_ store: any ScoreStore, count: Int) async -> [String] {
        let h = Harness(store: store)
        let c = h.client(granted: true)
        h.tx.answerAll(.error)
        for n in 1...count { c.track("e\(n)", properties: ["n": n]) }
        await h.settle()
        return c.state.withLock { s in s.queue.map(\.eventId) }
    }

    @Test func eventsWrittenBeforeACrashAreSentAfterRelaunch() async throws {
        let dir = Self.tempDir("plain")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let written = await Self.firstLife(FileScoreStore(directory: dir, sync: false), count: 40)
        #expect(written.count == 40)
        let (sent, storage, depth) = await Self.relaunch(FileScoreStore(directory: dir, sync: false))
        #expect(sent == written)
        #expect(storage.isEmpty, "\(storage.map(\.message))")
        #expect(depth == 0)
    }

    @Test func aWrappingStoreThatDoesNotReadBackStillDeliversAfterRelaunch() async throws {
        let dir = Self.tempDir("wrapped")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let written = await Self.firstLife(ForwardingStore(FileScoreStore(directory: dir, sync: false)), count: 40)
        let (sent, storage, depth) = await Self.relaunch(ForwardingStore(FileScoreStore(directory: dir, sync: false)))
        #expect(sent == written)
        #expect(storage.isEmpty, "\(storage.map(\.message))")
        #expect(depth == 0)
        // Nothing is left to resend.
        let again = await Self.relaunch(ForwardingStore(FileScoreStore(directory: dir, sync: false)))
        #expect(again.sent.isEmpty)
    }

    @Test func aCompactionAcrossLocatedAndInMemoryEventsKeepsBoth() async throws {
        let dir = Self.tempDir("half")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        // Life 1 (plain file store): 700 events on disk.
        _ = await Self.firstLife(FileScoreStore(directory: dir, sync: false), count: 700)
        // Life 2 (read-back, but appends without locations): located events from the cold
        // start, 30 new ones kept in memory; 6 batches delivered then a 500 → compaction.
        let h = Harness(store: HalfLocatedStore(FileScoreStore(directory: dir, sync: false)))
        let c = h.client(granted: true)
        h.tx.answerAll(.error)
        for n in 1...30 { c.track("late\(n)", properties: ["n": n]) }
        await h.settle()
        h.tx.script { _, i in i < 6 ? .status(200) : .status(500) }
        await h.flush(c)
        await h.settle()
        let remaining = c.state.withLock { s in s.queue.map(\.eventId) }
        #expect(remaining.count == 130)
        let bytes = try queueLogBytes(dir)
        #expect(Set(Self.expectedIds(bytes)) == Set(remaining))
        #expect(h.diagnostics.all.filter { $0.code == "storage" }.isEmpty)
        // Crash; life 3 sends the rest.
        let (sent, storage, depth) = await Self.relaunch(FileScoreStore(directory: dir, sync: false))
        #expect(Set(sent) == Set(remaining))
        #expect(sent.count == remaining.count)
        #expect(storage.isEmpty, "\(storage.map(\.message))")
        #expect(depth == 0)
    }

    @Test func aCrashAfterACompactionAndFurtherAppendsLosesNothing() async throws {
        let dir = Self.tempDir("compacted")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let h = Harness(store: FileScoreStore(directory: dir, sync: false))
        let c = h.client(granted: true)
        for n in 1...700 { c.track("e\(n)", properties: ["n": n]) }
        await h.settle()
        // Six batches delivered, the seventh refused: 606 dead records > 100 live → compaction.
        h.tx.script { _, i in i < 6 ? .status(200) : .status(500) }
        await h.flush(c)
        #expect(c.inspect().queue.depth == 100)
        #expect(try queuedIdsOnDisk(dir).count == 100)
        // Appends after the reclamation go on in the newest segment.
        h.tx.answerAll(.error)
        for n in 701...750 { c.track("e\(n)", properties: ["n": n]) }
        await h.settle()
        let written = c.state.withLock { s in s.queue.map(\.eventId) }
        #expect(written.count == 150)
        // Crash: relaunch on a new store for the same directory.
        let (sent, storage, depth) = await Self.relaunch(FileScoreStore(directory: dir, sync: false))
        #expect(sent == written)
        #expect(storage.isEmpty, "\(storage.map(\.message))")
        #expect(depth == 0)
        let delivered = Set(h.tx.eventRequests.prefix(6).flatMap(\.ids))
        #expect(delivered.count == 600)
        #expect(delivered.isDisjoint(with: sent))
    }

    @Test func aLogCutAtAnyFramePositionDeliversEveryIntactEvent() async throws {
        let dir = Self.tempDir("source")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        // A log with adds, a removal (10 delivered) and later adds.
        let h = Harness(store: FileScoreStore(directory: dir, sync: false))
        let c = h.client(granted: true)
        for n in 1...10 { c.track("a\(n)", properties: ["n": n]) }
        await h.settle()
        await h.flush(c)
        h.tx.answerAll(.error)
        for n in 1...12 { c.track("b\(n)", properties: ["n": n]) }
        await h.settle()
        let full = try Array(Data(contentsOf: URL(fileURLWithPath: dir + "/queue.log")))
        let (records, offsets, end) = AppendLog.parseWithOffsets(full)
        #expect(end == full.count)
        #expect(records.count >= 23)
        // Cut points: each frame's start, inside its header, inside its payload, one byte short
        // of its end, and the whole file.
        var cuts: Set<Int> = [full.count]
        for (r, o) in zip(records, offsets) {
            let frameEnd = o + AppendLog.frameOverhead + r.count
            for cut in [o, o + 1, o + 5, o + AppendLog.frameOverhead, o + AppendLog.frameOverhead + r.count / 2, frameEnd - 1] {
                cuts.insert(min(cut, full.count))
            }
        }
        var checked = 0
        for cut in cuts.sorted() {
            let d = Self.tempDir("cut\(cut)")
            defer { try? FileManager.default.removeItem(atPath: d) }
            try Data(full[0..<cut]).write(to: URL(fileURLWithPath: d + "/queue.log"))
            let expected = Self.expectedIds(Array(full[0..<cut]))
            let (sent, storage, depth) = await Self.relaunch(FileScoreStore(directory: d, sync: false))
            #expect(sent == expected, "cut at \(cut)")
            #expect(storage.isEmpty, "cut at \(cut): \(storage.map(\.message))")
            #expect(depth == 0, "cut at \(cut)")
            // The torn tail was cut off and later appends are readable by a third launch.
            let clock3 = ManualClock(startMs: T0)
            let tx3 = TX(clock: clock3)
            tx3.answerAll(.error)
            let c3 = ScoreClient(
                configuration: ScoreConfiguration(
                    publishableKey: "pk_test_1", siteId: "urc-ios", endpoint: "https://score.test",
                    store: FileScoreStore(directory: d, sync: false), transport: tx3, clock: clock3,
                    scheduler: clock3, idSource: LaterIds(), onDiagnostic: { _ in }))
            c3.grantAllConsent()
            c3.track("after", properties: ["n": 1])
            await clock3.settle()
            let (sent3, storage3, _) = await Self.relaunch(FileScoreStore(directory: d, sync: false))
            #expect(sent3 == [LaterIds.event], "cut at \(cut)")
            #expect(storage3.isEmpty, "cut at \(cut)")
            checked += 1
        }
        #expect(checked == cuts.count)
    }
}
