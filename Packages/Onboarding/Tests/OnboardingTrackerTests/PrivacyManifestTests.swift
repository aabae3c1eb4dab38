import Testing
import TrackerCoreTestKit

// Issue 17: a package ships a PrivacyInfo.xcprivacy exactly when its sources use a
// required-reason API, declaring exactly those categories (TrackerCoreTestKit.PrivacyManifestAudit).
// Issue 27, item 6: and a package whose SDK collects data declares exactly what it collects
// (NSPrivacyCollectedDataTypes), each entry tied to the code that sends it.
//
// Scenario:
//   AP18 the Onboarding package's privacy manifest matches its sources: no required-reason API; the onboarding run (product interaction, not linked: the snapshot has no identifier)
@Suite struct PrivacyManifestTests {
    /// What the Onboarding SDK collects, and where its sources send it.
    static let collects: [CollectedData] = [
        // The run and its steps (OnboardingRun.enterStep and the snapshot it records).
        CollectedData(
            type: "NSPrivacyCollectedDataTypeProductInteraction", linked: false,
            purposes: ["NSPrivacyCollectedDataTypePurposeAnalytics"], evidence: "public func enterStep(")
    ]

    @Test func AP18_privacyManifestMatchesTheSources() {
        #expect(PrivacyManifestAudit.problems(packageRoot: PackagePaths.packageRoot(#filePath), collects: Self.collects) == [])
    }
}
