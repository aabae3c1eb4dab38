import Foundation
import OnboardingTracker
import PaywallTracker
import ScoreTracker
import Testing
import TrackerCore
import TrackerCoreTestKit

#if canImport(Glibc)
    import Glibc
#endif

/// Known test secrets; none may appear in a diagnostic, in `inspectJSON()` or in any output.
enum TestSecrets {
    static let token = "tok_SECRET_reliability_5c2e"
    static let publishableKey = "pk_SECRET_reliability_0d9a"
    static let email = "fan@example.com"
    static let all = [token, publishableKey, email]

    static func leaks(_ text: String) -> [String] { all.filter { text.contains($0) } }
}

/// The permission bits of a path.
func mode(_ path: String) -> mode_t? {
    var st = stat()
    guard stat(path, &st) == 0 else { return nil }
    return st.st_mode & 0o777
}

/// Security (issue 8, part 4): secrets never leak; storage is owner-only; foreign stored values
/// are left as the specs say.
@Suite struct SecurityTests {
    static let onboardingContext = RunContextInput(
        appVersion: "1", build: nil, platform: .ios, osVersion: nil, locale: "en-US",
        timezone: "UTC")
    static let manifest = StartOptions(
        onboarding: OnboardingInput(key: "main", version: "1"),
        manifest: [ManifestStepInput(stepKey: "welcome"), ManifestStepInput(stepKey: "email")])

