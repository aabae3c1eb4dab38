import Foundation
import Testing
import TrackerCore
import TrackerCoreTestKit

@testable import ScoreTracker

/// Issue 14 item 2: a damaged record in the middle of the queue log used to cut every intact
/// record after it off the file, silently. Now the relaunched client keeps them and says so.
@Suite struct QueueLogDamageTests {
    @Test func aDamagedRecordInTheMiddleLosesOnlyThatEventAndIsReported() async throws {
        let dir = NSTemporaryDirectory() + "score-damage-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: dir) }
        do {
            let h = Harness(store: FileScoreStore(directory: dir, sync: false))
            let c = h.client(granted: true)
            for _ in 0..<300 { c.pv() }
            await h.settle()
        }
        let path = dir + "/queue.log"
        var bytes = try Array(Data(contentsOf: URL(fileURLWithPath: path)))
        let offsets = AppendLog.parseWithOffsets(bytes).offsets
        #expect(offsets.count == 300)
        // 8 bytes flipped across the header of record 150 (its length and checksum).
        for i in 0..<8 { bytes[offsets[150] + i] ^= 0xA5 }
        try Data(bytes).write(to: URL(fileURLWithPath: path))

        let h = Harness(store: FileScoreStore(directory: dir, sync: false))
        let c = h.client(granted: true)
        #expect(c.inspect().queue.depth == 299)
        let reported = h.diagnostics.all.filter { $0.code == "storage" && $0.message.contains("damaged") }
        #expect(reported.count == 1)
        #expect(reported.first?.message.contains("1 region") == true)
        // The file was not cut: every intact record is still on disk.
        #expect(AppendLog.parse(try Array(Data(contentsOf: URL(fileURLWithPath: path)))).records.count == 299)
    }
}
