import Testing
import TrackerCore
import TrackerCoreTestKit

@testable import OnboardingTracker

// Launch cost (issue 19): the tracker's constructor does no storage I/O on the caller's thread.
//
// New scenario: L1 the constructor returns while its storage's first read is held (the read
// blocks its thread until the test opens the gate); once released, the stored run is resumed.
@Suite struct LaunchScenarios {
    private func tracker(_ storage: any KeyValueStorage, _ clock: ManualClock) -> OnboardingRunTracker {
        OnboardingRunTracker(
            configuration: OnboardingRunConfiguration(
                sink: HarnessSink(destination: DESTINATION, clock: clock), context: .value(CONTEXT), storage: storage,
                clock: clock, scheduler: clock, uuid: harnessUUID, registry: HandoffRegistry()))
    }

    @Test func L1_constructorReturnsWhileTheFirstReadIsHeld() async throws {
        let clock = ManualClock(startMs: T0)
        let backing = InMemoryKeyValueStorage()
        // Launch 1 leaves a run in progress in storage.
        let first = tracker(backing, clock)
        let run = first.start(OPTIONS)
        run.enterStep("welcome")
        await clock.advance(byMs: 1000)
        await first.idle()
        #expect(backing.snapshot[KEY] != nil)

        // Launch 2 (a new process: a fresh hand-over registry): its storage's reads block until
        // the gate opens. A constructor that read on the caller's thread would never return.
        let gated = GatedReadStorage(backing: backing)
        let second = tracker(gated, clock)
        // The read runs in the background and is held there now.
        #expect(await gated.gate.waitUntilEntered())
        #expect(gated.gate.entered == 1)

        gated.gate.open()
        let resumed = await second.resume()
        #expect(resumed?.runId == run.runId)
        #expect(gated.gate.entered == 1)
    }
}
