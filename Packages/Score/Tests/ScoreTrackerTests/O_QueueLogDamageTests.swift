import Foundation
import Testing
import TrackerCore
import TrackerCoreTestKit

@testable import ScoreTracker

/// Issue 14 item 2: a damaged record in the middle of the queue log used to cut every intact
/// record after it off the file, silently. Now the relaunched client keeps them and says so.
///
///   SC185 — damage that runs to the end of the log (a whole file overwritten, the last records
///           garbled) is cut like a torn tail but reported (`storage`, with the byte count); a
///           tail torn inside its last record (a crash) is cut silently (issue 35 item 5).
@Suite struct QueueLogDamageTests {
    /// A file store's log of `n` events (each record's frame offset, the file's bytes).
    func writtenLog(_ dir: String, _ n: Int) async throws -> (offsets: [Int], bytes: [UInt8]) {
        let h = Harness(store: FileScoreStore(directory: dir, sync: false))
        let c = h.client(granted: true)
        for _ in 0..<n { c.pv() }
        await h.settle()
        let bytes = try Array(Data(contentsOf: URL(fileURLWithPath: dir + "/queue.log")))
        return (AppendLog.parseWithOffsets(bytes).offsets, bytes)
    }

    @Test func SC185_damageRunningToTheEndOfTheLogIsReported() async throws {
        // (name, the file as damaged, the events left, the bytes a report must name or nil)
        var cases: [(String, [UInt8], Int, Int?)] = []
        let base = NSTemporaryDirectory() + "score-sc185-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: base) }
        let (offsets, bytes) = try await writtenLog(base + "/orig", 300)
        #expect(offsets.count == 300)
        // The whole file overwritten with text.
        cases.append(("overwritten", [UInt8](repeating: UInt8(ascii: "x"), count: bytes.count), 0, bytes.count))
        // The last three records: the first keeps a plausible header, its payload and the rest garbled.
        var garbled = bytes
        for i in (offsets[297] + 8)..<bytes.count { garbled[i] = 0xFF }
        cases.append(("last three garbled", garbled, 297, bytes.count - offsets[297]))
        // A crash: the file ends inside its last record.
        cases.append(("torn last record", Array(bytes[..<(offsets[299] + 20)]), 299, nil))
        for (name, damaged, depth, reportedBytes) in cases {
            let dir = base + "/" + name.replacingOccurrences(of: " ", with: "-")
            try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
            try Data(damaged).write(to: URL(fileURLWithPath: dir + "/queue.log"))
            let h = Harness(store: FileScoreStore(directory: dir, sync: false))
            let c = h.client(granted: true)
            #expect(c.inspect().queue.depth == depth, "\(name)")
            let reports = h.diagnostics.all.filter { $0.code == "storage" }.map(\.message)
            if let reportedBytes {
                #expect(reports.count == 1, "\(name): \(reports)")
                #expect(reports.first?.contains("\(reportedBytes) byte(s)") == true, "\(name): \(reports)")
            } else {
                #expect(reports.isEmpty, "\(name): a torn last record is a crash, not damage: \(reports)")
            }
        }
    }

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
