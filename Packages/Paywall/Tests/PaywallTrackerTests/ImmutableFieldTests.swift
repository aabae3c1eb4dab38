import Testing
import TrackerCore
import TrackerCoreTestKit

@testable import PaywallTracker

/// Spec 5.1 step 5: after seq 1, every immutable field (`presentation_id`, `started_at`,
/// `paywall`, `surface`, `onboarding_run`, `context`; deep comparison) must stay as stored, or the
/// server rejects the snapshot. Issue 14: a checker that stopped comparing `context` passed every
/// test, which only ever changed `paywall_id`. Each field (and each key inside `paywall` and
/// `context`) is changed here on its own, in a seq 2 that is conformant by itself, against both
/// checkers: this package's server model (`verdict`) and Core's `ContractChecker` (the collector's).
///
/// New scenario ids: P67 (each change is rejected), P68 (unchanged or only reordered is accepted),
/// P69 (a tracker's own snapshots never change an immutable field).
@Suite struct ImmutableFieldTests {
    struct Change: Sendable, CustomTestStringConvertible {
        let field: String
        let name: String
        /// Applied to seq 1 (stored) and seq 2 (incoming) as a common base.
        var base: @Sendable (inout JSONObject) -> Void = { _ in }
        /// Applied to seq 2 only.
        let change: @Sendable (inout JSONObject) -> Void
        var testDescription: String { name }
    }

    static func set(_ key: String, in parent: String, _ value: JSONValue) -> @Sendable (inout JSONObject) -> Void {
        { o in
            guard case .object(var inner)? = o[parent] else { return }
            inner[key] = value
            o[parent] = .object(inner)
        }
    }

    static let paywallStep: @Sendable (inout JSONObject) -> Void = { $0["surface"] = "paywall_step" }
    static let run: JSONValue = ["run_id": "0192f1a2-0000-7000-8000-000000000001", "step_key": "paywall"]

    static let changes: [Change] = [
        Change(field: "presentation_id", name: "presentation_id") { $0["presentation_id"] = "0192f1a2-7c3d-7e4f-8a5b-6c7d8e9f0a1c" },
        Change(field: "started_at", name: "started_at") { $0["started_at"] = "2026-01-10T09:00:00.001Z" },
        Change(field: "paywall", name: "paywall.moment_key", change: set("moment_key", in: "paywall", "other_moment")),
        Change(field: "paywall", name: "paywall.paywall_id", change: set("paywall_id", in: "paywall", "other")),
        Change(field: "paywall", name: "paywall.audience_id", change: set("audience_id", in: "paywall", .null)),
        Change(field: "paywall", name: "paywall.render_mode", change: set("render_mode", in: "paywall", "elements")),
        Change(field: "paywall", name: "paywall.billing", change: set("billing", in: "paywall", "stripe")),
        Change(field: "paywall", name: "paywall.variant_key added", change: set("variant_key", in: "paywall", "v2")),
        Change(field: "surface", name: "surface") { $0["surface"] = "paywall_step" },
        Change(field: "onboarding_run", name: "onboarding_run added", base: paywallStep) { $0["onboarding_run"] = run },
        Change(
            field: "onboarding_run", name: "onboarding_run removed",
            base: {
                paywallStep(&$0)
                $0["onboarding_run"] = run
            }
        ) {
            $0["onboarding_run"] = nil
        },
        Change(
            field: "onboarding_run", name: "onboarding_run.run_id",
            base: {
                paywallStep(&$0)
                $0["onboarding_run"] = run
            },
            change: set("run_id", in: "onboarding_run", "0192f1a2-0000-7000-8000-000000000002")),
        Change(
            field: "onboarding_run", name: "onboarding_run.step_key",
            base: {
                paywallStep(&$0)
                $0["onboarding_run"] = run
            },
            change: set("step_key", in: "onboarding_run", "paywall_b")),
        Change(field: "context", name: "context.app_version", change: set("app_version", in: "context", "2.4.1")),
        Change(field: "context", name: "context.build", change: set("build", in: "context", "413")),
        Change(field: "context", name: "context.build null", change: set("build", in: "context", .null)),
        Change(field: "context", name: "context.platform", change: set("platform", in: "context", "ios")),
        Change(field: "context", name: "context.os_version", change: set("os_version", in: "context", "16")),
        Change(field: "context", name: "context.locale", change: set("locale", in: "context", "fr-FR")),
        Change(field: "context", name: "context.timezone", change: set("timezone", in: "context", "Europe/Paris")),
        Change(field: "context", name: "context.library_version", change: set("library_version", in: "context", "0.1.1")),
    ]

