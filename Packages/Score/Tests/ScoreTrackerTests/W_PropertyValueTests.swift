import Foundation
import Testing
import TrackerCore
import TrackerCoreTestKit

@testable import ScoreTracker

/// Issue 37 item 9: property values. A value that is not JSON drops only its key (one
/// `invalid-property` diagnostic per call); `Encodable` values and ``ScorePropertyConvertible``
/// values are converted; Foundation's `Date`, `URL`, `UUID` and `Decimal` convert on Apple
/// platforms (the Linux build links no Foundation: there they are refused like any other value).
@Suite struct W_PropertyValueTests {
    /// The props object of the first event sent.
    func sentProps(_ h: Harness) -> String? {
        guard let e = h.tx.eventRequests.first?.events.first, let p = e["props"] else { return nil }
        return WireJSON.encodeString(p)
    }

    /// SC188 — an unsupported value drops only its key, at any depth, with one diagnostic per call.
    @Test func SC188_anUnsupportedValueDropsOnlyItsKey() async {
        let h = Harness()
        let c = h.client(granted: true)
        struct Opaque {}
        c.track(
            "n",
            properties: [
                "v": Double.nan, "ok": 1, "inf": -Double.infinity, "deep": ["bad": Opaque(), "fine": "x"] as [String: Any],
                "list": [1, Double.nan] as [Any],
            ])
        await h.flush(c)
        #expect(sentProps(h) == #"{"deep":{"fine":"x"},"ok":1}"#)
        #expect(c.inspect().queue.invalid == 0)
        #expect(h.diagnostics.count("invalid-property") == 1)
        #expect(
            h.diagnostics.all.first { $0.code == "invalid-property" }?.message
                == #"4 properties ("bad", "inf", "list", "v") invalid and dropped"#)
    }

    /// SC189 — the diagnostic names the first 10 dropped keys and counts the rest; a key that does
    /// not look like an identifier is named "?" (it may hold personal data).
    @Test func SC189_theDiagnosticNamesTheFirstTenKeys() async {
        let h = Harness()
        let c = h.client(granted: true)
        var props: [String: Any] = ["jane.doe@example.com": Double.nan]
        for k in 0..<12 { props["p\(k < 10 ? "0" : "")\(k)"] = Double.nan }
        c.track("many", properties: props)
        c.identify(userId: "u1", traits: ["t": Double.nan, "team": "x"])
        await h.flush(c)
        let messages = h.diagnostics.all.filter { $0.code == "invalid-property" }.map(\.message)
        let names = (0..<9).map { "\"p0\($0)\"" }.joined(separator: ", ")
        #expect(messages == [#"13 properties ("?", \#(names) and 3 more) invalid and dropped"#, #"trait "t" invalid and dropped"#])
        #expect(!messages.joined().contains("jane"))
        let identify = h.tx.eventRequests.first?.events.first { $0["type"]?.stringValue == "identify" }
        #expect(identify.map { WireJSON.encodeString($0["traits"]!) } == #"{"team":"x"}"#)
    }

    struct Vote: Encodable {
        var pollId = "motm-r12"
        var choices = ["player_7", "player_9"]
        var weight: Double? = nil
        var meta = ["z": 1, "a": 2]
    }

    /// SC190 — an `Encodable` value is sent as the JSON value it encodes to (keys sorted like any
    /// props); one that fails to encode, or encodes a non-finite number, drops its key.
    @Test func SC190_anEncodableValueIsEncoded() async {
        struct Bad: Encodable { let x = Double.nan }
        let h = Harness()
        let c = h.client(pii: .classify([PiiRule(field: "pollId", action: .redact)]), granted: true)
        c.track("vote", properties: ["vote": Vote(), "bad": Bad()])
        await h.flush(c)
        #expect(sentProps(h) == #"{"vote":{"choices":["player_7","player_9"],"meta":{"a":2,"z":1},"pollId":"<redacted>"}}"#)
        #expect(h.diagnostics.count("invalid-property") == 1)
    }

