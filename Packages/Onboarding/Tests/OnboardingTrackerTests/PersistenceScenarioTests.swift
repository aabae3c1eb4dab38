import Foundation
import Testing
import TrackerCore
import TrackerCoreTestKit

@testable import OnboardingTracker

// Scenarios G (storage), H (resume), I (dispose), J (destinations), K (limits), N of
// onboarding-tracker.md §12.

let KEY = "rocalytics-sdk:onboarding-run"

@Suite struct PersistenceScenarios {
    @Test func S74_storedLayout() async {
        let h = Harness(World())
        let run = h.start()
        run.enterStep("welcome")
        await h.tick()
        await h.idle()
        let st = h.storedJSON!
        #expect(st["format"] == 1)
        #expect(st["destination"] == .string(DESTINATION))
        #expect(st["outboxes"] == .object([:]))
        let c = st["current"]!
        #expect(c["runId"]?.stringValue == run.runId)
        #expect(c["lastSeq"] == 1)
        #expect(WireJSON.encodeString(c["onboarding"]!) == #"{"key":"main","version":"3"}"#)
        #expect(c["studio"] == nil && c["properties"] == nil)
        #expect(c["context"]?["library_version"] == .string(OnboardingTrackerVersion.current))
        #expect(c["manifest"]?["steps"]?.arrayValue?.count == 7)
        #expect(
            WireJSON.encodeString(c["steps"]!)
                == #"[{"step_key":"welcome","entered_at":"2026-01-10T08:00:00.000Z","exited_at":null,"answers":[]}]"#)
        #expect(c["provisionalExit"] == false && c["truncated"] == false && c["status"] == "in_progress")
        #expect(c["completedAt"] == .null && c["lastActiveAt"] == .number(Double(T0)) && c["dirty"] == false)
        run.complete()
        await h.tick()
        await h.idle()
        #expect(h.stored == nil)
        let h2 = Harness(World(), destination: nil)
        h2.start().enterStep("welcome")
        await h2.tick()
        await h2.idle()
        #expect(h2.storedJSON?["destination"] == nil)
    }

    @Test func S77_aHangingWriteDelaysASendByAtMostPersistTimeout() async {
        var f = FaultInjectingStorage.Faults()
        f.writesNeverFinish = true
        let h = Harness(World(), faults: f)
        h.start().enterStep("welcome")
        await h.tick(999)
        #expect(h.sink.bodies.isEmpty)
        await h.tick(1)
        #expect(h.sink.bodies.count == 1)
    }

    @Test func S78_noStorageNoDelay() async {
        let h = Harness(World(), storage: false)
        h.start().enterStep("welcome")
        await h.world.settle()
        #expect(h.sink.bodies.count == 1)
    }

    @Test func S79_malformedStoredValues() async {
        let d = "\"destination\":\"\(DESTINATION)\""
        let values = [
            "{\"format\":1,\(d),\"current\":null,\"outboxes\":{\"x\":null}}",
            "{\"format\":1,\(d),\"current\":null,\"outboxes\":{\"x\":{\"seq\":\"1\",\"body\":{}}}}",
            "{\"format\":1,\(d),\"current\":null,\"outboxes\":{\"x\":{\"seq\":1}}}",
            "{\"format\":1,\(d),\"current\":null,\"outboxes\":[1,2]}",
            "{\"format\":1,\(d),\"current\":{\"status\":\"in_progress\",\"dirty\":true},\"outboxes\":{}}",
            "{\"format\":1,\(d),\"current\":\"nope\",\"outboxes\":{}}",
            "{\"format\":1,\(d),\"current\":{\"status\":\"in_progress\",\"dirty\":true,\"steps\":\"x\",\"lastSeq\":1,\"runId\":\"r\"},\"outboxes\":{}}",
            "42", "[]", "{not json",
        ]
        for v in values {
            for order in 0..<3 {
                let w = World()
                try? await w.backing.setItem(KEY, v)
                let h = Harness(w)
                switch order {
                case 0:
                    h.start().enterStep("welcome")
                    await h.tick(0)
                case 1:
                    let r = await resumeT(h)
                    #expect(r == nil)
                default:
                    await h.idle()
                    h.start().enterStep("welcome")
                    await h.tick(0)
                }
                await h.idle()
                #expect(h.codes.contains("storage"), "\(v) order \(order)")
                if order == 1 {
                    #expect(h.stored == nil, "\(v)")
                } else {
                    #expect(h.storedJSON?["current"]?["steps"]?.arrayValue?.first?["step_key"] == "welcome", "\(v) order \(order)")
                    #expect(keys(h.sink.last).first == "welcome")
                }
            }
        }
    }

    static let V =
        #"{"schema_version":1,"run_id":"00000000-0000-4000-8000-0000000000aa","seq":3,"status":"in_progress","started_at":"2026-01-10T07:00:00.000Z","completed_at":null,"sent_at":"2026-01-10T07:00:00.000Z","onboarding":{"key":"main","version":"3"},"context":{"app_version":"2.4.0","build":"412","platform":"ios","os_version":"18.1","locale":"en-US","timezone":"America/New_York"},"manifest":{"steps":[{"step_key":"welcome"}]},"steps":[{"step_key":"welcome","entered_at":"2026-01-10T07:00:00.000Z","exited_at":null,"answers":[]}]}"#

    @Test func S80_aValidOutboxBesideABrokenOne() async {
        let w = World()
        try? await w.backing.setItem(
            KEY,
            "{\"format\":1,\"destination\":\"\(DESTINATION)\",\"current\":null,\"outboxes\":{\"bad\":null,\"00000000-0000-4000-8000-0000000000aa\":{\"seq\":3,\"body\":\(Self.V)}}}"
        )
        let h = Harness(w)
        await h.tick()
        #expect(h.sink.payloads.map(\.text) == [Self.V])
        #expect(h.codes.contains("storage"))
    }

