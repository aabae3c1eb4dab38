import Foundation
import Testing
import TrackerCore
import TrackerCoreTestKit
@testable import ScoreTracker

/// The file store keeps queued events on disk only (read back when sent) and compacts its log.
@Suite struct FileStoreTests {
    @Test func eventsAreReadBackFromDiskAndTheLogCompacts() async throws {
        let dir = NSTemporaryDirectory() + "score-lazy-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let h = Harness(store: FileScoreStore(directory: dir, sync: false))
        let c = h.client(granted: true)
        for n in 1...700 { c.track("e\(n)", props: ["n": n]) }
        await h.settle()
        // Persisted events hold no bytes in memory.
        let held = c.state.withLock { s in s.queue.filter { $0.encoded != nil || $0.fields != nil }.count }
        #expect(held == 0)
        let path = dir + "/queue.log"
        let sizeBefore = try FileManager.default.attributesOfItem(atPath: path)[.size] as! Int
        // Six batches succeed, the seventh fails: 606 dead records > 100 live ones → compaction.
        h.tx.script { _, i in i < 6 ? .status(200) : .status(500) }
        await h.flush(c)
        #expect(c.inspect().queue.depth == 100)
        let sizeAfter = try FileManager.default.attributesOfItem(atPath: path)[.size] as! Int
        #expect(sizeAfter < sizeBefore / 5)
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

    @Test func aCorruptedRecordIsDroppedWithADiagnosticAndTheRestIsSent() async throws {
        let dir = NSTemporaryDirectory() + "score-corrupt-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let h = Harness(store: FileScoreStore(directory: dir, sync: false))
        let c = h.client(granted: true)
        c.pv(); c.pv(); c.pv()
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
}
