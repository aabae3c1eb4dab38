import Foundation
import Testing
import TrackerCore
@testable import ScoreTracker

@Suite struct UnitTests {
    @Test func productionEventIdsAreLowercaseUUIDv7() {
        let ids = SystemScoreIdSource()
        var seen = Set<String>()
        for _ in 0..<1000 {
            let id = ids.newEventId(nowMs: T0)
            #expect(IDs.isLowercaseUUID(id))
            let u = Array(id.utf8)
            #expect(u[14] == UInt8(ascii: "7"))
            #expect([UInt8(ascii: "8"), UInt8(ascii: "9"), UInt8(ascii: "a"), UInt8(ascii: "b")].contains(u[19]))
            #expect(id.hasPrefix("019ca945-0a00"))
            seen.insert(id)
        }
        #expect(seen.count == 1000)
        #expect(IDs.isLowercaseUUID(ids.newAnonymousId()) && IDs.isLowercaseUUID(ids.newSessionId()))
    }

    @Test func queueRecordRoundTripWithEscapedName() {
        let name = "q\"uo\\te é 😀 \n"
        let f = EnvelopeFields(type: "track", name: name, eventId: E(9), timestampMs: T0 + 1, anonymousId: A(3), sessionId: S(2),
                               userId: "u\"1", siteId: "s", props: ["a": 1], traits: nil, context: JSONObject(),
                               sdkName: "n", sdkVersion: "v")
        let e = QueuedEvent(seq: 1, eventId: E(9), name: name, timestampMs: T0 + 1, anonymousId: A(3), hasUserId: true,
                            critical: true, notice: false, requires: 5, fields: f, encoded: nil)
        let env = f.encode()
        guard case let .add(a)? = QueueRecord.parse(QueueRecord.add(e, envelope: env)) else {
            Issue.record("no add record")
            return
        }
        #expect(a.name == name && a.eventId == E(9) && a.timestampMs == T0 + 1 && a.anonymousId == A(3))
        #expect(a.flags == 5 && a.requires == 5 && a.envelope == env)
        guard case let .remove(ids)? = QueueRecord.parse(QueueRecord.remove([E(1), E(2)])) else {
            Issue.record("no remove record")
            return
        }
        #expect(ids == [E(1), E(2)])
        #expect(QueueRecord.parse([65, 0, 0, 123]) == nil)
    }

    @Test func userIdInsertionAndReplayCopyAreByteEdits() {
        let env = Array(pvEnvelope(1).utf8)
        #expect(String(decoding: EnvelopeBytes.withUserId(env, "u\"x"), as: UTF8.self) == pvEnvelope(1, userId: #"u\"x"#))
        let copy = String(decoding: EnvelopeBytes.replayCopy(env, originalEventId: E(1), newEventId: E(5), userId: "u1"), as: UTF8.self)
        #expect(copy == String(pvEnvelope(5, userId: "u1").dropLast()) + #","_backfill":true,"_originalEventId":"\#(E(1))"}"#)
    }
}