    @Test func S81_writesThatAlwaysFail() async {
        var f = FaultInjectingStorage.Faults()
        f.writesAlwaysFail = true
        let h = Harness(World(), faults: f)
        h.start().enterStep("welcome")
        await h.idle()
        await h.tick()
        #expect(h.sink.bodies.count == 1)
    }

    static let C =
        #"{"schema_version":1,"run_id":"00000000-0000-4000-8000-0000000000cc","seq":2,"status":"completed","started_at":"2026-01-10T07:00:00.000Z","completed_at":"2026-01-10T07:00:10.000Z","sent_at":"2026-01-10T07:00:10.000Z","onboarding":{"key":"main","version":"3"},"context":{"app_version":"2.4.0","build":"412","platform":"ios","os_version":"18.1","locale":"en-US","timezone":"America/New_York","library_version":"0.1.0"},"manifest":{"steps":[{"step_key":"welcome"}]},"steps":[{"step_key":"welcome","entered_at":"2026-01-10T07:00:00.000Z","exited_at":"2026-01-10T07:00:10.000Z","answers":[]}]}"#
    static let storedC =
        "{\"format\":1,\"destination\":\"\(DESTINATION)\",\"current\":null,\"outboxes\":{\"00000000-0000-4000-8000-0000000000cc\":{\"seq\":2,\"body\":\(C)}}}"

    @Test func S82_aReadThatFailsOnceIsRetried() async {
        let w = World()
        try? await w.backing.setItem(KEY, Self.storedC)
        var f = FaultInjectingStorage.Faults()
        f.failNextGets = 1
        let h = Harness(w, faults: f)
        await h.tick(0)
        #expect(h.sink.payloads.map(\.text) == [Self.C])
    }

    @Test func S83_aReadThatFailsTwice() async {
        let w = World()
        try? await w.backing.setItem(KEY, Self.storedC)
        var f = FaultInjectingStorage.Faults()
        f.failNextGets = 2
        let a = Harness(w, faults: f)
        a.sink.always(.transient)
        let run = a.start()
        run.enterStep("welcome")
        run.complete()
        await a.tick(5000)
        await a.idle()
        #expect(a.stored == Self.storedC)
        #expect(a.codes.contains("storage"))
        #expect(a.sink.statuses.contains("completed"))
        a.tracker.dispose()
        let b = Harness(w)
        await b.tick(1000)
        #expect(b.sink.payloads.contains { $0.text == Self.C })
        #expect(b.sink.bodies.filter { $0["run_id"]?.stringValue == run.runId && $0["status"] == "completed" }.count == 1)
        #expect(b.sink.bodies.count == 2)
    }

    @Test func S84_unknownFutureFormat() async {
        let w = World()
        let text = #"{"format":2,"runs":{"r":{"unsent":true}}}"#
        try? await w.backing.setItem(KEY, text)
        let h = Harness(w)
        let run = h.start()
        run.enterStep("welcome")
        run.complete()
        await h.tick(5000)
        await h.idle()
        #expect(h.stored == text)
        #expect(h.sink.statuses == ["in_progress", "completed"] || h.sink.statuses == ["completed"])
        #expect(h.diags("storage").contains { $0.message.contains("format") })
        #expect(await resumeT(h) == nil)
    }

    @Test func S85_twoLiveTrackersOnOneKey() async {
        let w = World()
        let a = Harness(w) { $0.storageKey = "test:n-b" }
        let b = Harness(w) { $0.storageKey = "test:n-b" }
        #expect(!a.codes.contains("storage"))
        #expect(b.diags("storage").contains { $0.message.contains("storageKey") })
        a.tracker.dispose()
        b.tracker.dispose()
        let c = Harness(w) { $0.storageKey = "other" }
        #expect(!c.codes.contains("storage"))
    }

    /// A previous launch that stored an in-progress run.
    func previousLaunch(_ w: World) async -> String {
        let a = Harness(w)
        let run = a.start()
        run.enterStep("welcome")
        await a.tick()
        await a.idle()
        a.kill()
        await w.nextLaunch()
        return run.runId
    }

    @Test func S86_aSlowRead() async {
        let w = World()
        let old = await previousLaunch(w)
        var f = FaultInjectingStorage.Faults()
        f.getDelayMs = 8000
        let h = Harness(w, faults: f) { $0.storageReadTimeoutMs = 1000 }
        let result = Locked<String??>(nil)
        let tracker = h.tracker
        w.clock.spawnAsCaller {
            let r = await tracker.resume()
            result.withLock { $0 = .some(r?.runId) }
        }
        await h.tick(1000)
        #expect(result.value == nil)
        #expect(h.diags("storage").contains { $0.message.contains("1000 ms") })
        await h.tick(10_000)
        #expect(result.value == .some(old))
        #expect(h.sink.last?["run_id"]?.stringValue == old)
        #expect(await resumeT(h) == nil)
    }

    @Test func S87_aReadThatNeverAnswers() async {
        var f = FaultInjectingStorage.Faults()
        f.getsNeverAnswer = true
        let h = Harness(World(), faults: f) { $0.storageReadTimeoutMs = 1000 }
        let done = Locked(false)
        let tracker = h.tracker
        h.world.clock.spawnAsCaller {
            _ = await tracker.resume()
            done.withLock { $0 = true }
        }
        await h.tick(600_000)
        #expect(!done.value)
    }

