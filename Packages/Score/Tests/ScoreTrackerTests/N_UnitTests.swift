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
        let f = EnvelopeFields(
            type: "track", name: name, eventId: E(9), timestampMs: T0 + 1, anonymousId: A(3), sessionId: S(2),
            userId: "u\"1", siteId: "s", props: ["a": 1], traits: nil, context: JSONObject(),
            sdkName: "n", sdkVersion: "v")
        let e = QueuedEvent(
            eventId: E(9), name: name, timestampMs: T0 + 1, anonymousEpoch: 0, hasUserId: true,
            critical: true, notice: false, requires: 5, fields: f, encoded: nil)
        let env = f.encode()
        guard case .add(let a)? = QueueRecord.parse(QueueRecord.add(e, envelope: env)) else {
            Issue.record("no add record")
            return
        }
        #expect(a.name == name && a.eventId == E(9) && a.timestampMs == T0 + 1 && a.anonymousId == A(3))
        #expect(a.flags == 5 && a.requires == 5 && a.envelope == env)
        guard case .remove(let ids)? = QueueRecord.parse(QueueRecord.remove([E(1), E(2)])) else {
            Issue.record("no remove record")
            return
        }
        #expect(ids == [E(1), E(2)])
        #expect(QueueRecord.parse([65, 0, 0, 123]) == nil)
    }

    @Test func startUpScanReadsWhatParseReadsWithoutBuildingIds() {
        func record(id: String, name: String, anon: String) -> [UInt8] {
            let f = EnvelopeFields(
                type: "track", name: name, eventId: id, timestampMs: T0 + 7, anonymousId: anon,
                sessionId: S(1), userId: nil, siteId: "s", props: [:], traits: nil,
                context: JSONObject(), sdkName: "n", sdkVersion: "v")
            let e = QueuedEvent(
                eventId: id, name: name, timestampMs: T0 + 7, anonymousEpoch: 0, hasUserId: false,
                critical: false, notice: true, requires: 3, fields: f, encoded: nil)
            return QueueRecord.add(e, envelope: f.encode())
        }
        // A canonical id is packed; an escaped name and id and another anonymousId are read as text.
        guard
            case .add(let id, let name, let ms, let same, let flags, let requires)? = QueueRecord.scan(
                record(id: E(4), name: "n\"1", anon: A(1)), anonymousId: A(1))
        else {
            Issue.record("no add")
            return
        }
        #expect(id == CompactEventId(E(4)) && name == "n\"1" && ms == T0 + 7 && same && flags == 2 && requires == 3)
        if case .uuid = id {} else { Issue.record("not packed") }
        guard case .add(let id2, _, _, let same2, _, _)? = QueueRecord.scan(record(id: "x\"y", name: "n", anon: "a\\b"), anonymousId: A(1))
        else {
            Issue.record("no add")
            return
        }
        #expect(id2 == .text("x\"y") && !same2)
        guard case .add(_, _, _, let same3, _, _)? = QueueRecord.scan(record(id: E(5), name: "n", anon: "a\\b"), anonymousId: "a\\b") else {
            Issue.record("no add")
            return
        }
        #expect(same3)
        guard case .remove(let ids)? = QueueRecord.scan(QueueRecord.remove([E(1), "other"]), anonymousId: A(1)) else {
            Issue.record("no remove")
            return
        }
        #expect(ids == [CompactEventId(E(1)), .text("other")])
        #expect(QueueRecord.scan([65, 0, 0, 123], anonymousId: A(1)) == nil)
    }

    @Test func SC148_theQuickScanReadsTheSDKsOwnEnvelopesAsTheGeneralSearchDoes() {
        func record(type: String, name: String, id: String, anon: String, userId: String?) -> [UInt8] {
            let f = EnvelopeFields(
                type: type, name: name, eventId: id, timestampMs: T0 + 9, anonymousId: anon,
                sessionId: S(1), userId: userId, siteId: "s", props: ["k": .string("v")], traits: nil,
                context: JSONObject(), sdkName: "n", sdkVersion: "v")
            let e = QueuedEvent(
                eventId: id, name: name, timestampMs: T0 + 9, anonymousEpoch: 0, hasUserId: userId != nil,
                critical: true, notice: false, requires: 5, fields: f, encoded: nil)
            return QueueRecord.add(e, envelope: f.encode())
        }
        let anon = QueueRecord.AnonymousIdBytes(A(1))
        for (type, name, id, recordedAnon, userId) in [
            ("track", "poll_vote", E(1), A(1), nil), ("screen", "a_screen_name_longer_than_15", E(2), A(2), "u1"),
            ("identify", "", E(3), A(1), "u2"),
        ] {
            let r = record(type: type, name: name, id: id, anon: recordedAnon, userId: userId)
            let quick = r.withUnsafeBufferPointer { QueueRecord.scanCanonical(UnsafeBufferPointer(rebasing: $0[3...]), anonymousId: anon) }
            guard let quick else {
                Issue.record("the quick scan gave up on a \(type) envelope")
                continue
            }
            guard case .add(let gid, let gname, let gms, let gsame, _, _)? = QueueRecord.scan(r, anonymousId: A(1)) else {
                Issue.record("no add")
                continue
            }
            #expect(quick.id == gid && quick.id == CompactEventId(id) && quick.name == gname && quick.name == name)
            #expect(quick.timestampMs == gms && gms == T0 + 9 && quick.sameAnonymous == gsame && gsame == (recordedAnon == A(1)))
        }
        // An escaped name, a longer id, or an anonymous id with an escape: the general search.
        for r in [
            record(type: "track", name: "n\"1", id: E(4), anon: A(1), userId: nil),
            record(type: "track", name: "n", id: E(4) + "x", anon: A(1), userId: nil),
        ] {
            #expect(
                r.withUnsafeBufferPointer { QueueRecord.scanCanonical(UnsafeBufferPointer(rebasing: $0[3...]), anonymousId: anon) } == nil)
        }
        let r = record(type: "track", name: "n", id: E(5), anon: "a\\b", userId: nil)
        #expect(
            r.withUnsafeBufferPointer {
                QueueRecord.scanCanonical(UnsafeBufferPointer(rebasing: $0[3...]), anonymousId: QueueRecord.AnonymousIdBytes("a\\b"))
            } == nil)
    }

    @Test func startUpLoadKeepsTheFirstPlaceAndLastContentsOfAnIdAndDropsRemovedOnes() {
        func add(_ n: Int, name: String) -> [UInt8] {
            let f = EnvelopeFields(
                type: "track", name: name, eventId: E(n), timestampMs: T0, anonymousId: A(1),
                sessionId: S(1), userId: nil, siteId: "s", props: [:], traits: nil,
                context: JSONObject(), sdkName: "n", sdkVersion: "v")
            let e = QueuedEvent(
                eventId: E(n), name: name, timestampMs: T0, anonymousEpoch: 0, hasUserId: false,
                critical: false, notice: false, requires: 1, fields: f, encoded: nil)
            return QueueRecord.add(e, envelope: f.encode())
        }
        let records = [
            add(1, name: "a"), add(2, name: "b"), add(1, name: "a2"), add(3, name: "c"),
            QueueRecord.remove([E(2)]), add(2, name: "b2"), QueueRecord.remove([E(3)]),
        ]
        var s = ClientState(
            consent: ConsentState(analytics: false, personalization: false, advertising: false), anonymousId: A(1), sessionId: S(1))
        ScoreClient.loadQueue(records, locations: nil, into: &s)
        #expect(s.queue.map(\.eventId) == [E(1), E(2)])
        #expect(s.queue.map(\.name) == ["a2", "b2"])
        #expect(s.writer.deadRecords == 5)
        #expect(s.queue.allSatisfy { $0.persisted && $0.encoded != nil && $0.anonymousEpoch == 0 })
    }

    @Test func eventQueueRemovesItsFrontWithoutShiftingAndHandsTheCutOffFrontOver() {
        func event(_ n: Int) -> QueuedEvent {
            QueuedEvent(
                eventId: E(n), name: "e\(n)", timestampMs: T0, anonymousEpoch: 0, hasUserId: false,
                critical: false, notice: false, requires: 1, fields: nil, encoded: nil)
        }
        var q = EventQueue()
        var released: [QueuedEvent] = []
        for n in 1...200 { q.append(event(n)) }
        // Removing the front keeps the rest in order; the cut-off comes every `frontSlack` removals.
        for _ in 1..<EventQueue.frontSlack { q.remove(at: q.startIndex, releasing: &released) }
        #expect(released.isEmpty && q.count == 200 - EventQueue.frontSlack + 1)
        #expect(q.first?.eventId == E(EventQueue.frontSlack))
        q.remove(at: q.startIndex, releasing: &released)
        #expect(released.map(\.eventId) == (1...EventQueue.frontSlack).map(E))
        #expect(q.startIndex == 0 && q.first?.eventId == E(EventQueue.frontSlack + 1))
        // A removal elsewhere, then a filter, after a front removal.
        q.remove(at: q.startIndex, releasing: &released)
        let middle = q.firstIndex { $0.eventId == E(100) }!
        q.remove(at: middle, releasing: &released)
        q.removeAll { $0.eventId == E(150) }
        #expect(q.map(\.eventId) == ((EventQueue.frontSlack + 2)...200).filter { $0 != 100 && $0 != 150 }.map(E))
        // Emptying the queue from the front hands everything over.
        released = []
        let left = q.count
        while !q.isEmpty { q.remove(at: q.startIndex, releasing: &released) }
        #expect(released.count == left)
    }

    @Test func userIdInsertionAndReplayCopyAreByteEdits() {
        let env = Array(pvEnvelope(1).utf8)
        #expect(String(decoding: EnvelopeBytes.withUserId(env, "u\"x"), as: UTF8.self) == pvEnvelope(1, userId: #"u\"x"#))
        let copy = String(decoding: EnvelopeBytes.replayCopy(env, originalEventId: E(1), newEventId: E(5), userId: "u1"), as: UTF8.self)
        #expect(copy == String(pvEnvelope(5, userId: "u1").dropLast()) + #","_backfill":true,"_originalEventId":"\#(E(1))"}"#)
    }
}

