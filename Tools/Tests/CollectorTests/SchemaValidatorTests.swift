import CollectorKit
import Foundation
import Testing
import TrackerCore
import TrackerCoreTestKit

@Suite struct SchemaValidatorTests {
    let schemas: ContractSchemas

    init() throws { schemas = try ContractSchemas(directory: Fixtures.contracts) }

    @Test func everyValidOnboardingExamplePassesSchemaAndRules() throws {
        let files = ContractExamples.valid(.onboardingRun)
        #expect(files.count == 20)
        for file in files {
            let value = try WireJSON.decode(ContractExamples.bytes(file))
            #expect(schemas.onboardingRun.validate(value) == [], "\(file)")
            #expect(ContractRules.onboardingRunViolation(value) == nil, "\(file)")
        }
    }

    @Test func everyValidPaywallExamplePassesItsSchemaAndRules() throws {
        for file in ContractExamples.valid(.paywallPresentation) {
            let value = try WireJSON.decode(ContractExamples.bytes(file))
            #expect(schemas.paywallV1.validate(value) == [], "\(file)")
            #expect(schemas.paywallV1_1.validate(value) == [], "v1 snapshots are valid v1.1: \(file)")
            #expect(ContractRules.paywallViolation(value) == nil, "\(file)")
            #expect(WireJSON.encode(value).count <= Collector.maxPaywallBytes)
        }
        let v11 = ContractExamples.valid(.paywallPresentationV1_1)
        #expect(v11.count == 2)
        for file in v11 {
            let value = try WireJSON.decode(ContractExamples.bytes(file))
            #expect(schemas.paywallV1_1.validate(value) == [], "\(file)")
            #expect(!schemas.paywallV1.validate(value).isEmpty, "a provider snapshot is not v1: \(file)")
            #expect(ContractRules.paywallViolation(value) == nil, "\(file)")
        }
    }

    @Test func everyInvalidPaywallExampleFailsSchemaOrRules() throws {
        let files = ContractExamples.invalid(.paywallPresentation)
        #expect(files.count == 5)
        for file in files {
            let value = try WireJSON.decode(ContractExamples.bytes(file))
            let broken = !schemas.paywallV1.validate(value).isEmpty || ContractRules.paywallViolation(value) != nil
            if file.hasSuffix("immutable-paywall-changed-after-seq1.json") {
                // Valid on its own; rejected only against a stored seq 1 (AcceptanceTests).
                #expect(!broken, "\(file)")
            } else {
                #expect(broken, "\(file)")
            }
        }
        let priced = try Fixtures.example("paywall-presentation/invalid/no-price-unknown-transaction-field-closed-schema.json")
        #expect(schemas.paywallV1.validate(priced).contains { $0.message == "unknown member price" })
    }