    @Test func S88_startIsNotHeldBackByASlowRead() async {
        let w = World()
        _ = await previousLaunch(w)
        var f = FaultInjectingStorage.Faults()
        f.getDelayMs = 8000
        let h = Harness(w, faults: f) { $0.storageReadTimeoutMs = 1000 }
        let result = Locked<String??>(nil)
        let tracker = h.tracker
        w.clock.spawnAsCaller {
            let r = await tracker.resume()
            result.withLock { $0 = .some(r?.runId) }
        }
        await h.tick(1000)
        let fresh = h.start()
        fresh.enterStep("welcome")
        await h.tick(2000)
        #expect(h.sink.last?["run_id"]?.stringValue == fresh.runId)
        await h.tick(10_000)
        #expect(result.value == .some(nil))
        await h.idle()
        h.kill()
        await w.nextLaunch()
        let n = Harness(w)
        #expect(await resumeT(n)?.runId == fresh.runId)
    }

    @Test func S91_resumeAfterAKill() async {
        let w = World()
        let a = Harness(w)
        let run = a.start()
        run.enterStep("welcome")
        await a.tick(10_000)
        run.enterStep("goal")
        await a.tick(5000)
        run.background()
        await a.tick(20_000)
        let L = a.sink.last!
        await a.idle()
        a.kill()
        await w.relaunch(atSeconds: 600)
        let b = Harness(w)
        let r = await resumeT(b)
        #expect(r?.runId == run.runId)
        #expect(r?.currentStepKey == "goal")
        await b.tick(0)
        let l = b.sink.last!
        #expect(l["run_id"]?.stringValue == run.runId)
        #expect(l["seq"]!.intValue! == L["seq"]!.intValue! + 1 + seqReservation)  // past the stored reservation (issue 14 item 5)
        #expect(keys(l) == ["welcome", "goal", "goal"])
        #expect(steps(l)[1]["exited_at"]?.stringValue == ts("08:00:15.000"))
        #expect(
            WireJSON.encodeString(steps(l)[2])
                == #"{"step_key":"goal","entered_at":"2026-01-10T08:10:00.000Z","exited_at":null,"answers":[]}"#)
        r?.enterStep("summary")
        r?.complete()
        await b.tick(0)
        #expect(b.sink.last?["status"] == "completed")
    }

    @Test func S92_withoutBackgroundTheLastEntryOrSendTimeIsUsed() async {
        let w = World()
        let a = Harness(w)
        let run = a.start()
        run.enterStep("welcome")
        await a.tick(10_000)
        run.enterStep("goal")
        await a.tick(50_000)
        a.kill()
        await w.relaunch(atSeconds: 3600)
        let b = Harness(w)
        _ = await resumeT(b)
        await b.tick(0)
        #expect(steps(b.sink.last)[1]["exited_at"]?.stringValue == ts("08:00:10.000"))
    }

    @Test func S93_answersAndPropertiesSurviveAKill() async {
        let w = World()
        let a = Harness(w)
        let run = a.start(StartOptions(onboarding: IDENTITY, manifest: MANIFEST, properties: ["cohort_week": 2]))
        run.enterStep("goal")
        run.exitStep("goal", answers: [.single(questionKey: "goal", value: "learn")])
        await a.tick()
        a.kill()
        await w.relaunch(atSeconds: 600)
        let b = Harness(w)
        _ = await resumeT(b)
        await b.tick(0)
        #expect(WireJSON.encodeString(steps(b.sink.last)[0]["answers"]!) == #"[{"question_key":"goal","kind":"single","value":"learn"}]"#)
        #expect(WireJSON.encodeString(b.sink.last!["properties"]!) == #"{"cohort_week":2}"#)
    }

    @Test func S94_anUnsentSnapshotIsSuperseded() async {
        let w = World()
        let a = Harness(w)
        a.sink.always(.transient)
        let run = a.start()
        run.enterStep("welcome")
        run.enterStep("goal")
        await a.tick(1000)
        let M = a.sink.seqs.max()!
        a.kill()
        await w.relaunch(atSeconds: 600)
        let b = Harness(w)
        b.sink.always(.transient)
        _ = await resumeT(b)
        await b.tick(60_000)
        #expect(b.sink.seqs.last == M + 1 + seqReservation)  // past the stored reservation (issue 14 item 5)
        #expect(keys(b.sink.last) == ["welcome", "goal", "goal"])
        _ = run
    }

    @Test func S97_aCompletedRunIsNotResumableButItsCompletionIsDelivered() async {
        let w = World()
        let a = Harness(w)
        a.sink.always(.transient)
        let run = a.start()
        run.enterStep("welcome")
        run.complete()
        await a.tick(1000)
        let C = a.sink.payloads.last { $0.isCompleted }!
        a.kill()
        await w.relaunch(atSeconds: 600)
        let b = Harness(w)
        b.sink.always(.transient)
        await b.tick(0)
        #expect(b.sink.payloads.first?.bytes == C.bytes)
        #expect(await resumeT(b) == nil)
        await b.tick(60_000)
        #expect(b.sink.payloads.allSatisfy { $0.bytes == C.bytes })
        b.sink.always(.accepted)
        await b.tick(60_000)
        await b.idle()
        b.kill()
        await w.nextLaunch()
        let c = Harness(w)
        await c.tick(60_000)
        #expect(c.sink.bodies.isEmpty)
    }

    @Test func S98_startingInsteadOfResumingAbandons() async {
        let w = World()
        let a = Harness(w)
        a.start().enterStep("welcome")
        await a.tick()
        a.kill()
        await w.relaunch(atSeconds: 600)
        let b = Harness(w)
        let fresh = b.start()
        fresh.enterStep("welcome")
        await b.tick()
        b.kill()
        await w.relaunch(atSeconds: 1200)
        let c = Harness(w)
        #expect(await resumeT(c)?.runId == fresh.runId)
    }