@Suite struct StreamingScrubTests {
    /// The recording path scrubs and encodes in one pass; its bytes must equal the value-tree
    /// path (`object` then `WireJSON`) for every kind of input and every rule.
    @Test func streamingScrubEqualsTheValueTreePath() throws {
        let scrubber = PiiScrubber(
            .classify([
                PiiRule(field: "email", action: .hash), PiiRule(field: "phone", action: .redact),
                PiiRule(field: "card", action: .drop), PiiRule(field: "name", action: .tokenize),
            ]))
        let inputs: [[String: Any]] = [
            [:],
            ["email": "fan@example.com"],
            ["pollId": "motm-r12", "choice": "player_7", "round": 12, "email": "fan@example.com", "live": true],
            ["z": 1, "a": 2.5, "é": "accent", "B": NSNull(), "aa": [1, "two", false, NSNull(), ["k": "v"]] as [Any]],
            ["nested": ["email": "x@y.z", "phone": "+33", "inner": ["card": "4111", "name": "Ann"]] as [String: Any]],
            ["int8": Int8(-3), "u64": UInt64(7), "float": Float(0.5), "neg": -0.0, "big": 1e21, "small": 1e-7],
            ["quote\"key": "line\nbreak\u{1}", "😀": "emoji", "name": ["first": "Ann"]],
            ["strings": ["a", "b"], "sub": Substring("part"), "number": NSNumber(value: 42)],
        ]
        for input in inputs {
            var size = 0
            let tree = WireJSON.encode(.object(try scrubber.object(input, size: &size)))
            var streamed: [UInt8] = []
            try scrubber.write(input, into: &streamed)
            #expect(streamed == tree, "\(String(decoding: tree, as: UTF8.self))")
        }
    }

