import Testing
import TrackerCore
import TrackerCoreTestKit

@testable import PaywallTracker

/// P79 (issue 37 item 7): in Xcode Previews the paywall tracker writes nothing and sends nothing,
/// while its calls still work.
@Suite struct PaywallPreviewTests {
    @Test func P79_inXcodePreviewsNothingIsWrittenOrSent() async {
        let clock = ManualClock()
        let sink = RecordingSink<PaywallSnapshot>()
        let storage = InMemoryKeyValueStorage()
        let configured = PaywallTrackerConfiguration(
            sink: sink,
            context: .value(
                RunContextInput(
                    appVersion: "1.0", build: "1", platform: .ios, osVersion: "18.1", locale: "en-US", timezone: "Europe/Paris")),
            storage: storage, clock: clock, scheduler: clock)
        #expect(PaywallPresentationTracker.previewSafe(configured, inPreviews: false).storage != nil)
        let tracker = PaywallPresentationTracker(configuration: PaywallPresentationTracker.previewSafe(configured, inPreviews: true))
        let presentation = tracker.start(
            PaywallPresentationInfo(moment: "launch", paywallId: "pw-1", renderMode: .custom, billing: .store, surface: .present))
        #expect(presentation != nil, "the tracker refused in previews")
        presentation?.shown()
        presentation?.end(.dismissed)
        for _ in 0..<20 {
            await clock.settle()
            await clock.advance(byMs: 500)
        }
        #expect(sink.received.isEmpty)
        #expect(storage.snapshot.isEmpty)
        tracker.dispose()
    }
}
