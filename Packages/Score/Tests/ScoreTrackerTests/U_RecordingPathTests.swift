import Foundation
import Testing
import TrackerCore
import TrackerCoreTestKit

@testable import ScoreTracker

// The recording call's cheaper encoding (issue 19, item 5): each fast path gives the bytes of
// the general one it stands in for.
//
// New scenarios:
// SC160 the one-writer envelope (props first, then the head, copied out in envelope order)
//       equals the field encoder, for a packed and a text event id; re-stamping another
//       identity equals encoding with that identity.
// SC161 the production id source's packed event ids are the ids it formats; a client using it
//       records and sends lowercase UUIDv7 event ids of the call's time.
// SC162 the scrubber's direct handling of the common exact types and its member sort (insertion
//       for a few keys, the general sort beyond) give the value-tree path's bytes.
// SC163 the PII hash of a string needing no escape, computed without encoding it, is the hash
//       of its encoding; a string needing one takes the encoding path.
@Suite struct RecordingPathTests {
    static func context() -> JSONObject {
        var ctx = JSONObject()
        ctx.appendUnchecked("os", .string("iOS 18.1"))
        ctx.appendUnchecked("device", .string("iPhone"))
        return ctx
    }

    static func identity(userId: String?) -> [UInt8] {
        var out: [UInt8] = []
        EnvelopeWriter.identity(anonymousId: A(1), sessionId: S(2), userId: userId, siteId: "urc", into: &out)
        return out
    }

    /// The envelope as a recording call builds it.
    static func recorded(
        name: String, eventId: CompactEventId, props: [String: Any], identity: [UInt8], tail: [UInt8]
    ) throws -> (bytes: [UInt8], headCount: Int) {
        var w = WireWriter(capacity: 16)
        try PiiScrubber(nil).write(props, into: &w)
        let propsCount = w.count
        EnvelopeWriter.head(type: "track", name: name, eventId: eventId, timestampMs: T0 + 7, into: &w)
        let headCount = w.count - propsCount
        return (EnvelopeWriter.assemble(w, propsCount: propsCount, identity: identity, tail: tail), headCount)
    }

    static func fields(name: String, eventId: String, props: JSONObject, userId: String?) -> EnvelopeFields {
        EnvelopeFields(
            type: "track", name: name, eventId: eventId, timestampMs: T0 + 7, anonymousId: A(1), sessionId: S(2),
            userId: userId, siteId: "urc", props: props, traits: nil, context: context(), sdkName: "n",
            sdkVersion: "1")
    }

    @Test func SC160_oneWriterEnvelopeEqualsTheFieldEncoder() throws {
        var tail: [UInt8] = []
        EnvelopeWriter.tail(context: Self.context(), sdkName: "n", sdkVersion: "1", into: &tail)
        let props: [String: Any] = ["choice": "player_7", "round": 12, "quote\"d": "line\nbreak"]
        var tree = JSONObject()
        tree.appendUnchecked("choice", .string("player_7"))
        tree.appendUnchecked("quote\"d", .string("line\nbreak"))
        tree.appendUnchecked("round", .number(12))
        for name in ["poll_vote", "q\"uo\\te é 😀"] {
            for eventId in [E(3), "019ca945-0a00-7abc-8def-0123456789ab", "custom-id\"1", ""] {
                let id = CompactEventId(eventId)
                let (bytes, headCount) = try Self.recorded(
                    name: name, eventId: id, props: props, identity: Self.identity(userId: nil), tail: tail)
                let expected = Self.fields(name: name, eventId: eventId, props: tree, userId: nil).encode()
                #expect(bytes == expected, "\(String(decoding: bytes, as: UTF8.self))")
                // Identity changed meanwhile: the re-stamped bytes are those of the new identity.
                let restamped = EnvelopeWriter.restamp(
                    bytes, headCount: headCount, oldIdentityCount: Self.identity(userId: nil).count,
                    identity: Self.identity(userId: "fan\"1"))
                #expect(restamped == Self.fields(name: name, eventId: eventId, props: tree, userId: "fan\"1").encode())
                let back = EnvelopeWriter.restamp(
                    restamped, headCount: headCount, oldIdentityCount: Self.identity(userId: "fan\"1").count,
                    identity: Self.identity(userId: nil))
                #expect(back == bytes)
            }
        }
        // Empty props, an empty tail.
        let (bare, _) = try Self.recorded(name: "n", eventId: CompactEventId(E(1)), props: [:], identity: [], tail: [])
        var head: [UInt8] = []
        EnvelopeWriter.head(type: "track", name: "n", eventId: E(1), timestampMs: T0 + 7, into: &head)
        #expect(bare == head + Array("{}".utf8))
    }

