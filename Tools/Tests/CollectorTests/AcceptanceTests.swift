import CollectorKit
import Foundation
import Testing
import TrackerCore
import TrackerCoreTestKit

/// Onboarding-run contract section 12.2 (cases A1–A15) and the paywall server model
/// (paywall.md section 5.1, scenarios 52–54).
@Suite struct AcceptanceTests {
    let mid: JSONValue  // in_progress, seq 3
    let done: JSONValue  // completed, seq 8 (same run)

    init() throws {
        mid = try Fixtures.example("onboarding-run/studio-1-mid-flow.json")
        done = try Fixtures.example("onboarding-run/studio-2-completed.json")
    }

    /// Stores `stored` (when given), then sends `incoming`; returns the incoming verdict.
    func run(stored: JSONValue?, incoming: JSONValue) throws -> (Verdict, Collector) {
        let c = try Fixtures.collector()
        if let stored { #expect(c.ingestOnboardingRun(body: Fixtures.bytes(stored), sender: "s").outcome == .accepted) }
        return (c.ingestOnboardingRun(body: Fixtures.bytes(incoming), sender: "s"), c)
    }

    @Test func A1_nothingStored_validInProgress_accepted() throws {
        let (v, c) = try run(stored: nil, incoming: mid)
        #expect(v.outcome == .accepted)
        #expect(String(decoding: v.responseBody, as: UTF8.self) == #"{"outcome":"accepted"}"#)
        #expect(v.httpStatus == 200)
        #expect(try c.storedRun(sender: "s", runId: "00000000-0000-4000-8000-000000000001")?.seq == 3)
    }

    @Test func A2_inProgress3_completed8_accepted() throws {
        let (v, c) = try run(stored: mid, incoming: done)
        #expect(v.outcome == .accepted)
        let stored = try c.storedRun(sender: "s", runId: "00000000-0000-4000-8000-000000000001")
        #expect(stored?.seq == 8 && stored?.status == "completed")
    }

    @Test func A3_inProgress3_inProgress4_accepted() throws {
        #expect(try run(stored: mid, incoming: mid.with("seq", 4)).0.outcome == .accepted)
    }

    @Test func A4_identicalRetry_ignored() throws {
        let (v, _) = try run(stored: mid, incoming: mid)
        #expect(v.outcome == .ignored)
        #expect(String(decoding: v.responseBody, as: UTF8.self) == #"{"outcome":"ignored"}"#)
    }

    @Test func A5_sameSeqDifferentBody_ignoredAndLogged() throws {
        let (v, c) = try run(stored: mid, incoming: mid.with("sent_at", "2026-01-10T08:00:21.000Z"))
        #expect(v.outcome == .ignored)
        #expect(v.note == "retry-body-mismatch")
        #expect(try c.storedRun(sender: "s", runId: "00000000-0000-4000-8000-000000000001")?.body.contains("08:00:20.000Z") == true)
    }

    @Test func A6_lowerSeq_ignored() throws {
        #expect(try run(stored: mid, incoming: mid.with("seq", 2)).0.outcome == .ignored)
    }

    @Test func A7_completed8_inProgress9_ignored() throws {
        #expect(try run(stored: done, incoming: mid.with("seq", 9)).0.outcome == .ignored)
    }

    @Test func A8_completed8_completed9_ignored() throws {
        #expect(try run(stored: done, incoming: done.with("seq", 9)).0.outcome == .ignored)
    }

    @Test func A9_statusQuit_rejected() throws {
        let (v, _) = try run(stored: mid, incoming: mid.with("seq", 4).with("status", "quit"))
        #expect(v.outcome == .rejected)
        #expect(v.httpStatus == 400)
        #expect(v.reason?.hasPrefix("schema:") == true)
        let body = try WireJSON.decode(v.responseBody)
        #expect(body["outcome"] == "rejected" && body["reason"]?.stringValue != nil)
    }

    @Test func A10_differentOnboardingVersion_rejected() throws {
        let (v, _) = try run(stored: mid, incoming: mid.with("seq", 4).with(path: ["onboarding", "version"], "413"))
        #expect(v.outcome == .rejected)
        #expect(v.reason?.contains("onboarding differs") == true)
    }

    @Test func A11_completedStored_schemaFailure_ignored() throws {
        #expect(try run(stored: done, incoming: mid.with("seq", 9).with("status", "quit")).0.outcome == .ignored)
    }

    @Test func A12_differentManifest_rejected() throws {
        var steps = mid["manifest"]!["steps"]!.arrayValue!
        steps.append(["step_key": "bonus"])
        let (v, _) = try run(stored: mid, incoming: mid.with("seq", 4).with(path: ["manifest", "steps"], .array(steps)))
        #expect(v.outcome == .rejected)
        #expect(v.reason?.contains("manifest differs") == true)
    }

    @Test func A13_over256KiB_rejected() throws {
        // Valid in every other respect: 6 visits of `welcome`, 50 text answers of 1,000 characters each.
        let answers: [JSONValue] = (0..<50).map { i in
            ["question_key": .string("q\(i)"), "kind": "text", "value": .string(String(repeating: "x", count: 1000))]
        }
        let at: JSONValue = "2026-01-10T08:00:00.000Z"
        let entries: [JSONValue] = (0..<6).map { i in
            ["step_key": "welcome", "entered_at": at, "exited_at": i == 5 ? .null : at, "answers": .array(answers)]
        }
        let big = mid.with("seq", 4).with("steps", .array(entries))
        #expect(WireJSON.encode(big).count > 262_144)
        let schemas = try ContractSchemas(directory: Fixtures.contracts)
        #expect(schemas.onboardingRun.validate(big) == [] && ContractRules.onboardingRunViolation(big) == nil)
        let (v, _) = try run(stored: mid, incoming: big)
        #expect(v.outcome == .rejected)
        #expect(v.reason?.contains("262144") == true)
        // D8: over the limit but the stored run is completed → ignored (rule 1 first).
        #expect(try run(stored: done, incoming: big.with("seq", 9)).0.outcome == .ignored)
    }

    @Test func A14_absentVariantKeyEqualsNull_accepted() throws {
        #expect(mid["onboarding"]?["variant_key"] == nil)
        #expect(try run(stored: mid, incoming: mid.with("seq", 4).with(path: ["onboarding", "variant_key"], .null)).0.outcome == .accepted)
    }

    @Test func A15_keyOrderIgnored_accepted() throws {
        let onboarding = JSONValue.object(JSONObject(mid["onboarding"]!.objectValue!.entries.reversed().map { ($0.key, $0.value) }))
        let manifest: [JSONValue] = mid["manifest"]!["steps"]!.arrayValue!.map { step in
            .object(JSONObject(step.objectValue!.entries.reversed().map { ($0.key, $0.value) }))
        }
        let incoming = mid.with("seq", 4).with("onboarding", onboarding).with(path: ["manifest", "steps"], .array(manifest))
        #expect(try run(stored: mid, incoming: incoming).0.outcome == .accepted)
    }

    @Test func runsAreKeyedBySender() throws {
        let c = try Fixtures.collector()
        #expect(c.ingestOnboardingRun(body: Fixtures.bytes(done), sender: "a").outcome == .accepted)
        #expect(c.ingestOnboardingRun(body: Fixtures.bytes(mid), sender: "b").outcome == .accepted)
    }

    @Test func D18_manifestConflictIsStoredButFlagged_draftsExempt() throws {
        let c = try Fixtures.collector()
        #expect(c.ingestOnboardingRun(body: Fixtures.bytes(mid), sender: "s").outcome == .accepted)
        var steps = mid["manifest"]!["steps"]!.arrayValue!
        steps.removeLast()
        let other = mid.with("run_id", "00000000-0000-4000-8000-0000000000aa").with(path: ["manifest", "steps"], .array(steps))
        let v = c.ingestOnboardingRun(body: Fixtures.bytes(other), sender: "s")
        #expect(v.outcome == .accepted)
        #expect(v.note == "version-conflict")
        #expect(try c.storedRun(sender: "s", runId: "00000000-0000-4000-8000-0000000000aa")?.versionConflict == true)
        // A later snapshot of the conflicting run stays flagged.
        #expect(c.ingestOnboardingRun(body: Fixtures.bytes(other.with("seq", 4)), sender: "s").note == "version-conflict")
        // Drafts: no canonical manifest, no flag.
        let draft = mid.with(path: ["onboarding", "version"], "draft")
        #expect(
            c.ingestOnboardingRun(body: Fixtures.bytes(draft.with("run_id", "00000000-0000-4000-8000-0000000000d1")), sender: "s").note
                == nil)
        let draft2 = draft.with("run_id", "00000000-0000-4000-8000-0000000000d2").with(path: ["manifest", "steps"], .array(steps))
        let dv = c.ingestOnboardingRun(body: Fixtures.bytes(draft2), sender: "s")
        #expect(dv.outcome == .accepted && dv.note == nil)
        #expect(try c.canonicalManifest(key: mid["onboarding"]!["key"]!.stringValue!, version: "draft") == nil)
    }

