// The snippets of the DocC article "Getting started with the onboarding tracker", compiled here
// (`make check-readme` checks that each snippet of the article is part of a compiled file).

import OnboardingTracker
import TrackerCore

/// "Configure once".
public func gettingStartedConfigure() {
    OnboardingRun.configure(
        OnboardingRunConfiguration(
            sink: HTTPSink<OnboardingRunSnapshot>(url: "https://collector.example.com/v1/onboarding-runs"),
            context: .system,  // app version, build, OS version, locale and time zone, read at each start
            storage: StandardFileStorage()))
}

/// "Resume or start a run".
public func gettingStartedOpen(_ options: StartOptions) async -> OnboardingRun {
    let run = await OnboardingRun.resumeOrStart(options, resumeTimeout: 3)
    return run
}

/// "Report the screens".
public func gettingStartedRecord(_ run: OnboardingRun) {
    run.enterStep("goal")
    run.exitStep("goal", answers: [.single(questionKey: "goal", value: "practice")])
    run.setProperties(["plan": "pro"])
    run.complete()
}