    static func pair(_ c: Change) throws -> (stored: JSONValue, incoming: JSONValue) {
        let dir = ContractExamples.contractsDirectory + "/examples/paywall-presentation/"
        var s1 = try #require(WireJSON.decode(ContractExamples.bytes(dir + "purchased-android-1-start-in-progress.json")).objectValue)
        var s2 = try #require(WireJSON.decode(ContractExamples.bytes(dir + "purchased-android-2-shown-in-progress.json")).objectValue)
        c.base(&s1)
        c.base(&s2)
        c.change(&s2)
        return (.object(s1), .object(s2))
    }

    @Test("P67 a changed immutable field after seq 1 is rejected", arguments: changes)
    func P67_eachImmutableFieldChangeIsRejected(_ c: Change) throws {
        let (stored, incoming) = try Self.pair(c)
        // The change alone is valid: only the comparison with seq 1 can refuse it.
        #expect(PaywallContractChecker.isConformant(stored))
        #expect(PaywallContractChecker.isConformant(incoming), "\(PaywallContractChecker.problems(incoming))")
        #expect(ContractChecker.paywallPresentation(incoming) == [])
        #expect(PaywallContractChecker.verdict(stored: stored, incoming: incoming) == .rejected)
        let violations = ContractChecker.paywallPresentation(incoming, previous: stored)
        #expect(violations.map(\.rule) == [.paywallImmutable], "\(violations)")
        #expect(violations.map(\.path) == ["$.\(c.field)"])
    }

    @Test func P68_unchangedOrReorderedImmutableFieldsAreAccepted() throws {
        let (stored, incoming) = try Self.pair(Change(field: "", name: "none") { _ in })
        #expect(PaywallContractChecker.verdict(stored: stored, incoming: incoming) == .accepted)
        #expect(ContractChecker.paywallPresentation(incoming, previous: stored) == [])
        // Deep comparison, not text: the same context with its keys in another order is unchanged.
        guard case .object(var o) = incoming, case .object(let ctx)? = o["context"] else {
            Issue.record("no context")
            return
        }
        var reversed = JSONObject()
        for (k, v) in ctx.entries.reversed() { reversed.appendUnchecked(k, v) }
        o["context"] = .object(reversed)
        #expect(PaywallContractChecker.verdict(stored: stored, incoming: .object(o)) == .accepted)
        #expect(ContractChecker.paywallPresentation(.object(o), previous: stored) == [])
    }

    /// The tracker's own sequence: every later snapshot keeps seq 1's immutable fields, for a v1
    /// paywall step with an onboarding run and for a v1.1 provider, while the context provider
    /// answers differently on every read.
    @Test func P69_aTrackersSnapshotsKeepTheirImmutableFields() async throws {
        let reads = Locked(0)
        let h = PaywallFixture(
            context: .provider {
                let n = reads.withLock {
                    $0 += 1
                    return $0
                }
                var c = CTX_IN
                c.appVersion = "2.4.\(n)"
                c.timezone = n % 2 == 0 ? "Europe/Paris" : "America/New_York"
                return c
            })
        var step = INFO
        step.surface = .paywallStep
        step.onboardingRun = PaywallOnboardingRun(runId: "0192f1a2-0000-7000-8000-000000000001", stepKey: "paywall")
        let v11 = PaywallPresentationInfo(
            provider: .external, externalPaywallId: "rc_offering_1", placement: "settings", providerName: "RevenueCat")
        for info in [step, v11] {
            let handle = try #require(h.tracker.start(info))
            _ = h.tracker.start(INFO)  // another read of the provider in between
            handle.shown()
            handle.end(.purchased(PaywallTransactionInfo(originalTransactionIdentifier: "2000000123", productId: "pro")))
        }
        await h.advance(10_000)
        let byId = Dictionary(grouping: h.received, by: \.presentationId)
        #expect(byId.count == 4)
        for (_, snaps) in byId {
            let sorted = snaps.sorted { $0.seq < $1.seq }
            guard let first = sorted.first else { continue }
            for later in sorted.dropFirst() {
                #expect(ContractChecker.paywallPresentation(later.wireJSON(), previous: first.wireJSON()) == [])
                #expect(PaywallContractChecker.verdict(stored: first.wireJSON(), incoming: later.wireJSON()) == .accepted)
            }
        }
        h.expectConformant()
    }
}
