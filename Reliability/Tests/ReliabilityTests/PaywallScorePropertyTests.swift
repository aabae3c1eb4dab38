import Foundation
import PaywallTracker
import ScoreTracker
import Synchronization
import Testing
import TrackerCore
import TrackerCoreTestKit

/// The diagnostic codes of paywall.md §11.
let paywallCodes: Set<String> = [
    "invalid-info", "invalid-context", "internal", "already-shown", "after-end", "already-ended", "invalid-status",
    "rejected", "storage", "invalid-stored", "storage-cap", "disposed",
]
/// The Score tracker's diagnostic codes (score-tracker.md).
/// (`invalid-property`: a key dropped because its value is not JSON, issue 37 item 9;
/// `consent`: events dropped while nothing is granted, once per such period, item 3.)
let scoreCodes: Set<String> = ["invalid-event", "invalid-property", "consent", "storage"]

@Suite struct PaywallScorePropertyTests {
    static let context = RunContextInput(
        appVersion: "1.0.0", build: nil, platform: .ios, osVersion: "18.1",
        locale: "en-US", timezone: "Europe/Paris")

    mutating func hostileJSON(_ rng: inout SplitMix64, depth: Int = 0) -> JSONValue {
        switch rng.below(depth > 2 ? 5 : 7) {
        case 0: return .null
        case 1: return .bool(rng.chance(50))
        case 2: return .number(rng.hostileNumber())
        case 3, 4: return .string(rng.hostileString())
        case 5: return .array((0..<rng.below(4)).map { _ in hostileJSON(&rng, depth: depth + 1) })
        default:
            var o = JSONObject()
            for _ in 0..<rng.below(5) { o[rng.hostileKey()] = hostileJSON(&rng, depth: depth + 1) }
            return .object(o)
        }
    }

    /// A plausible info object with some fields replaced by hostile values.
    mutating func infoJSON(_ rng: inout SplitMix64) -> JSONValue {
        var o = JSONObject()
        let studio = rng.chance(50)
        if studio {
            o["moment"] = .string("after_onboarding")
            o["paywallId"] = .string("pw_\(rng.below(9))")
            o["renderMode"] = .string("elements")
            o["billing"] = .string("store")
            o["audienceId"] = rng.chance(50) ? .null : .string("aud_\(rng.below(9))")
        } else {
            o["provider"] = .string("external")
            o["externalPaywallId"] = .string("ext_\(rng.below(9))")
            o["providerName"] = .string("RevenueCat")
        }
        o["surface"] = .string(rng.chance(90) ? "present" : rng.pick(["paywall_step", "sheet"]))
        if rng.chance(20) {
            o["onboardingRun"] = .object(
                JSONObject([
                    ("runId", .string(rng.chance(50) ? IDs.uuidV4() : rng.hostileString())),
                    ("stepKey", .string(rng.hostileKey())),
                ]))
        }
        for _ in 0..<(rng.chance(30) ? 1 : 0) {
            o[rng.pick(["moment", "paywallId", "audienceId", "variantKey", "deploymentId", "placement", rng.hostileKey()])] = hostileJSON(
                &rng)
        }
        return rng.chance(5) ? hostileJSON(&rng) : .object(o)
    }

    mutating func outcomeJSON(_ rng: inout SplitMix64) -> JSONValue {
        var o = JSONObject()
        o["status"] = .string(rng.pick(["purchased", "dismissed", "cancelled", "error", "refunded", ""]))
        if rng.chance(40) { o["reason"] = rng.chance(70) ? .string(rng.hostileString()) : hostileJSON(&rng) }
        if rng.chance(40) {
            var t = JSONObject()
            t["originalTransactionIdentifier"] = .string(rng.hostileString())
            t["productId"] = rng.chance(80) ? .string("pro") : hostileJSON(&rng)
            if rng.chance(30) { t["restored"] = rng.chance(50) ? .bool(true) : hostileJSON(&rng) }
            o["transaction"] = .object(t)
        }
        return rng.chance(5) ? hostileJSON(&rng) : .object(o)
    }

