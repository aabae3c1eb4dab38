// A sample app process: the four SDK surfaces wired as an iOS app wires them, with file storage
// in the data directory it is given and every endpoint pointed at one collector.
//
//   sample-app --data DIR --collector URL [--hold-after-screens]
//
// Each launch: starts the Rocalytics client (its secure store is a file in DIR, so the roca id
// survives), the onboarding tracker (Rocalytics onboarding sink), the paywall tracker (Rocalytics
// paywall sink, contract v1.1) and Score (file queue). It resumes the onboarding run a killed
// launch left in DIR, or starts one. A new run records two screens; once both are stored the app
// prints `sample-app: ready-to-kill run=<id>` and, with --hold-after-screens, waits to be killed
// (the demo SIGKILLs it there). A resumed run (or a new one without the hold) finishes the
// onboarding, then the app identifies the user, buys through a paywall (the purchase and the
// presentation share the transaction's join key), sends a custom event, asks for the demand
// score, records Score events, waits until every
// snapshot is settled and the Score queue is flushed, prints `sample-app: done` and exits 0
// (1 when something was not settled within its bound).
import Foundation
import OnboardingTracker
import PaywallTracker
import RocalyticsClient
import ScoreTracker
import TrackerCore

// A parent may start this process with signals blocked or ignored (Foundation's Process spawns
// from a thread that blocks them; the demo ignores SIGINT and SIGTERM to handle them itself):
// restore the defaults, so that SIGTERM and Ctrl-C stop this process.
var unblocked = sigset_t()
sigemptyset(&unblocked)
sigprocmask(SIG_SETMASK, &unblocked, nil)
signal(SIGTERM, SIG_DFL)
signal(SIGINT, SIG_DFL)

/// One line on stdout, written at once: the demo reads this output as it comes.
func say(_ line: String) { FileHandle.standardOutput.write(Data("sample-app: \(line)\n".utf8)) }

var dataDirectory: String?
var collectorURL: String?
var holdAfterScreens = false
var arguments = CommandLine.arguments.dropFirst()
while let argument = arguments.popFirst() {
    switch argument {
    case "--data": dataDirectory = arguments.popFirst()
    case "--collector": collectorURL = arguments.popFirst()
    case "--hold-after-screens": holdAfterScreens = true
    case "--exit-with-parent":
        let parent = getppid()
        Thread.detachNewThread {
            while getppid() == parent { usleep(200_000) }
            exit(0)  // the process that started this one ended (even by SIGKILL): do not outlive it
        }
    default:
        FileHandle.standardError.write(Data("usage: sample-app --data DIR --collector URL [--hold-after-screens]\n".utf8))
        exit(2)
    }
}
guard let dataDirectory, var base = collectorURL else {
    FileHandle.standardError.write(Data("usage: sample-app --data DIR --collector URL [--hold-after-screens]\n".utf8))
    exit(2)
}
if base.hasSuffix("/") { base.removeLast() }

let showDiagnostic: DiagnosticHandler = { d in say("diagnostic \(d.code): \(d.message)") }

// MARK: App start-up: the four SDKs, each with its files in the data directory

let rocalytics = RocalyticsClient(
    configuration: RocalyticsConfiguration(
        platform: .custom(SamplePlatform(directory: dataDirectory + "/secure")),
        baseURL: base, onDiagnostic: showDiagnostic, attributionBaseURL: base))

let onboardingSink = TrackedSink(createRocalyticsOnboardingSink(rocalytics))  // the seed's one-liner
let onboarding = OnboardingRunTracker(
    configuration: OnboardingRunConfiguration(
        sink: onboardingSink,
        context: .value(
            RunContextInput(
                appVersion: "2.4.0", build: "412", platform: .ios, osVersion: "18.1",
                locale: "en-US", timezone: "Europe/Paris")),
        storage: FileKeyValueStorage(directory: dataDirectory + "/onboarding"),  // the run survives a kill
        debounceMs: 0,
        onDiagnostic: showDiagnostic))

