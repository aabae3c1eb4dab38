import Foundation
import RocalyticsClientTestSupport
import RocalyticsKit
import Testing
import TrackerCoreTestKit

/// The umbrella (issue 37 item 1). Its end-to-end run, the README's "Add to an iOS app" section
/// against a loopback collector, is Integration's INT10.
@Suite(.serialized) struct RocalyticsKitTests {
    static let context = RunContextInput(
        appVersion: "2.4.0", build: "412", platform: .ios, osVersion: "18.1", locale: "en-US", timezone: "Europe/Paris")

    func setup(_ clock: ManualClock, _ transport: RecordingTransport, _ storage: InMemoryKeyValueStorage) -> RocalyticsSetup {
        RocalyticsSetup(
            client: RocalyticsConfiguration(
                platform: .custom(FixturePlatform.ios()), transport: transport, clock: clock, scheduler: clock,
                onDiagnostic: { _ in }, installPing: false, storage: InMemoryKeyValueStorage()),
            storage: storage, context: .value(Self.context),
            onboarding: {
                $0.clock = clock
                $0.scheduler = clock
                $0.registry = HandoffRegistry()
            },
            paywall: {
                $0.clock = clock
                $0.scheduler = clock
            })
    }

    @Test func RK1_oneCallSetsUpTheClientAndBothTrackersDeliveringToIt() async {
        let clock = ManualClock()
        let transport = RecordingTransport()
        let storage = InMemoryKeyValueStorage()
        let rocalytics = Rocalytics.start(setup(clock, transport, storage), lifecycle: nil)
        defer { rocalytics.stop() }
        #expect(Rocalytics.shared === rocalytics)
        #expect(Rocalytics.start(RocalyticsSetup(), lifecycle: nil) === rocalytics, "a second start made a second set-up")
        #expect(OnboardingRun.shared === rocalytics.onboarding)
        await rocalytics.client.ready()

        let run = OnboardingRun.start(
            StartOptions(onboarding: OnboardingInput(key: "main", version: "1"), manifest: [ManifestStepInput(stepKey: "welcome")]))
        run.enterStep("welcome")
        run.complete()
        let paywall = rocalytics.paywalls.start(
            PaywallPresentationInfo(moment: "launch", paywallId: "pw-1", renderMode: .custom, billing: .store, surface: .present))
        paywall?.end(.dismissed)
        for _ in 0..<50 {
            await clock.settle()
            await clock.advance(byMs: 100)
        }
        let urls = transport.requests.map(\.url)
        #expect(urls.contains { $0.hasSuffix("/functions/v1/onboarding-response") })
        #expect(urls.contains { $0.hasSuffix("/functions/v1/paywall-presentations") })
    }

    @Test func RK2_optOutStopsEverySurfaceAndIsKept() async {
        let clock = ManualClock()
        let transport = RecordingTransport()
        let rocalytics = Rocalytics.start(setup(clock, transport, InMemoryKeyValueStorage()), lifecycle: nil)
        defer { rocalytics.stop() }
        await rocalytics.client.ready()
        await clock.settle()
        let before = transport.requests.count
        rocalytics.optOut()
        #expect(rocalytics.isOptedOut && rocalytics.onboarding.isOptedOut && rocalytics.paywalls.isOptedOut)
        let run = OnboardingRun.start(
            StartOptions(onboarding: OnboardingInput(key: "main", version: "1"), manifest: [ManifestStepInput(stepKey: "welcome")]))
        run.enterStep("welcome")
        run.complete()
        let paywall = rocalytics.paywalls.start(
            PaywallPresentationInfo(moment: "launch", paywallId: "pw-1", renderMode: .custom, billing: .store, surface: .present))
        paywall?.end(.dismissed)
        rocalytics.client.recordPurchase(originalTransactionIdentifier: "1", price: 1, currency: "EUR")
        for _ in 0..<50 {
            await clock.settle()
            await clock.advance(byMs: 100)
        }
        #expect(transport.requests.count == before, "\(transport.requests.dropFirst(before).map(\.url))")
        rocalytics.optIn()
        #expect(!rocalytics.isOptedOut && !rocalytics.onboarding.isOptedOut && !rocalytics.paywalls.isOptedOut)
    }

    @Test func RK3_versionConstantMatchesChangelog() throws {
        let changelog = try String(contentsOfFile: PackagePaths.packageRoot(#filePath) + "/CHANGELOG.md", encoding: .utf8)
        #expect(ChangelogCheck.topRelease(of: changelog) == RocalyticsKitVersion.current)
        #expect(changelog.contains("## [Unreleased]"))
    }
}