    /// `JSONSerialization` (and Objective-C code) hand over numbers as `NSNumber`, which also
    /// cast to `Bool` when 0 or 1: they must stay numbers, and only boxed booleans are booleans.
    @Test func foundationBoxedNumbersStayNumbersAndBoxedBooleansStayBooleans() throws {
        let scrubber = PiiScrubber(nil)
        let json = #"{"one":1,"zero":0,"yes":true,"no":false,"half":0.5,"nothing":null,"list":[1,true,null]}"#
        let decoded = try #require(try JSONSerialization.jsonObject(with: Data(json.utf8)) as? [String: Any])
        let boxed: [String: Any] = [
            "n1": NSNumber(value: 1), "b1": NSNumber(value: true), "n0": NSNumber(value: 0.0),
            "swiftTrue": true, "swiftOne": 1,
        ]
        let expected = [
            #"{"half":0.5,"list":[1,true,null],"no":false,"nothing":null,"one":1,"yes":true,"zero":0}"#,
            #"{"b1":true,"n0":0,"n1":1,"swiftOne":1,"swiftTrue":true}"#,
        ]
        for (input, want) in zip([decoded, boxed], expected) {
            var streamed: [UInt8] = []
            try scrubber.write(input, into: &streamed)
            #expect(String(decoding: streamed, as: UTF8.self) == want)
            var size = 0
            #expect(WireJSON.encode(.object(try scrubber.object(input, size: &size))) == streamed)
        }
    }

