// The one onboarding run checker with the server's verdict (issue 16), used by the collector
// and the Onboarding package's test harness.
//
// New scenario ids:
// - OV1: the verdict's steps in the server's order (completed, size, conformance, first,
//   onboarding, manifest, seq), each with the outcome the server answers.
// - OV2: sameness is the server's canonical one (member order and null members ignored), not
//   `semanticallyEquals`, which tells a null member from an absent one.
// - OV3: Core's own conformance step (the typed shape and rules 1-8) rejects a snapshot that
//   breaks a contract rule, and accepts every valid example as a first snapshot.
import Testing
import TrackerCore
import TrackerCoreTestKit

@Suite struct OnboardingRunVerdictTests {
    static func example(_ name: String) throws -> JSONValue {
        try WireJSON.decode(try ContractExamples.bytes(ContractExamples.contractsDirectory + "/examples/onboarding-run/" + name))
    }

    /// `value` with its member `key` set to `new` (removed when `nil`).
    static func with(_ value: JSONValue, _ key: String, _ new: JSONValue?) -> JSONValue {
        guard case .object(var object) = value else { return value }
        object[key] = new
        return .object(object)
    }

    @Test func OV1_verdictStepsInServerOrder() throws {
        let s1 = try Self.example("studio-1-mid-flow.json")
        let s2 = try Self.example("studio-2-completed.json")
        #expect(ContractChecker.onboardingRunVerdict(incoming: s1, stored: nil) == .acceptedFirst)
        #expect(ContractChecker.onboardingRunVerdict(incoming: s2, stored: s1) == .acceptedHigherSeq)
        #expect(ContractChecker.onboardingRunVerdict(incoming: s1, stored: s1) == .ignoredRetry)
        let resent = Self.with(s1, "sent_at", "2030-01-01T00:00:00.000Z")
        let mismatch = ContractChecker.onboardingRunVerdict(incoming: resent, stored: s1)
        #expect(mismatch == .ignoredRetryBodyMismatch && mismatch.outcome == .ignored)
        let stale = ContractChecker.onboardingRunVerdict(incoming: s1, stored: Self.with(s2, "status", "in_progress"))
        #expect(stale == .ignoredStale(storedSeq: 8) && stale.outcome == .ignored)
        // A completed stored snapshot wins over everything, even an oversized or broken incoming one.
        let done = ContractChecker.onboardingRunVerdict(incoming: .object([:]), stored: s2, size: 1 << 20)
        #expect(done == .ignoredCompleted && done.outcome == .ignored)
        // Size comes before conformance, which is never asked.
        let big = ContractChecker.onboardingRunVerdict(incoming: s1, stored: nil, size: ContractChecker.onboardingRunMaxBytes + 1) {
            _ -> [String] in
            Issue.record("conformance checked after the size step")
            return []
        }
        #expect(big == .rejectedTooLarge(bytes: 262_145) && big.outcome == .rejected)
        #expect(
            ContractChecker.onboardingRunVerdict(incoming: s1, stored: nil, size: ContractChecker.onboardingRunMaxBytes).outcome
                == .accepted)
        // Conformance comes before the stored comparisons.
        let broken = ContractChecker.onboardingRunVerdict(incoming: s2, stored: s1) { _ in ["no"] }
        #expect(broken == .rejectedNonconformant(["no"]) && broken.outcome == .rejected)
        // Identity, then manifest, then seq: a higher seq with a changed onboarding is rejected.
        let otherVersion = Self.with(s2, "onboarding", ["key": s1["onboarding"]?["key"] ?? .null, "version": "413"])
        let changed = ContractChecker.onboardingRunVerdict(incoming: otherVersion, stored: s1) { _ -> [String] in [] }
        #expect(changed == .rejectedOnboardingChanged && changed.outcome == .rejected)
        let otherManifest = Self.with(Self.with(s2, "manifest", ["steps": []]), "onboarding", ["version": "999", "key": "k"])
        #expect(
            ContractChecker.onboardingRunVerdict(incoming: otherManifest, stored: s1) { _ -> [String] in [] } == .rejectedOnboardingChanged)
        let manifestOnly = ContractChecker.onboardingRunVerdict(incoming: Self.with(s2, "manifest", ["steps": []]), stored: s1) {
            _ -> [String] in []
        }
        #expect(manifestOnly == .rejectedManifestChanged && manifestOnly.outcome == .rejected)
    }

    @Test func OV2_samenessIsCanonicalNotSemantic() throws {
        let a: JSONValue = ["x": 1, "y": .null, "z": ["b": true, "a": [1, 2]]]
        let b: JSONValue = ["z": ["a": [1, 2], "b": true], "x": 1]
        #expect(ContractChecker.canonicallySame(a, b))
        #expect(!a.semanticallyEquals(b))
        #expect(ContractChecker.canonicalText(a) == #"{"x":1,"z":{"a":[1,2],"b":true}}"#)
        #expect(ContractChecker.canonicallySame(nil, .null))
        #expect(!ContractChecker.canonicallySame(["a": [1, 2]], ["a": [2, 1]]))
        #expect(!ContractChecker.canonicallySame(["a": 1], ["a": "1"]))
        // A stored snapshot that differs only by an explicit null member is a plain retry, and an
        // onboarding with `variant_key: null` is the same onboarding as one without it.
        let s1 = try Self.example("studio-1-mid-flow.json")
        let withNull = Self.with(
            s1, "onboarding",
            ["version": s1["onboarding"]?["version"] ?? .null, "key": s1["onboarding"]?["key"] ?? .null, "variant_key": .null])
        #expect(ContractChecker.onboardingRunVerdict(incoming: withNull, stored: s1) { _ -> [String] in [] } == .ignoredRetry)
    }

    @Test func OV3_coreConformanceStep() throws {
        for name in ["studio-1-mid-flow.json", "studio-2-completed.json", "truncated.json", "in-flow-variant.json"] {
            #expect(ContractChecker.onboardingRunVerdict(incoming: try Self.example(name), stored: nil) == .acceptedFirst, "\(name)")
        }
        let s1 = try Self.example("studio-1-mid-flow.json")
        var steps = s1["steps"]?.arrayValue ?? []
        try #require(!steps.isEmpty)
        steps[0] = Self.with(steps[0], "step_key", "not-in-manifest")
        let verdict = ContractChecker.onboardingRunVerdict(incoming: Self.with(s1, "steps", .array(steps)), stored: nil)
        guard case .rejectedNonconformant(let problems) = verdict else {
            Issue.record("\(verdict)")
            return
        }
        #expect(problems.map(\.rule).contains(.onboardingStepInManifest))
    }
}
