import Foundation
import Testing
import TrackerCore
import TrackerCoreTestKit

@testable import OnboardingTracker

// Scenarios A (recording and payload shape), B (identity), C (validation), D (delivery) of
// onboarding-tracker.md §12.
//
// S53–S63 (per-run delivery queue) and S149–S157 (Core utilities) are Core-level and tested in
// Packages/Core/Tests/TrackerCoreTests (DeliveryTests.swift, TimeAndIDTests.swift,
// StorageTests.swift). S64–S70 (stock HTTP sink) are in Packages/Core/Tests/TrackerCoreTests/
// HTTPSinkTests.swift; S71–S73 are in HTTPEndToEndTests.swift here.

@Suite struct RecordingScenarios {
    @Test func S1_aCompleteRun() async {
        let h = Harness(World())
        let run = h.start(StartOptions(onboarding: IDENTITY, manifest: MANIFEST, properties: ["signup_source": "email"]))
        run.enterStep("welcome")
        await h.tick()
        run.exitStep("welcome")
        run.enterStep("goal")
        await h.tick()
        run.exitStep(
            "goal",
            answers: [.single(questionKey: "goal", value: "practice"), .multi(questionKey: "topics", value: ["vocabulary", "listening"])])
        run.enterStep("summary")
        await h.tick()
        run.exitStep("summary", answers: [.numeric(questionKey: "daily_time", value: 15, unit: "minute")])
        run.complete()
        await h.tick(0)
        let l = h.sink.last!
        #expect(l["status"] == "completed")
        #expect(l["run_id"]?.stringValue == run.runId)
        #expect(WireJSON.encodeString(l["onboarding"]!) == #"{"key":"main","version":"3"}"#)
        #expect(WireJSON.encodeString(l["manifest"]!["steps"]!.arrayValue![3]) == #"{"step_key":"plan_quick","slot":"plan"}"#)
        #expect(WireJSON.encodeString(l["properties"]!) == #"{"signup_source":"email"}"#)
        #expect(
            WireJSON.encodeString(l["context"]!)
                == #"{"app_version":"2.4.0","build":"412","platform":"ios","os_version":"18.1","locale":"en-US","timezone":"America/New_York","library_version":"\#(OnboardingTrackerVersion.current)"}"#
        )
        #expect(keys(l) == ["welcome", "goal", "summary"])
        #expect(l["started_at"]?.stringValue == ts("08:00:00.000"))
        #expect(
            WireJSON.encodeString(steps(l)[1])
                == #"{"step_key":"goal","entered_at":"2026-01-10T08:00:10.000Z","exited_at":"2026-01-10T08:00:20.000Z","answers":[{"question_key":"goal","kind":"single","value":"practice"},{"question_key":"topics","kind":"multi","value":["vocabulary","listening"]}]}"#
        )
        #expect(
            WireJSON.encodeString(steps(l)[2]["answers"]!)
                == #"[{"question_key":"daily_time","kind":"numeric","value":15,"unit":"minute"}]"#)
        #expect(l["completed_at"]?.stringValue == ts("08:00:30.000"))
        #expect(steps(l)[2]["exited_at"] == l["completed_at"])
    }

    @Test func S2_onlyTheCurrentScreenIsOpen() async {
        let h = Harness(World())
        let run = h.start()
        run.enterStep("welcome")
        run.exitStep("welcome", answers: [.single(questionKey: "ready", value: "yes")])
        await h.tick(0)
        let l = h.sink.last!
        #expect(l["status"] == "in_progress")
        #expect(l["completed_at"] == .null)
        #expect(steps(l)[0]["exited_at"] == .null)
        #expect(WireJSON.encodeString(steps(l)[0]["answers"]!) == #"[{"question_key":"ready","kind":"single","value":"yes"}]"#)
    }

    @Test func S3_theExitStepTimeIsKept() async {
        let h = Harness(World())
        let run = h.start()
        run.enterStep("welcome")
        await h.tick(5000)
        run.exitStep("welcome")
        await h.tick(2000)
        run.enterStep("goal")
        await h.tick(0)
        #expect(steps(h.sink.last)[0]["exited_at"]?.stringValue == ts("08:00:05.000"))
        #expect(steps(h.sink.last)[1]["entered_at"]?.stringValue == ts("08:00:07.000"))
    }

    @Test func S4_enteringClosesTheOpenEntry() async {
        let h = Harness(World())
        let run = h.start()
        run.enterStep("welcome")
        await h.tick(3000)
        run.enterStep("goal")
        await h.tick(0)
        #expect(steps(h.sink.last)[0]["exited_at"]?.stringValue == ts("08:00:03.000"))
    }

    @Test func S5_nothingBeforeTheFirstEntry() async {
        let h = Harness(World())
        let run = h.start()
        run.setProperties(["cohort_week": 2])
        run.background()
        run.complete()
        await h.tick()
        #expect(h.sink.bodies.isEmpty)
        #expect(h.codes.contains("no-steps"))
    }

    @Test func S6_noSkipIsEverReported() async {
        let h = Harness(World())
        let run = h.start()
        for k in ["welcome", "goal", "experience", "plan_quick", "summary"] {
            run.enterStep(k)
            await h.tick()
        }
        run.complete()
        await h.tick(0)
        let l = h.sink.last!
        #expect(l["status"] == "completed")
        #expect(l["manifest"]!["steps"]!.arrayValue!.contains { $0["step_key"] == "permissions" })
        #expect(!keys(l).contains("permissions"))
        #expect(!h.sink.payloads.contains { $0.text.lowercased().contains("skip") })
        // The run type has no skip operation: OnboardingRun offers enterStep, exitStep,
        // setProperties, complete and background only (checked by the compiler).
    }

    @Test func S7_slotAlternatives() async {
        let h = Harness(World())
        let run = h.start()
        for k in ["welcome", "goal", "experience", "plan_detailed", "summary"] {
            run.enterStep(k)
            await h.tick()
        }
        run.complete()
        await h.tick(0)
        let l = h.sink.last!
        let plan = l["manifest"]!["steps"]!.arrayValue!.filter { $0["slot"] == "plan" }.map { $0["step_key"]!.stringValue! }
        #expect(plan == ["plan_quick", "plan_detailed"])
        #expect(keys(l).contains("plan_detailed") && !keys(l).contains("plan_quick"))
    }

    @Test func S8_backNavigationAppends() async {
        let h = Harness(World())
        let run = h.start()
        run.enterStep("welcome")
        await h.tick()
        run.enterStep("goal")
        await h.tick()
        run.exitStep("goal", answers: [.single(questionKey: "goal", value: "learn")])
        run.enterStep("experience")
        await h.tick()
        let firstTwo = Array(steps(h.sink.last).prefix(2))
        run.enterStep("goal")
        await h.tick()
        run.exitStep("goal", answers: [.single(questionKey: "goal", value: "practice")])
        run.enterStep("experience")
        await h.tick()
        let l = h.sink.last
        #expect(keys(l) == ["welcome", "goal", "experience", "goal", "experience"])
        #expect(Array(steps(l).prefix(2)).map { WireJSON.encode($0) } == firstTwo.map { WireJSON.encode($0) })
        #expect(WireJSON.encodeString(steps(l)[3]["answers"]!) == #"[{"question_key":"goal","kind":"single","value":"practice"}]"#)
    }

    @Test func S9_aReplayIsANewRun() async {
        let h = Harness(World())
        let run1 = h.start()
        run1.enterStep("welcome")
        run1.enterStep("goal")
        await h.tick()
        let remembered = h.sink.last!
        let run2 = h.start()
        run2.enterStep("welcome")
        await h.tick()
        run1.enterStep("summary")
        run1.complete()
        await h.tick()
        #expect(run2.runId != run1.runId)
        #expect(h.sink.last?["run_id"]?.stringValue == run2.runId)
        #expect(h.sink.last?["seq"] == 1)
        #expect(h.sink.bodies.filter { $0["run_id"]?.stringValue == run1.runId }.last == remembered)
        #expect(h.diags("run-replaced").contains { $0.runId == run1.runId })
        #expect(h.codes.contains("run-inactive"))
    }

    @Test func S10_contextAndManifestCapturedOnce() async {
        let calls = Locked(0)
        let h = Harness(World()) { c in
            c.context = .provider {
                let n = calls.withLock {
                    $0 += 1
                    return $0
                }
                var ctx = CONTEXT
                ctx.locale = n == 1 ? "fr-FR" : "de-DE"
                return ctx
            }
        }
        let run = h.start()
        run.enterStep("welcome")
        await h.tick()
        run.enterStep("goal")
        await h.tick()
        run.complete()
        await h.tick()
        #expect(h.sink.bodies.count >= 3)
        #expect(Set(h.sink.bodies.map { WireJSON.encodeString($0["context"]!) }).count == 1)
        #expect(h.sink.bodies.allSatisfy { $0["context"]!["locale"] == "fr-FR" && $0["manifest"]!["steps"]!.arrayValue!.count == 7 })
        #expect(calls.value == 1)
    }

    @Test func S11_noCountry() async {
        // The typed context has no place for extra data: a country value cannot be passed at all.
        let h = Harness(World())
        let run = h.start()
        run.enterStep("welcome")
        await h.tick()
        #expect(!h.sink.payloads.contains { $0.text.lowercased().contains("country") })
    }

    @Test func S12_inFlowVariant() async {
        let h = Harness(World())
        let run = h.start(
            StartOptions(onboarding: OnboardingInput(key: "main", version: "3", variantKey: "short-intro"), manifest: MANIFEST))
        run.enterStep("welcome")
        await h.tick()
        #expect(WireJSON.encodeString(h.sink.last!["onboarding"]!) == #"{"key":"main","version":"3","variant_key":"short-intro"}"#)
        #expect(h.sink.last!["studio"] == nil)
    }

    @Test func S13_lateExitStep() async {
        let h = Harness(World())
        let run = h.start()
        run.enterStep("welcome")
        await h.tick(1000)
        run.enterStep("goal")
        run.exitStep("welcome", answers: [.single(questionKey: "ready", value: "yes")])
        await h.tick()
        let l = h.sink.last
        #expect(WireJSON.encodeString(steps(l)[0]["answers"]!) == #"[{"question_key":"ready","kind":"single","value":"yes"}]"#)
        #expect(steps(l)[0]["exited_at"]?.stringValue == ts("08:00:01.000"))
        #expect(steps(l)[1]["answers"] == [])
    }

    @Test func S14_doubleMount() async {
        let h = Harness(World())
        let run = h.start()
        run.enterStep("welcome")
        run.enterStep("welcome")
        await h.tick()
        #expect(keys(h.sink.last) == ["welcome"])
        #expect(h.codes.contains("already-on-step"))
    }

    @Test func S15_reEnteringAfterLeavingAppends() async {
        let h = Harness(World())
        let run = h.start()
        run.enterStep("welcome")
        run.exitStep("welcome")
        run.enterStep("welcome")
        await h.tick()
        #expect(keys(h.sink.last) == ["welcome", "welcome"])
        #expect(!h.codes.contains("already-on-step"))
    }

    @Test func S16_clockMovedBackwards() async {
        let world = World()
        let offset = Locked<Int64>(0)
        struct OffsetClock: TrackerClock {
            let base: ManualClock
            let offset: Locked<Int64>
            func nowMs() -> Int64 { base.nowMs() + offset.value }
        }
        let h = Harness(world) { $0.clock = OffsetClock(base: world.clock, offset: offset) }
        let run = h.start()
        run.enterStep("welcome")
        await h.tick(1000)
        offset.withLock { $0 = -60_000 }
        run.exitStep("welcome")
        run.enterStep("goal")
        run.complete()
        await h.tick()
        let l = h.sink.last!
        let s = steps(l)
        #expect(s[1]["entered_at"]!.stringValue! >= s[0]["entered_at"]!.stringValue!)
        #expect(l["completed_at"]!.stringValue! >= s[1]["entered_at"]!.stringValue!)
        #expect(s[1]["entered_at"]?.stringValue == ts("08:00:00.000"))
    }

    // S17, S18 (the app-wide tracker) are in FacadeScenarios.

    @Test func S19_independentInstances() async {
        let world = World()
        let a = Harness(world)
        let b = Harness(world) { $0.storageKey = "other" }
        #expect(a.tracker !== b.tracker)
        a.tracker.dispose()
        b.tracker.dispose()
    }

    @available(macOS 13.0, iOS 16.0, tvOS 16.0, visionOS 1.0, *)  // Regex
    @Test func S20_badUuidOption() async {
        let h = Harness(World()) { $0.uuid = { "not-a-uuid" } }
        let run = h.start()
        #expect(h.codes.contains("invalid-uuid"))
        let pattern = try! Regex("^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$")
        #expect(run.runId.wholeMatch(of: pattern) != nil)
        let h2 = Harness(World()) { $0.uuid = { "00000000-0000-4000-8000-ABCDEF000001" } }
        let run2 = h2.start()
        #expect(run2.runId == "00000000-0000-4000-8000-abcdef000001")
        #expect(h2.codes.isEmpty)
    }

    // MARK: B. Identity and Studio links

    func studioRun(_ options: StartOptions) async -> Harness {
        let h = Harness(World())
        let run = h.start(options)
        run.enterStep("welcome")
        await h.tick()
        return h
    }

    func enc(_ v: JSONValue?) -> String? { v.map { WireJSON.encodeString($0) } }

    @Test func S21_studioServedDefaults() async {
        let h = await studioRun(
            StartOptions(manifest: MANIFEST, studio: StudioInput(onboardingId: "6f1c2b0e", deploymentId: "412", audienceId: "7")))
        #expect(enc(h.sink.last?["onboarding"]) == #"{"key":"6f1c2b0e","version":"412"}"#)
        #expect(enc(h.sink.last?["studio"]) == #"{"onboarding_id":"6f1c2b0e","deployment_id":"412","audience_id":"7"}"#)
    }

    @Test func S22_draft() async {
        let h = await studioRun(StartOptions(manifest: MANIFEST, studio: StudioInput(onboardingId: "6f1c2b0e", draft: true)))
        #expect(enc(h.sink.last?["onboarding"]) == #"{"key":"6f1c2b0e","version":"draft"}"#)
        #expect(enc(h.sink.last?["studio"]) == #"{"onboarding_id":"6f1c2b0e"}"#)
    }

    @Test func S23_noDeploymentIdIsADraft() async {
        let h = await studioRun(StartOptions(manifest: MANIFEST, studio: StudioInput(onboardingId: "6f1c2b0e")))
        #expect(h.sink.last?["onboarding"]?["version"] == "draft")
    }

    @Test func S24_draftWinsOverADeclaredVersion() async {
        let h = await studioRun(
            StartOptions(onboarding: IDENTITY, manifest: MANIFEST, studio: StudioInput(onboardingId: "6f1c2b0e", draft: true)))
        #expect(enc(h.sink.last?["onboarding"]) == #"{"key":"main","version":"draft"}"#)
        #expect(h.codes.contains("draft-version"))
    }

    @Test func S25_studioServedRunDropsTheInFlowVariant() async {
        let h = await studioRun(
            StartOptions(
                onboarding: OnboardingInput(key: "main", version: "3", variantKey: "b"), manifest: MANIFEST,
                studio: StudioInput(onboardingId: "x", deploymentId: "1")))
        #expect(enc(h.sink.last?["onboarding"]) == #"{"key":"main","version":"3"}"#)
        #expect(h.codes.contains("studio-variant-dropped"))
    }

    @Test func S26_aNullDeploymentIdIsAbsent() async {
        let h = await studioRun(StartOptions(manifest: MANIFEST, studio: StudioInput(onboardingId: "abc", deploymentId: nil)))
        #expect(h.sink.bodies.count == 1)
        #expect(enc(h.sink.last?["onboarding"]) == #"{"key":"abc","version":"draft"}"#)
        #expect(enc(h.sink.last?["studio"]) == #"{"onboarding_id":"abc"}"#)
    }

    @Test func S27_nonStringIdentityIsNeverCoerced() async {
        // Typed API: `onboarding.version`/`key` are Strings, so null or numeric versions/keys
        // cannot be passed (decision 11; the loose JSON path does not exist in Swift). The
        // expressible row: a fractional deployment id.
        let h = await studioRun(StartOptions(manifest: MANIFEST, studio: StudioInput(onboardingId: "abc", deploymentId: .number(412.5))))
        #expect(h.sink.bodies.isEmpty)
        #expect(h.codes.contains("invalid-start"))
    }

    @Test func S28_linkLessStudioObjectIsNotStudioServed() async {
        for studio in [StudioInput(), StudioInput(onboardingId: nil), StudioInput(audienceId: nil)] {
            let h = await studioRun(
                StartOptions(
                    onboarding: OnboardingInput(key: "main", version: "3", variantKey: "short-intro"), manifest: MANIFEST, studio: studio))
            #expect(enc(h.sink.last?["onboarding"]) == #"{"key":"main","version":"3","variant_key":"short-intro"}"#)
            #expect(h.sink.last?["studio"] == nil)
            #expect(!h.codes.contains("studio-variant-dropped"))
        }
    }

    @Test func S29_numericStudioIdsBecomeDecimalStrings() async {
        let rows: [(StartOptions, String, String)] = [
            (
                StartOptions(manifest: MANIFEST, studio: StudioInput(onboardingId: 87)), #"{"onboarding_id":"87"}"#,
                #"{"key":"87","version":"draft"}"#
            ),
            (
                StartOptions(manifest: MANIFEST, studio: StudioInput(onboardingId: "87", deploymentId: 412)),
                #"{"onboarding_id":"87","deployment_id":"412"}"#, #"{"key":"87","version":"412"}"#
            ),
            (
                StartOptions(onboarding: IDENTITY, manifest: MANIFEST, studio: StudioInput(audienceId: 5)), #"{"audience_id":"5"}"#,
                #"{"key":"main","version":"3"}"#
            ),
            (
                StartOptions(
                    manifest: MANIFEST, studio: StudioInput(onboardingId: 0, deploymentId: .number(9_007_199_254_740_991), audienceId: 0)),
                #"{"onboarding_id":"0","deployment_id":"9007199254740991","audience_id":"0"}"#, #"{"key":"0","version":"9007199254740991"}"#
            ),
        ]
        for (o, studio, onboarding) in rows {
            let h = await studioRun(o)
            #expect(!h.codes.contains("invalid-start"))
            #expect(enc(h.sink.last?["studio"]) == studio)
            #expect(enc(h.sink.last?["onboarding"]) == onboarding)
        }
    }

    @Test func S30_otherNumbersAreInvalid() async {
        // `studio null` is not expressible: `studio: nil` means absent in Swift (decision 11).
        let rows = [
            StartOptions(manifest: MANIFEST, studio: StudioInput(onboardingId: "87", deploymentId: .number(412.5))),
            StartOptions(manifest: MANIFEST, studio: StudioInput(onboardingId: -87)),
            StartOptions(onboarding: IDENTITY, manifest: MANIFEST, studio: StudioInput(audienceId: .number(.nan))),
            StartOptions(onboarding: IDENTITY, manifest: MANIFEST, studio: StudioInput(audienceId: .number(.infinity))),
            StartOptions(manifest: MANIFEST, studio: StudioInput(onboardingId: "87", deploymentId: .number(9_007_199_254_740_992))),
        ]
        for o in rows {
            let h = await studioRun(o)
            #expect(h.sink.bodies.isEmpty)
            #expect(h.codes.contains("invalid-start"))
        }
    }

    @Test func S31_decimalStringsBehaveTheSame() async {
        let h = await studioRun(
            StartOptions(manifest: MANIFEST, studio: StudioInput(onboardingId: "87", deploymentId: "412", audienceId: "5")))
        #expect(enc(h.sink.last?["studio"]) == #"{"onboarding_id":"87","deployment_id":"412","audience_id":"5"}"#)
        #expect(enc(h.sink.last?["onboarding"]) == #"{"key":"87","version":"412"}"#)
    }

    @Test func S32_servedStudioVariant() async {
        let h = await studioRun(
            StartOptions(manifest: MANIFEST, studio: StudioInput(onboardingId: "87", deploymentId: "412", variantKey: "main")))
        #expect(h.sink.last?["studio"]?["variant_key"] == "main")
        let h2 = await studioRun(StartOptions(manifest: MANIFEST, studio: StudioInput(onboardingId: "87", deploymentId: "412")))
        #expect(h2.sink.last?["studio"]?["variant_key"] == nil)
        let h3 = await studioRun(
            StartOptions(
                onboarding: OnboardingInput(key: "main", version: "3", variantKey: "short-intro"), manifest: MANIFEST,
                studio: StudioInput(variantKey: "b")))
        #expect(h3.sink.last?["onboarding"]?["variant_key"] == "short-intro")
        #expect(enc(h3.sink.last?["studio"]) == #"{"variant_key":"b"}"#)
        #expect(!h3.codes.contains("studio-variant-dropped"))
    }

    // MARK: C. Input validation

    @Test func S33_invalidManifests() async {
        // "manifest missing (loose input)" is not expressible: the manifest is a required argument.
        let manifests: [[ManifestStepInput]] = [
            [], [.init(stepKey: "a"), .init(stepKey: "a")],
            [.init(stepKey: "a", slot: "s"), .init(stepKey: "b"), .init(stepKey: "c", slot: "s")],
            [.init(stepKey: "has space")], (0...200).map { .init(stepKey: "s\($0)") },
        ]
        for m in manifests {
            let h = Harness(World())
            let run = h.start(StartOptions(onboarding: IDENTITY, manifest: m))
            run.enterStep("a")
            run.exitStep("a")
            run.complete()
            await h.tick()
            #expect(h.sink.bodies.isEmpty)
            #expect(h.codes.contains("invalid-start"))
        }
    }

    @Test func S34_invalidIdentityOrContext() async {
        // Platform "tvos" is not expressible (Platform is an enum).
        struct Failure: Error {}
        var long = CONTEXT
        long.appVersion = String(repeating: "1", count: 33)
        let cases: [(StartOptions, ContextSource)] = [
            (StartOptions(onboarding: OnboardingInput(key: "", version: "1"), manifest: MANIFEST), .value(CONTEXT)),
            (StartOptions(onboarding: OnboardingInput(key: "main", version: "has space"), manifest: MANIFEST), .value(CONTEXT)),
            (OPTIONS, .value(long)),
            (OPTIONS, .provider { throw Failure() }),
        ]
        for (o, c) in cases {
            let h = Harness(World()) { $0.context = c }
            let run = h.start(o)
            run.enterStep("welcome")
            await h.tick()
            #expect(h.codes.contains("invalid-start"))
            #expect(h.sink.bodies.isEmpty)
        }
    }

    @Test func S35_unknownStep() async {
        let h = Harness(World())
        let run = h.start()
        run.enterStep("welcome")
        run.enterStep("not_declared")
        await h.tick()
        #expect(keys(h.sink.last) == ["welcome"])
        #expect(h.codes.contains("unknown-step"))
    }

    @Test func S36_exitingAStepThatIsNotCurrent() async {
        let h = Harness(World())
        let run = h.start()
        run.enterStep("welcome")
        run.enterStep("goal")
        run.enterStep("experience")
        await h.tick()
        let before = h.sink.last
        run.exitStep("welcome", answers: [.single(questionKey: "a", value: "b")])
        await h.tick()
        #expect(h.codes.contains("not-current-step"))
        #expect(h.sink.last == before)
    }

    @Test func S37_droppedOneByOne() async {
        // `nested: {a: 1}` is not expressible with PropertyValue: the typed API refuses it at
        // compile time; an invalid kind ("rating") likewise. The other rows are tested.
        let h = Harness(World())
        let run = h.start(
            StartOptions(
                onboarding: IDENTITY, manifest: MANIFEST,
                properties: ["ok": 1, "Bad": 2, "long": .string(String(repeating: "x", count: 257)), "inf": .number(.infinity)]))
        run.enterStep("goal")
        run.exitStep(
            "goal",
            answers: [
                .single(questionKey: "a", value: "fine"), .single(questionKey: "b", value: "not a key"),
                .numeric(questionKey: "c", value: .nan), .text(questionKey: "d", value: String(repeating: "😀", count: 1001)),
                .text(questionKey: "e", value: String(repeating: "😀", count: 1000)), .multi(questionKey: "f", value: ["x", "x", "y"]),
                .single(questionKey: "a", value: "changed"),
            ])
        await h.tick()
        let l = h.sink.last!
        #expect(WireJSON.encodeString(l["properties"]!) == #"{"ok":1}"#)
        let answers = steps(l)[0]["answers"]!.arrayValue!
        #expect(answers.map { $0["question_key"]!.stringValue! } == ["a", "e", "f"])
        #expect(answers[0]["value"] == "changed")
        #expect(answers[2]["value"] == ["x", "y"])
        // One diagnostic per call and code, with the count (the developers' guide; issue 14 item 10),
        // where the reference reports one per dropped entry.
        // Each dropped entry is named in it; a key that is not a key shows as "?".
        #expect(h.count("invalid-property") == 1)
        #expect(h.diags("invalid-property").first?.message == #"3 properties ("?", "long", "inf") invalid and dropped"#)
        #expect(h.count("invalid-answer") == 1)
        #expect(h.diags("invalid-answer").first?.message == #"3 answers ("b", "c", "d") invalid and dropped"#)
    }

    @Test func S38_caps() async {
        let h = Harness(World())
        let run = h.start(
            StartOptions(
                onboarding: IDENTITY, manifest: MANIFEST, properties: RunProperties((0..<25).map { ("p\($0)", .number(Double($0))) })))
        run.enterStep("goal")
        run.exitStep("goal", answers: (0..<55).map { .single(questionKey: "q\($0)", value: "v") })
        await h.tick()
        let l = h.sink.last!
        #expect(l["properties"]!.objectValue!.keys == (0..<20).map { "p\($0)" })
        #expect(steps(l)[0]["answers"]!.arrayValue!.count == 50)
        #expect(h.count("too-many-properties") == 1)
        #expect(
            h.diags("too-many-properties").first?.message
                == #"5 properties ("p20", "p21", "p22", "p23", "p24") dropped: a run holds at most 20 properties"#)
        #expect(h.count("too-many-answers") == 1)
        #expect(
            h.diags("too-many-answers").first?.message
                == #"5 answers ("q50", "q51", "q52", "q53", "q54") dropped: an entry holds at most 50 questions"#)
    }

    /// S185 — a flood of properties gives one diagnostic per call (issue 14 item 10: 100,000
    /// properties gave 199,960 diagnostics, one per dropped key).
    @Test func S185_oneDiagnosticPerCallForAFloodOfProperties() async {
        let h = Harness(World())
        let many = RunProperties((0..<100_000).map { ("k\($0)", .number(Double($0))) })
        let run = h.start(StartOptions(onboarding: IDENTITY, manifest: MANIFEST, properties: many))
        let extra: [(String, PropertyValue)] = (0..<1_000).map { ("x\($0)", .number(1)) } + [("Bad Key", .number(1))]
        run.setProperties(RunProperties(extra))
        run.enterStep("goal")
        await h.tick()
        #expect(h.count("too-many-properties") == 2)
        #expect(h.diags("too-many-properties").map { $0.message.split(separator: " ").first ?? "" } == ["99980", "1000"])
        #expect(h.count("invalid-property") == 1)
        #expect(h.sink.last?["properties"]?.objectValue?.keys.count == 20)
    }

    /// S199 — the one diagnostic of a call names its first 10 dropped entries and counts the rest;
    /// a key that does not match the key pattern is named "?", since it may hold personal data
    /// (issue 29 item 5: the entries the reference reports one by one, in one bounded report).
    @Test func S199_theCallsDiagnosticNamesTheFirstTenDroppedEntries() async {
        let h = Harness(World())
        let run = h.start()
        let bad: [(String, PropertyValue)] =
            [("jane.doe@example.com", .number(1))] + (1..<12).map { ("p\($0)", .number(.nan)) }
        run.setProperties(RunProperties(bad))
        run.enterStep("welcome")
        run.exitStep("welcome", answers: (0..<13).map { .numeric(questionKey: "q\($0)", value: .infinity) })
        await h.tick()
        #expect(h.count("invalid-property") == 1)
        let names = (1..<10).map { "\"p\($0)\"" }.joined(separator: ", ")
        #expect(h.diags("invalid-property").first?.message == "12 properties (\"?\", \(names) and 2 more) invalid and dropped")
        #expect(h.diags("invalid-property").contains { $0.message.contains("jane") } == false)
        #expect(h.count("invalid-answer") == 1)
        let questions = (0..<10).map { "\"q\($0)\"" }.joined(separator: ", ")
        #expect(h.diags("invalid-answer").first?.message == "13 answers (\(questions) and 3 more) invalid and dropped")
    }

    @Test func S39_capWithBuiltInLookingNames() async {
        let h = Harness(World())
        let run = h.start(
            StartOptions(
                onboarding: IDENTITY, manifest: MANIFEST, properties: RunProperties((0..<20).map { ("p\($0)", .number(Double($0))) })))
        run.setProperties(["constructor": 1, "valueof": 2, "hasownproperty": 3])
        run.enterStep("welcome")
        await h.tick()
        #expect(h.sink.last!["properties"]!.objectValue!.count == 20)
        #expect(h.sink.last!["properties"]!["constructor"] == nil)
        let h2 = Harness(World())
        let r2 = h2.start(StartOptions(onboarding: IDENTITY, manifest: MANIFEST, properties: ["constructor": 1]))
        r2.enterStep("welcome")
        await h2.tick()
        #expect(WireJSON.encodeString(h2.sink.last!["properties"]!) == #"{"constructor":1}"#)
    }

    // S40 — Garbage never fails (loose input path): not applicable in Swift. `enterStep` takes a
    // String, `exitStep` takes `[AnswerInput]?`, `setProperties` takes `RunProperties`: a non-string
    // step, a non-list of answers, null/number answers and a non-map of properties cannot be
    // written (decision 11). The typed invalid values are covered by S37.

    // MARK: D. Delivery through the tracker

    @Test func S41_seqRisesFullSnapshots() async {
        let h = Harness(World())
        let run = h.start()
        for k in ["welcome", "goal", "experience", "summary"] {
            run.enterStep(k)
            await h.tick()
        }
        run.background()
        run.complete()
        await h.tick()
        let seqs = h.sink.seqs
        #expect(seqs.first == 1)
        #expect(zip(seqs, seqs.dropFirst()).allSatisfy { $0 < $1 })
        for (i, b) in h.sink.bodies.enumerated() { #expect(steps(b).count == min(i + 1, 4)) }
    }

    @Test func S42_retryIsByteIdentical() async {
        let h = Harness(World())
        h.sink.answer { _, n in n <= 2 ? .result(.transient) : .result(.accepted) }
        let run = h.start()
        run.enterStep("welcome")
        await h.tick(0)
        await h.tick(1000)
        await h.tick(2000)
        #expect(h.sink.payloads.count == 3)
        #expect(Set(h.sink.payloads.map(\.bytes)).count == 1)
    }

    @Test func S43_debounceWindow() async {
        let h = Harness(World()) { $0.debounceMs = 500 }
        let run = h.start()
        run.enterStep("welcome")
        run.exitStep("welcome")
        run.enterStep("goal")
        await h.tick(499)
        #expect(h.sink.bodies.isEmpty)
        await h.tick(1)
        #expect(h.sink.bodies.count == 1 && steps(h.sink.last).count == 2)
        run.complete()
        await h.tick(0)
        #expect(h.sink.last?["status"] == "completed")
    }

    @Test func S44_theWindowIsFixedNotSliding() async {
        let h = Harness(World()) { $0.debounceMs = 500 }
        let run = h.start()
        run.enterStep("welcome")
        await h.tick(400)
        run.enterStep("goal")
        await h.tick(100)
        #expect(h.sink.bodies.count == 1)
        #expect(steps(h.sink.last).count == 2)
    }

    @Test func S45_backgroundSendsAtOnce() async {
        let h = Harness(World()) { $0.debounceMs = 5000 }
        let run = h.start()
        run.enterStep("welcome")
        run.background()
        await h.tick(0)
        #expect(h.sink.bodies.count == 1)
    }

    @Test func S46_aFailingSinkNeverBreaksTheHost() async {
        let h = Harness(World())
        let down = Locked(true)
        h.sink.answer { _, _ in down.value ? .fail : .result(.accepted) }
        let run = h.start()
        run.enterStep("welcome")
        run.enterStep("goal")
        run.exitStep("goal", answers: [.single(questionKey: "goal", value: "learn")])
        run.enterStep("summary")
        await h.tick(5000)
        down.withLock { $0 = false }
        await h.tick(60_000)
        #expect(keys(h.sink.last) == ["welcome", "goal", "summary"])
        #expect(steps(h.sink.last)[1]["answers"]!.arrayValue!.count == 1)
    }

    @Test func S47_completionOvertakesAnInFlightSend() async {
        let h = Harness(World())
        let release = Locked<Bool>(false)
        h.sink.answer { _, n in n == 1 ? .after(5000, .transient) : .result(.accepted) }
        _ = release
        let run = h.start()
        run.enterStep("welcome")
        await h.tick(0)
        run.complete()
        await h.tick(0)
        #expect(h.sink.bodies.count == 1)
        await h.tick(60_000)
        #expect(h.sink.statuses == ["in_progress", "completed"])
    }

    @Test func S48_aCompletionSurvivesUnclearAnswers() async {
        let h = Harness(World())
        h.sink.answer { _, n in
            switch n {
            case 1: .result(.transient)
            case 2: .result(SinkResult(.transient, reason: "401"))
            case 3: .result(SinkResult(.transient, reason: "timeout"))
            default: .result(.accepted)
            }
        }
        let run = h.start()
        run.enterStep("welcome")
        run.complete()
        await h.tick(60_000)
        #expect(h.sink.statuses.last == "completed")
        #expect(h.sink.statuses.filter { $0 == "completed" }.count >= 3)
    }

    @Test func S49_rejected() async {
        let h = Harness(World())
        h.sink.always(SinkResult(.rejected, reason: "schema"))
        let run = h.start()
        run.enterStep("welcome")
        await h.tick(60_000)
        #expect(h.sink.bodies.count == 1)
        #expect(h.diags("rejected").contains { $0.message.contains("schema") })
        h.sink.always(.accepted)
        run.enterStep("goal")
        await h.tick()
        #expect(h.sink.seqs == [1, 2])
    }

    @Test func S50_ignoredSettles() async {
        let h = Harness(World())
        h.sink.always(.ignored)
        let run = h.start()
        run.enterStep("welcome")
        await h.tick(60_000)
        #expect(h.sink.bodies.count == 1)
    }

    @Test func S51_completedIsTerminal() async {
        let h = Harness(World())
        h.sink.answer { _, n in n == 2 ? .result(.transient) : .result(.accepted) }
        let run = h.start()
        run.enterStep("welcome")
        run.complete()
        run.enterStep("goal")
        run.exitStep("welcome", answers: [.single(questionKey: "late", value: "x")])
        run.setProperties(["late": true])
        run.background()
        run.complete()
        await h.tick(60_000)
        let bodies = h.sink.payloads
        let first = bodies.firstIndex { $0.isCompleted }!
        #expect(bodies[first...].allSatisfy { $0.bytes == bodies[first].bytes })
        #expect(steps(bodies[first].json).count == 1)
        #expect(h.codes.contains("run-completed"))
    }

    @Test func S52_backgroundOnACompletedRunSkipsTheBackoff() async {
        let h = Harness(World())
        h.sink.always(.transient)
        let run = h.start()
        // The entry's own snapshot (seq 1) is handed over when its write lands, even though the
        // completion was built before that (issue 15 item 2, S170): let it go out first, so the
        // completion is flushed with no attempt in flight.
        run.enterStep("welcome")
        await h.tick(0)
        #expect(h.sink.statuses == ["in_progress"])
        run.complete()
        await h.tick(0)
        #expect(h.sink.statuses == ["in_progress", "completed"])
        let before = h.codes.count
        run.background()
        await h.tick(0)
        #expect(h.sink.statuses == ["in_progress", "completed", "completed"])
        #expect(h.sink.payloads[1].bytes == h.sink.payloads[2].bytes)
        #expect(h.codes.count == before)
    }

    // MARK: incremental measure

    @Test func incrementalMeasureEqualsTheEncodedCompletionForm() async {
        let h = Harness(World())
        let run = h.start(
            StartOptions(
                onboarding: IDENTITY, manifest: MANIFEST, properties: ["a": "é日😀", "n": 1.5], studio: StudioInput(audienceId: "x\"y")))
        for i in 0..<40 {
            run.enterStep(i % 2 == 0 ? "goal" : "experience")
            run.exitStep(
                i % 2 == 0 ? "goal" : "experience",
                answers: [
                    .text(questionKey: "t", value: "line\n\u{1}\(i)"), .multi(questionKey: "m", value: ["a", "b"]),
                    .numeric(questionKey: "n", value: 0.1 * Double(i), unit: "u"),
                ])
            if i % 7 == 0 { run.exitStep(i % 2 == 0 ? "goal" : "experience", answers: [.text(questionKey: "t", value: "replaced")]) }
            if i % 5 == 0 { run.setProperties(["p\(i)": .string("v\(i)")]) }
            let m = h.tracker.debugMeasure()!
            #expect(m.incremental == m.encoded)
        }
    }
}
