import Foundation
import Testing
import TrackerCore
import TrackerCoreTestKit

@testable import ScoreTracker

// One event form (issue 35 item 6): every envelope is built by `EnvelopeWriter`, and a queued
// event knows where its identity sits (`EnvelopeLayout`), so identity edits are replacements by
// offset. Property-style, over seeded random identities (ids of other lengths than the ones
// they replace, JSON-escaped characters, non-ASCII), against the tests' reference envelope:
//   SC283 — a built envelope equals the reference; its layout is the one read back from its
//           bytes; inserting a userId, replacing the anonymousId (then inserting a userId at the
//           moved offset), re-stamping another identity and a replay copy give the reference
//           bytes of the edited event.
//   SC284 — through a client: events recorded before the start-up load (the placeholder
//           anonymousId replaced at the merge, the stored userId added), anonymous events sent
//           after `identify` (the userId inserted at send time) and their replay copies are
//           sent as the reference envelopes, for random stored and identified ids.
@Suite struct EnvelopeLayoutTests {
    /// A deterministic generator (the seed is in the failure message).
    struct SplitMix: RandomNumberGenerator {
        var state: UInt64
        mutating func next() -> UInt64 {
            state &+= 0x9E37_79B9_7F4A_7C15
            var z = state
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            return z ^ (z >> 31)
        }
    }

    /// A random id: empty, short or long, with characters JSON escapes (`"`, `\`, controls),
    /// non-ASCII ones, or a canonical UUID.
    static func randomId(_ g: inout SplitMix) -> String {
        let alphabet: [String] = ["a", "Z", "7", "-", "\"", "\\", "\n", "\u{1}", "é", "😀", "/", " ", "|"]
        switch Int(g.next() % 5) {
        case 0: return UUID().uuidString.lowercased()
        case 1: return ""
        default:
            let n = Int(g.next() % 70)
            return (0..<n).map { _ in alphabet[Int(g.next() % UInt64(alphabet.count))] }.joined()
        }
    }

    static func context() -> JSONObject {
        var ctx = JSONObject()
        ctx.appendUnchecked("os", .string("iOS 18.1"))
        ctx.appendUnchecked("locale", .string("fr\"FR"))
        return ctx
    }

    static func reference(
        type: String = "track", name: String, eventId: String, anon: String, session: String, userId: String?,
        siteId: String, props: JSONObject, traits: JSONObject?
    ) -> [UInt8] {
        EnvelopeFields(
            type: type, name: name, eventId: eventId, timestampMs: T0 + 42, anonymousId: anon, sessionId: session,
            userId: userId, siteId: siteId, props: props, traits: traits, context: context(), sdkName: "n\"sdk",
            sdkVersion: "9.9"
        ).encode()
    }

    static func identity(anon: String, session: String, userId: String?, siteId: String) -> [UInt8] {
        var out: [UInt8] = []
        EnvelopeWriter.identity(anonymousId: anon, sessionId: session, userId: userId, siteId: siteId, into: &out)
        return out
    }

