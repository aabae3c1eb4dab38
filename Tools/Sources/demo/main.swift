// The README's main job: the example flows of every surface, sent through the real libcurl
// transport to a local collector, then the onboarding funnel and one verdict per payload.
//
//   demo [--collector URL]
//
// Without --collector, the demo starts `collector serve --port 0` (the binary built next to this
// one) with a fresh SQLite database. Exits non-zero when any payload was rejected.
import Foundation
import OnboardingTracker
import PaywallTracker
import RocalyticsClient
import ScoreTracker
import TrackerCore

var collectorURL: String?
var args = CommandLine.arguments.dropFirst()
while let a = args.popFirst() {
    switch a {
    case "--collector": collectorURL = args.popFirst()
    case "-h", "--help":
        print("usage: demo [--collector URL]")
        exit(0)
    default:
        FileHandle.standardError.write(Data("demo: unknown argument \(a)\n".utf8))
        exit(2)
    }
}

let work = NSTemporaryDirectory() + "rocalytics-demo-\(IDs.uuidV4())"
try FileManager.default.createDirectory(atPath: work, withIntermediateDirectories: true)
defer { try? FileManager.default.removeItem(atPath: work) }

let collector: CollectorProcess
if let collectorURL {
    collector = CollectorProcess(url: collectorURL)
} else {
    let binary = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath()
        .deletingLastPathComponent().appendingPathComponent("collector").path
    collector = try CollectorProcess(binary: binary, dbPath: work + "/collector.sqlite")
}
defer { collector.stop() }
let base = collector.baseURL
print("== collector at \(base)")

// Every diagnostic the SDKs report is shown (they never contain tokens or personal data).
let diagnostics = Locked<[Diagnostic]>([])
let showDiagnostic: DiagnosticHandler = { d in
    diagnostics.withLock { $0.append(d) }
    print("   diagnostic \(d.code): \(d.message)")
}

// MARK: 1. A hand-coded onboarding, with a resume after a simulated kill

print("\n== 1. onboarding: hand-coded flow, killed after two screens, resumed in a new process")
let mainFlow = StartOptions(
    onboarding: OnboardingInput(key: "main", version: "3"),
    manifest: [
        ManifestStepInput(stepKey: "welcome"),
        ManifestStepInput(stepKey: "goal"),
        ManifestStepInput(stepKey: "level_beginner", slot: "level"),
        ManifestStepInput(stepKey: "level_advanced", slot: "level"),
        ManifestStepInput(stepKey: "notifications"),
        ManifestStepInput(stepKey: "done"),
    ],
    properties: ["signup_source": "email"]
)
let onboardingSink = TrackedSink(HTTPSink<OnboardingRunPayload>(
    url: base + "/v1/onboarding-runs", headers: .fixed([HTTPHeader("authorization", "Bearer demo-install-token")])))
func onboardingTracker(_ registry: HandoffRegistry) -> OnboardingRunTracker {
    OnboardingRunTracker(configuration: OnboardingRunConfiguration(
        sink: onboardingSink,
        context: .value(RunContextInput(appVersion: "2.4.0", build: "412", platform: .ios, osVersion: "18.1",
                                        locale: "en-US", timezone: "Europe/Paris")),
        storage: FileKeyValueStorage(directory: work + "/onboarding"),
        debounceMs: 0,
        onDiagnostic: showDiagnostic,
        registry: registry // a new registry = a new app process
    ))
}
let firstLaunch = onboardingTracker(HandoffRegistry())
let run = firstLaunch.start(mainFlow)
run.enterStep("welcome")
run.exitStep("welcome")
run.enterStep("goal")
run.exitStep("goal", answers: [.single(questionKey: "goal", value: "practice")])
await firstLaunch.idle()
print("   run \(run.runId): recorded welcome and goal, then the app is killed")
// The killed process is simply never heard from again: no dispose, no hand-over in memory.
let secondLaunch = onboardingTracker(HandoffRegistry())
if let resumed = await secondLaunch.resume(expected: mainFlow) {
    print("   resumed run \(resumed.runId) at step \(resumed.currentStepKey ?? "-")")
    resumed.enterStep("level_advanced")
    resumed.exitStep("level_advanced", answers: [.numeric(questionKey: "daily_minutes", value: 15, unit: "minute")])
    resumed.enterStep("done")
    resumed.complete()
} else {
    print("   nothing to resume: starting over")
    let fresh = secondLaunch.start(mainFlow)
    fresh.enterStep("welcome")
    fresh.complete()
}
let onboardingDone = onboardingSink.wait { payload, result in payload.isCompleted && result.outcome.isSettled }
print("   completed snapshot settled: \(onboardingDone)")

// MARK: 2. The Rocalytics client