    @Test func S99_aDebouncedChangeAtKillTimeIsDelivered() async {
        for beforeRead in [false, true] {
            let w = World()
            let a = Harness(w) { $0.debounceMs = 5000 }
            let run = a.start()
            run.enterStep("welcome")
            run.background()
            await a.tick(1000)
            run.enterStep("goal")
            await a.tick(1000)
            #expect(a.sink.bodies.map { steps($0).count } == [1])
            let lastSeq = a.sink.seqs.last!
            a.kill()
            await w.relaunch(atSeconds: 600)
            let b = Harness(w) { $0.debounceMs = 5000 }
            if !beforeRead { await b.idle() }
            b.start()
            await b.tick(0)
            let old = b.sink.bodies.filter { $0["run_id"]?.stringValue == run.runId }
            #expect(old.count == 1)
            #expect(keys(old.first) == ["welcome", "goal"])
            #expect(old.first?["seq"]?.intValue == lastSeq + 1 + seqReservation)  // past the stored reservation (issue 14 item 5)
            #expect(old.first?["status"] == "in_progress")
        }
    }

    @Test func S100_anAbandonedRunWithNothingUnsentIsNotResent() async {
        let w = World()
        let a = Harness(w)
        let run = a.start()
        run.enterStep("welcome")
        await a.tick()
        a.kill()
        await w.relaunch(atSeconds: 600)
        let b = Harness(w)
        await b.idle()
        let next = b.start()
        next.enterStep("welcome")
        await b.tick(60_000)
        #expect(!b.sink.bodies.contains { $0["run_id"]?.stringValue == run.runId })
        // The successor does send: its own run, and nothing else.
        #expect(b.sink.bodies.map { $0["run_id"]!.stringValue! } == [next.runId])
        // And it read the stored run (then abandoned it): the stored state now holds only its own run.
        #expect(b.storedJSON?["current"]?["runId"]?.stringValue == next.runId)
    }

    @Test func S101_nothingToResume() async {
        let h = Harness(World(), storage: false)
        #expect(await resumeT(h) == nil)
        let w = World()
        try? await w.backing.setItem(KEY, "{not json")
        let h2 = Harness(w)
        #expect(await resumeT(h2) == nil)
        #expect(h2.codes.contains("storage"))
    }

    @Test func S102_resumeAfterStartInTheSameSession() async {
        let h = Harness(World())
        h.start().enterStep("welcome")
        #expect(await resumeT(h) == nil)
    }

    @Test func S103_closedAtTheExitStepTimeWhenThatIsLater() async {
        let w = World()
        let a = Harness(w) { $0.debounceMs = 60_000 }
        let run = a.start()
        run.enterStep("welcome")
        await a.tick(5000)
        run.background()
        await a.tick(15_000)
        run.exitStep("welcome")
        await a.tick(5000)
        await a.idle()
        a.kill()
        await w.nextLaunch(afterMs: 600_000)
        let b = Harness(w)
        _ = await resumeT(b)
        await b.tick(0)
        #expect(steps(b.sink.last)[0]["exited_at"]?.stringValue == ts("08:00:20.000"))
    }

    @Test func S104_closedAtTheLastForegroundMomentWhenThatIsLater() async {
        let w = World()
        let a = Harness(w) { $0.debounceMs = 60_000 }
        let run = a.start()
        run.enterStep("welcome")
        await a.tick(5000)
        run.exitStep("welcome")
        await a.tick(10_000)
        run.background()
        await a.tick(1000)
        await a.idle()
        a.kill()
        await w.nextLaunch()
        let b = Harness(w)
        _ = await resumeT(b)
        await b.tick(0)
        #expect(steps(b.sink.last)[0]["exited_at"]?.stringValue == ts("08:00:15.000"))
    }

    func killedRun(_ w: World, _ options: StartOptions = OPTIONS) async -> String {
        let a = Harness(w)
        let run = a.start(options)
        run.enterStep("welcome")
        await a.tick()
        await a.idle()
        a.kill()
        await w.nextLaunch()
        return run.runId
    }

    @Test func S106_resumeExpectedRefusesAnotherOnboarding() async {
        let cases: [(StartOptions, StartOptions)] = [
            (OPTIONS, StartOptions(onboarding: OnboardingInput(key: "main", version: "4"), manifest: MANIFEST)),
            (OPTIONS, StartOptions(onboarding: IDENTITY, manifest: MANIFEST.filter { $0.stepKey != "permissions" })),
            (StartOptions(manifest: MANIFEST, studio: StudioInput(onboardingId: "6f1c2b0e", deploymentId: "412")), OPTIONS),
        ]
        for (killed, expected) in cases {
            let w = World()
            let old = await killedRun(w, killed)
            let b = Harness(w)
            #expect(await resumeT(b, expected: expected) == nil)
            #expect(b.diags("resume-mismatch").map(\.runId) == [old])
            let fresh = b.start(expected)
            #expect(fresh.runId != old)
        }
    }

    @Test func S107_resumeExpectedAcceptsTheSameOnboarding() async {
        for expected in [OPTIONS, nil] {
            let w = World()
            let old = await killedRun(w)
            let b = Harness(w)
            let r = await resumeT(b, expected: expected)
            #expect(r?.runId == old)
            await b.tick(0)
            #expect(b.sink.last?["seq"]?.intValue == 2 + seqReservation)  // past the stored reservation (issue 14 item 5)
            #expect(!b.codes.contains("resume-mismatch"))
        }
    }

    @Test func S166_resumeExpectedComparesTheInFlowVariant() async {
        let killed = StartOptions(
            onboarding: OnboardingInput(key: "main", version: "3", variantKey: "short-intro"), manifest: MANIFEST,
            properties: ["signup_source": "email"])
        for (variant, resumes) in [(nil, false), ("long-intro", false), ("short-intro", true)] as [(String?, Bool)] {
            let w = World()
            let old = await killedRun(w, killed)
            let b = Harness(w)
            let r = await resumeT(
                b, expected: StartOptions(onboarding: OnboardingInput(key: "main", version: "3", variantKey: variant), manifest: MANIFEST))
            if resumes {
                #expect(r?.runId == old)
                #expect(!b.codes.contains("resume-mismatch"))
            } else {
                #expect(r == nil)
                #expect(b.diags("resume-mismatch").map(\.runId) == [old])
            }
        }
    }