    @Test func nonJSONAndRuleBreaksAreRejected() throws {
        let c = try Fixtures.collector()
        #expect(c.ingestOnboardingRun(body: Array("nope".utf8), sender: "s").outcome == .rejected)
        let broken = mid.with("started_at", "2026-01-10T07:00:00.000Z")
        let v = c.ingestOnboardingRun(body: Fixtures.bytes(broken), sender: "s")
        #expect(v.outcome == .rejected && v.reason?.hasPrefix("onboarding.4.started-at-first-entry") == true)
    }

    @Test func rocalyticsBodyIsStrippedOfPreV1Keys() throws {
        let c = try Fixtures.collector()
        let body = mid.with("responses", .array([])).with("onboarding_metadata", ["run_id": "x"])
        #expect(c.ingestOnboardingRun(body: Fixtures.bytes(body), sender: "s").outcome == .rejected)
        let v = c.ingestOnboardingRun(body: Fixtures.bytes(body), sender: "s", stripping: ["responses", "onboarding_metadata"])
        #expect(v.outcome == .accepted)
        #expect(try c.storedRun(sender: "s", runId: "00000000-0000-4000-8000-000000000001")?.body.contains("responses") == false)
    }

    // MARK: paywall (paywall.md 5.1, scenarios 52–54)