print("\n== 2. Rocalytics client: install, identify, purchase, custom event, demand score")
let rocalytics = RocalyticsClient(options: RocalyticsClient.Options(
    platform: .custom(DemoPlatform()), baseURL: base, onDiagnostic: showDiagnostic, attributionBaseURL: base))
await rocalytics.ready()
print("   roca id \(rocalytics.rocaId ?? "none")")
var ids = IdentifyParams()
ids.userId = "user-42"
do {
    try await rocalytics.identify(ids)
    try await rocalytics.trackPurchase(TrackPurchaseParams(
        isTrial: false, value: 59.99, currency: "EUR", originalTransactionIdentifier: "2000000912345678",
        productId: "pro_yearly"))
    try await rocalytics.trackCustomEvent("tutorial_finished", properties: ["lessons": 3])
    let demand = try await rocalytics.getDemandScore()
    print("   demand score \(demand.demandScore), cold start \(demand.coldStart)")
} catch {
    print("   client call failed: \(error)")
}

// MARK: 3. A native paywall with a purchase, through the client's paywall sink

print("\n== 3. paywall: a native paywall presentation ending in a purchase (contract v1.1)")
let paywallSink = TrackedSink(createRocalyticsPaywallSink(rocalytics, for: PaywallPresentationSnapshotV1_1.self))
let paywalls = PaywallPresentationTracker(configuration: PaywallTrackerConfiguration(
    sink: paywallSink,
    context: .value(PaywallContext(appVersion: "2.4.0", build: "412", platform: "ios", osVersion: "18.1",
                                   locale: "en-US", timezone: "Europe/Paris")),
    storage: FileKeyValueStorage(directory: work + "/paywall"),
    onDiagnostic: showDiagnostic))
if let presentation = paywalls.start(PaywallPresentationInfo(
    provider: .native, externalPaywallId: "spring_sale_v2", placement: "settings_upgrade", providerName: "StoreKit"))
{
    presentation.shown()
    presentation.end(.purchased(PaywallTransactionInfo(originalTransactionIdentifier: "2000000912345678", productId: "pro_yearly")))
}
let paywallDone = paywallSink.wait { payload, result in payload.outcome != nil && result.outcome.isSettled }
print("   final snapshot settled: \(paywallDone)")

// MARK: 4. A Score session with consent, PII rules and a critical event

print("\n== 4. Score: consent, PII rules, a critical event, identify, flush")
let score = ScoreClient(
    publishableKey: "pk_demo_publishable", siteId: "demo-site", endpoint: base,
    appVersion: "2.4.0", os: "ios", locale: "en-US",
    pii: .Classify(rules: [PiiRule(field: "email", action: .hash_), PiiRule(field: "phone", action: .drop)]),
    store: FileScoreStore(directory: work + "/score"), onDiagnostic: showDiagnostic)
score.setConsent(analytics: true, personalization: false, advertising: false)
score.track("lesson_completed", props: ["lesson": "intro", "email": "fan@example.com", "phone": "+33 6 00 00 00 00", "score": 42])
score.trackAdvertising("ad_clicked", props: ["campaign": "spring"]) // no advertising consent: dropped
score.track("subscription_started", props: ["plan": "pro_yearly"], delivery: .critical)
score.identify(userId: "user-42", traits: ["tier": "gold"])
do {
    try await score.flush()
    print("   flushed")
} catch {
    print("   flush failed: \(error)")
}

// MARK: Verdicts and funnel

var verdicts = collector.verdicts(atLeast: 1)
var stable = 0
while stable < 3 {
    let before = verdicts.count
    verdicts = collector.verdicts(atLeast: before + 1, timeoutSeconds: 0.2)
    stable = verdicts.count == before ? stable + 1 : 0
}
print("\n== verdicts (one line per payload the collector received)")
for line in verdicts { print("   \(line)") }
let rejected = verdicts.filter { $0.contains("outcome=rejected") }

if let db = collector.dbPath {
    print("\n== onboarding funnel")
    fflush(nil) // the report is written by a child process on the same output
    let report = Process()
    report.executableURL = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath()
        .deletingLastPathComponent().appendingPathComponent("collector")
    report.arguments = ["report", "--db", db]
    try report.run()
    report.waitUntilExit()
}

let failures = [onboardingDone ? nil : "the onboarding completion was not settled",
                paywallDone ? nil : "the paywall presentation was not settled"].compactMap { $0 }
print("")
if rejected.isEmpty && failures.isEmpty {
    print("demo: \(verdicts.count) payloads, none rejected")
    exit(0)
}
for f in failures { print("demo: FAILED: \(f)") }
print("demo: \(rejected.count) of \(verdicts.count) payloads rejected")
exit(1)