    @Test(arguments: Soak.seeds("paywall-properties")) mutating func paywallRandomCallSequencesConform(seed: UInt64) async {
        var rng = SplitMix64(seed: seed)
        let sequences = Soak.scale(300, soak: 6_000)
        var sent = 0
        var captured = 0
        for n in 0..<sequences {
            let clock = ManualClock()
            let sink = RecordingSink<PaywallSnapshot>(destination: "https://collector.example/paywall") { i, _ in
                i % 5 == 2 ? .result(.transient) : i % 13 == 7 ? .result(SinkResult(.rejected, reason: "bad")) : .result(.accepted)
            }
            let diags = DiagnosticLog()
            let tracker = PaywallPresentationTracker(
                configuration: PaywallTrackerConfiguration(
                    sink: sink, context: .value(Self.context), storage: InMemoryKeyValueStorage(), clock: clock, scheduler: clock,
                    onDiagnostic: diags.handler))
            var handles: [PaywallPresentation] = []
            var problems: [String] = []
            for _ in 0..<(3 + rng.below(25)) {
                let before = diags.all.count
                switch rng.below(8) {
                case 0, 1:
                    let info = infoJSON(&rng)
                    if let h = tracker.start(json: info) {
                        handles.append(h)
                    } else if diags.all.count == before {
                        problems.append("a refused start reported nothing")
                    }
                case 2: rng.chance(50) ? () : (handles.isEmpty ? () : rng.pick(handles).shown())
                case 3: if !handles.isEmpty { rng.pick(handles).end(json: outcomeJSON(&rng)) }
                case 4:
                    if !handles.isEmpty {
                        rng.pick(handles).end(
                            rng.pick([
                                .dismissed, .cancelled, .restored, .error(rng.hostileString()), .error(nil),
                                .purchased(
                                    PaywallTransactionInfo(
                                        originalTransactionIdentifier: rng.hostileString(),
                                        purchaseToken: rng.hostileString(), productId: "p")),
                            ]))
                    }
                case 5: if !handles.isEmpty { rng.pick(handles).shown() }
                case 6: await clock.advance(byMs: Int64(rng.below(5_000)))
                default: if rng.chance(10) { tracker.dispose() }
                }
            }
            await clock.settle()
            for _ in 0..<6 { await clock.advance(byMs: 60_000) }
            var previous: [String: JSONValue] = [:]
            for s in sink.received {
                sent += 1
                let json = s.wireJSON()
                let v = ContractChecker.paywallPresentation(json, previous: previous[s.presentationId])
                if !v.isEmpty { problems.append("\(s.presentationId) seq \(s.seq): \(v[0])") }
                previous[s.presentationId] = json
            }
            if captured < 60, let last = sink.received.last {
                PayloadCapture.record(last.wireBytes(), schema: .paywallPresentationV1_1)
                captured += 1
            }
            for d in diags.all where !paywallCodes.contains(d.code.rawValue) { problems.append("code \(d.code) not in the spec's list") }
            tracker.dispose()
            for p in problems.prefix(5) { Issue.record("seed=\(seed) sequence \(n): \(p)") }
            if !problems.isEmpty { break }
        }
        print("[reliability] paywall properties: \(sequences) sequences, \(sent) snapshots checked")
    }

    /// A hostile `props` value for Score (`[String: Any]` allows anything).
    mutating func anyValue(_ rng: inout SplitMix64, depth: Int = 0) -> Any {
        switch rng.below(depth > 2 ? 8 : 10) {
        case 0: return rng.hostileString()
        case 1: return rng.hostileNumber()
        case 2: return (1 << 53) + 1
        case 3: return Int.min
        case 4: return rng.chance(50)
        case 5: return Float.nan
        case 6: return Date()
        case 7: return NSNull()
        case 8: return (0..<rng.below(4)).map { _ in anyValue(&rng, depth: depth + 1) }
        default:
            var d: [String: Any] = [:]
            for _ in 0..<rng.below(4) { d[rng.hostileKey()] = anyValue(&rng, depth: depth + 1) }
            return d
        }
    }

