import Testing
import TrackerCoreTestKit

// Issue 17: a package ships a PrivacyInfo.xcprivacy exactly when its sources use a
// required-reason API, declaring exactly those categories (TrackerCoreTestKit.PrivacyManifestAudit).
// Issue 27, item 6: and a package whose SDK collects data declares exactly what it collects
// (NSPrivacyCollectedDataTypes), each entry tied to the code that sends it.
//
// Scenario:
//   AP20 the RocalyticsClient package's privacy manifest matches its sources: FileTimestamp C617.1 for the install time; device id, user id, purchases and product interaction, linked to the roca id
@Suite struct PrivacyManifestTests {
    /// What the RocalyticsClient SDK collects, and where its sources send it.
    static let collects: [CollectedData] = [
        // The identifier for vendor (and the roca id minted per device).
        CollectedData(
            type: "NSPrivacyCollectedDataTypeDeviceID", linked: true,
            purposes: ["NSPrivacyCollectedDataTypePurposeAnalytics"], evidence: #""idfv""#),
        // The app's user id.
        CollectedData(
            type: "NSPrivacyCollectedDataTypeUserID", linked: true,
            purposes: ["NSPrivacyCollectedDataTypePurposeAnalytics"], evidence: #""user_id""#),
        // The purchases the app reports.
        CollectedData(
            type: "NSPrivacyCollectedDataTypePurchaseHistory", linked: true,
            purposes: ["NSPrivacyCollectedDataTypePurposeAnalytics"], evidence: #""price""#),
        // Custom events, onboarding responses, paywall presentations.
        CollectedData(
            type: "NSPrivacyCollectedDataTypeProductInteraction", linked: true,
            purposes: ["NSPrivacyCollectedDataTypePurposeAnalytics"], evidence: #""custom_event""#),
    ]

    @Test func AP20_privacyManifestMatchesTheSources() {
        #expect(PrivacyManifestAudit.problems(packageRoot: PackagePaths.packageRoot(#filePath), collects: Self.collects) == [])
    }
}