    @Test func onboardingDiagnosticsNeverCarrySecretsOrPII() async throws {
        let clock = ManualClock()
        let server = try LoopbackHTTPServer { req in
            req.path.hasSuffix("/reject")
                ? .respond(status: 200, body: #"{"outcome":"rejected","reason":"schema"}"#)
                : .respond(status: 500, body: "no")
        }
        defer { server.stop() }
        let diags = DiagnosticLog()
        let storage = FaultInjectingStorage(clock: clock)
        storage.update { $0.failNextWrites = 3 }
        let tracker = OnboardingRunTracker(
            configuration: OnboardingRunConfiguration(
                sink: HTTPSink<OnboardingRunSnapshot>(
                    url: server.baseURL + "/reject",
                    headers: .fixed([
                        HTTPHeader("Authorization", "Bearer " + TestSecrets.token),
                        HTTPHeader("X-Publishable-Key", TestSecrets.publishableKey),
                    ])),
                context: .value(Self.onboardingContext), storage: storage, debounceMs: 0,
                onDiagnostic: diags.handler, clock: clock, scheduler: clock))
        let run = tracker.start(Self.manifest)
        run.enterStep("welcome")
        run.exitStep(
            "welcome",
            answers: [
                .text(questionKey: "email", value: TestSecrets.email),
                .text(questionKey: "email_long", value: String(repeating: TestSecrets.email, count: 100)),
                .single(questionKey: "contact", value: TestSecrets.email + String(repeating: "x", count: 300)),
                .numeric(questionKey: "n", value: .nan, unit: TestSecrets.token),
            ])
        run.setProperties([
            "contact": .string(String(repeating: TestSecrets.email, count: 30)),
            "token": .string(TestSecrets.token + String(repeating: "x", count: 300)),
            "bad key \(TestSecrets.email)": .string(TestSecrets.email),
        ])
        run.enterStep("unknown_step")
        run.exitStep("goal")
        run.complete()
        // Real network work (curl to loopback) happens off the clock: wait for the requests.
        _ = await server.waitForRequests(count: 1)
        await clock.settle()
        for _ in 0..<3 { await clock.advance(byMs: 2_000) }
        tracker.dispose()
        let codes = Set(diags.all.map(\.code))
        #expect(codes.isSuperset(of: ["invalid-answer", "invalid-property", "unknown-step", "not-current-step", "storage"]), "\(codes)")
        for d in diags.all {
            #expect(TestSecrets.leaks(d.message + (d.runId ?? "")).isEmpty, "\(d.code) leaks: \(TestSecrets.leaks(d.message))")
        }
        // The sink answer's reason is the server's text, never request data.
        #expect(!server.requests.isEmpty)
    }

    /// Finding: an invalid key is masked in `invalid-property` ("?") but echoed verbatim in
    /// `invalid-answer`, `unknown-step` and `not-current-step`; a key built from user data (a
    /// mistake, but one the masking elsewhere guards against) would reach the log.
    @Test func onboardingInvalidKeysAreNotEchoedInDiagnostics() {
        let clock = ManualClock()
        let diags = DiagnosticLog()
        let tracker = OnboardingRunTracker(
            configuration: OnboardingRunConfiguration(
                sink: RecordingSink<OnboardingRunSnapshot>(always: .accepted), context: .value(Self.onboardingContext),
                onDiagnostic: diags.handler, clock: clock, scheduler: clock))
        let run = tracker.start(Self.manifest)
        run.enterStep("welcome")
        run.setProperties([TestSecrets.email: "x"])
        run.exitStep("welcome", answers: [.single(questionKey: TestSecrets.email, value: "a")])
        run.enterStep(TestSecrets.token)
        run.exitStep(TestSecrets.email)
        tracker.dispose()
        // `destination-changed` may come first: a tracker of a test running beside this one in the
        // same process, for another destination, can hand its run over (reconfigure hand-over).
        #expect(
            Set(diags.all.map(\.code)).subtracting(["destination-changed"])
                == ["invalid-property", "invalid-answer", "unknown-step", "not-current-step"])
        let property = diags.all.first { $0.code == "invalid-property" }
        #expect(property.map { TestSecrets.leaks($0.message).isEmpty } == true, "invalid-property masks an invalid key")
        // invalid-answer, unknown-step and not-current-step never echo a key that is not a
        // well-formed key of the run (they used to, found by this test).
        for d in diags.all { #expect(TestSecrets.leaks(d.message).isEmpty, "\(d.code) echoes \(TestSecrets.leaks(d.message))") }
    }

    @Test func paywallDiagnosticsNeverCarrySecretsOrPII() async {
        let clock = ManualClock()
        let sink = RecordingSink<PaywallSnapshot>(destination: "https://c.example/paywall") { i, _ in
            i == 0 ? .result(SinkResult(.rejected, reason: "server said no")) : .result(.transient)
        }
        let diags = DiagnosticLog()
        let tracker = PaywallPresentationTracker(
            configuration: PaywallTrackerConfiguration(
                sink: sink,
                context: .value(
                    RunContextInput(
                        appVersion: "1", build: nil, platform: .ios, osVersion: nil,
                        locale: "en-US", timezone: "UTC")),
                storage: FaultInjectingStorage(
                    clock: clock,
                    faults: {
                        var f = FaultInjectingStorage.Faults()
                        f.writesAlwaysFail = true
                        return f
                    }()),
                clock: clock, scheduler: clock, onDiagnostic: diags.handler))
        // Invalid info whose values are secrets.
        _ = tracker.start(
            json: .object(
                JSONObject([
                    ("moment", .string(TestSecrets.email)), ("paywallId", .string(String(repeating: TestSecrets.token, count: 20))),
                    ("surface", .string(TestSecrets.publishableKey)),
                ])))
        let h = tracker.start(
            PaywallPresentationInfo(moment: "m", paywallId: "pw", renderMode: .elements, billing: .store, surface: .present))
        h?.shown()
        h?.end(
            .purchased(
                PaywallTransactionInfo(
                    originalTransactionIdentifier: TestSecrets.token, purchaseToken: TestSecrets.token,
                    productId: "pro")))
        h?.end(.error(TestSecrets.email))
        (h as? PaywallPresentation)?.end(json: .object(JSONObject([("status", .string(TestSecrets.email))])))
        h?.shown()
        await clock.settle()
        for _ in 0..<3 { await clock.advance(byMs: 5_000) }
        tracker.dispose()
        let codes = Set(diags.all.map(\.code))
        #expect(codes.isSuperset(of: ["invalid-info", "after-end", "already-ended", "storage"]), "\(codes)")
        for d in diags.all {
            #expect(TestSecrets.leaks(d.message).isEmpty, "\(d.code) leaks: \(TestSecrets.leaks(d.message))")
        }
    }

    @Test func scoreDiagnosticsAndInspectNeverCarrySecretsOrPII() async {
        let clock = ManualClock()
        let transport = RecordingTransport(statuses: { i in [401, 500, 0, 413, 200][i % 5] })
        let diags = DiagnosticLog()
        let client = ScoreClient(
            configuration: ScoreConfiguration(
                publishableKey: TestSecrets.publishableKey, siteId: "sec-site", endpoint: "https://score.example", appVersion: "1",
                pii: .classify([PiiRule(field: "email", action: .hash), PiiRule(field: "phone", action: .redact)]),
                initialConsent: .all, store: InMemoryScoreStore(), transport: transport, clock: clock, scheduler: clock,
                onDiagnostic: diags.handler))
        client.setToken(TestSecrets.token)
        client.setTokenProvider { TestSecrets.token }
        client.identify(userId: "user-1", traits: ["email": TestSecrets.email, "phone": "+33 6 12 34 56 78"])
        client.track("signup", properties: ["email": TestSecrets.email])
        client.track("", properties: ["email": TestSecrets.email])  // invalid name
        client.track("bad", properties: ["x": String(repeating: TestSecrets.email, count: 40_000)])  // too large
        for _ in 0..<4 { _ = await onClock(clock) { (try? await client.flush()) != nil } }
        let inspect = client.inspectJSON()
        #expect(TestSecrets.leaks(inspect).isEmpty, "inspectJSON() leaks \(TestSecrets.leaks(inspect))")
        #expect(TestSecrets.leaks(String(describing: client.inspect())).isEmpty)
        #expect(diags.all.contains { $0.code == "invalid-event" })
        for d in diags.all {
            #expect(TestSecrets.leaks(d.message).isEmpty, "\(d.code) leaks: \(TestSecrets.leaks(d.message))")
        }
        // The scrubbed email never leaves either; the token only in its header.
        for r in transport.requests {
            let body = String(decoding: r.body ?? [], as: UTF8.self)
            #expect(!body.contains(TestSecrets.email) && !body.contains(TestSecrets.token))
        }
        // A flush failure's error text carries no secret.
        transport.clear()
        client.track("after")
        let error = await onClock(clock) { () -> String in
            do {
                try await client.flush()
                return ""
            } catch { return String(describing: error) }
        }
        #expect(TestSecrets.leaks(error ?? "").isEmpty)
    }

    @Test func storedFilesAreOwnerOnlyForEveryPackage() async throws {
        let root = TempDir("perm")
        defer { root.remove() }
        let clock = ManualClock()
        // Onboarding and paywall: Core's FileKeyValueStorage in a directory it creates.
        let kvDir = root.path + "/kv/nested"
        let storage = FileKeyValueStorage(directory: kvDir)
        let onboarding = OnboardingRunTracker(
            configuration: OnboardingRunConfiguration(
                sink: RecordingSink<OnboardingRunSnapshot>(always: .transient), context: .value(Self.onboardingContext), storage: storage,
                onDiagnostic: { _ in }, clock: clock, scheduler: clock))
        let run = onboarding.start(Self.manifest)
        run.enterStep("welcome")
        let paywall = PaywallPresentationTracker(
            configuration: PaywallTrackerConfiguration(
                sink: RecordingSink<PaywallSnapshot>(always: .transient),
                context: .value(
                    RunContextInput(appVersion: "1", build: nil, platform: .ios, osVersion: nil, locale: "en-US", timezone: "UTC")),
                storage: storage, clock: clock, scheduler: clock, onDiagnostic: { _ in }))
        _ = paywall.start(PaywallPresentationInfo(moment: "m", paywallId: "pw", renderMode: .elements, billing: .store, surface: .present))
        _ = await onClock(clock) {
            await onboarding.idle()
            await paywall.idle()
            return true
        }
        // Score: its own file store.
        let scoreDir = root.path + "/score/nested"
        let score = ScoreClient(
            configuration: ScoreConfiguration(
                publishableKey: "pk", siteId: "s", endpoint: "https://score.example", initialConsent: .all,
                store: FileScoreStore(directory: scoreDir), transport: RecordingTransport(statuses: { _ in 500 }),
                clock: clock, scheduler: clock, onDiagnostic: { _ in }))
        score.identify(userId: "u1")
        score.track("e")
        _ = await onClock(clock) { (try? await score.flush()) != nil }
        onboarding.dispose()
        paywall.dispose()

        let onboardingFile = storage.path(for: "rocalytics-sdk:onboarding-run")
        let paywallFile = storage.path(for: PaywallPresentationTracker.defaultStorageKey)
        for dir in [kvDir, scoreDir] { #expect(mode(dir) == 0o700, "\(dir) mode \(String(mode(dir) ?? 0, radix: 8))") }
        var files = [onboardingFile, paywallFile]
        files += ((try? FileManager.default.contentsOfDirectory(atPath: scoreDir)) ?? []).map { scoreDir + "/" + $0 }
        #expect(files.count >= 3, "\(files)")
        for f in files {
            #expect(FileManager.default.fileExists(atPath: f), "\(f) missing")
            #expect(mode(f) == 0o600, "\(f) mode \(String(mode(f) ?? 0, radix: 8))")
        }
    }

    @Test func onboardingUnknownFormatSurvivesByteForByte() async {
        let clock = ManualClock()
        let key = "rocalytics-sdk:onboarding-run"
        let foreign = #"{"format":2,"future":{"a":[1,2,3],"é":"😀"},"current":null}"#
        let backing = InMemoryKeyValueStorage([key: foreign])
        let diags = DiagnosticLog()
        let sink = RecordingSink<OnboardingRunSnapshot>(always: .accepted)
        let tracker = OnboardingRunTracker(
            configuration: OnboardingRunConfiguration(
                sink: sink, context: .value(Self.onboardingContext), storage: backing, debounceMs: 0,
                onDiagnostic: diags.handler, clock: clock, scheduler: clock))
        let resumed = await onClock(clock) { await tracker.resume() }
        #expect(resumed != nil && resumed! == nil, "resume() resolves nil on an unknown format")
        let run = tracker.start(Self.manifest)
        run.enterStep("welcome")
        run.complete()
        _ = await onClock(clock) {
            await tracker.idle()
            return true
        }
        tracker.dispose()
        await clock.settle()
        #expect(backing.snapshot[key] == foreign, "the future-format value changed")
        #expect(diags.all.contains { $0.code == "storage" && $0.message.contains("format") })
        #expect(sink.received.contains { $0.isCompleted }, "sends still happen with persistence off")
    }

    @Test func onboardingReadFailingTwiceLeavesTheValueUntouched() async {
        let clock = ManualClock()
        let key = "rocalytics-sdk:onboarding-run"
        let stored = #"{"format":1,"current":null,"outboxes":{}}"#
        let storage = FaultInjectingStorage(backing: InMemoryKeyValueStorage([key: stored]), clock: clock)
        storage.update { $0.failNextGets = 2 }
        let diags = DiagnosticLog()
        let tracker = OnboardingRunTracker(
            configuration: OnboardingRunConfiguration(
                sink: RecordingSink<OnboardingRunSnapshot>(always: .accepted), context: .value(Self.onboardingContext), storage: storage,
                onDiagnostic: diags.handler, clock: clock, scheduler: clock))
        let run = tracker.start(Self.manifest)
        run.enterStep("welcome")
        _ = await onClock(clock) {
            await tracker.idle()
            return true
        }
        tracker.dispose()
        await clock.settle()
        #expect(storage.stored(key) == stored)
        #expect(diags.all.contains { $0.code == "storage" })
    }

    @Test func paywallForeignStoredValuesFollowTheSpec() async {
        let key = PaywallPresentationTracker.defaultStorageKey
        let context = RunContextInput(appVersion: "1", build: nil, platform: .ios, osVersion: nil, locale: "en-US", timezone: "UTC")
        func launch(
            _ storage: any KeyValueStorage, _ clock: ManualClock, _ sink: RecordingSink<PaywallSnapshot>,
            _ diags: DiagnosticLog
        ) -> PaywallPresentationTracker {
            PaywallPresentationTracker(
                configuration: PaywallTrackerConfiguration(
                    sink: sink, context: .value(context), storage: storage, clock: clock, scheduler: clock,
                    onDiagnostic: diags.handler))
        }
        // A good entry from a first launch (left unsent: the sink is transient), to mix with bad ones.
        let clock = ManualClock()
        let first = InMemoryKeyValueStorage()
        let t1 = launch(first, clock, RecordingSink(always: .transient), DiagnosticLog())
        _ = t1.start(PaywallPresentationInfo(moment: "m", paywallId: "pw", renderMode: .elements, billing: .store, surface: .present))
        _ = await onClock(clock) {
            await t1.idle()
            return true
        }
        t1.dispose()
        let good = first.snapshot[key] ?? ""
        #expect(!good.isEmpty)
        let goodMap = (try? WireJSON.decode(good))?.objectValue
        let (goodId, goodEntry) = goodMap!.entries[0]

        // 1. Not JSON: `invalid-stored`, untouched until a write replaces it.
        do {
            let storage = InMemoryKeyValueStorage([key: "\u{0}not json \(TestSecrets.email)"])
            let diags = DiagnosticLog()
            let t = launch(storage, clock, RecordingSink(always: .accepted), diags)
            _ = await onClock(clock) {
                await t.idle()
                return true
            }
            #expect(diags.all.map(\.code) == ["invalid-stored"])
            #expect(storage.snapshot[key] == "\u{0}not json \(TestSecrets.email)")
            #expect(diags.all.allSatisfy { TestSecrets.leaks($0.message).isEmpty })
            t.dispose()
        }
        // 2. A bad entry next to a good one: the bad one is skipped (`invalid-stored`), the good
        // one is resent unchanged.
        do {
            var map = JSONObject()
            map["not-a-uuid"] = .object(JSONObject([("seq", .string("1")), ("body", .null)]))
            map[goodId] = goodEntry
            let storage = InMemoryKeyValueStorage([key: WireJSON.encodeString(.object(map))])
            let diags = DiagnosticLog()
            let sink = RecordingSink<PaywallSnapshot>(always: .accepted)
            let t = launch(storage, clock, sink, diags)
            _ = await onClock(clock) {
                await t.idle()
                return true
            }
            await clock.settle()
            #expect(diags.all.map(\.code) == ["invalid-stored"])
            #expect(sink.received.map { $0.wireJSON() } == [goodEntry["body"]!])
            t.dispose()
        }
        // 3. The first read fails twice: persistence off, the value left untouched.
        do {
            let storage = FaultInjectingStorage(backing: InMemoryKeyValueStorage([key: good]), clock: clock)
            storage.update { $0.failNextGets = 2 }
            let diags = DiagnosticLog()
            let t = launch(storage, clock, RecordingSink(always: .accepted), diags)
            _ = t.start(PaywallPresentationInfo(moment: "m", paywallId: "pw2", renderMode: .elements, billing: .store, surface: .present))
            _ = await onClock(clock) {
                await t.idle()
                return true
            }
            #expect(diags.all.map(\.code) == ["storage"])
            #expect(storage.stored(key) == good)
            t.dispose()
        }
    }
}
