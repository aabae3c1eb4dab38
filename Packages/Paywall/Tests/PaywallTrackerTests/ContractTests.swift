import Foundation
import Testing
import TrackerCore
import TrackerCoreTestKit

@testable import PaywallTracker

private func example(_ name: String, _ contract: ContractExamples.Contract = .paywallPresentation) throws -> JSONValue {
    let dir = ContractExamples.contractsDirectory + "/examples/" + contract.rawValue
    return try WireJSON.decode(ContractExamples.bytes(dir + "/" + name))
}

/// Spec 17 H and I: the Rocalytics sink, contract conformance and the server model.
@Suite struct ContractTests {
    // P47: Not applicable here. The Rocalytics paywall sink (request shape) belongs to the
    // RocalyticsClient package, which owns the client; this package depends on Core alone.
    // P48: Not applicable here, same reason (the sink's outcome table lives in RocalyticsClient).
    // P49: Not applicable here, same reason (inert client, network error).
    // P50: Not applicable here, same reason (the sink's destination).

    @Test func P51_examplesConform() throws {
        let v1 = ContractExamples.valid(.paywallPresentation)
        let v11 = ContractExamples.valid(.paywallPresentationV1_1)
        #expect(v1.count == 6)
        #expect(v11.count == 2)
        for path in v1 + v11 {
            let value = try WireJSON.decode(ContractExamples.bytes(path))
            #expect(ContractChecker.paywallPresentation(value).isEmpty, "\(path)")  // Core's checker
        }
        for path in v1 {
            let bytes = try ContractExamples.bytes(path)
            let value = try WireJSON.decode(bytes)
            #expect(PaywallContractChecker.problems(value, schema: .v1).isEmpty, "\(path)")
            #expect(PaywallContractChecker.problems(value, schema: .v1_1).isEmpty, "\(path)")
            #expect(WireJSON.encode(value).count <= 16_384)
        }
        for path in v11 {
            let value = try WireJSON.decode(ContractExamples.bytes(path))
            #expect(PaywallContractChecker.problems(value, schema: .v1_1).isEmpty, "\(path)")
            #expect(!PaywallContractChecker.problems(value, schema: .v1).isEmpty, "\(path)")  // not a v1 snapshot
            #expect(WireJSON.encode(value).count <= 16_384)
        }
    }

    @Test func P52_acceptanceSequence() throws {
        let s1 = try example("purchased-android-1-start-in-progress.json")
        let s2 = try example("purchased-android-2-shown-in-progress.json")
        let s3 = try example("purchased-android-3-ended-purchased.json")
        guard case .object(var s2seq9) = s2 else {
            Issue.record("not an object")
            return
        }
        s2seq9["seq"] = 9
        #expect(PaywallContractChecker.verdict(stored: nil, incoming: s1) == .accepted)
        #expect(PaywallContractChecker.verdict(stored: s1, incoming: s2) == .accepted)
        #expect(PaywallContractChecker.verdict(stored: s2, incoming: s1) == .ignored)
        #expect(PaywallContractChecker.verdict(stored: s3, incoming: .object(s2seq9)) == .ignored)
        #expect(
            PaywallContractChecker.verdict(stored: s1, incoming: try example("invalid/immutable-paywall-changed-after-seq1.json"))
                == .rejected)
        #expect(
            PaywallContractChecker.verdict(stored: nil, incoming: try example("invalid/reason-only-with-error-status.json")) == .rejected)
    }

    @Test func P53_transactionRules() throws {
        #expect(
            PaywallContractChecker.verdict(stored: nil, incoming: try example("invalid/transaction-only-with-purchased-status.json"))
                == .rejected)
        #expect(PaywallContractChecker.verdict(stored: nil, incoming: try example("invalid/transaction-never-empty.json")) == .rejected)
    }

    @Test func P54_noPrice() throws {
        let value = try example("invalid/no-price-unknown-transaction-field-closed-schema.json")
        #expect(PaywallContractChecker.problems(value).contains("unknown key outcome.transaction.price"))
        #expect(PaywallContractChecker.verdict(stored: nil, incoming: value) == .rejected)
    }

    /// Every `invalid/` paywall example is refused by the checker: on its own, or (the immutable
    /// one, valid alone) against the seq 1 it changes.
    @Test func P51_everyInvalidExampleIsRefused() throws {
        let invalid = ContractExamples.invalid(.paywallPresentation)
        #expect(invalid.count == 5)
        let s1 = try example("purchased-android-1-start-in-progress.json")
        for path in invalid {
            let value = try WireJSON.decode(ContractExamples.bytes(path))
            if path.hasSuffix("immutable-paywall-changed-after-seq1.json") {
                #expect(PaywallContractChecker.isConformant(value))
                #expect(PaywallContractChecker.verdict(stored: s1, incoming: value) == .rejected)
                #expect(ContractChecker.paywallPresentation(value).isEmpty)
                #expect(ContractChecker.paywallPresentation(value, previous: s1).map(\.rule) == [.paywallImmutable])
            } else {
                #expect(!ContractChecker.paywallPresentation(value).isEmpty, "\(path)")  // Core's checker
                #expect(!PaywallContractChecker.isConformant(value), "\(path)")
                #expect(!PaywallContractChecker.isConformant(value, schema: .v1), "\(path)")
            }
        }
    }

    /// The checker's own rules, one by one (size, v1/v1.1 coupling, section 5).
    @Test func checkerRulesBeyondTheSchema() throws {
        let s3 = try example("purchased-android-3-ended-purchased.json")
        guard case .object(let base) = s3 else { return }
        func with(_ change: (inout JSONObject) -> Void) -> JSONValue {
            var o = base
            change(&o)
            return .object(o)
        }
        #expect(!PaywallContractChecker.isConformant(with { $0["shown_at"] = .null }))  // purchased needs shown_at
        #expect(!PaywallContractChecker.isConformant(with { $0["ended_at"] = .null }))  // ended_at iff ended
        #expect(!PaywallContractChecker.isConformant(with { $0["sent_at"] = "2026-01-10T08:59:59.999Z" }))
        #expect(!PaywallContractChecker.isConformant(with { $0["schema_version"] = 1.1 }))  // 1.1 needs a provider
        #expect(!PaywallContractChecker.isConformant(with { $0["seq"] = 0 }))
        #expect(
            !PaywallContractChecker.isConformant(
                with { $0["onboarding_run"] = ["run_id": "0192f1a2-0000-7000-8000-000000000001", "step_key": "paywall"] }))
        #expect(PaywallContractChecker.problems(s3, size: 16_385).contains { $0.hasPrefix("size") })
        #expect(PaywallContractChecker.verdict(stored: nil, incoming: s3, size: 16_385) == .rejected)
    }
}
