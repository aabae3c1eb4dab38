import Testing
import TrackerCore
import TrackerCoreTestKit

@testable import PaywallTracker

private struct ContextFailure: Error, CustomStringConvertible {
    var description: String { "device info unavailable" }
}

/// Spec 17 B: refusals and never throwing.
@Suite struct RefusalTests {
    @Test func P7_throwingContextRefusesWithoutSendingOrStoring() async {
        let storage = InMemoryKeyValueStorage()
        let h = PaywallFixture(context: .provider { throw ContextFailure() }, storage: storage)
        #expect(h.tracker.start(INFO) == nil)
        await h.settle()
        await h.tracker.idle()
        #expect(h.received.isEmpty)
        #expect(storage.snapshot.isEmpty)
        #expect(h.log.with("invalid-context").map(\.message) == ["device info unavailable"])
    }

    @Test func P8_invalidInfoDoesNotReadContext() async {
        let calls = Locked(0)
        let h = PaywallFixture(
            context: .provider {
                calls.withLock { $0 += 1 }
                return CTX_IN
            })
        var info = INFO
        info.paywallId = ""
        #expect(h.tracker.start(info) == nil)
        await h.settle()
        #expect(h.received.isEmpty)
        #expect(calls.value == 0)
        #expect(h.log.with("invalid-info").map(\.message) == ["paywallId must be 1 to 128 characters"])
    }

    @Test func P9_validationMessagesInOrder() async {
        let h = PaywallFixture()
        // Bad enum values and a numeric audience are only expressible through the untyped entry point.
        let raw: JSONValue = [
            "moment": "settings_upgrade", "paywallId": "", "audienceId": 3, "renderMode": "x", "billing": "store", "surface": "modal",
        ]
        #expect(h.tracker.start(json: raw) == nil)
        #expect(h.tracker.start(json: "not an object") == nil)
        await h.settle()
        #expect(h.received.isEmpty)
        #expect(
            h.log.with("invalid-info").map(\.message) == [
                "paywallId must be 1 to 128 characters; audienceId must be null or 1 to 128 characters; renderMode must be elements or custom; surface must be present or paywall_step",
                "info is not an object",
            ])
    }

    @Test func P10_invalidContextField() async {
        var ctx = CTX_IN
        ctx.locale = "english"
        let h = PaywallFixture(context: .value(ctx))
        #expect(h.tracker.start(INFO) == nil)
        await h.settle()
        #expect(h.received.isEmpty)
        let d = h.log.with("invalid-context")
        #expect(d.count == 1)
        #expect(d.first?.message.contains("locale must be a BCP 47 tag") == true)
    }

    @Test func P11_throwingSinkIsRetriedWithBackoff() async throws {
        let h = PaywallFixture { _, _ in .fail("boom") }
        let handle = try #require(h.tracker.start(INFO))
        handle.shown()
        handle.end(.dismissed)
        await h.settle()
        await h.advance(3000)
        // Attempts at +0 (seq 1), +1 s and +3 s (the newest pending snapshot, seq 3).
        #expect(h.sink.callTimes.value == [T0, T0 + 1000, T0 + 3000])
        #expect(h.received.map(\.seq) == [1, 3, 3])
        #expect(h.log.all.isEmpty)  // transient failures are retried silently
        h.expectConformant()
    }

    // P12: a Swift `DiagnosticHandler` is a non-throwing closure, so "a handler that throws" cannot
    // be written. The closest hazard, a handler that calls back into the tracker, is tested.
    @Test func P12_diagnosticsHandlerCannotReachTheCaller() async {
        let clock = ManualClock()
        let box = Locked<PaywallPresentationTracker?>(nil)
        let seen = Locked<[String]>([])
        let sink = CheckedSink(clock: clock)
        let tracker = PaywallPresentationTracker(
            configuration: PaywallTrackerConfiguration(
                sink: sink, context: .value(CTX_IN), clock: clock, scheduler: clock,
                onDiagnostic: { d in
                    let depth = seen.withLock {
                        $0.append(d.code.rawValue)
                        return $0.count
                    }
                    if depth == 1 { _ = box.value?.start(json: "again") }  // re-entrant call from the handler
                }))
        box.withLock { $0 = tracker }
        var info = INFO
        info.moment = ""
        #expect(tracker.start(info) == nil)
        await clock.settle()
        #expect(seen.value == ["invalid-info", "invalid-info"])
        #expect(sink.received.isEmpty)
    }

    @Test func P13_misusedHandle() async throws {
        let h = PaywallFixture()
        let handle = try #require(h.tracker.start(INFO) as? PaywallPresentation)
        handle.end(.dismissed)
        handle.end(.purchased())
        handle.shown()
        await h.settle()
        let ended = h.received.filter(\.isEnded)
        #expect(ended.count == 1)
        #expect(ended.first?.wireString.contains(#""outcome":{"status":"dismissed"}"#) == true)
        #expect(h.log.codes == ["already-ended", "after-end"])
        #expect(h.log.all.allSatisfy { $0.runId == handle.id })
        #expect(h.log.all.map(\.message) == ["end() ignored: already-ended", "shown() ignored: after-end"])
        h.expectConformant()
    }

    @Test func P14_secondShown() async throws {
        let h = PaywallFixture()
        let handle = try #require(h.tracker.start(INFO))
        handle.shown()
        handle.shown()
        await h.settle()
        #expect(h.received.filter { $0.body["shown_at"] != .null }.count == 1)
        #expect(h.log.codes == ["already-shown"])
        h.expectConformant()
    }

    @Test func P15_unknownOutcomeStatusChangesNothing() async throws {
        let h = PaywallFixture()
        let handle = try #require(h.tracker.start(json: InfoValidation.raw(INFO)))
        handle.end(json: ["status": "refunded"])
        handle.end(json: .null)
        await h.settle()
        #expect(h.received.map(\.seq) == [1])
        #expect(h.log.codes == ["invalid-status", "invalid-status"])
        #expect(h.log.all.allSatisfy { $0.runId == handle.id })
        handle.end(.dismissed)
        await h.settle()
        #expect(h.received.map(\.seq) == [1, 2])
        #expect(h.received.last?.wireString.hasSuffix(#""outcome":{"status":"dismissed"}}"#) == true)
        h.expectConformant()
    }
}