    func paywall(_ name: String) throws -> JSONValue { try Fixtures.example("paywall-presentation/" + name + ".json") }

    @Test func P52_acceptanceSequence() throws {
        let s1 = try paywall("purchased-android-1-start-in-progress")
        let s2 = try paywall("purchased-android-2-shown-in-progress")
        let s3 = try paywall("purchased-android-3-ended-purchased")
        func send(_ c: Collector, _ v: JSONValue) -> Outcome { c.ingestPaywallPresentation(body: Fixtures.bytes(v), sender: "s").outcome }
        var c = try Fixtures.collector()
        #expect(send(c, s1) == .accepted)
        #expect(send(c, s2) == .accepted)
        #expect(send(c, s1) == .ignored)
        #expect(send(c, s2) == .ignored)
        #expect(send(c, s3) == .accepted)
        #expect(send(c, s2.with("seq", 9)) == .ignored)
        c = try Fixtures.collector()
        #expect(send(c, s1) == .accepted)
        let changed = c.ingestPaywallPresentation(
            body: Fixtures.bytes(try paywall("invalid/immutable-paywall-changed-after-seq1")), sender: "s")
        #expect(changed.outcome == .rejected && changed.reason?.hasPrefix("paywall.p6.immutable at $.paywall") == true)
        c = try Fixtures.collector()
        #expect(send(c, try paywall("invalid/reason-only-with-error-status")) == .rejected)
    }

    @Test func P53_P54_transactionRulesAndNoPrice() throws {
        let c = try Fixtures.collector()
        for name in [
            "transaction-only-with-purchased-status", "transaction-never-empty", "no-price-unknown-transaction-field-closed-schema",
        ] {
            let v = c.ingestPaywallPresentation(body: Fixtures.bytes(try paywall("invalid/" + name)), sender: "s")
            #expect(v.outcome == .rejected, "\(name)")
        }
    }

    @Test func paywallV1_1AndSizeLimit() throws {
        let c = try Fixtures.collector()
        for name in ["external-start", "native-start"] {
            let value = try Fixtures.example("paywall-presentation-v1_1/\(name).json")
            // Both examples share one presentation id: send them as two senders.
            #expect(c.ingestPaywallPresentation(body: Fixtures.bytes(value), sender: name).outcome == .accepted, "\(name)")
        }
        let external = try Fixtures.example("paywall-presentation-v1_1/external-start.json")
        // A provider snapshot that claims schema_version 1 fails (v1 schema is closed).
        let relabelled = external.with("presentation_id", "0192f1a2-7c3d-7e4f-8a5b-6c7d8e9f0aff").with("schema_version", 1)
        #expect(c.ingestPaywallPresentation(body: Fixtures.bytes(relabelled), sender: "s").outcome == .rejected)
        let s1 = try paywall("purchased-android-1-start-in-progress")
        let huge = s1.with(path: ["context", "timezone"], "Europe/Paris").with("padding", .string(String(repeating: "x", count: 17_000)))
        let v = c.ingestPaywallPresentation(body: Fixtures.bytes(huge), sender: "s")
        #expect(v.outcome == .rejected && v.reason?.contains("16384") == true)
    }
}
