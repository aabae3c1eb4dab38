// The README's "Add to an iOS app" section, compiled and run by `QuickStartTests` exactly as it is
// shown (an app writes the first part in `App.init()`, the rest where it happens).

import RocalyticsKit
import ScoreTracker

/// The README's set-up: everything an app writes in `App.init()`.
public func startAnalytics(scoreEndpoint: String) -> (Rocalytics, ScoreClient) {
    // Client, onboarding and paywall trackers: system ids and context, default stores, no file I/O.
    let rocalytics = Rocalytics.start()
    let score = ScoreClient(configuration: .init(publishableKey: "pk_live_123", siteId: "my-app", endpoint: scoreEndpoint))
    score.grantAllConsent()  // or setConsent(...) once the user chose
    return (rocalytics, score)
}

/// The README's recording calls, each where it happens in the app.
public func recordTheJourney(_ rocalytics: Rocalytics, _ score: ScoreClient) async {
    // Onboarding screens: resume a killed run of this onboarding, or start one.
    let onboarding = StartOptions(
        onboarding: OnboardingInput(key: "main", version: "1"),
        manifest: [ManifestStepInput(stepKey: "welcome"), ManifestStepInput(stepKey: "goal")])
    let run = await OnboardingRun.resumeOrStart(onboarding, resumeTimeout: 3)
    run.enterStep("welcome")
    run.complete()
    // A paywall, then the purchase (on Apple platforms: recordPurchase(transaction, product: product)).
    let paywall = rocalytics.paywalls.start(
        PaywallPresentationInfo(moment: "launch", paywallId: "pw-1", renderMode: .custom, billing: .store, surface: .present))
    paywall?.shown()
    rocalytics.client.recordPurchase(originalTransactionIdentifier: "2000000123", price: 9.99, currency: "EUR")
    paywall?.end(.purchased(PaywallTransactionInfo(originalTransactionIdentifier: "2000000123")))
    // Score events.
    score.track("lesson_completed", properties: ["lesson": "intro"])
}