let paywallSink = TrackedSink(createRocalyticsPaywallSink(rocalytics, for: PaywallPresentationSnapshotV1_1.self))
let paywalls = PaywallPresentationTracker(
    configuration: PaywallTrackerConfiguration(
        sink: paywallSink,
        context: .value(
            RunContextInput(
                appVersion: "2.4.0", build: "412", platform: .ios, osVersion: "18.1",
                locale: "en-US", timezone: "Europe/Paris")),
        storage: FileKeyValueStorage(directory: dataDirectory + "/paywall"),
        onDiagnostic: showDiagnostic))

let score = ScoreClient(
    configuration: ScoreConfiguration(
        publishableKey: "pk_sample_publishable", siteId: "sample-app", endpoint: base,
        appVersion: "2.4.0", os: "ios", locale: "en-US",
        pii: .classify([PiiRule(field: "email", action: .hash), PiiRule(field: "phone", action: .drop)]),
        store: FileScoreStore(directory: dataDirectory + "/score"), onDiagnostic: showDiagnostic))
score.setConsent(analytics: true, personalization: false, advertising: false)

await rocalytics.ready()
say("roca id \(rocalytics.rocaId ?? "none")")

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

// MARK: The onboarding: resume a killed run, or start one and record two screens

// A killed run of this flow is resumed when the stored state is read within 5 s; a resumed run
// has recorded steps, a new one none.
let run = await onboarding.resumeOrStart(mainFlow, resumeTimeout: 5)
if let step = run.currentStepKey {
    say("resumed run=\(run.runId) at step \(step)")
    score.track("app_opened", properties: ["resumed": true])
} else {
    say("started run=\(run.runId)")
    score.track("app_opened", properties: ["resumed": false])
    run.enterStep("welcome")
    run.exitStep("welcome")
    run.enterStep("goal")
    run.exitStep("goal", answers: [.single(questionKey: "goal", value: "practice")])
    score.track("onboarding_goal_chosen", properties: ["goal": "practice"])
    await onboarding.idle()  // both screens are in the run's stored snapshot
    try? await score.flush()
    say("ready-to-kill run=\(run.runId)")
    if holdAfterScreens {
        while true { pause() }  // the demo SIGKILLs the process here
    }
}
run.enterStep("level_advanced")
run.exitStep("level_advanced", answers: [.numeric(questionKey: "daily_minutes", value: 15, unit: "minute")])
run.enterStep("done")
run.complete()

// MARK: Sign-in, a paywall purchase, Score events

let transaction = "2000000912345678"  // the join key shared by the purchase and the presentation
do {
    try await rocalytics.identify(userId: "user-42")
    try await rocalytics.trackPurchase(
        originalTransactionIdentifier: transaction, productId: "pro_yearly", price: 59.99, currency: "EUR")
    try await rocalytics.trackCustomEvent("tutorial_finished", properties: ["lessons": 3])
    let demand = try await rocalytics.getDemandScore()
    say("demand score \(demand.demandScore), cold start \(demand.coldStart)")
} catch {
    say("client call failed: \(error)")
}
if let presentation = paywalls.start(
    PaywallPresentationInfo(
        provider: .native, externalPaywallId: "spring_sale_v2", placement: "onboarding_end", providerName: "StoreKit"))
{
    presentation.shown()
    presentation.end(.purchased(PaywallTransactionInfo(originalTransactionIdentifier: transaction, productId: "pro_yearly")))
}
score.track("lesson_completed", properties: ["lesson": "intro", "email": "fan@example.com", "phone": "+33 6 00 00 00 00", "score": 42])
score.trackAdvertising("ad_clicked", properties: ["campaign": "spring"])  // no advertising consent: dropped
score.track("subscription_started", properties: ["plan": "pro_yearly"], delivery: .critical)
score.identify(userId: "user-42", traits: ["tier": "gold"])

// MARK: Wait until everything is settled (bounded), then exit

let onboardingDone = onboardingSink.wait { payload, result in payload.isCompleted && result.outcome.isSettled }
let paywallDone = paywallSink.wait { payload, result in payload.outcome != nil && result.outcome.isSettled }
var flushed = false
do {
    try await score.flush()
    flushed = true
} catch {
    say("score flush failed: \(error)")
}
await onboarding.idle()
await paywalls.idle()
say("onboarding completed settled=\(onboardingDone) paywall ended settled=\(paywallDone) score flushed=\(flushed)")
say("done")
exit(onboardingDone && paywallDone && flushed ? 0 : 1)
