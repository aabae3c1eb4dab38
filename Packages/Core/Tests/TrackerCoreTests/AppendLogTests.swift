import Foundation
import Testing
import TrackerCore
import TrackerCoreTestKit

@Suite struct AppendLogTests {
    private func tempDir() -> String {
        let dir = NSTemporaryDirectory() + "appendlog-\(UUID().uuidString)"
        try? FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        return dir
    }

    @Test func emptyByteArraysAreMadeWithoutWritingTheStorageAllEmptyArraysShare() throws {
        // `Array(unsafeUninitializedCapacity: 0, …)` writes the count of the one storage every
        // empty array shares, which ThreadSanitizer reports as a race with any thread reading an
        // empty array (it failed `make test-tsan` once: an empty queue log read while another
        // client encoded). Two threads make empty arrays the ways Core does (an empty log read,
        // no records framed, nothing written) while reading empty arrays: under TSan a write to
        // the shared storage is reported and fails the run.
        let dir = tempDir()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let counts = Locked<[Int]>([])
        DispatchQueue.concurrentPerform(iterations: 2) { t in
            var total = 0
            for k in 0..<100 {
                let empty: [UInt8] = []
                total += empty.withUnsafeBufferPointer { $0.count }
                let opened = try? AppendLog.open(path: dir + "/empty-\(t)-\(k).log", sync: false)
                total += opened.map { $0.records.count } ?? 1
                total += AppendLog.frame([]).count
                let w = WireWriter(capacity: 16)
                total += w.finish().count
            }
            counts.withLock { $0.append(total) }
        }
        #expect(counts.withLock { $0 } == [0, 0])
        // The helper those arrays are made with never calls its body for a count of 0 (the
        // standard initializer would, having written the shared storage's count).
        var calls = 0
        #expect(ByteArrays.make(count: 0) { _, _ in calls += 1 } == [])
        let two = ByteArrays.make(count: 2) { b, n in
            calls += 1
            b[0] = 7
            b[1] = 8
            n = 2
        }
        #expect(two == [7, 8])
        #expect(calls == 1)
    }

    @Test func crcMatchesZlibVector() {
        #expect(CRC32.checksum(Array("123456789".utf8)) == 0xCBF4_3926)
    }

    /// The table-driven CRC (16 bytes a step, then byte by byte) equals the bit-by-bit
    /// definition for every length around its steps and at every alignment.
    @Test func crcMatchesTheBitwiseDefinitionForEveryLengthAndAlignment() {
        func reference(_ bytes: ArraySlice<UInt8>) -> UInt32 {
            var c: UInt32 = 0xFFFF_FFFF
            for b in bytes {
                c ^= UInt32(b)
                for _ in 0..<8 { c = (c & 1) != 0 ? 0xEDB8_8320 ^ (c >> 1) : c >> 1 }
            }
            return c ^ 0xFFFF_FFFF
        }
        var data = [UInt8](repeating: 0, count: 600)
        var x: UInt32 = 0x1234_5678
        for i in data.indices {
            x = x &* 1_664_525 &+ 1_013_904_223
            data[i] = UInt8(truncatingIfNeeded: x >> 24)
        }
        for start in 0..<8 {
            for length in Array(0...70) + [255, 256, 493, 592] {
                let slice = data[start..<(start + length)]
                let got = slice.withUnsafeBufferPointer { CRC32.checksum($0) }
                #expect(got == reference(slice), "start \(start) length \(length)")
            }
        }
    }

