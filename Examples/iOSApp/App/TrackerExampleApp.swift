import RocalyticsKit
import ScoreTracker
import SwiftUI

@main
struct TrackerExampleApp: App {
    let rocalytics: Rocalytics
    let score: ScoreClient

    /// The whole set-up, synchronous and free of file I/O: the Rocalytics client with the
    /// onboarding and paywall trackers (system ids and context, default stores, lifecycle bound),
    /// and the Score client.
    init() {
        rocalytics = Rocalytics.start(
            RocalyticsSetup(client: RocalyticsConfiguration(keychainAccessGroup: Tracking.sharedKeychainGroup)))
        score = Tracking.score()
        score.setConsent(analytics: true, personalization: false, advertising: false)
        score.bindToAppLifecycle()
    }

    var body: some Scene {
        WindowGroup { ContentView(rocalytics: rocalytics, score: score) }
    }
}

struct ContentView: View {
    let rocalytics: Rocalytics
    let score: ScoreClient
    @State private var status = "Starting…"

    var body: some View {
        VStack(spacing: 16) {
            Text("Tracker example").font(.title)
            Text(status).font(.footnote).multilineTextAlignment(.center)
        }
        .padding()
        .task { status = await record() }
    }

    /// Records one onboarding step, one paywall and one Score event.
    func record() async -> String {
        score.track("app_opened", properties: ["source": "example"])
        let run = await OnboardingRun.resumeOrStart(
            StartOptions(
                onboarding: OnboardingInput(key: "main", version: "1"),
                manifest: [ManifestStepInput(stepKey: "welcome")]),
            resumeTimeout: 3)
        run.enterStep("welcome")
        run.complete()
        let presentation = rocalytics.paywalls.start(
            PaywallPresentationInfo(
                moment: "launch", paywallId: "pw-1", audienceId: nil,
                renderMode: .custom, billing: .store, surface: .present))
        presentation?.shown()
        presentation?.end(.dismissed)
        return "Recorded: onboarding run, paywall presentation, Score event"
    }
}
