import Foundation
import Testing
import TrackerCore
import TrackerCoreTestKit

@testable import ScoreTracker

/// Produces the golden fixtures of `conformance/fixtures/` with the fixed clock and ids of 12.0
/// and compares them byte for byte. `SCORE_UPDATE_FIXTURES=1` rewrites them instead.
@Suite struct ConformanceScenarios {
    static let dir = PackagePaths.packageRoot(#filePath) + "/conformance/fixtures/"

    /// A request as a fixture document.
    static func requestDocument(_ r: Recorded) -> String {
        var headers = JSONObject()
        for h in r.request.headers { headers.appendUnchecked(h.name, .string(h.value)) }
        let body = (try? WireJSON.decode(r.request.body ?? [])) ?? .null
        let doc: JSONValue = .object(
            JSONObject([
                ("method", .string(r.request.method)), ("url", .string(r.url)),
                ("headers", .object(headers)), ("body", body),
            ]))
        return WireJSON.encodeString(doc) + "\n"
    }

    static func envelopeDocument(_ text: String) -> String { text + "\n" }

    /// Every fixture, produced fresh.
    static func produce() async -> [String: String] {
        var out: [String: String] = [:]
        // One per event type, and a batch request with its headers.
        do {
            let h = Harness()
            let c = h.client(granted: true)
            c.setToken("tok-1")
            c.pv()
            c.screen("match_centre")
            c.identify(userId: "auth0|abc123", traits: ["team": "urc-leinster"])
            await h.flush(c)
            let r = h.tx.eventRequests[0]
            out["envelope-track.json"] = envelopeDocument(r.envelopeTexts[0])
            out["envelope-screen.json"] = envelopeDocument(r.envelopeTexts[1])
            out["envelope-identify.json"] = envelopeDocument(r.envelopeTexts[2])
            out["request-events-batch.json"] = requestDocument(r)
            out["request-link-anonymous.json"] = requestDocument(h.tx.linkRequests[0])
        }
        // The GDPR-dropped context.
        do {
            let h = Harness()
            let c = h.client(privacy: PrivacyOptions(mode: .gdpr), granted: true)
            c.pv()
            await h.flush(c)
            out["envelope-gdpr-context.json"] = envelopeDocument(h.tx.eventRequests[0].envelopeTexts[0])
        }
        // Each PII action.
        do {
            let h = Harness()
            let c = h.client(pii: PII4, granted: true)
            c.track("profile_updated", properties: ["email": "fan@example.com", "favouriteTeam": "home-club"])
            c.track("profile_updated", properties: ["phone": "+44 7700 900123", "favouriteTeam": "home-club"])
            c.track("profile_updated", properties: ["memberNumber": "M-1", "favouriteTeam": "home-club"])
            c.track("profile_updated", properties: ["dateOfBirth": "1990-01-01", "favouriteTeam": "home-club"])
            await h.flush(c)
            let e = h.tx.eventRequests[0].envelopeTexts
            out["envelope-pii-hash.json"] = envelopeDocument(e[0])
            out["envelope-pii-redact.json"] = envelopeDocument(e[1])
            out["envelope-pii-tokenize.json"] = envelopeDocument(e[2])
            out["envelope-pii-drop.json"] = envelopeDocument(e[3])
        }
        // A replayed event.
        do {
            let h = Harness()
            let c = h.client(granted: true)
            c.pv()
            await h.flush(c)
            await h.at(T0 + 60 * SEC)
            c.identify(userId: "u1", replayAnonymousEvents: true)
            await h.flush(c)
            out["envelope-replay.json"] = envelopeDocument(h.tx.eventRequests[1].envelopeTexts[1])
        }
        // A delivery_failed event.
        do {
            let h = Harness()
            let c = h.client(maxQueueSize: 1, granted: true)
            c.critical("c1")
            await h.at(T0 + SEC)
            c.critical("c2")
            await h.flush(c)
            out["envelope-delivery-failed.json"] = envelopeDocument(h.tx.eventRequests[0].envelopeTexts[1])
        }
        // Fixtures are written from the Linux build; other platforms compare with its name.
        let own = #""sdk":{"name":"\#(ScoreClient.sdkName)""#
        return out.mapValues { $0.replacingOccurrences(of: own, with: #""sdk":{"name":"score-tracker-linux""#) }
    }

    /// Section 2's rules for one envelope.
    static func checkEnvelope(_ e: JSONValue) {
        guard case .object(let o) = e else {
            Issue.record("not an object")
            return
        }
        let order = [
            "type", "name", "eventId", "timestamp", "anonymousId", "sessionId", "userId", "siteId", "props", "traits",
            "context", "sdk", "_backfill", "_originalEventId",
        ]
        let idx = o.keys.map { order.firstIndex(of: $0) ?? -1 }
        #expect(!idx.contains(-1) && idx == idx.sorted(), "key order \(o.keys)")
        #expect(Timestamp.matchesPattern(o["timestamp"]?.stringValue ?? ""))
        #expect(IDs.isLowercaseUUID(o["eventId"]?.stringValue ?? ""))
        #expect(IDs.isLowercaseUUID(o["anonymousId"]?.stringValue ?? ""))
        #expect(IDs.isLowercaseUUID(o["sessionId"]?.stringValue ?? ""))
        func sorted(_ v: JSONValue) -> Bool {
            switch v {
            case .object(let x):
                let keys = x.keys
                return zip(keys, keys.dropFirst()).allSatisfy { $0.utf8.lexicographicallyPrecedes($1.utf8) }
                    && x.entries.allSatisfy { sorted($0.value) }
            case .array(let a): return a.allSatisfy(sorted)
            default: return true
            }
        }
        #expect(sorted(o["props"] ?? .null) && sorted(o["traits"] ?? .object(JSONObject())))
        #expect(o["context"]?.objectValue?.keys.allSatisfy { ["os", "appVersion", "device", "locale"].contains($0) } == true)
        #expect(o["sdk"]?.objectValue?.keys == ["name", "version"])
    }

    @Test func SC91_conformanceFixtures() async throws {
        let produced = await Self.produce()
        #expect(produced.count == 12)
        if ProcessInfo.processInfo.environment["SCORE_UPDATE_FIXTURES"] == "1" {
            try FileManager.default.createDirectory(atPath: Self.dir, withIntermediateDirectories: true)
            for (name, text) in produced { try text.write(toFile: Self.dir + name, atomically: true, encoding: .utf8) }
        }
        for (name, text) in produced.sorted(by: { $0.key < $1.key }) {
            let file = try? String(contentsOfFile: Self.dir + name, encoding: .utf8)
            #expect(file == text, "\(name) differs from its fixture")
            let doc = try WireJSON.decode(text)
            if name.hasPrefix("envelope-") { Self.checkEnvelope(doc) }
            if name == "request-events-batch.json" { for e in doc["body"]?["events"]?.arrayValue ?? [] { Self.checkEnvelope(e) } }
        }
    }
}