    @Test func resumeIsCancellable() async {
        var f = FaultInjectingStorage.Faults()
        f.getsNeverAnswer = true
        let h = Harness(World(), faults: f)
        let tracker = h.tracker
        let task = Task { await tracker.resume() }
        task.cancel()
        #expect(await task.value == nil)
    }

    // MARK: I. dispose() and reconfigure

    @Test func S108_completeThenDisposeAtOnce() async {
        let w = World()
        let a = Harness(w)
        let run = a.start()
        run.enterStep("welcome")
        await a.tick(1000)
        run.complete()
        a.tracker.dispose()
        await a.tick(5000)
        #expect(a.sink.bodies.map { [$0["seq"]!.intValue!, $0["status"] == "completed" ? 1 : 0] } == [[1, 0], [2, 1]])
        await w.nextLaunch()
        let b = Harness(w)
        #expect(await resumeT(b) == nil)
        await b.tick(60_000)
        #expect(b.sink.bodies.allSatisfy { $0["status"] == "completed" && $0["seq"] == 2 })
    }

    @Test func S110_backgroundThenDisposeWithAChangeOnTheDebounce() async {
        let w = World()
        let a = Harness(w) { $0.debounceMs = 5000 }
        let run = a.start()
        run.enterStep("welcome")
        run.background()
        await a.tick(1000)
        run.enterStep("goal")
        a.tracker.dispose()
        await a.tick(5000)
        #expect(keys(a.sink.last) == ["welcome", "goal"])
        await a.tick(60_000)
        let b = Harness(w)
        let r = await resumeT(b)
        #expect(r?.runId == run.runId)
        await b.tick(0)
        #expect(keys(b.sink.last) == ["welcome", "goal", "goal"])
        #expect(b.sink.last?["seq"]?.intValue == a.sink.seqs.last! + 1)
    }

    @Test func S111_aCompletionTheSinkWillNotTakeAtDispose() async {
        let w = World()
        let a = Harness(w) { $0.storageKey = "test:b1-next-launch" }
        a.sink.always(.transient)
        let run = a.start()
        run.enterStep("welcome")
        run.complete()
        a.tracker.dispose()
        await a.tick(60_000)
        #expect(a.sink.statuses.filter { $0 == "completed" }.count == 1)
        #expect(w.clock.pendingTimerCount == 0)
        await w.nextLaunch()
        let b = Harness(w) { $0.storageKey = "test:b1-next-launch" }
        await b.tick(0)
        #expect(b.sink.statuses == ["completed"])
    }

    @Test func S112_disposeTwice() async {
        let h = Harness(World())
        let run = h.start()
        run.enterStep("welcome")
        run.complete()
        h.tracker.dispose()
        h.tracker.dispose()
        await h.tick(60_000)
        #expect(h.sink.statuses.filter { $0 == "completed" }.count == 1)
    }

    @Test func S113_disposeWithStorageThatNeverFinishes() async {
        var f = FaultInjectingStorage.Faults()
        f.writesNeverFinish = true
        let h = Harness(World(), faults: f)
        let run = h.start()
        run.enterStep("welcome")
        run.complete()
        h.tracker.dispose()
        await h.tick(1000)
        #expect(h.sink.statuses.contains("completed"))
    }

    @Test func S114_nothingRecordsAfterDispose() async {
        let h = Harness(World())
        let run = h.start()
        run.enterStep("welcome")
        await h.tick()
        h.tracker.dispose()
        run.enterStep("goal")
        h.tracker.start(OPTIONS).enterStep("welcome")
        await h.tick(60_000)
        #expect(h.sink.bodies.count == 1)
        #expect(h.count("disposed") == 2)
        #expect(h.diags("disposed").first?.runId == run.runId)
    }

    @Test func S117_disposeThenCreateAtOnce() async {
        let w = World()
        let a = Harness(w)
        a.sink.always(.transient)
        let run = a.start()
        run.enterStep("welcome")
        await a.tick(1000)
        run.complete()
        a.tracker.dispose()
        let b = Harness(w)
        let result = Locked<Bool?>(nil)
        let t = b.tracker
        w.clock.spawnAsCaller {
            let r = await t.resume()
            result.withLock { $0 = r == nil }
        }
        await b.tick(10_000)
        #expect(result.value == true)
        #expect(b.sink.statuses.contains("completed"))
    }

    @Test func S121_anInProgressRunIsResumedFromTheNewestState() async {
        for withStorage in [false, true] {
            let w = World()
            let a = Harness(w, storage: withStorage)
            let run = a.start()
            run.enterStep("welcome")
            await a.tick(1000)
            await a.idle()
            a.slowWrites(30_000)
            run.enterStep("goal")
            await a.tick(2000)
            #expect(a.sink.seqs.last == 2)
            a.tracker.dispose()
            let b = Harness(w, storage: withStorage)
            let r = await resumeT(b)
            #expect(r?.runId == run.runId)
            await b.tick(5000)
            #expect(b.sink.bodies.map { $0["seq"]!.intValue! } == [3])
            #expect(keys(b.sink.last) == ["welcome", "goal", "goal"])
            if withStorage {
                // A's first slow write lands 30 s after `goal` and B writes its state again (W2).
                // A's second write (queued when seq 2 settled) is still under way when the
                // process is killed: it never lands, like every other call of that process.
                await b.tick(30_000)
                await b.idle()
                await w.nextLaunch()
                let c = Harness(w)
                #expect(await resumeT(c)?.runId == run.runId)
                await c.tick(0)
                #expect(c.sink.last?["seq"]?.intValue == 4 + seqReservation)  // past the stored reservation (issue 14 item 5)
            }
        }
    }