    @Test func SC283_identityEditsByOffsetGiveTheReferenceBytes() {
        var tail: [UInt8] = []
        EnvelopeWriter.tail(context: Self.context(), sdkName: "n\"sdk", sdkVersion: "9.9", into: &tail)
        for seed in UInt64(1)...300 {
            var g = SplitMix(state: seed)
            let name = Self.randomId(&g)
            let eventId = Self.randomId(&g)
            let anon = Self.randomId(&g)
            let session = Self.randomId(&g)
            let siteId = Self.randomId(&g)
            let userId: String? = g.next() % 2 == 0 ? nil : Self.randomId(&g)
            var props = JSONObject()
            props.appendUnchecked("k\"", .string(Self.randomId(&g)))
            let traits: JSONObject? = g.next() % 3 == 0 ? props : nil
            let identity = Self.identity(anon: anon, session: session, userId: userId, siteId: siteId)
            let (bytes, built) = EnvelopeWriter.envelope(
                type: "track", name: name, eventId: eventId, timestampMs: T0 + 42, identity: identity, props: props,
                traits: traits, tail: tail)
            let ref = Self.reference(
                name: name, eventId: eventId, anon: anon, session: session, userId: userId, siteId: siteId,
                props: props, traits: traits)
            #expect(bytes == ref, "seed \(seed): built")
            guard let layout = built else {
                Issue.record("seed \(seed): no layout")
                continue
            }
            #expect(EnvelopeLayout(parsing: bytes) == layout, "seed \(seed): layout read back")
            #expect(layout.hasUserId(bytes) == (userId != nil), "seed \(seed)")

            // A userId inserted at its offset (an anonymous event sent after identify).
            let newUser = Self.randomId(&g)
            if userId == nil {
                let withUser = EnvelopeBytes.withUserId(bytes, layout, newUser)
                #expect(
                    withUser
                        == Self.reference(
                            name: name, eventId: eventId, anon: anon, session: session, userId: newUser, siteId: siteId,
                            props: props, traits: traits), "seed \(seed): userId inserted")
            }

            // The anonymousId replaced (a different length, escaped), then a userId at the moved offset.
            let newAnon = Self.randomId(&g)
            let (replaced, moved) = EnvelopeBytes.replacingAnonymousId(bytes, layout, with: newAnon)
            #expect(
                replaced
                    == Self.reference(
                        name: name, eventId: eventId, anon: newAnon, session: session, userId: userId, siteId: siteId,
                        props: props, traits: traits), "seed \(seed): anonymousId replaced")
            #expect(EnvelopeLayout(parsing: replaced) == moved, "seed \(seed): moved layout")
            if userId == nil {
                #expect(
                    EnvelopeBytes.withUserId(replaced, moved, newUser)
                        == Self.reference(
                            name: name, eventId: eventId, anon: newAnon, session: session, userId: newUser,
                            siteId: siteId, props: props, traits: traits), "seed \(seed): both")
            }

            // Another identity stamped in place of the whole identity part.
            let other = Self.identity(anon: newAnon, session: session, userId: newUser, siteId: siteId)
            let restamped = EnvelopeWriter.restamp(
                bytes, headCount: layout.identityAt, oldIdentityCount: identity.count, identity: other)
            #expect(
                restamped
                    == Self.reference(
                        name: name, eventId: eventId, anon: newAnon, session: session, userId: newUser, siteId: siteId,
                        props: props, traits: traits), "seed \(seed): re-stamped")
            #expect(EnvelopeLayout(headCount: layout.identityAt, identity: other) == EnvelopeLayout(parsing: restamped))

            // A replay copy of an anonymous event: the minted id, the fan's userId, the markers.
            if userId == nil {
                let minted = UUID().uuidString.lowercased()
                let copy = EnvelopeBytes.replayCopy(
                    bytes, layout, originalEventId: eventId, newEventId: minted, userId: newUser)
                var expected = Self.reference(
                    name: name, eventId: minted, anon: anon, session: session, userId: newUser, siteId: siteId,
                    props: props, traits: traits)
                expected.removeLast()
                expected += Array(#","_backfill":true,"_originalEventId":"#.utf8)
                WireJSON.writeString(eventId, into: &expected)
                expected.append(125)
                // A minted id needs no escaping: the copy is the reference, byte for byte.
                #expect(copy == expected, "seed \(seed): replay copy")
            }
        }
    }

    @Test func SC284_editedEventsAreSentAsTheReferenceEnvelopes() async throws {
        for seed in UInt64(1)...12 {
            var g = SplitMix(state: seed)
            // Only ids the SDK accepts: a userId of 1 to 256 code points, a UUID anonymousId.
            var storedUser = Self.randomId(&g)
            if storedUser.isEmpty { storedUser = "u\"\\\n" }
            var fan = Self.randomId(&g)
            if fan.isEmpty { fan = "fan é\"" }
            let storedAnon = UUID().uuidString.lowercased()

            let store = InMemoryScoreStore()
            var identity = JSONObject()
            identity.appendUnchecked("anonymousId", .string(storedAnon))
            identity.appendUnchecked("userId", .string(storedUser))
            try await store.saveIdentity(WireJSON.encode(.object(identity)))
            let h = Harness(store: store)
            let c = h.client(granted: true)
            // Recorded before the load: the placeholder anonymousId is replaced at the merge and
            // the stored userId added.
            c.track("before_load", properties: ["n": 1])
            await h.settle()
            await h.flush(c)
            // Anonymous after a reset; then identified: the userId is inserted at send time
            // for the queued one, and the delivered one is replayed.
            c.reset()
            c.track("anon_sent", properties: ["n": 2])
            await h.flush(c)
            c.track("anon_queued", properties: ["n": 3])
            c.identify(userId: fan, replayAnonymousEvents: true)
            await h.flush(c)

            let events = h.tx.eventRequests.flatMap(\.events)
            func named(_ n: String) -> [JSONValue] { events.filter { $0["name"]?.stringValue == n } }
            let before = try #require(named("before_load").first, "seed \(seed)")
            #expect(before["anonymousId"]?.stringValue == storedAnon, "seed \(seed)")
            #expect(before["userId"]?.stringValue == storedUser, "seed \(seed)")
            #expect(named("anon_queued").first?["userId"]?.stringValue == fan, "seed \(seed)")
            let anon = named("anon_sent")
            #expect(anon.count == 2, "seed \(seed): sent, then replayed")
            #expect(anon.first?["userId"] == nil, "seed \(seed)")
            #expect(anon.last?["userId"]?.stringValue == fan && anon.last?["_backfill"] == .bool(true), "seed \(seed)")
            // Every body is the reference encoding of the members its envelopes hold, byte for byte.
            #expect(h.tx.eventRequests.count == 3)
            for r in h.tx.eventRequests {
                var body = Array(#"{"sentAt":"#.utf8)
                WireJSON.writeString(r.json["sentAt"]?.stringValue ?? "", into: &body)
                body += Array(#","events":["#.utf8)
                for (k, e) in r.events.enumerated() {
                    if k > 0 { body.append(44) }
                    body += Self.reference(of: e)
                }
                body += Array("]}".utf8)
                #expect(body == r.request.body, "seed \(seed): \(String(decoding: r.request.body ?? [], as: UTF8.self))")
            }
        }
    }

    /// The reference encoding of the members `e` holds.
    static func reference(of e: JSONValue) -> [UInt8] {
        guard case .object(let o) = e else { return [] }
        func str(_ k: String) -> String { o[k]?.stringValue ?? "" }
        func obj(_ k: String) -> JSONObject? { if case .object(let v)? = o[k] { v } else { nil } }
        var ref = EnvelopeFields(
            type: str("type"), name: str("name"), eventId: str("eventId"),
            timestampMs: Timestamp.parse(str("timestamp")) ?? 0, anonymousId: str("anonymousId"),
            sessionId: str("sessionId"), userId: o["userId"]?.stringValue, siteId: str("siteId"),
            props: obj("props") ?? JSONObject(), traits: obj("traits"), context: obj("context") ?? JSONObject(),
            sdkName: obj("sdk")?["name"]?.stringValue ?? "", sdkVersion: obj("sdk")?["version"]?.stringValue ?? ""
        ).encode()
        if let original = o["_originalEventId"]?.stringValue {
            ref.removeLast()
            ref += Array(#","_backfill":true,"_originalEventId":"#.utf8)
            WireJSON.writeString(original, into: &ref)
            ref.append(125)
        }
        return ref
    }
}