    /// A frame is `length (UInt32 LE) | CRC-32 (UInt32 LE) | payload`, record after record.
    @Test func framesAreLengthCrcAndPayload() {
        let records: [[UInt8]] = [[], [7], Array(0..<200).map { UInt8($0) }, Array("abc".utf8)]
        var expected: [UInt8] = []
        for r in records {
            for v in [UInt32(r.count), CRC32.checksum(r)] {
                for k in 0..<4 { expected.append(UInt8(truncatingIfNeeded: v >> UInt32(8 * k))) }
            }
            expected += r
        }
        #expect(AppendLog.frame(records) == expected)
        #expect(AppendLog.frame([]) == [])
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

    // Issue 14 item 2: a damaged record in the middle used to be taken for a torn tail, and
    // every intact record after it was cut off the file, silently.
    @Test func aDamagedRecordInTheMiddleIsSkippedAndTheRecordsAfterItAreKept() throws {
        let path = tempDir() + "/q.log"
        do {
            let (log, _) = try AppendLog.open(path: path)
            try log.append([[1], [2], [3]])
        }
        var bytes = try Array(Data(contentsOf: URL(fileURLWithPath: path)))
        bytes[9 + 8] ^= 0xFF  // payload of the second record
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        do {
            let (log, records) = try AppendLog.open(path: path)
            #expect(records == [[1], [3]])
            #expect(log.loadedOffsets == [0, 18])
            #expect(log.byteCount == 27)
            #expect(log.damage == AppendLog.Damage(skippedRegions: 1, skippedBytes: 9, tornTailBytes: 0))
            try log.append([[4]])
        }
        let (again, records) = try AppendLog.open(path: path)
        #expect(records == [[1], [3], [4]] && again.damage.skippedBytes == 9)
        try again.rewrite(records)
        #expect(try AppendLog.open(path: path).log.damage == .none)
    }

    @Test func aDamagedLastRecordIsATailAndIsCutOff() throws {
        let path = tempDir() + "/q.log"
        do {
            let (log, _) = try AppendLog.open(path: path)
            try log.append([[1], [2], [3]])
        }
        var bytes = try Array(Data(contentsOf: URL(fileURLWithPath: path)))
        bytes[18 + 8] ^= 0xFF
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        let (log, records) = try AppendLog.open(path: path)
        #expect(records == [[1], [2]] && log.byteCount == 18)
        #expect(log.damage == AppendLog.Damage(skippedRegions: 0, skippedBytes: 0, tornTailBytes: 9))
        #expect(try Data(contentsOf: URL(fileURLWithPath: path)).count == 18)
    }

    /// A tail is one torn record when the file ends inside its first frame; damage that runs on
    /// past it (or a length no record can have) is more, and says so (issue 35 item 5).
    @Test func aTailLongerThanOneRecordIsToldApartFromATornRecord() {
        let framed = AppendLog.frame([[1, 2, 3], [4, 5, 6], [7, 8, 9]])  // frames of 11 bytes
        var lastBad = framed
        lastBad[22 + 8] ^= 0xFF  // the last record's payload: a complete frame, one record
        var twoBad = framed
        twoBad[11 + 8] ^= 0xFF
        twoBad[22 + 8] ^= 0xFF
        for i in 22..<26 { twoBad[i] = 0xFF }  // no intact frame after the second record
        let cases: [(String, [UInt8], Int, Bool)] = [
            ("intact", framed, 0, false),
            ("cut inside the last header", Array(framed[..<27]), 5, false),
            ("cut inside the last payload", Array(framed[..<31]), 9, false),
            ("last record damaged", lastBad, 11, false),
            ("last two records damaged", twoBad, 22, true),
            ("overwritten", [UInt8](repeating: 0x78, count: framed.count), 33, true),
        ]
        for (name, bytes, tail, beyond) in cases {
            let damage = AppendLog.scan(bytes).damage
            #expect(damage.tornTailBytes == tail, "\(name)")
            #expect(damage.tailBeyondOneRecord == beyond, "\(name)")
        }
    }

    /// Records of mixed sizes, JSON-like and binary, none empty.
    private static let damagePayloads: [[UInt8]] = [
        Array("{\"a\":1}".utf8), [82, 16] + Array(repeating: 0, count: 16), [7],
        Array(repeating: 0x41, count: 40), [0, 0, 0, 1, 2, 3], Array("last record".utf8),
    ]

    private func writeLog(_ path: String, _ payloads: [[UInt8]]) throws -> (bytes: [UInt8], frames: [Range<Int>]) {
        let (log, _) = try AppendLog.open(path: path)
        var frames: [Range<Int>] = []
        for p in payloads {
            let start = log.byteCount
            try log.append([p])
            frames.append(start..<log.byteCount)
        }
        log.close()
        return (try Array(Data(contentsOf: URL(fileURLWithPath: path))), frames)
    }

    @Test func damageAtEveryBytePositionKeepsEveryIntactRecord() throws {
        let dir = tempDir()
        let (full, frames) = try writeLog(dir + "/orig.log", Self.damagePayloads)
        for position in 0..<full.count {
            for mask: UInt8 in [0xFF, 0x01] {
                var bytes = full
                bytes[position] ^= mask
                let path = dir + "/d-\(position)-\(mask).log"
                try Data(bytes).write(to: URL(fileURLWithPath: path))
                let hit = frames.firstIndex { $0.contains(position) }!
                var expected = Self.damagePayloads
                expected.remove(at: hit)
                do {
                    let (log, records) = try AppendLog.open(path: path)
                    let kept = records == expected
                    #expect(kept, "byte \(position) ^ \(mask): \(records.count) records, \(expected.count) expected")
                    let isLast = hit == frames.count - 1
                    #expect(log.damage.hasSkippedRegions == !isLast, "byte \(position)")
                    if !isLast { #expect(log.damage.skippedBytes == frames[hit].count, "byte \(position)") }
                    try log.append([[9, 9]])
                }
                #expect(try AppendLog.open(path: path).records == expected + [[9, 9]], "append after byte \(position)")
                try FileManager.default.removeItem(atPath: path)
            }
        }
    }

    @Test func randomBurstsLoseOnlyTheRecordsTheyTouch() throws {
        let dir = tempDir()
        var payloads: [[UInt8]] = []
        var rng = SplitMix64(seed: 0x5EED_0014)
        for i in 0..<60 {
            let n = 1 + Int(rng.next() % 90)
            payloads.append((0..<n).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ i) })
        }
        let (full, frames) = try writeLog(dir + "/orig.log", payloads)
        for round in 0..<300 {
            var bytes = full
            let length = 1 + Int(rng.next() % 64)
            let start = Int(rng.next() % UInt64(full.count - length))
            for i in start..<(start + length) { bytes[i] = UInt8(truncatingIfNeeded: rng.next()) }
            let touched = (start..<(start + length))
            // A record survives when the burst left it unchanged.
            let expected = payloads.indices.filter { k in
                !frames[k].overlaps(touched) || Array(bytes[frames[k]]) == Array(full[frames[k]])
            }.map { payloads[$0] }
            let path = dir + "/burst-\(round).log"
            try Data(bytes).write(to: URL(fileURLWithPath: path))
            let (_, records) = try AppendLog.open(path: path)
            let kept = records == expected
            #expect(kept, "round \(round): \(length) bytes at \(start): \(records.count) records, \(expected.count) expected")
            try FileManager.default.removeItem(atPath: path)
        }
    }

