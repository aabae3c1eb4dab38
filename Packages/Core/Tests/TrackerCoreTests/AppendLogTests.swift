import Foundation
import Testing
import TrackerCore

@Suite struct AppendLogTests {
    private func tempDir() -> String {
        let dir = NSTemporaryDirectory() + "appendlog-\(UUID().uuidString)"
        try? FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        return dir
    }

    @Test func crcMatchesZlibVector() {
        #expect(CRC32.checksum(Array("123456789".utf8)) == 0xCBF4_3926)
    }

    @Test func appendsAndReloadsInOrder() throws {
        let path = tempDir() + "/q.log"
        do {
            let (log, records) = try AppendLog.open(path: path)
            #expect(records.isEmpty)
            try log.append([Array("a".utf8), Array("bb".utf8)])
            try log.append([[]])
            try log.append([Array("ccc".utf8)])
        }
        let (log, records) = try AppendLog.open(path: path)
        #expect(records == [Array("a".utf8), Array("bb".utf8), [], Array("ccc".utf8)])
        #expect(log.byteCount == 4 * 8 + 6)
    }

    @Test func fileIsOwnerOnly() throws {
        let path = tempDir() + "/q.log"
        let (log, _) = try AppendLog.open(path: path)
        try log.append([[1, 2, 3]])
        try log.rewrite([[4]])
        let attrs = try FileManager.default.attributesOfItem(atPath: path)
        #expect((attrs[.posixPermissions] as? NSNumber)?.intValue == 0o600)
    }

    @Test func cutAtEveryByteLosesAtMostTheLastRecordAndNeverBlocksAppends() throws {
        let dir = tempDir()
        let path = dir + "/q.log"
        let payloads: [[UInt8]] = [Array("first".utf8), Array("second!".utf8), [], Array("fourth record".utf8)]
        var ends: [Int] = [0]
        do {
            let (log, _) = try AppendLog.open(path: path)
            for p in payloads {
                try log.append([p])
                ends.append(log.byteCount)
            }
        }
        let full = try Array(Data(contentsOf: URL(fileURLWithPath: path)))
        #expect(full.count == ends.last!)
        for k in 0...full.count {
            let cut = dir + "/cut-\(k).log"
            try Data(full[0..<k]).write(to: URL(fileURLWithPath: cut))
            let intact = ends.lastIndex { $0 <= k }!
            do {
                let (log, records) = try AppendLog.open(path: cut)
                #expect(records == Array(payloads[0..<intact]), "cut at \(k)")
                #expect(log.byteCount == ends[intact])
                try log.append([Array("after".utf8)])
            }
            let (_, again) = try AppendLog.open(path: cut)
            #expect(again == Array(payloads[0..<intact]) + [Array("after".utf8)], "append after cut at \(k)")
            try FileManager.default.removeItem(atPath: cut)
        }
    }

    @Test func corruptedChecksumStopsThereAndIsCutOff() throws {
        let path = tempDir() + "/q.log"
        do {
            let (log, _) = try AppendLog.open(path: path)
            try log.append([[1], [2], [3]])
        }
        var bytes = try Array(Data(contentsOf: URL(fileURLWithPath: path)))
        bytes[9 + 8] ^= 0xFF // payload of the second record
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        let (log, records) = try AppendLog.open(path: path)
        #expect(records == [[1]])
        #expect(log.byteCount == 9)
    }

    @Test func rewriteCompactsAndKeepsAppending() throws {
        let path = tempDir() + "/q.log"
        do {
            let (log, _) = try AppendLog.open(path: path)
            try log.append([[1], [2], [3]])
            try log.rewrite([[3]])
            try log.append([[4]])
        }
        let (_, records) = try AppendLog.open(path: path)
        #expect(records == [[3], [4]])
        #expect(!FileManager.default.fileExists(atPath: path + ".tmp"))
    }

    @Test func readsRecordsBackByOffset() throws {
        let path = tempDir() + "/q.log"
        let (log, _) = try AppendLog.open(path: path)
        let a = try log.append([[1, 2], [3]])
        let b = try log.append([Array(repeating: 7, count: 1000)])
        #expect(try log.read(at: a[0]) == [1, 2])
        #expect(try log.read(at: a[1]) == [3])
        #expect(try log.read(at: b[0]) == Array(repeating: 7, count: 1000))
        #expect(try log.read(at: 1) == nil)
        #expect(try log.read(at: 10_000) == nil)
        let c = try log.rewrite([[3], [9]])
        #expect(c == [0, 9])
        #expect(try log.read(at: c[1]) == [9])
        let (reopened, records) = try AppendLog.open(path: path)
        #expect(records == [[3], [9]] && reopened.loadedOffsets == [0, 9])
    }

    @Test func appendsWithoutSyncAreWrittenAtOnceAndSyncedTogetherLater() throws {
        let path = tempDir() + "/q.log"
        let (log, _) = try AppendLog.open(path: path)
        #expect(!log.hasUnsyncedAppends)
        try log.append([[1]], sync: false)
        try log.append([[2], [3]], sync: false)
        #expect(log.hasUnsyncedAppends)
        // Written, not only buffered: another reader (the app after a crash) already sees them.
        #expect(try AppendLog.open(path: path).records == [[1], [2], [3]])
        try log.sync()
        #expect(!log.hasUnsyncedAppends)
        try log.append([[4]], sync: false)
        try log.append([[5]])
        #expect(!log.hasUnsyncedAppends)
        try log.append([[6]], sync: false)
        try log.rewrite([[6]])
        #expect(!log.hasUnsyncedAppends)
    }

    @Test func aRewriteCanLeaveItsRenameToTheNextSync() throws {
        let path = tempDir() + "/q.log"
        let (log, _) = try AppendLog.open(path: path)
        try log.append([[1], [2]])
        try log.rewrite([[2]], deferDirectorySync: true)
        #expect(log.hasUnsyncedRename && !log.hasUnsyncedAppends)
        try log.append([[3]], sync: false)
        // The new file is in place at once.
        #expect(try AppendLog.open(path: path).records == [[2], [3]])
        try log.sync()
        #expect(!log.hasUnsyncedRename && !log.hasUnsyncedAppends)
        try log.rewrite([[3]])
        #expect(!log.hasUnsyncedRename)
    }

    @Test func aLogThatDoesNotSyncNeverReportsUnsyncedAppends() throws {
        let path = tempDir() + "/q.log"
        let (log, _) = try AppendLog.open(path: path, sync: false)
        try log.append([[1]], sync: false)
        try log.rewrite([[1]], deferDirectorySync: true)
        #expect(!log.hasUnsyncedAppends && !log.hasUnsyncedRename)
        try log.sync()
        #expect(try AppendLog.open(path: path).records == [[1]])
    }
}