    @Test(arguments: Soak.seeds("score-properties")) mutating func scoreRandomCallSequencesConform(seed: UInt64) async {
        var rng = SplitMix64(seed: seed)
        let sequences = Soak.scale(200, soak: 4_000)
        var events = 0
        for n in 0..<sequences {
            let clock = ManualClock()
            let transport = RecordingTransport(statuses: { i in [200, 200, 500, 0, 413, 200][i % 6] })
            let diags = DiagnosticLog()
            let client = ScoreClient(
                configuration: ScoreConfiguration(
                    publishableKey: "pk_test_prop", siteId: "prop-site", endpoint: "https://score.example/", appVersion: "1.0",
                    os: "Linux", pii: .denylist(["email"]), initialConsent: rng.chance(80) ? .all : nil,
                    store: InMemoryScoreStore(), transport: transport, clock: clock, scheduler: clock,
                    onDiagnostic: diags.handler))
            var problems: [String] = []
            for _ in 0..<(3 + rng.below(30)) {
                var props: [String: Any] = [:]
                for _ in 0..<rng.below(5) { props[rng.hostileKey()] = anyValue(&rng) }
                switch rng.below(9) {
                case 0, 1, 2: client.track(rng.chance(70) ? "product_view" : rng.hostileString(), properties: props)
                case 3: client.screen(rng.hostileString(), properties: props)
                case 4:
                    client.identify(
                        userId: rng.chance(70) ? "user_\(rng.below(3))" : rng.hostileString(), traits: props,
                        replayAnonymousEvents: rng.chance(50))
                case 5: client.setConsent(analytics: rng.chance(70), personalization: rng.chance(50), advertising: rng.chance(50))
                case 6: _ = await onClock(clock) { (try? await client.flush()) != nil }
                case 7: client.trackAdvertising(rng.hostileString(), properties: props, delivery: rng.chance(50) ? .critical : .bestEffort)
                default: if rng.chance(20) { client.reset() }
                }
            }
            _ = await onClock(clock) { (try? await client.flush()) != nil }
            await clock.settle()
            if (try? WireJSON.decode(Array(client.inspectJSON().utf8))) == nil { problems.append("inspectJSON() is not JSON") }
            for r in transport.requests where r.url.hasSuffix("/api/events") {
                guard let body = try? WireJSON.decode(r.body ?? []), let list = body["events"]?.arrayValue else {
                    problems.append("an events body is not JSON")
                    continue
                }
                for e in list {
                    events += 1
                    let name = e["name"]?.stringValue ?? ""
                    let count = name.unicodeScalars.count
                    if !(1...128).contains(count) { problems.append("event name of \(count) code points") }
                    if !IDs.isLowercaseUUID(e["eventId"]?.stringValue ?? "") { problems.append("bad eventId") }
                    if !Timestamp.matchesPattern(e["timestamp"]?.stringValue ?? "") { problems.append("bad timestamp") }
                    if !["track", "screen", "identify"].contains(e["type"]?.stringValue ?? "") { problems.append("bad type") }
                    if e["props"]?.objectValue == nil { problems.append("props is not an object") }
                }
            }
            for d in diags.all where !scoreCodes.contains(d.code.rawValue) { problems.append("code \(d.code) not in the list") }
            for p in problems.prefix(5) { Issue.record("seed=\(seed) sequence \(n): \(p)") }
            if !problems.isEmpty { break }
        }
        print("[reliability] score properties: \(sequences) sequences, \(events) events checked")
    }
}
