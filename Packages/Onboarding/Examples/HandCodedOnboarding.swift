// The README's hand-coded onboarding, in Swift. Compiled as a module and run by the test suite
// against a recording sink (scenarios S158 and S159).
import OnboardingTracker
import TrackerCore

/// What the app knows about the device.
public struct Device: Sendable {
    public var appVersion: String
    public var build: String
    public var osVersion: String
    public init(appVersion: String, build: String, osVersion: String) {
        self.appVersion = appVersion
        self.build = build
        self.osVersion = osVersion
    }
}

public enum HandCodedOnboarding {
    // 1. Once, at app startup. `customize` lets tests inject a sink, clock and scheduler.
    public static func setUpTracking(
        storage: any KeyValueStorage, device: Device,
        customize: (inout OnboardingRunConfiguration) -> Void = { _ in }
    ) {
        var config = OnboardingRunConfiguration(
            sink: HTTPSink<OnboardingRunSnapshot>(
                url: "https://collector.example.com/v1/onboarding-runs",
                headers: .fixed([HTTPHeader("authorization", "Bearer <install token>")])
            ),
            context: .provider {
                RunContextInput(
                    appVersion: device.appVersion, build: device.build, platform: .ios,
                    osVersion: device.osVersion, locale: "en-US", timezone: "America/New_York")
            },
            storage: storage  // lets a run survive the app being killed
        )
        customize(&config)
        OnboardingRun.configure(config)
    }

    // 2. When the onboarding opens: resume the killed run if the app restores the user's
    //    position, otherwise start a new one. resumeOrStart waits for storage at most
    //    resumeTimeout seconds, then starts.
    public static let main = StartOptions(
        onboarding: OnboardingInput(key: "main", version: "3"),
        // Every screen the flow can show, in order. Alternatives at one position share a slot.
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

    public static func openOnboarding(restorePosition: Bool, resumeTimeout: TimeInterval = 3) async -> OnboardingRun {
        guard restorePosition else { return OnboardingRun.start(main) }
        // Passing the options resumes only a killed run of this same onboarding. Resumed: show
        // the screen your own navigation state restored. The tracker records it as a new entry
        // for its last recorded step (none if truncated).
        return await OnboardingRun.resumeOrStart(main, resumeTimeout: resumeTimeout)
    }

    // 3. Each screen reports when it is shown and when the user leaves it. A screen the flow
    //    does not show is simply never entered: there is no skip call.
    public enum Goal: String, Sendable { case practice, learn }

    public static func walkThrough(_ run: OnboardingRun, goal: Goal, notificationsGranted: Bool) {
        run.enterStep("welcome")
        run.exitStep("welcome")

        run.enterStep("goal")
        run.exitStep("goal", answers: [.single(questionKey: "goal", value: goal.rawValue)])

        let level = goal == .practice ? "level_advanced" : "level_beginner"
        run.enterStep(level)
        run.exitStep(level, answers: [.numeric(questionKey: "daily_minutes", value: 15, unit: "minute")])

        if !notificationsGranted {
            run.enterStep("notifications")
            run.exitStep("notifications", answers: [.single(questionKey: "notifications", value: "allowed")])
        }

        run.enterStep("done")
        run.complete()
    }

    // 4. When the app moves to the background.
    public static func onAppBackground(_ run: OnboardingRun) {
        run.background()
    }
}
