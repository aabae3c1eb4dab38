import Foundation
import Testing
import TrackerCore
import TrackerCoreTestKit

@Suite struct VersionTests {
    @Test func versionConstantMatchesChangelog() throws {
        let changelog = try String(contentsOfFile: PackagePaths.packageRoot(#filePath) + "/CHANGELOG.md", encoding: .utf8)
        #expect(ChangelogCheck.topRelease(of: changelog) == TrackerCoreVersion.current)
        #expect(changelog.contains("## [Unreleased]"))
    }
}
