import Testing
import TrackerCore
import TrackerCoreTestKit

@testable import PaywallTracker

/// Spec 17 D and E: time, surface and optional paywall keys.
@Suite struct TimeAndSurfaceTests {
    @Test func P27_clockStepsBack() async throws {
        // Tracker level: shown at T9−5 s, end at T9−10 s (the end time and the build time are one
        // clock reading here).
        let h = PaywallFixture(startMs: T9)
        let handle = try #require(h.tracker.start(INFO))
        await h.settle()
        await h.clock.set(ms: T9 - 5000)
        handle.shown()
        await h.clock.set(ms: T9 - 10_000)
        handle.end(.dismissed)
        await h.settle()
        let last = try #require(h.received.last)
        for key in ["started_at", "shown_at", "ended_at", "sent_at"] {
            #expect(last.body[key] == "2026-01-10T09:00:00.000Z", "\(key)")
        }
        h.expectConformant()

        // State level, as in the spec: end at T9−9 s, built at T9−10 s.
        let fixed = try InfoValidation.validate(InfoValidation.raw(INFO)).get()
        var s = PresentationState(id: FIXED_ID, startedAt: T9, fixed: fixed, context: try #require(CTX_IN.wire()))
        _ = s.nextSnapshot(nowMs: T9)
        #expect(s.markShown(nowMs: T9 - 5000) == .ok)
        #expect(s.markEnded(["status": "dismissed"], nowMs: T9 - 9000) == .ok)
        let snap = s.nextSnapshot(nowMs: T9 - 10_000)
        for key in ["started_at", "shown_at", "ended_at", "sent_at"] {
            #expect(snap.body[key] == "2026-01-10T09:00:00.000Z", "\(key)")
        }
        #expect(captureAndCheck(snap).isEmpty)
    }

    @Test func P28_retryIsByteIdentical() async throws {
        let h = PaywallFixture { n, _ in n == 1 ? .result(.transient) : .result(.accepted) }
        _ = try #require(h.tracker.start(INFO))
        await h.settle()
        await h.advance(500)
        await h.advance(500)
        #expect(h.sink.callTimes.value == [T0, T0 + 1000])
        #expect(h.received.count == 2)
        #expect(h.received[0].wireBytes() == h.received[1].wireBytes())
        h.expectConformant()
    }

    @Test func P29_paywallStep() async throws {
        let h = PaywallFixture()
        let run = PaywallOnboardingRun(runId: "0192f1a2-0000-7000-8000-000000000001", stepKey: "paywall")
        var step = INFO
        step.surface = .paywallStep
        step.onboardingRun = run
        _ = try #require(h.tracker.start(step))
        var present = INFO
        present.onboardingRun = run
        _ = try #require(h.tracker.start(present))
        await h.settle()
        #expect(
            h.bodies[0].contains(
                #""surface":"paywall_step","onboarding_run":{"run_id":"0192f1a2-0000-7000-8000-000000000001","step_key":"paywall"},"context""#
            ))
        #expect(!h.bodies[1].contains("onboarding_run"))
        h.expectConformant()
    }

    @Test func P30_variantAndDeployment() async throws {
        let h = PaywallFixture()
        var info = INFO
        info.variantKey = "v2"
        info.deploymentId = "d-7"
        _ = try #require(h.tracker.start(info))
        _ = try #require(h.tracker.start(INFO))
        await h.settle()
        #expect(h.bodies[0].contains(#""billing":"store","variant_key":"v2","deployment_id":"d-7"},"surface""#))
        #expect(!h.bodies[1].contains("variant_key"))
        #expect(!h.bodies[1].contains("deployment_id"))
        h.expectConformant()
    }

    @Test func P31_invalidOnboardingRun() async {
        let h = PaywallFixture()
        var upper = INFO  // surface present: still validated
        upper.onboardingRun = PaywallOnboardingRun(runId: "0192F1A2-0000-7000-8000-000000000001", stepKey: "paywall")
        var emptyStep = INFO
        emptyStep.surface = .paywallStep
        emptyStep.onboardingRun = PaywallOnboardingRun(runId: "0192f1a2-0000-7000-8000-000000000001", stepKey: "")
        #expect(h.tracker.start(upper) == nil)
        #expect(h.tracker.start(emptyStep) == nil)
        await h.settle()
        #expect(h.received.isEmpty)
        #expect(
            h.log.with("invalid-info").map(\.message)
                == Array(repeating: "onboardingRun must be { runId: lowercase UUID, stepKey: key }", count: 2))
    }
}
