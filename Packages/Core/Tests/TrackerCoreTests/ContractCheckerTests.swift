import Foundation
import Testing
import TrackerCore
import TrackerCoreTestKit

@Suite struct ContractCheckerTests {
    static func load(_ path: String) throws -> JSONValue { try WireJSON.decode(try ContractExamples.bytes(path)) }
    static func name(_ path: String) -> String { URL(fileURLWithPath: path).lastPathComponent }

    @Test(arguments: ContractExamples.valid(.onboardingRun))
    func validOnboardingExamplesPass(_ path: String) throws {
        #expect(ContractChecker.onboardingRun(try Self.load(path)) == [])
    }

    @Test(arguments: ContractExamples.valid(.paywallPresentation) + ContractExamples.valid(.paywallPresentationV1_1))
    func validPaywallExamplesPass(_ path: String) throws {
        #expect(ContractChecker.paywallPresentation(try Self.load(path)) == [])
    }

    /// Each `invalid/` file breaks the rule it is named after.
    static let invalidRules: [String: ContractRule] = [
        "reason-only-with-error-status.json": .paywallReasonOnlyWithError,
        "transaction-only-with-purchased-status.json": .paywallTransactionOnlyWithPurchased,
        "transaction-never-empty.json": .paywallTransactionNeverEmpty,
        "no-price-unknown-transaction-field-closed-schema.json": .paywallSchemaShape,
        "immutable-paywall-changed-after-seq1.json": .paywallImmutable,
    ]

    @Test(arguments: ContractExamples.invalid(.paywallPresentation))
    func invalidPaywallExamplesFailTheirRule(_ path: String) throws {
        let rule = try #require(Self.invalidRules[Self.name(path)], "no rule mapped for \(Self.name(path))")
        let json = try Self.load(path)
        if rule == .paywallImmutable {
            // Valid on its own; rejected against the stored seq 1 of the same presentation.
            #expect(ContractChecker.paywallPresentation(json) == [])
            let seq1 = try Self.load(
                ContractExamples.valid(.paywallPresentation).first { $0.hasSuffix("purchased-android-1-start-in-progress.json") }!)
            #expect(seq1["presentation_id"] == json["presentation_id"])
            let violations = ContractChecker.paywallPresentation(json, previous: seq1)
            #expect(violations.map(\.rule) == [.paywallImmutable])
            #expect(violations.first?.path == "$.paywall")
        } else {
            let violations = ContractChecker.paywallPresentation(json)
            #expect(violations.map(\.rule) == [rule], "\(violations)")
        }
    }

    @Test func everyInvalidExampleIsMapped() {
        let names = Set(ContractExamples.invalid(.paywallPresentation).map(Self.name))
        #expect(names == Set(Self.invalidRules.keys))
        for c in ContractExamples.Contract.allCases where c != .paywallPresentation {
            #expect(ContractExamples.invalid(c).isEmpty)
        }
    }

    @Test func paywallSequenceIsImmutableCompliant() throws {
        let files = ContractExamples.valid(.paywallPresentation).filter { Self.name($0).hasPrefix("purchased-android-") }
        let snaps = try files.map(Self.load)
        for (a, b) in zip(snaps, snaps.dropFirst()) {
            #expect(ContractChecker.paywallPresentation(b, previous: a) == [])
        }
    }

    static func base() throws -> JSONObject {
        try Self.load(ContractExamples.valid(.onboardingRun).first { $0.hasSuffix("studio-2-completed.json") }!).objectValue!
    }