    @Test func onboardingSchemaCatchesTypicalBreaks() throws {
        let base = try Fixtures.example("onboarding-run/studio-1-mid-flow.json")
        let v = schemas.onboardingRun
        #expect(!v.validate(base.with("status", "quit")).isEmpty)
        #expect(!v.validate(base.with("country", "FR")).isEmpty)
        #expect(!v.validate(base.with("seq", 0)).isEmpty)
        #expect(!v.validate(base.with("seq", 1.5)).isEmpty)
        #expect(!v.validate(base.with("schema_version", 2)).isEmpty)
        #expect(!v.validate(base.with("truncated", false)).isEmpty)
        #expect(!v.validate(base.with("sent_at", "2026-01-10T08:00:00Z")).isEmpty)
        #expect(!v.validate(base.with("run_id", "00000000-0000-4000-8000-00000000000A")).isEmpty)
        // if/then/else on completed_at.
        #expect(!v.validate(base.with("completed_at", "2026-01-10T08:00:20.000Z")).isEmpty)
        #expect(!v.validate(base.with("status", "completed")).isEmpty)
        // $ref + anyOf, propertyNames, maxLength in code points.
        #expect(!v.validate(base.with(path: ["onboarding", "variant_key"], "has space")).isEmpty)
        #expect(v.validate(base.with(path: ["onboarding", "variant_key"], .null)).isEmpty)
        #expect(!v.validate(base.with(path: ["properties", "Bad"], 1)).isEmpty)
        let emoji = String(repeating: "👍🏽", count: 128)  // 256 code points, 128 graphemes
        #expect(v.validate(base.with(path: ["properties", "note"], .string(emoji))).isEmpty)
        #expect(!v.validate(base.with(path: ["properties", "note"], .string(emoji + "e"))).isEmpty)
        #expect(!v.validate(base.with(path: ["context", "app_version"], .string(String(repeating: "e\u{301}", count: 17)))).isEmpty)
        // A pattern anchored with $ does not accept a trailing newline.
        #expect(!v.validate(base.with(path: ["onboarding", "key"], "abc\n")).isEmpty)
        // oneOf over answers: a numeric answer with a string value matches no branch.
        var steps = base["steps"]!.arrayValue!
        steps[0] = steps[0].with("answers", [["question_key": "q", "kind": "numeric", "value": "3"]])
        #expect(!v.validate(base.with("steps", .array(steps))).isEmpty)
        steps[0] = steps[0].with("answers", [["question_key": "q", "kind": "multi", "value": ["a", "a"]]])
        #expect(!v.validate(base.with("steps", .array(steps))).isEmpty, "uniqueItems")
    }

    @Test func rulesBeyondTheSchema() throws {
        let base = try Fixtures.example("onboarding-run/studio-1-mid-flow.json")
        let steps = base["steps"]!.arrayValue!
        func check(_ s: JSONValue) -> String? { ContractRules.onboardingRunViolation(s) }
        #expect(
            check(base.with("steps", .array([steps[0], steps[1], steps[2].with("step_key", "nowhere")])))?.hasPrefix("onboarding.1") == true
        )
        var manifest = base["manifest"]!["steps"]!.arrayValue!
        manifest.append(["step_key": "late", "slot": "plan"])
        #expect(check(base.with(path: ["manifest", "steps"], .array(manifest)))?.hasPrefix("onboarding.2") == true)
        #expect(check(base.with("started_at", "2026-01-10T07:00:00.000Z"))?.hasPrefix("onboarding.4") == true)
        #expect(check(base.with("steps", .array([steps[1], steps[0], steps[2]])))?.hasPrefix("onboarding.3") == true)
        let closedLast = steps[2].with("exited_at", "2026-01-10T08:00:30.000Z")
        #expect(check(base.with("steps", .array([steps[0], steps[1], closedLast])))?.hasPrefix("onboarding.6") == true)
        #expect(check(base.with("truncated", true).with("steps", .array([steps[0], steps[1], closedLast]))) == nil)
        let done = base.with("status", "completed").with("completed_at", "2026-01-10T08:00:40.000Z")
        #expect(check(done.with("steps", .array([steps[0], steps[1], closedLast])))?.hasPrefix("onboarding.7") == true)
        #expect(check(done.with("truncated", true).with("steps", .array([steps[0], steps[1], closedLast]))) == nil)
        let twice = steps[0].with(
            "answers", [["question_key": "q", "kind": "single", "value": "a"], ["question_key": "q", "kind": "single", "value": "b"]])
        #expect(check(base.with("steps", .array([twice, steps[1], steps[2]])))?.hasPrefix("onboarding.8") == true)
        let backwards = steps[0].with("exited_at", "2026-01-10T07:59:59.999Z")
        #expect(check(base.with("steps", .array([backwards, steps[1], steps[2]])))?.hasPrefix("onboarding.5") == true)
    }

    @Test func unsupportedKeywordsFailLoading() {
        #expect(throws: SchemaLoadError.self) { try JSONSchemaValidator(schema: ["dependentRequired": ["a": ["b"]]]) }
        #expect(throws: SchemaLoadError.self) { try JSONSchemaValidator(schema: ["$ref": "#/$defs/missing"]) }
    }
}
