import Testing
import TrackerCore
import TrackerCoreTestKit

@testable import OnboardingTracker

/// S237 (issue 37 item 7): in Xcode Previews the onboarding tracker writes nothing and sends
/// nothing, while its calls still work.
@Suite struct OnboardingPreviewTests {
    @Test func S237_inXcodePreviewsNothingIsWrittenOrSent() async {
        let clock = ManualClock()
        let sink = RecordingSink<OnboardingRunSnapshot>()
        let storage = InMemoryKeyValueStorage()
        let configured = OnboardingRunConfiguration(
            sink: sink,
            context: .value(
                RunContextInput(
                    appVersion: "1.0", build: "1", platform: .ios, osVersion: "18.1", locale: "en-US", timezone: "Europe/Paris")),
            storage: storage, clock: clock, scheduler: clock, registry: HandoffRegistry())
        #expect(OnboardingRunTracker.previewSafe(configured, inPreviews: false).storage != nil)
        let tracker = OnboardingRunTracker(configuration: OnboardingRunTracker.previewSafe(configured, inPreviews: true))
        let run = tracker.start(
            StartOptions(onboarding: OnboardingInput(key: "main", version: "1"), manifest: [ManifestStepInput(stepKey: "welcome")]))
        run.enterStep("welcome")
        run.complete()
        for _ in 0..<20 {
            await clock.settle()
            await clock.advance(byMs: 500)
        }
        #expect(run.currentStepKey == "welcome", "the run did not record in previews")
        #expect(sink.received.isEmpty)
        #expect(storage.snapshot.isEmpty)
        tracker.dispose()
    }
}