    @Test func SC161_packedProductionIdsAreTheFormattedIds() async throws {
        let ids = SystemScoreIdSource()
        var halves = [(UInt64, UInt64)]()
        for k in 0..<200 { halves.append(ids.newEventIdHalves(nowMs: T0 + Int64(k))) }
        halves += [(0, 0), (.max, .max), (0x0123_4567_89ab_cdef, 0xfedc_ba98_7654_3210)]
        for (hi, lo) in halves {
            let text = SystemScoreIdSource.format((hi, lo))
            #expect(CompactEventId(text) == .uuid(hi, lo))
            #expect(CompactEventId.uuid(hi, lo).string == text)
            var w = WireWriter(capacity: 16)
            CompactEventId.uuid(hi, lo).writeQuoted(into: &w)
            #expect(w.finish() == WireJSON.encode(.string(text)))
        }

        let clock = ManualClock(startMs: T0)
        let store = InMemoryScoreStore()
        let tx = TX(clock: clock)
        let c = ScoreClient(
            configuration: ScoreConfiguration(
                publishableKey: "pk_test_1", siteId: "urc-ios", endpoint: "https://score.test", store: store,
                transport: tx, clock: clock, scheduler: clock, idSource: SystemScoreIdSource(), onDiagnostic: { _ in }))
        c.grantAllConsent()
        await clock.settle()
        c.track("poll_vote", properties: ["a": 1])
        await clock.advance(byMs: 5)
        c.track("poll_vote", properties: ["a": 2])
        await clock.settle()
        _ = await flushed(c)
        await clock.settle()
        let sent = tx.eventRequests.flatMap(\.ids)
        #expect(sent.count == 2)
        for (k, id) in sent.enumerated() {
            #expect(IDs.isLowercaseUUID(id))
            let u = Array(id.utf8)
            #expect(u[14] == UInt8(ascii: "7"))
            let time = String(decoding: u[0..<8] + u[9..<13], as: UTF8.self)
            #expect(Int64(time, radix: 16) == T0 + Int64(5 * k))
        }
        #expect(Set(sent).count == 2)
    }

    @Test func SC162_directScalarsAndMemberSortEqualTheValueTreePath() throws {
        let scrubber = PiiScrubber(
            .classify([PiiRule(field: "email", action: .hash), PiiRule(field: "abcdefgh", action: .redact)]))
        var many: [String: Any] = [:]
        for k in 0..<40 {
            let value: Any
            switch k % 3 {
            case 0: value = "v\(k)"
            case 1: value = k
            default: value = Double(k) + 0.5
            }
            many["key\(k % 7)_\(k)"] = value
        }
        let optionalInt: Int? = 3
        let optionalString: String? = "s"
        let inputs: [[String: Any]] = [
            many,
            ["abcdefgh": "x", "abcdefghi": 1, "abcdefg": true, "abcdefgh\u{0}": false, "abcdefgi": 2.5, "": "empty"],
            ["é": 1, "e": 2, "z": 3, "😀": 4, "\u{7F}": 5, "Z": 6, "ab": 7, "a": 8],
            ["max": Int.max, "min": Int.min, "big": 9_007_199_254_740_993, "negZero": -0.0, "tiny": Double.leastNonzeroMagnitude],
            ["t": true, "f": false, "one": 1, "zero": 0, "nsTrue": NSNumber(value: true), "nsOne": NSNumber(value: 1)],
            ["opt": optionalInt as Any, "optS": optionalString as Any, "i32": Int32(-4), "float": Float(1.5)],
            ["typed": ["b": "2", "a": "1"] as [String: String], "any": ["y": 1, "x": ["email": "e@x"]] as [String: Any]],
            ["email": "fan@example.com", "list": [3, "x", ["k": true]] as [Any], "null": NSNull()],
        ]
        for input in inputs {
            var size = 0
            let tree = WireJSON.encode(.object(try scrubber.object(input, size: &size)))
            var streamed: [UInt8] = [7]
            try scrubber.write(input, into: &streamed)
            #expect(streamed == [7] + tree, "\(String(decoding: tree, as: UTF8.self))")
        }
        // A refused value leaves the array untouched.
        var deep: [String: Any] = ["leaf": 1]
        for _ in 0..<70 { deep = ["d": deep] }
        var out: [UInt8] = [1, 2]
        #expect(throws: InvalidInput.self) { try scrubber.write(["a": 1, "b": deep], into: &out) }
        #expect(out == [1, 2])
    }

    @Test func SC163_plainStringHashIsTheHashOfItsEncoding() {
        for plain in ["", "fan@example.com", "é 😀 日本", "a/b\u{7F}\u{2028}", String(repeating: "x", count: 300)] {
            let encoded = WireJSON.encode(.string(plain))
            #expect(FNV1a.plainStringHash32(plain) == FNV1a.hash32(encoded))
        }
        for escaped in ["quote\"", "back\\slash", "line\nbreak", "\u{1}", "tab\t"] {
            #expect(FNV1a.plainStringHash32(escaped) == nil)
        }
        for text in ["fan@example.com", "quote\"", "\u{0}", "é"] {
            let h = FNV1a.hash32(WireJSON.encode(.string(text)))
            let hex = String(h, radix: 16)
            #expect(FNV1a.piiHash(.string(text)) == "h:" + String(repeating: "0", count: 8 - hex.count) + hex)
        }
        // Through the scrubber: a string field takes the cast-free path, a number the general one.
        let scrubber = PiiScrubber(.classify([PiiRule(field: "email", action: .hash)]))
        for value: Any in ["fan@example.com", "q\"uote", 12, NSNumber(value: 7)] {
            var out: [UInt8] = []
            try? scrubber.write(["email": value], into: &out)
            var size = 0
            let tree = (try? scrubber.object(["email": value], size: &size))?["email"]?.stringValue
            var ignored = 0
            let expected = try? FNV1a.piiHash(PiiScrubber(nil).convert(value, size: &ignored, depth: 1))
            #expect(tree == expected && expected != nil)
            #expect(String(decoding: out, as: UTF8.self) == #"{"email":"\#(expected ?? "")"}"#)
        }
        #expect(FNV1a.piiHash(.number(12)) == FNV1a.piiHash(.number(12)))
        #expect(FNV1a.piiHash(.string("12")) != FNV1a.piiHash(.number(12)))
    }
}
