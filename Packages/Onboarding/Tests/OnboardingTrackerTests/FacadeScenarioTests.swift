import Foundation
import OnboardingExamples
import Testing
import TrackerCore
import TrackerCoreTestKit

@testable import OnboardingTracker

/// Scenarios on the app-wide tracker (process-global): serialized.
@Suite(.serialized) struct FacadeScenarios {
    @Test func S17_appWideTrackerBeforeConfigure() async {
        OnboardingRun.dispose()
        // `not-configured` goes to the default console printer (standard error), not to a
        // handler: observe what is handed to it.
        let printed = DiagnosticLog()
        let console = OnboardingRun.consoleOutput.value
        OnboardingRun.consoleOutput.withLock { $0 = printed.handler }
        defer { OnboardingRun.consoleOutput.withLock { $0 = console } }
        let run = OnboardingRun.start(OPTIONS)
        run.enterStep("welcome")
        run.complete()
        #expect(run.runId == "00000000-0000-0000-0000-000000000000")
        // One warning for the refused start; the inert run stays silent afterwards.
        #expect(printed.codes == ["not-configured"])
        #expect(printed.all.first?.runId == nil)
    }

    @Test func S18_appWideTrackerOnceConfigured() async {
        let w = World()
        let sink = HarnessSink(destination: nil, clock: w.clock)
        OnboardingRun.configure(
            OnboardingRunConfiguration(
                sink: sink, context: .value(CONTEXT), debounceMs: 0, onDiagnostic: { _ in },
                clock: w.clock, scheduler: w.scheduler, registry: w.registry))
        let run = OnboardingRun.start(OPTIONS)
        run.enterStep("welcome")
        await w.advance(0)
        #expect(sink.bodies.count == 1)
        OnboardingRun.dispose()
    }

    func configureExample(_ w: World, sink: HarnessSink, storage: any KeyValueStorage) {
        HandCodedOnboarding.setUpTracking(storage: storage, device: Device(appVersion: "2.4.0", build: "412", osVersion: "18.1")) { c in
            c.sink = sink
            c.debounceMs = 0
            c.clock = w.clock
            c.scheduler = w.scheduler
            c.registry = w.registry
            c.onDiagnostic = { _ in }
        }
    }

    @Test func S158_theHandCodedOnboardingExample() async {
        for (goal, granted, expected) in [
            (HandCodedOnboarding.Goal.practice, true, ["welcome", "goal", "level_advanced", "done"]),
            (.learn, false, ["welcome", "goal", "level_beginner", "notifications", "done"]),
        ] {
            let w = World()
            let sink = HarnessSink(destination: nil, clock: w.clock)
            configureExample(w, sink: sink, storage: InMemoryKeyValueStorage())
            let run = await HandCodedOnboarding.openOnboarding(restorePosition: false)
            HandCodedOnboarding.walkThrough(run, goal: goal, notificationsGranted: granted)
            await w.advance(1000)
            #expect(sink.last?["status"] == "completed")
            #expect(keys(sink.last) == expected)
            #expect(WireJSON.encodeString(sink.last!["properties"]!) == #"{"signup_source":"email"}"#)
            OnboardingRun.dispose()
        }
    }

    @Test func S159_fallingBackWhenTheReadNeverAnswers() async {
        let w = World()
        let sink = HarnessSink(destination: nil, clock: w.clock)
        var f = FaultInjectingStorage.Faults()
        f.getsNeverAnswer = true
        configureExample(w, sink: sink, storage: FaultInjectingStorage(clock: w.clock, faults: f))
        // resumeOrStart's 10 ms bound, on the tracker's (manual) scheduler: a new run starts then.
        // (Before issue 37 item 5 the example raced resume() against a real-time timer of its own.)
        let box = Locked<OnboardingRun?>(nil)
        let began = w.clock.nowMs()
        w.clock.spawnAsCaller {
            let r = await HandCodedOnboarding.openOnboarding(restorePosition: true, resumeTimeout: 0.01)
            box.withLock { $0 = r }
        }
        for _ in 0..<100 where box.value == nil {
            await w.settle()
            await w.advance(5)
        }
        guard let run = box.value else {
            Issue.record("openOnboarding did not return within 500 ms of the manual clock")
            return
        }
        #expect(w.clock.nowMs() - began < 100, "the 10 ms bound took \(w.clock.nowMs() - began) ms")
        HandCodedOnboarding.walkThrough(run, goal: .practice, notificationsGranted: true)
        await w.advance(1000)
        #expect(sink.last?["status"] == "completed")
        OnboardingRun.dispose()
    }

    @Test func S109_configureAgainRightAfterComplete() async {
        let w = World()
        let sink = HarnessSink(destination: nil, clock: w.clock)
        let cfg = OnboardingRunConfiguration(
            sink: sink, context: .value(CONTEXT), storage: InMemoryKeyValueStorage(), debounceMs: 0,
            onDiagnostic: { _ in }, clock: w.clock, scheduler: w.scheduler, registry: w.registry)
        OnboardingRun.configure(cfg)
        let run = OnboardingRun.start(OPTIONS)
        run.enterStep("welcome")
        await w.advance(1000)
        run.complete()
        OnboardingRun.configure(cfg)
        await w.advance(5000)
        #expect(sink.statuses.filter { $0 == "completed" }.count == 1)
        let resumed = Locked<OnboardingRun??>(nil)
        w.clock.spawnAsCaller {
            let r = await OnboardingRun.resume()
            resumed.withLock { $0 = .some(r) }
        }
        await w.settle()
        #expect(resumed.value.map { $0 == nil } == true)
        await w.advance(60_000)
        #expect(!sink.bodies.contains { $0["status"] == "in_progress" && $0["seq"]!.intValue! >= 2 })
        #expect(sink.statuses.filter { $0 == "completed" }.count == 1)
        OnboardingRun.dispose()
    }
}
