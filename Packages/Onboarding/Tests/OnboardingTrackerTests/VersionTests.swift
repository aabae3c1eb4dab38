import Foundation
import Testing
import TrackerCoreTestKit

@testable import OnboardingTracker

@Suite struct VersionTests {
    /// `OnboardingTrackerVersion.current` (sent as `context.library_version`) is the top release
    /// of the package's CHANGELOG, which keeps an Unreleased section on top.
    @Test func versionConstantMatchesChangelog() throws {
        let changelog = try String(contentsOfFile: PackagePaths.packageRoot(#filePath) + "/CHANGELOG.md", encoding: .utf8)
        #expect(ChangelogCheck.topRelease(of: changelog) == OnboardingTrackerVersion.current)
        #expect(changelog.hasPrefix("# Changelog"))
        #expect(changelog.contains("## [Unreleased]"))
        #expect(changelog.range(of: "## [Unreleased]")!.lowerBound < changelog.range(of: "## [0.1.0] - 2026-11-29")!.lowerBound)
    }
}