    @Test func S122_theOldTrackersLastAttemptStillInFlight() async {
        for accepted in [true, false] {
            let w = World()
            let a = Harness(w)
            a.sink.answer { p, _ in p.isCompleted ? .after(2000, accepted ? .accepted : .transient) : .result(.accepted) }
            let run = a.start()
            run.enterStep("welcome")
            await a.tick(1000)
            run.complete()
            await a.tick(0)
            a.tracker.dispose()
            let b = Harness(w)
            await b.tick(1000)
            #expect(b.sink.bodies.isEmpty)
            await b.tick(60_000)
            #expect(b.sink.bodies.filter { $0["run_id"]?.stringValue == run.runId }.count == (accepted ? 0 : 1))
        }
    }

    @Test func S127_reconfigureWithoutStorageDeliversAFailedCompletion() async {
        let w = World()
        let a = Harness(w, storage: false)
        a.sink.always(.transient)
        let run = a.start()
        run.enterStep("welcome")
        run.complete()
        a.tracker.dispose()
        await a.tick(60_000)
        #expect(a.sink.statuses.filter { $0 == "completed" }.count == 1)
        #expect(w.clock.pendingTimerCount == 0)
        let b = Harness(w, storage: false)
        await b.tick(1000)
        #expect(b.sink.statuses == ["completed"])
    }

    @Test func S128_reconfigureWithStorage() async {
        let w = World()
        let a = Harness(w)
        a.sink.always(.transient)
        let run = a.start()
        run.enterStep("welcome")
        run.complete()
        a.tracker.dispose()
        await a.tick(60_000)
        let b = Harness(w)
        await b.tick(1000)
        #expect(b.sink.statuses == ["completed"])
        await b.idle()
        b.kill()
        await w.nextLaunch()
        let c = Harness(w)
        await c.tick(60_000)
        #expect(!c.sink.statuses.contains("completed"))
    }

    @Test func S129_killedWithStorage() async {
        let w = World()
        let a = Harness(w)
        a.sink.always(.transient)
        let run = a.start()
        run.enterStep("welcome")
        run.complete()
        await a.tick(1000)
        a.kill()
        await w.nextLaunch()
        let b = Harness(w)
        await b.tick(60_000)
        #expect(b.sink.statuses == ["completed"])
    }

    @Test func S130_killedWithoutStorage() async {
        let w = World()
        let a = Harness(w, storage: false)
        a.sink.always(.transient)
        let run = a.start()
        run.enterStep("welcome")
        run.complete()
        await a.tick(1000)
        a.kill()
        let b = Harness(w, storage: false)
        await b.tick(60_000)
        #expect(b.sink.bodies.isEmpty)
    }

    @Test func S163_theHandedRunIsTheOldTrackersLatestRun() async {
        for withStorage in [true, false] {
            let w = World()
            let a = Harness(w, storage: withStorage)
            let x = a.start()
            x.enterStep("welcome")
            await a.tick()
            let y = a.start()
            y.enterStep("welcome")
            await a.tick()
            let ySeq = a.sink.bodies.filter { $0["run_id"]?.stringValue == y.runId }.last!["seq"]!.intValue!
            a.tracker.dispose()
            let b = Harness(w, storage: withStorage)
            let r = await resumeT(b)
            #expect(r?.runId == y.runId)
            await b.tick(0)
            #expect(b.sink.bodies.allSatisfy { $0["run_id"]?.stringValue == y.runId })
            #expect(keys(b.sink.last) == ["welcome", "welcome"])
            #expect(b.sink.last?["seq"]?.intValue == ySeq + 1)
        }
    }

    @Test func S168_aHungLastAttemptHoldsTheHandoverBackByAtMostAttemptTimeout() async {
        let w = World()
        let a = Harness(w, storage: false)
        a.sink.answer { p, _ in p.isCompleted ? .hang : .result(.accepted) }
        let run = a.start()
        run.enterStep("welcome")
        await a.tick(1000)
        run.complete()
        await a.tick(0)
        a.tracker.dispose()
        let b = Harness(w, storage: false)
        await b.tick(29_999)
        #expect(!b.sink.bodies.contains { $0["run_id"]?.stringValue == run.runId })
        await b.tick(1)
        #expect(b.sink.bodies.filter { $0["run_id"]?.stringValue == run.runId }.count == 1)
    }

    // MARK: J. Destinations

    @Test func S133_destinationsWithoutStorage() async {
        let w = World()
        let a = Harness(w, storage: false, destination: STAGING)
        a.sink.always(.transient)
        a.start().enterStep("welcome")
        await a.tick(1000)
        a.tracker.dispose()
        let b = Harness(w, storage: false, destination: PRODUCTION)
        #expect(await resumeT(b) == nil)
        await b.tick(60_000)
        #expect(b.sink.bodies.isEmpty)
    }

    @Test func S136_sameDestinationHandsEverythingOver() async {
        for sameObject in [false, true] {
            let w = World()
            let shared = HarnessSink(destination: nil, clock: w.clock, respond: { _, _ in .result(.transient) })
            let a = sameObject ? Harness(w, sink: shared) : Harness(w, destination: PRODUCTION)
            a.sink.always(.transient)
            let d = a.start()
            d.enterStep("welcome")
            d.complete()
            let o = a.start()
            o.enterStep("welcome")
            await a.tick(1000)
            a.tracker.dispose()
            await w.settle()
            if sameObject { shared.answer { _, _ in .result(.accepted) } }
            // Counted before B exists: A's leftover is already complete, so B enqueues D's
            // completion from its initialiser and the send may run on the clock's executor
            // before the next line of the test.
            let countBefore = sameObject ? shared.bodies.filter { $0["run_id"]?.stringValue == d.runId }.count : 0
            let b = sameObject ? Harness(w, sink: shared) : Harness(w, destination: PRODUCTION)
            let r = await resumeT(b)
            await b.tick(5000)
            #expect(r?.runId == o.runId)
            #expect(b.sink.bodies.filter { $0["run_id"]?.stringValue == d.runId }.count - countBefore == 1)
            #expect(!b.codes.contains("destination-changed"))
        }
    }

