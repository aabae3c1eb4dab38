import Foundation
import Testing
import TrackerCore

@testable import ScoreTracker

@Suite struct PiiScenarios {
    func propsOf(_ h: Harness, _ request: Int = 0, event: Int = 0) -> String {
        let env = h.tx.eventRequests[request].events[event]
        return WireJSON.encodeString(env["props"] ?? .null)
    }

    func run(_ rules: PiiOptions, _ props: [String: Any]) async -> (Harness, ScoreClient, String) {
        let h = Harness()
        let c = h.client(pii: rules, granted: true)
        c.track("t", properties: props)
        await h.flush(c)
        return (h, c, propsOf(h))
    }

    @Test func hashVectors() {
        #expect(FNV1a.piiHash(.string("fan@example.com")) == "h:141e28bb")
        #expect(FNV1a.piiHash(.number(68)) == "h:0de8d5a3")
        #expect(FNV1a.piiHash(.bool(true)) == "h:4db211e5")
        #expect(FNV1a.piiHash(["a": 1, "b": "2"]) == "h:5856c4d7")
    }

    @Test func SC29_guideExample() async {
        let h = Harness()
        let c = h.client(pii: PII4, granted: true)
        c.track("profile_updated", properties: ["email": "fan@example.com", "favouriteTeam": "home-club"])
        await h.flush(c)
        #expect(propsOf(h) == #"{"email":"h:141e28bb","favouriteTeam":"home-club"}"#)
        #expect(c.inspect().piiRules == 4)
        let written = h.memoryStore.writtenBytes.map { String(decoding: $0, as: UTF8.self) }
        #expect(!written.isEmpty)
        #expect(!written.contains { $0.contains("fan@example.com") })
        #expect(!h.tx.bodies.contains { $0.contains("fan@example.com") })
    }

    @Test func SC30_eachActionTopLevel() async {
        let (_, _, p) = await run(PII4, ["phone": "+44 7700 900123", "memberNumber": "M-1", "dateOfBirth": "1990-01-01", "other": 1])
        #expect(p == #"{"memberNumber":"t:1","other":1,"phone":"<redacted>"}"#)
    }

    @Test func SC31_atDepth() async {
        let (_, _, p) = await run(
            PII4, ["profile": ["contact": ["email": "fan@example.com", "phone": "1", "dateOfBirth": "x"], "memberNumber": "M-9"]])
        #expect(p == #"{"profile":{"contact":{"email":"h:141e28bb","phone":"<redacted>"},"memberNumber":"t:1"}}"#)
    }

    @Test func SC32_insideLists() async {
        let (_, _, p) = await run(
            PII4,
            [
                "members": [
                    ["memberNumber": "M-1", "dateOfBirth": "x", "phone": "1"],
                    ["memberNumber": "M-2", "email": "fan@example.com"], ["memberNumber": "M-1"],
                ],
                "tags": ["email", "phone"],
            ])
        #expect(
            p
                == #"{"members":[{"memberNumber":"t:1","phone":"<redacted>"},{"email":"h:141e28bb","memberNumber":"t:2"},{"memberNumber":"t:1"}],"tags":["email","phone"]}"#
        )
    }

    @Test func SC33_tokensStableForLifetime() async {
        let h = Harness()
        let c = h.client(pii: PII4, granted: true)
        for v in ["M-7", "M-8", "M-7"] { c.track("m", properties: ["memberNumber": v]) }
        c.reset()
        c.track("m", properties: ["memberNumber": "M-8"])
        await h.flush(c)
        let c2 = h.client(pii: PII4, granted: true)
        c2.track("m", properties: ["memberNumber": "M-8"])
        c2.track("m", properties: ["memberNumber": "M-7"])
        await h.flush(c2)
        let tokens = h.tx.eventRequests.flatMap(\.events).compactMap { $0["props"]?["memberNumber"]?.stringValue }
        #expect(tokens == ["t:1", "t:2", "t:1", "t:2", "t:1", "t:2"])
    }

    @Test func SC34_hashOfNumberBoolObject() async {
        let (_, _, p) = await run(
            .classify([
                PiiRule(field: "n", action: .hash), PiiRule(field: "o", action: .hash),
                PiiRule(field: "flag", action: .hash),
            ]),
            ["n": 68, "o": ["b": "2", "a": 1], "flag": true])
        #expect(p == #"{"flag":"h:4db211e5","n":"h:0de8d5a3","o":"h:5856c4d7"}"#)
    }

    @Test func SC35_firstRuleWinsExactKeys() async {
        let (_, c, p) = await run(
            .classify([PiiRule(field: "email", action: .redact), PiiRule(field: "email", action: .hash)]),
            ["email": "fan@example.com", "Email": "A", "e-mail": "B", "emailAddress": "C"])
        #expect(p == #"{"Email":"A","e-mail":"B","email":"<redacted>","emailAddress":"C"}"#)
        #expect(c.inspect().piiRules == 2)
    }

    @Test func SC36_actionTakesWholeValue() async {
        let (_, _, p) = await run(
            .classify([
                PiiRule(field: "contact", action: .redact), PiiRule(field: "prefs", action: .drop),
                PiiRule(field: "ids", action: .tokenize),
            ]),
            ["contact": ["email": "fan@example.com"], "prefs": ["a": 1], "ids": [1, 2], "keep": ["ids": [1, 2]]])
        #expect(p == #"{"contact":"<redacted>","ids":"t:1","keep":{"ids":"t:1"}}"#)
    }

    @Test func SC37_denylist() async {
        let (_, c, p) = await run(
            .denylist(["email", "phone"]),
            ["email": "x", "name": "Ann", "profile": ["phone": "1", "team": "t"], "list": [["email": "y"]]])
        #expect(p == #"{"list":[{}],"name":"Ann","profile":{"team":"t"}}"#)
        #expect(c.inspect().piiRules == 2)
    }

    @Test func SC38_traitsAndScreenPropsScrubbed() async {
        let h = Harness()
        let c = h.client(pii: PII4, granted: true)
        c.identify(userId: "u1", traits: ["email": "fan@example.com", "team": "urc-leinster"])
        c.screen("profile", properties: ["phone": "1"])
        await h.flush(c)
        let ev = h.tx.eventRequests[0].events
        #expect(WireJSON.encodeString(ev[0]["props"]!) == "{}")
        #expect(WireJSON.encodeString(ev[0]["traits"]!) == #"{"email":"h:141e28bb","team":"urc-leinster"}"#)
        #expect(WireJSON.encodeString(ev[1]["props"]!) == #"{"phone":"<redacted>"}"#)
    }
}
