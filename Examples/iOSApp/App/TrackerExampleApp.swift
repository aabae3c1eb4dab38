import OnboardingTracker
import PaywallTracker
import RocalyticsClient
import ScoreTracker
import SwiftUI
import TrackerCore

@main
struct TrackerExampleApp: App {
    var body: some Scene {
        WindowGroup { ContentView() }
    }
}

struct ContentView: View {
    @State private var status = "Starting…"

    var body: some View {
        VStack(spacing: 16) {
            Text("Tracker example").font(.title)
            Text(status).font(.footnote).multilineTextAlignment(.center)
        }
        .padding()
        .task { status = await Self.run() }
    }

    /// Sets up every surface, records one onboarding step, one paywall and one Score event.
    static func run() async -> String {
        do {
            let score = Tracking.score(directory: try await Tracking.directory("score"))
            score.setConsent(analytics: true, personalization: false, advertising: false)
            score.bindToAppLifecycle()  // UIKit lifecycle: the app only (unavailable in the widget extension)
            score.track("app_opened", props: ["source": "example"])

            let rocalytics = Tracking.rocalytics()
            let storage = FileKeyValueStorage(directory: try await Tracking.directory("trackers"))
            Tracking.configureOnboarding(client: rocalytics, storage: storage)
            let run = OnboardingRun.start(
                StartOptions(
                    onboarding: OnboardingInput(key: "main", version: "1"),
                    manifest: [ManifestStepInput(stepKey: "welcome")]))
            run.enterStep("welcome")
            run.complete()

            let paywall = Tracking.paywall(client: rocalytics, storage: storage)
            let info = PaywallPresentationInfo(
                moment: "launch", paywallId: "pw-1", audienceId: nil,
                renderMode: .custom, billing: .store, surface: .present)
            let presentation = paywall.start(info)
            presentation?.shown()
            presentation?.end(.dismissed)
            return "Recorded: onboarding run, paywall presentation, Score event"
        } catch {
            return "Storage unavailable: \(error)"
        }
    }
}