    @Test func S140_aRunInProgressIsReportedAtOnce() async {
        let w = World()
        let a = Harness(w, storage: false, destination: STAGING)
        a.start().enterStep("welcome")
        a.tracker.dispose()
        let b = Harness(w, storage: false, destination: PRODUCTION)
        #expect(b.count("destination-changed") == 1)
    }

    @Test func S141_anInFlightCompletionIsReportedOnceItsAnswerIsKnown() async {
        for accepted in [true, false] {
            let w = World()
            let a = Harness(w, storage: false, destination: STAGING)
            a.sink.answer { p, _ in p.isCompleted ? .after(2000, accepted ? .accepted : .transient) : .result(.accepted) }
            let run = a.start()
            run.enterStep("welcome")
            await a.tick(1000)
            run.complete()
            a.tracker.dispose()
            let b = Harness(w, storage: false, destination: PRODUCTION)
            await b.tick(1000)
            #expect(b.count("destination-changed") == 0)
            await b.tick(60_000)
            #expect(b.count("destination-changed") == (accepted ? 0 : 1))
        }
    }

    @Test func S137_storedStateForAnotherDestinationAtTheNextLaunch() async {
        let pairs: [(String?, String?)] = [
            (STAGING, PRODUCTION), (nil, PRODUCTION), (PRODUCTION, nil),
            ("\(STAGING) (custom fetch)", "\(PRODUCTION) (custom fetch)"), ("\(PRODUCTION) (custom fetch)", PRODUCTION),
        ]
        for (first, second) in pairs {
            let w = World()
            let a = Harness(w, destination: first) { $0.debounceMs = 5000 }
            a.sink.always(.transient)
            let d = a.start()
            d.enterStep("welcome")
            d.complete()
            let o = a.start()
            o.enterStep("welcome")
            await a.tick(1000)
            await a.idle()
            a.kill()
            await w.nextLaunch()
            let b = Harness(w, destination: second)
            #expect(await resumeT(b) == nil)
            b.start()
            await b.tick(60_000)
            #expect(!b.sink.bodies.contains { [d.runId, o.runId].contains($0["run_id"]!.stringValue!) })
            #expect(b.codes.contains("destination-changed"))
            await b.idle()
            #expect(!(b.stored ?? "").contains(d.runId) && !(b.stored ?? "").contains(o.runId))
        }
    }

    @Test func S138_sameDestinationAtTheNextLaunch() async {
        for dest in [PRODUCTION, "\(PRODUCTION) (custom fetch)", nil] as [String?] {
            let w = World()
            let a = Harness(w, destination: dest) { $0.debounceMs = 5000 }
            a.sink.always(.transient)
            let d = a.start()
            d.enterStep("welcome")
            d.complete()
            let o = a.start()
            o.enterStep("welcome")
            await a.tick(1000)
            await a.idle()
            a.kill()
            await w.nextLaunch()
            let b = Harness(w, destination: dest)
            #expect(await resumeT(b)?.runId == o.runId)
            await b.tick(60_000)
            #expect(b.sink.bodies.contains { $0["run_id"]?.stringValue == d.runId && $0["status"] == "completed" })
        }
    }

    @Test func S139_nothingLeftNothingReported() async {
        for complete in [false, true] {
            let w = World()
            let a = Harness(w, destination: STAGING)
            if complete {
                let r = a.start()
                r.enterStep("welcome")
                r.complete()
            }
            await a.tick(5000)
            await a.idle()
            a.tracker.dispose()
            let b = Harness(w, destination: PRODUCTION)
            await b.tick(60_000)
            #expect(b.count("destination-changed") == 0)
        }
    }

    @Test func S167_oneStorageKeyPerDestinationDiscardsNothing() async {
        let w = World()
        let a = Harness(w, destination: STAGING) { $0.storageKey = "test:staging" }
        a.sink.always(.transient)
        let run = a.start()
        run.enterStep("welcome")
        run.complete()
        await a.tick(1000)
        await a.idle()
        a.tracker.dispose()
        let storedA = w.backing.snapshot["test:staging"]
        let b = Harness(w, destination: PRODUCTION) { $0.storageKey = "test:production" }
        let fresh = b.start()
        fresh.enterStep("welcome")
        await b.tick(60_000)
        await b.idle()
        #expect(b.sink.bodies.allSatisfy { $0["run_id"]?.stringValue == fresh.runId })
        #expect(!b.codes.contains("destination-changed"))
        #expect(w.backing.snapshot["test:staging"] == storedA)
        await w.nextLaunch()
        let c = Harness(w, destination: STAGING) { $0.storageKey = "test:staging" }
        await c.tick(60_000)
        #expect(c.sink.bodies.contains { $0["run_id"]?.stringValue == run.runId && $0["status"] == "completed" })
    }

    // MARK: K. Limits and truncation

    @Test func S143_the500EntryCap() async {
        let h = Harness(World())
        let run = h.start()
        run.enterStep("welcome")
        for i in 0..<600 {
            await h.tick(10_000)
            run.enterStep(i % 2 == 0 ? "goal" : "experience")
        }
        await h.tick(10_000)
        let l = h.sink.last!
        #expect(l["status"] == "in_progress" && l["truncated"] == true)
        #expect(steps(l).count == 500 && steps(l)[0]["step_key"] == "welcome")
        let e = steps(l)[499]
        #expect(Timestamp.parse(e["exited_at"]!.stringValue!)! - Timestamp.parse(e["entered_at"]!.stringValue!)! == 10_000)
        run.complete()
        await h.tick(0)
        let c = h.sink.last!
        #expect(c["status"] == "completed" && c["truncated"] == true && steps(c).count == 500)
        #expect(steps(c)[499]["exited_at"]!.stringValue! < c["completed_at"]!.stringValue!)
        #expect(h.sink.bodies.filter { $0["truncated"] == true }.count <= 3)
    }

