// The one paywall checker with the server's verdict (issue 16), used by Paywall's public checker
// and the collector.
//
// New scenario ids:
// - PV1: the verdict's steps in the server's order (ended, size, conformance, first, immutable,
//   seq), each with the outcome the server answers.
// - PV2: the hand-written schema check accepts every valid example and names the closed-schema
//   problem of the invalid one; v1 refuses a v1.1 snapshot.
import Testing
import TrackerCore
import TrackerCoreTestKit

@Suite struct PaywallVerdictTests {
    static func example(_ name: String) throws -> JSONValue {
        try WireJSON.decode(try ContractExamples.bytes(ContractExamples.contractsDirectory + "/examples/paywall-presentation/" + name))
    }

    @Test func PV1_verdictStepsInServerOrder() throws {
        let s1 = try Self.example("purchased-android-1-start-in-progress.json")
        let s2 = try Self.example("purchased-android-2-shown-in-progress.json")
        let s3 = try Self.example("purchased-android-3-ended-purchased.json")
        #expect(ContractChecker.paywallVerdict(incoming: s1, stored: nil) == .acceptedFirst)
        #expect(ContractChecker.paywallVerdict(incoming: s2, stored: s1) == .acceptedHigherSeq)
        #expect(ContractChecker.paywallVerdict(incoming: s2, stored: s2) == .ignoredRetry)
        #expect(ContractChecker.paywallVerdict(incoming: s1, stored: s2) == .ignoredStale(storedSeq: 2))
        // An ended stored snapshot wins over everything, even an oversized or broken incoming one.
        #expect(ContractChecker.paywallVerdict(incoming: .object([:]), stored: s3, size: 1 << 20) == .ignoredEnded)
        // Size comes before conformance, which is never asked.
        let big = ContractChecker.paywallVerdict(incoming: s1, stored: nil, size: ContractChecker.paywallMaxBytes + 1) { _ -> [String] in
            Issue.record("conformance checked after the size step")
            return []
        }
        #expect(big == .rejectedTooLarge(bytes: 16_385) && big.outcome == .rejected)
        #expect(ContractChecker.paywallVerdict(incoming: s1, stored: nil, size: ContractChecker.paywallMaxBytes).outcome == .accepted)
        let bad = ContractChecker.paywallVerdict(incoming: try Self.example("invalid/reason-only-with-error-status.json"), stored: nil)
        guard case .rejectedNonconformant(let problems) = bad else {
            Issue.record("\(bad)")
            return
        }
        #expect(problems.map(\.rule).contains(.paywallReasonOnlyWithError))
        let changed = ContractChecker.paywallVerdict(
            incoming: try Self.example("invalid/immutable-paywall-changed-after-seq1.json"), stored: s1)
        guard case .rejectedImmutable(let v) = changed else {
            Issue.record("\(changed)")
            return
        }
        #expect(v.rule == .paywallImmutable && v.path == "$.paywall")
        #expect(ContractChecker.paywallImmutability(s2, previous: s1) == [])
    }

    @Test func PV2_schemaCheck() throws {
        for path in ContractExamples.valid(.paywallPresentation) {
            #expect(
                ContractChecker.paywallSchemaProblems(try WireJSON.decode(try ContractExamples.bytes(path)), schema: .v1) == [], "\(path)")
        }
        for path in ContractExamples.valid(.paywallPresentationV1_1) {
            let value = try WireJSON.decode(try ContractExamples.bytes(path))
            #expect(ContractChecker.paywallSchemaProblems(value) == [], "\(path)")
        }
        let closed = try Self.example("invalid/no-price-unknown-transaction-field-closed-schema.json")
        #expect(ContractChecker.paywallSchemaProblems(closed).contains("unknown key outcome.transaction.price"))
        var o = try #require(try Self.example("dismissed-paywall-step-ios.json").objectValue)
        o["context"] = ["app_version": "1", "build": .null, "platform": "ios", "os_version": .null, "locale": "english", "timezone": "UTC"]
        #expect(ContractChecker.paywallSchemaProblems(.object(o)) == ["context.locale must be a BCP 47 tag"])
    }
}