    @Test func randomBytesAtTheStartKeepEveryRecordAfterThem() throws {
        let dir = tempDir()
        let payloads = (0..<300).map { i in Array("{\"event\":\(i),\"name\":\"screen_view\"}".utf8) }
        var (bytes, frames) = try writeLog(dir + "/q.log", payloads)
        var rng = SplitMix64(seed: 64)
        for i in 0..<64 { bytes[i] = UInt8(truncatingIfNeeded: rng.next()) }
        try Data(bytes).write(to: URL(fileURLWithPath: dir + "/q.log"))
        let (log, records) = try AppendLog.open(path: dir + "/q.log")
        let lost = frames.prefix { $0.lowerBound < 64 }.count
        #expect(records == Array(payloads[lost...]) && lost <= 2)
        #expect(log.byteCount == bytes.count && log.damage.skippedRegions == 1)
    }

    @Test func aCompactionKilledBeforeItsRenameLeavesNoTemporaryFile() throws {
        let path = tempDir() + "/q.log"
        do {
            let (log, _) = try AppendLog.open(path: path)
            try log.append([[1]])
        }
        try Data([1, 2, 3]).write(to: URL(fileURLWithPath: path + ".tmp"))
        #expect(try AppendLog.open(path: path).records == [[1]])
        #expect(!FileManager.default.fileExists(atPath: path + ".tmp"))
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
    // MARK: Following lengths (issue 19's quick start-up read)

    /// The records, their frame offsets and the damaged frames' indices, read by following lengths.
    private func follow(_ path: String) throws -> (records: [[UInt8]], offsets: [Int], damaged: [Int])? {
        var records: [[UInt8]] = []
        var visited: [Int] = []
        var expected: [Int] = []
        let size = (try? FileManager.default.attributesOfItem(atPath: path)[.size] as? Int) ?? 0
        guard
            let (_, frames) = try AppendLog.openFollowingLengths(
                path: path,
                expect: { bytes in
                    // Once, before the first frame, with the file's size.
                    #expect(records.isEmpty)
                    expected.append(bytes)
                },
                visit: { index, offset, payload, _ in
                    #expect(index == records.count)
                    records.append(Array(payload))
                    visited.append(offset)
                    return true
                })
        else { return nil }
        #expect(expected == [size])
        #expect(frames.offsets == visited)
        return (records, frames.offsets, try frames.damagedFrames())
    }

    @Test func theFrameReadersDescriptorFailsAsTheLogsDoesUnderAFault() throws {
        let dir = tempDir()
        let path = dir + "/q.log"
        let (log, _) = try AppendLog.open(path: path)
        try log.append([[1, 2, 3], [4, 5]])
        let (_, frames) = try #require(try AppendLog.openFollowingLengths(path: path, visit: { _, _, _, _ in true }))
        #expect(try frames.damagedFrames() == [])
        // The reader's own descriptor (a `dup`) is known to the fault layer by the log's path.
        let fs = FaultyFileSystem(directory: dir, condition: .ioError)
        defer { fs.uninstall() }
        #expect(throws: AppendLogError.self) { try frames.damagedFrames() }
    }

    @Test func followingLengthsReadsWhatTheCarefulOpenReadsAcrossChunksAndLongRecords() throws {
        let path = tempDir() + "/q.log"
        // Records across the walk's 256 KiB chunks, one three chunks long, and an empty one.
        var records: [[UInt8]] = []
        var random = SplitMix64(seed: 19)
        for i in 0..<40 {
            let length = i == 17 ? (256 << 10) * 3 + 5 : Int(random.next() % 40_000)
            records.append((0..<length).map { _ in UInt8(truncatingIfNeeded: random.next()) })
        }
        records.insert([], at: 9)
        do {
            let (log, _) = try AppendLog.open(path: path)
            try log.append(records)
        }
        let careful = try AppendLog.open(path: path)
        let followed = try #require(try follow(path))
        #expect(followed.records == careful.records && followed.records == records)
        #expect(followed.offsets == careful.log.loadedOffsets)
        #expect(followed.damaged.isEmpty)
        // An empty log.
        let empty = tempDir() + "/e.log"
        let none = try #require(try follow(empty))
        #expect(none.records.isEmpty && none.offsets.isEmpty)
    }

    @Test func followingLengthsGivesUpWhereTheFramesDoNotTileTheFile() throws {
        let path = tempDir() + "/q.log"
        do {
            let (log, _) = try AppendLog.open(path: path)
            try log.append([Array("first".utf8), Array("second".utf8), Array("third".utf8)])
        }
        let good = try Array(Data(contentsOf: URL(fileURLWithPath: path)))
        var cases: [(String, [UInt8])] = [
            ("torn last record", Array(good.dropLast(2))),
            ("bytes after the last frame", good + [0, 0, 0]),
            ("a last frame that is empty", good + [0, 0, 0, 0, 0, 0, 0, 0]),
            ("a length past the end", [0xFF, 0xFF, 0, 0] + Array(good.dropFirst(4))),
            // 60 MiB, under the record limit: rejected by the file's size, with no 60 MiB buffer.
            ("a length of 60 MiB", [0x00, 0x00, 0xC0, 0x03] + Array(good.dropFirst(4))),
        ]
        var badLast = good
        badLast[badLast.count - 1] ^= 1
        cases.append(("a last record not matching its checksum", badLast))
        for (name, bytes) in cases {
            try Data(bytes).write(to: URL(fileURLWithPath: path))
            #expect(try follow(path) == nil, "\(name)")
            // The file is left as it was, for the careful open to repair.
            #expect(try Array(Data(contentsOf: URL(fileURLWithPath: path))) == bytes, "\(name)")
        }
        // A visitor that says stop.
        try Data(good).write(to: URL(fileURLWithPath: path))
        #expect(try AppendLog.openFollowingLengths(path: path, visit: { index, _, _, _ in index < 1 }) == nil)
    }

    @Test func aDamagedRecordWhoseFrameTilesIsFoundByTheCheckNotByTheWalk() throws {
        let path = tempDir() + "/q.log"
        do {
            let (log, _) = try AppendLog.open(path: path)
            try log.append((0..<6).map { Array("record \($0)".utf8) })
        }
        var bytes = try Array(Data(contentsOf: URL(fileURLWithPath: path)))
        let offsets = AppendLog.parseWithOffsets(bytes).offsets
        bytes[offsets[2] + 8 + 3] ^= 0x20
        bytes[offsets[3] + 8] ^= 0x01
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        let followed = try #require(try follow(path))
        #expect(followed.records.count == 6 && followed.damaged == [2, 3])
        // The careful open skips the same records.
        #expect(try AppendLog.open(path: path).records.count == 4)
    }

    @Test func theFrameReaderSeesTheFileAsItWasWhenOpened() throws {
        let path = tempDir() + "/q.log"
        do {
            let (log, _) = try AppendLog.open(path: path)
            try log.append([[1], [2, 2]])
        }
        let (log, frames) = try #require(try AppendLog.openFollowingLengths(path: path, visit: { _, _, _, _ in true }))
        // Appends and a compaction after the open: the reader still walks the two first frames.
        try log.append([[3, 3, 3]])
        var seen: [[UInt8]] = []
        #expect(
            try frames.forEachFrame { _, _, payload, _ in
                seen.append(Array(payload))
                return true
            })
        #expect(seen == [[1], [2, 2]])
        try log.rewrite([[9]])
        seen = []
        #expect(
            try frames.forEachFrame { _, _, payload, _ in
                seen.append(Array(payload))
                return true
            })
        #expect(seen == [[1], [2, 2]])
        #expect(try frames.damagedFrames().isEmpty)
        // The log appends after what it read.
        #expect(try AppendLog.open(path: path).records == [[9]])
    }
}