    /// The streaming and tree paths drop the same keys (issue 37 item 9) and refuse the same
    /// nesting.
    @Test func streamingScrubDropsWhatTheTreePathDrops() throws {
        let scrubber = PiiScrubber(nil)
        struct Opaque {}
        for bad: [String: Any] in [
            ["d": Opaque(), "k": 1], ["n": Double.nan],
            ["deep": ["x": [Double.infinity], "y": ["z": Float.nan, "w": 2]] as [String: Any]],
        ] {
            var streamed: [UInt8] = []
            var w = WireWriter()
            var dropped = DroppedKeys()
            try scrubber.write(bad, into: &w, dropped: &dropped)
            w.appendBytes(to: &streamed)
            var size = 0
            var treeDropped = DroppedKeys()
            let tree = WireJSON.encode(.object(try scrubber.object(bad, size: &size, dropped: &treeDropped)))
            #expect(streamed == tree)
            #expect(dropped.names == treeDropped.names && dropped.count > 0)
        }
        var deep: [String: Any] = ["leaf": 1]
        for _ in 0..<70 { deep = ["d": deep] }
        var out: [UInt8] = []
        #expect(throws: InvalidInput.self) { try scrubber.write(deep, into: &out) }
        var size = 0
        #expect(throws: InvalidInput.self) { try scrubber.object(deep, size: &size) }
    }

    /// A recorded event's bytes equal the full envelope encoder's (pre-encoded identity and tail).
    @Test func recordedEnvelopeEqualsTheFieldEncoder() throws {
        var head: [UInt8] = []
        EnvelopeWriter.head(type: "track", name: "poll_vote", eventId: E(1), timestampMs: T0, into: &head)
        var identity: [UInt8] = []
        EnvelopeWriter.identity(anonymousId: A(1), sessionId: S(1), userId: "fan-1", siteId: "urc", into: &identity)
        var ctx = JSONObject()
        ctx.appendUnchecked("os", .string("iOS 18.1"))
        var tail: [UInt8] = []
        EnvelopeWriter.tail(context: ctx, sdkName: "n", sdkVersion: "1", into: &tail)
        var props: [UInt8] = []
        try PiiScrubber(nil).write(["a": 1], into: &props)
        let f = EnvelopeFields(
            type: "track", name: "poll_vote", eventId: E(1), timestampMs: T0, anonymousId: A(1),
            sessionId: S(1), userId: "fan-1", siteId: "urc", props: ["a": 1], traits: nil, context: ctx,
            sdkName: "n", sdkVersion: "1")
        #expect(EnvelopeWriter.exact(head, identity, props, tail) == f.encode())
    }
}

@Suite struct CompactEventTests {
    @Test func eventIdsRoundTripExactly() {
        let minted = SystemScoreIdSource().newEventId(nowMs: T0)
        for id in [
            minted, "019ca945-0a00-7abc-8def-0123456789ab", "E1", "", "019CA945-0A00-7ABC-8DEF-0123456789AB",
            "019ca945-0a00-7abc-8def-0123456789a", "019ca945x0a00-7abc-8def-0123456789ab", "é-\u{1F600}",
        ] {
            #expect(CompactEventId(id).string == id)
        }
        guard case .uuid = CompactEventId(minted) else {
            Issue.record("a minted id is not packed")
            return
        }
        guard case .text = CompactEventId("019CA945-0A00-7ABC-8DEF-0123456789AB") else {
            Issue.record("an uppercase id must stay text (it would not round-trip)")
            return
        }
        var bytes: [UInt8] = []
        CompactEventId(minted).write(into: &bytes)
        #expect(bytes == Array(minted.utf8))
    }

    #if os(Linux)
        @_silgen_name("malloc_usable_size") static func mallocUsableSize(_ p: UnsafeMutableRawPointer) -> Int

        /// A queued event's instance stays in glibc's 96-byte size class (the queue may hold many).
        @Test func aQueuedEventIsSmall() {
            let e = QueuedEvent(
                eventId: SystemScoreIdSource().newEventId(nowMs: T0), name: "poll_vote", timestampMs: T0,
                anonymousEpoch: 0, hasUserId: false, critical: true, notice: false, requires: 1,
                fields: nil, encoded: nil)
            e.location = ScoreRecordLocation(generation: 3, offset: 1 << 33)
            e.persisted = true
            // malloc may hand out a slightly larger free chunk: the smallest of a few is the class.
            let more = (0..<32).map { _ in
                QueuedEvent(
                    eventId: "E", name: "n", timestampMs: 0, anonymousEpoch: 0, hasUserId: false, critical: false,
                    notice: false, requires: 0, fields: nil, encoded: nil)
            }
            let smallest = (more + [e]).map { Self.mallocUsableSize(Unmanaged.passUnretained($0).toOpaque()) }.min()!
            #expect(smallest <= 88)  // a 96-byte chunk
            #expect(e.location == ScoreRecordLocation(generation: 3, offset: 1 << 33))
            #expect(e.critical && !e.notice && !e.hasUserId && e.persisted && e.inQueue)
            e.location = nil
            #expect(e.location == nil)
        }
    #endif
}
