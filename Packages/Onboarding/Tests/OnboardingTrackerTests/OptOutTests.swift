import Testing
import TrackerCore
import TrackerCoreTestKit

@testable import OnboardingTracker

// The persisted opt-out switch (issue 37 item 3, onboarding part).
//
// New scenarios:
// S235 opting out drops the run in progress and its unsent snapshot (answered transient, waiting
//      for its retry): nothing recorded before is sent after; calls while opted out are dropped
//      with one `opted-out` diagnostic per opt-out period; optIn() lets the next start record.
// S236 the switch is persisted: the next launch reads it before anything stored is sent, records
//      nothing, and keeps no stored run; optIn() at that launch, even before the read, wins.
@Suite struct OptOutTests {
    @Test func S235_optingOutDropsWhatIsUnsentAndSilencesCalls() async {
        let w = World()
        let h = Harness(w)
        h.sink.answer { _, _ in .result(.transient) }
        let run = h.start()
        run.enterStep("welcome")
        await h.tick(100)
        let sentBefore = h.sink.payloads.count
        #expect(sentBefore >= 1, "the first attempt went out")
        h.tracker.optOut()
        #expect(h.tracker.isOptedOut)
        run.exitStep("welcome")
        run.enterStep("goal")
        run.complete()
        let inert = h.start()
        inert.enterStep("welcome")
        await h.tick(120_000)  // past every retry backoff
        #expect(h.sink.payloads.count == sentBefore, "a snapshot was sent after the opt-out")
        #expect(h.count("opted-out") == 1, "\(h.codes)")
        #expect(h.storedJSON?["optedOut"] == true && h.storedJSON?["current"] == .null, "\(h.stored ?? "")")
        #expect(h.storedJSON?["outboxes"]?.objectValue?.isEmpty == true, "\(h.stored ?? "")")

        h.sink.answer { _, _ in .result(.accepted) }
        h.tracker.optIn()
        #expect(!h.tracker.isOptedOut)
        let again = h.start()
        again.enterStep("welcome")
        await h.tick(1000)
        #expect(h.sink.payloads.last?.runId == again.runId)
        h.tracker.optOut()
        again.enterStep("goal")
        #expect(h.count("opted-out") == 2, "one diagnostic per opt-out period: \(h.codes)")
    }

    @Test func S236_theSwitchIsPersisted() async {
        let w = World()
        let a = Harness(w)
        a.sink.answer { _, _ in .result(.transient) }
        let run = a.start()
        run.enterStep("welcome")
        await a.tick(100)
        a.tracker.optOut()
        await a.idle()
        await w.nextLaunch()

        let b = Harness(w)
        await b.idle()
        #expect(b.tracker.isOptedOut, "the opt-out was not read back")
        let r = await resumeT(b)
        #expect(r == nil)
        b.start().enterStep("welcome")
        await b.tick(60_000)
        #expect(b.sink.payloads.isEmpty, "sent after a persisted opt-out: \(b.sink.payloads.map(\.runId))")
        #expect(b.count("opted-out") == 1)
        await w.nextLaunch()

        // optIn() before the read has landed still wins over the stored switch.
        var f = FaultInjectingStorage.Faults()
        f.getDelayMs = 2000
        let c = Harness(w, faults: f)
        c.tracker.optIn()
        await c.tick(5000)
        #expect(!c.tracker.isOptedOut)
        let fresh = c.start()
        fresh.enterStep("welcome")
        await c.tick(1000)
        #expect(c.sink.payloads.map(\.runId) == [fresh.runId], "\(c.codes)")
    }
}