    /// Each §8 rule on a mutation of a valid completed snapshot.
    @Test func onboardingRulesDetectTheirBreaks() throws {
        func rules(_ f: (inout JSONObject) throws -> Void) throws -> [ContractRule] {
            var o = try Self.base()
            try f(&o)
            return ContractChecker.onboardingRun(.object(o)).map(\.rule)
        }
        func setStep(_ o: inout JSONObject, _ i: Int, _ key: String, _ v: JSONValue) {
            var steps = o["steps"]!.arrayValue!
            var e = steps[i].objectValue!
            e[key] = v
            steps[i] = .object(e)
            o["steps"] = .array(steps)
        }
        func setManifest(_ o: inout JSONObject, _ steps: [JSONValue]) { o["manifest"] = ["steps": .array(steps)] }

        #expect(try rules { setStep(&$0, 1, "step_key", "nowhere") } == [.onboardingStepInManifest])
        #expect(
            try rules { o in
                var m = o["manifest"]!["steps"]!.arrayValue!
                m.append(["step_key": "welcome"])
                setManifest(&o, m)
            } == [.onboardingManifestKeysDistinct])
        #expect(
            try rules { o in
                var m = o["manifest"]!["steps"]!.arrayValue!
                m.append(["step_key": "plan_late", "slot": "plan"])
                setManifest(&o, m)
            } == [.onboardingSlotContiguous])
        #expect(try rules { setStep(&$0, 2, "entered_at", "2026-01-10T07:00:00.000Z") }.contains(.onboardingEnteredAtOrder))
        #expect(try rules { $0["started_at"] = "2026-01-10T07:59:59.999Z" } == [.onboardingStartedAtFirstEntry])
        #expect(try rules { setStep(&$0, 0, "exited_at", "2026-01-09T00:00:00.000Z") } == [.onboardingExitAfterEntry])
        #expect(try rules { setStep(&$0, 0, "exited_at", nil) } == [.onboardingOpenEntry])
        #expect(
            try rules { o in
                let n = o["steps"]!.arrayValue!.count
                setStep(&o, n - 1, "exited_at", "2026-01-10T08:01:09.000Z")
            } == [.onboardingCompletedLastExit])
        #expect(
            try rules { o in
                // Truncated form: an earlier exit is fine, a later one is not.
                o["truncated"] = true
                let n = o["steps"]!.arrayValue!.count
                setStep(&o, n - 1, "exited_at", "2026-01-10T08:01:09.000Z")
            } == [])
        #expect(
            try rules { o in
                o["truncated"] = true
                let n = o["steps"]!.arrayValue!.count
                setStep(&o, n - 1, "exited_at", "2026-01-10T08:01:11.000Z")
            } == [.onboardingCompletedLastExit])
        #expect(
            try rules { o in
                // In progress, untruncated: the last entry must be open.
                o["status"] = "in_progress"
                o["completed_at"] = .null
            } == [.onboardingOpenEntry])
        #expect(
            try rules { o in
                setStep(
                    &o, 0, "answers",
                    [["question_key": "q", "kind": "single", "value": "a"], ["question_key": "q", "kind": "text", "value": "b"]])
            } == [.onboardingQuestionKeysDistinct])
        #expect(try rules { $0["country"] = "FR" } == [.onboardingSchemaShape])
    }

    @Test func paywallRulesDetectTheirBreaks() throws {
        let ended = try Self.load(
            ContractExamples.valid(.paywallPresentation).first { $0.hasSuffix("purchased-android-3-ended-purchased.json") }!
        ).objectValue!
        func rules(_ f: (inout JSONObject) -> Void) -> [ContractRule] {
            var o = ended
            f(&o)
            return ContractChecker.paywallPresentation(.object(o)).map(\.rule)
        }
        #expect(rules { $0["ended_at"] = .null } == [.paywallEndedIffStatusEnded])
        #expect(rules { $0["shown_at"] = "2026-01-10T08:59:59.000Z" } == [.paywallShownAfterStart])
        #expect(rules { $0["ended_at"] = "2026-01-10T09:00:00.100Z" } == [.paywallEndedAfterShown])
        #expect(rules { $0["sent_at"] = "2026-01-10T08:00:00.000Z" } == [.paywallSentAfterStart])
        #expect(rules { $0["shown_at"] = .null } == [.paywallPurchasedRequiresShown])
        #expect(
            rules { $0["onboarding_run"] = ["run_id": "0192f1a2-0000-7000-8000-000000000001", "step_key": "paywall"] } == [
                .paywallOnboardingRunOnlyOnStep
            ])
        #expect(
            rules { o in
                var p = o["paywall"]!.objectValue!
                p["variant_key"] = .string(String(repeating: "v", count: 17_000))
                o["paywall"] = .object(p)
            } == [.paywallMaxSize])
    }
}
