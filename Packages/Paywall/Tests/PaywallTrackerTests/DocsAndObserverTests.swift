import Foundation
import Testing
import TrackerCore
import TrackerCoreTestKit

@testable import PaywallTracker

/// A host SDK that declares its own observer protocol takes the tracker through the closure adapter.
private final class HostSDK {
    let observer: PaywallObserverClosures
    init(observer: PaywallObserverClosures) { self.observer = observer }
    func present() {
        guard let h = observer.start(INFO) else { return }
        h.shown()
        h.end(.dismissed)
    }
}

/// Spec 17 K and L, the adapter, and the version constant.
@Suite struct DocsAndObserverTests {
    @Test func P58_sampleReadsTheDevice() throws {
        let root = PackagePaths.packageRoot(#filePath)
        let sample = try String(contentsOfFile: root + "/Examples/CustomSinkPaywall.swift", encoding: .utf8)
        #expect(!sample.contains(#"platform: ""#))
        #expect(!sample.contains(#"locale: ""#))
        #expect(!sample.contains(#"timezone: ""#))
        #expect(sample.contains("platform: device.platform"))
        #expect(sample.contains("locale: device.locale"))
        #expect(sample.contains("timezone: TimeZone.current.identifier"))
        // Tests and examples that run on Linux pass `ios` explicitly (spec/README.md decision 8):
        // that is in the example's test, not in the sample.
    }

    @Test func P59_trackerIsTheHostsObserver() async throws {
        let h = PaywallFixture()
        let observer: any PaywallObserver = h.tracker
        let handle = try #require(observer.start(INFO))
        handle.shown()
        await h.settle()
        await h.advance(1000)
        handle.end(.dismissed)
        await h.settle()
        try h.expectShownThenDismissedAfterOneSecond()
        h.expectConformant()
    }

    @Test func closureAdapterForHostsWithTheirOwnProtocol() async throws {
        let h = PaywallFixture(clock: ManualClock(startMs: T0, holdsOutsideWork: true))  // deterministic coalescing
        HostSDK(observer: h.tracker.closures).present()
        await h.settle()
        #expect(h.received.map(\.seq) == [1, 3])
        #expect(h.received.last?.outcomeStatus == "dismissed")
        h.expectConformant()
    }

    @Test func versionConstantMatchesChangelog() throws {
        let changelog = try String(contentsOfFile: PackagePaths.packageRoot(#filePath) + "/CHANGELOG.md", encoding: .utf8)
        #expect(ChangelogCheck.topRelease(of: changelog) == PaywallTrackerVersion.current)
        #expect(changelog.contains("## [Unreleased]"))
        #expect(changelog.contains("## [\(PaywallTrackerVersion.current)] - 2026-11-29"))
    }
}
