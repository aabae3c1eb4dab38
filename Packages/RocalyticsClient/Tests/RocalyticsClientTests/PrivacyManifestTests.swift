import Testing
import TrackerCoreTestKit

// Issue 17: a package ships a PrivacyInfo.xcprivacy exactly when its sources use a
// required-reason API, declaring exactly those categories (TrackerCoreTestKit.PrivacyManifestAudit).
//
// New scenario:
//   AP20 the RocalyticsClient package's privacy manifest (FileTimestamp C617.1 for the install time)
//        matches its sources
@Suite struct PrivacyManifestTests {
    @Test func AP20_privacyManifestMatchesTheSources() {
        #expect(PrivacyManifestAudit.problems(packageRoot: PackagePaths.packageRoot(#filePath)) == [])
    }
}
