import Testing
import TrackerCore
import TrackerCoreTestKit

@Suite struct TimeAndIDTests {
    static let t0: Int64 = 1_768_032_000_000  // 2026-01-10T08:00:00.000Z

    struct FixedRandom: RandomSource {
        let bytes: [UInt8]
        func fill(_ buffer: UnsafeMutableRawBufferPointer) {
            for i in 0..<buffer.count { buffer[i] = bytes[i % bytes.count] }
        }
    }

    @Test func S149_utf8ByteLength() {
        #expect(Array("".utf8).count == 0)
        #expect("abc".utf8.count == 3)
        #expect("é".utf8.count == 2)
        #expect("日本語".utf8.count == 9)
        #expect("😀".utf8.count == 4)
        #expect("a😀é日".utf8.count == 10)
        #expect(WireJSON.encode(["k": "é"]).count == "{\"k\":\"é\"}".utf8.count)
    }

    @Test func S150_codePointLength() {
        #expect("😀😀".unicodeScalars.count == 2)
    }

    @Test func S151_timestamps() {
        #expect(Timestamp.format(ms: Self.t0) == "2026-01-10T08:00:00.000Z")
        #expect(Timestamp.format(ms: Self.t0 + 500) == "2026-01-10T08:00:00.500Z")
        #expect(Timestamp.format(ms: 0) == "1970-01-01T00:00:00.000Z")
        for ms: Int64 in [Self.t0, 0, -1, 253_402_300_799_999, 999_999_999_999_999, -62_167_219_200_001] {
            var bytes: [UInt8] = [1]
            Timestamp.write(ms: ms, into: &bytes)
            #expect(bytes == [1] + Array(Timestamp.format(ms: ms).utf8))
            var writer = WireWriter(capacity: 8)
            writer.writeByte(1)
            Timestamp.write(ms: ms, into: &writer)
            #expect(writer.finish() == bytes)
        }
        #expect(Timestamp.format(ms: 951_782_400_000) == "2000-02-29T00:00:00.000Z")
        #expect(Timestamp.format(ms: -1) == "1969-12-31T23:59:59.999Z")
        for ms: Int64 in [0, 1, Self.t0, Self.t0 + 999, 4_102_444_800_123, 951_782_400_000] {
            let text = Timestamp.format(ms: ms)
            #expect(Timestamp.matchesPattern(text))
            #expect(Timestamp.parse(text) == ms)
        }
        #expect(Timestamp.parse("2026-02-30T00:00:00.000Z") == nil)
        #expect(Timestamp.parse("2026-01-10T08:00:00Z") == nil)
        #expect(!Timestamp.matchesPattern("2026-01-10T08:00:00.000+00:00"))
    }

    @Test func S152_uuidV7() {
        let id = IDs.uuidV7(nowMs: Self.t0, random: FixedRandom(bytes: [0xFF]))
        #expect(IDs.isLowercaseUUID(id))
        let chars = Array(id)
        #expect(chars[14] == "7")
        #expect("89ab".contains(chars[19]))
        let timeHex = String(chars[0..<8]) + String(chars[9..<13])
        #expect(Int64(timeHex, radix: 16) == Self.t0)
        let later = IDs.uuidV7(nowMs: Self.t0 + 1, random: FixedRandom(bytes: [0x00]))
        #expect(id < later)
        let clockIds = (0..<100).map { _ in IDs.uuidV7(nowMs: Self.t0) }
        #expect(Set(clockIds).count == 100)
        #expect(clockIds.allSatisfy(IDs.isLowercaseUUID))
    }

    @Test func uuidV7ContractVectors() {
        #expect(IDs.uuidV7(nowMs: Self.t0, randomBytes: Array(repeating: 0, count: 16)) == "019ba6eb-5800-7000-8000-000000000000")
        #expect(IDs.uuidV7(nowMs: Self.t0, randomBytes: Array(repeating: 0xFF, count: 16)) == "019ba6eb-5800-7fff-bfff-ffffffffffff")
        #expect(IDs.uuidV7(nowMs: Self.t0, randomBytes: Array(0..<16)) == "019ba6eb-5800-7607-8809-0a0b0c0d0e0f")
        #expect(IDs.uuidV7(nowMs: 0, randomBytes: Array(repeating: 0, count: 16)) == "00000000-0000-7000-8000-000000000000")
        #expect(IDs.uuidV7(nowMs: -5, randomBytes: Array(repeating: 0, count: 16)) == "00000000-0000-7000-8000-000000000000")
    }

    @Test func uuidV4AndPattern() {
        let id = IDs.uuidV4()
        #expect(IDs.isLowercaseUUID(id))
        #expect(Array(id)[14] == "4")
        #expect(!IDs.isLowercaseUUID("0000000A-0000-4000-8000-000000000000"))
        #expect(!IDs.isLowercaseUUID("00000000-0000-4000-8000-00000000000"))
        #expect(!IDs.isLowercaseUUID("00000000-0000-4000-8000-0000000000000"))
        #expect(!IDs.isLowercaseUUID("00000000_0000-4000-8000-000000000000"))
    }

    @Test func diagnosticsReachTheHandler() {
        let seen = Locked<[Diagnostic]>([])
        let handler: DiagnosticHandler = { d in seen.withLock { $0.append(d) } }
        handler(Diagnostic(code: "storage", message: "read failed", runId: "r"))
        #expect(seen.value == [Diagnostic(code: "storage", message: "read failed", runId: "r")])
        #expect(seen.value.first?.description == "storage: read failed")
    }
}