    @Test func S144_nothingIsRecordedAfterTruncation() async {
        let h = Harness(World())
        let run = h.start()
        for i in 0..<501 { run.enterStep(i % 2 == 0 ? "experience" : "goal") }
        await h.tick()
        let L = h.sink.last!
        #expect(L["truncated"] == true)
        run.exitStep(steps(L)[499]["step_key"]!.stringValue!, answers: [.single(questionKey: "late", value: "x")])
        run.setProperties(["late": true])
        run.complete()
        await h.tick()
        let c = h.sink.last!
        #expect(c["steps"] == L["steps"])
        #expect(c["properties"] == nil)
        #expect(h.codes.contains("truncated"))
    }

    @Test func S145_crossingTheBudgetInsideAnEntry() async {
        let h = Harness(World())
        let run = h.start()
        run.enterStep("welcome")
        await h.tick()
        for i in 0..<5 {
            let k = i % 2 == 0 ? "goal" : "experience"
            run.enterStep(k)
            await h.tick(1000)
            run.exitStep(k, answers: (0..<50).map { .text(questionKey: "q\($0)", value: String(repeating: "x", count: 1000)) })
            await h.tick(1000)
        }
        let l = h.sink.last!
        #expect(l["truncated"] == true)
        let last = steps(l).last!
        #expect((1...49).contains(last["answers"]!.arrayValue!.count))
        #expect(last["exited_at"] != .null)
        run.enterStep("summary")
        run.complete()
        await h.tick(0)
        let c = h.sink.payloads.last!
        #expect(c.json["status"] == "completed" && c.json["truncated"] == true && c.json["steps"] == l["steps"])
        #expect(c.bytes.count <= 262_144)
    }

    @Test func S147_propertiesCountAgainstTheBudget() async {
        let h = Harness(World())
        let run = h.start(StartOptions(onboarding: IDENTITY, manifest: MANIFEST, properties: ["plan": "a"]))
        run.enterStep("welcome")
        // Fill with text answers until 5 bytes below the budget.
        var i = 0
        while true {
            let m = h.tracker.debugMeasure()!.incremental
            let room = recordingBudget - 5 - m
            if room <= 0 { break }
            let overhead = WireJSON.encode(["question_key": .string("q\(i)"), "kind": "text", "value": ""]).count + 1
            let len = min(1000, room - overhead)
            if len < 0 { break }
            let key = i < 45 ? "welcome" : "goal"
            if i == 45 { run.enterStep("goal") }
            if i > 0 && i % 45 == 0 && i != 45 { run.enterStep(i / 45 % 2 == 0 ? "welcome" : "goal") }
            run.exitStep(
                h.tracker.debugCurrentKey() ?? key, answers: [.text(questionKey: "q\(i)", value: String(repeating: "x", count: len))])
            i += 1
            if i > 400 { break }
        }
        #expect(recordingBudget - h.tracker.debugMeasure()!.incremental == 5)
        run.setProperties(["plan": "a much longer value"])
        await h.tick()
        #expect(h.sink.last?["truncated"] == true)
        #expect(WireJSON.encodeString(h.sink.last!["properties"]!) == #"{"plan":"a"}"#)
    }

    @Test func S164_currentStepKeyFollowsTheRecordedEntries() async {
        let h = Harness(World())
        let run = h.start()
        #expect(run.currentStepKey == nil)
        run.enterStep("welcome")
        #expect(run.currentStepKey == "welcome")
        run.enterStep("not_declared")
        #expect(run.currentStepKey == "welcome")
        run.enterStep("goal")
        run.exitStep("goal")
        #expect(run.currentStepKey == "goal")
        run.enterStep("welcome")
        #expect(run.currentStepKey == "welcome")
        let t = h.start()
        for i in 0..<501 { t.enterStep(i % 2 == 0 ? "experience" : "goal") }
        #expect(t.currentStepKey == "goal")
        t.enterStep("summary")
        #expect(t.currentStepKey == "goal")
        let inert = h.start(StartOptions(onboarding: IDENTITY, manifest: []))
        #expect(inert.currentStepKey == nil)
    }

    @Test func S165_servedStudioVariantLengthAndNumbers() async {
        let rows: [(StudioID?, String?)] = [
            ("main", "main"), (.string(String(repeating: "x", count: 128)), String(repeating: "x", count: 128)),
            (.string(String(repeating: "😀", count: 128)), String(repeating: "😀", count: 128)),
            ("", "invalid"), (.string(String(repeating: "x", count: 129)), "invalid"), (7, "7"), (7.5, "invalid"), (-1, "invalid"),
            (nil, nil),
        ]
        for (v, expected) in rows {
            let h = Harness(World())
            let run = h.start(StartOptions(manifest: MANIFEST, studio: StudioInput(onboardingId: "87", deploymentId: "412", variantKey: v)))
            run.enterStep("welcome")
            await h.tick()
            if expected == "invalid" {
                #expect(h.sink.bodies.isEmpty && h.codes.contains("invalid-start"))
            } else {
                #expect(h.sink.last?["studio"]?["variant_key"]?.stringValue == expected)
                #expect(!h.codes.contains("invalid-start"))
            }
        }
    }
}

extension OnboardingRunTracker {
    func debugCurrentKey() -> String? { state.withLock { $0.current?.steps.last?.stepKey } }
}