    /// SC191 — the portable conversions behind the Foundation conformances.
    @Test func SC191_portableConversions() {
        typealias V = ScorePropertyValues
        #expect(V.timestamp(secondsSince1970: 1_772_366_401.234) == .string("2026-03-01T12:00:01.234Z"))
        #expect(V.timestamp(secondsSince1970: 1_772_366_401.2349) == .string("2026-03-01T12:00:01.234Z"))
        #expect(V.timestamp(secondsSince1970: -0.0005) == .string("1969-12-31T23:59:59.999Z"))
        #expect(V.timestamp(secondsSince1970: 0) == .string("1970-01-01T00:00:00.000Z"))
        #expect(V.timestamp(secondsSince1970: .nan) == nil)
        #expect(V.timestamp(secondsSince1970: 1e15) == nil)
        #expect(V.uuid("E621E1F8-C36C-495A-93FC-0C247A3E6E5F") == .string("e621e1f8-c36c-495a-93fc-0c247a3e6e5f"))
        #expect(V.decimal("12.34") == .number(12.34))
        #expect(V.decimal("NaN") == nil)
        for digits in ["0.1", "12.34", "-0.001", "123456789012345", "0.000001", "99999999999999.9"] {
            #expect(V.decimal(digits).map { WireJSON.encodeString($0) } == digits)
        }
    }

    struct Team: ScorePropertyConvertible {
        let slug: String
        var scorePropertyValue: JSONValue? {
            slug.isEmpty ? nil : .object(JSONObject([("slug", .string(slug)), ("email", .string("x@y.z"))]))
        }
    }

    /// SC192 — an app type conforming to ScorePropertyConvertible is sent in its own form (PII
    /// rules applied inside it), in lists and nested objects too; `nil` drops its key.
    @Test func SC192_convertibleTypes() async {
        let h = Harness()
        let c = h.client(pii: .classify([PiiRule(field: "email", action: .drop)]), granted: true)
        c.track("t", properties: ["team": Team(slug: "leinster"), "teams": [Team(slug: "a")], "none": Team(slug: "")])
        await h.flush(c)
        #expect(sentProps(h) == #"{"team":{"slug":"leinster"},"teams":[{"slug":"a"}]}"#)
        #expect(h.diagnostics.all.filter { $0.code == "invalid-property" }.map(\.message) == [#"property "none" invalid and dropped"#])
    }

    /// SC193 — Foundation's Date, URL, UUID and Decimal: converted on Apple platforms; refused
    /// (their key dropped, never sent in their raw encoded parts) by the Foundation-free Linux build.
    @Test func SC193_foundationValues() async {
        let h = Harness()
        let c = h.client(granted: true)
        struct Match: Encodable { let kickoff = Date(timeIntervalSince1970: 1_772_366_401.234) }
        c.track(
            "f",
            properties: [
                "at": Date(timeIntervalSince1970: 1_772_366_401.234), "url": URL(string: "https://x.test/a?b=1")!,
                "id": UUID(uuidString: "E621E1F8-C36C-495A-93FC-0C247A3E6E5F")!, "price": Decimal(string: "12.34")!,
                "match": Match(), "ok": 1, "one": Decimal(1),
            ])
        await h.flush(c)
        #if canImport(Darwin)
            #expect(
                sentProps(h)
                    == #"{"at":"2026-03-01T12:00:01.234Z","id":"e621e1f8-c36c-495a-93fc-0c247a3e6e5f","match":{"kickoff":"2026-03-01T12:00:01.234Z"},"ok":1,"one":1,"price":12.34,"url":"https://x.test/a?b=1"}"#
            )
            #expect(h.diagnostics.count("invalid-property") == 0)
        #else
            #expect(sentProps(h) == #"{"ok":1}"#)
            #expect(
                h.diagnostics.all.filter { $0.code == "invalid-property" }.map(\.message)
                    == [#"6 properties ("at", "id", "match", "one", "price", "url") invalid and dropped"#])
        #endif
    }
}
