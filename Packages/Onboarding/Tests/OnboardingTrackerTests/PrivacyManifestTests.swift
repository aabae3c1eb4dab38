import Testing
import TrackerCoreTestKit

// Issue 17: a package ships a PrivacyInfo.xcprivacy exactly when its sources use a
// required-reason API, declaring exactly those categories (TrackerCoreTestKit.PrivacyManifestAudit).
//
// New scenario:
//   AP18 the Onboarding package's privacy manifest (none while it uses no required-reason API)
//        matches its sources
@Suite struct PrivacyManifestTests {
    @Test func AP18_privacyManifestMatchesTheSources() {
        #expect(PrivacyManifestAudit.problems(packageRoot: PackagePaths.packageRoot(#filePath)) == [])
    }
}
