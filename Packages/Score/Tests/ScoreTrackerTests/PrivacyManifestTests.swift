import Testing
import TrackerCoreTestKit

// Issue 17: a package ships a PrivacyInfo.xcprivacy exactly when its sources use a
// required-reason API, declaring exactly those categories (TrackerCoreTestKit.PrivacyManifestAudit).
// Issue 27, item 6: and a package whose SDK collects data declares exactly what it collects
// (NSPrivacyCollectedDataTypes), each entry tied to the code that sends it.
//
// Scenario:
//   AP21 the Score package's privacy manifest matches its sources: no required-reason API; user id, device id (anonymousId), events and ad impressions, linked
@Suite struct PrivacyManifestTests {
    /// What the Score SDK collects, and where its sources send it.
    static let collects: [CollectedData] = [
        // identify(userId:) puts it in every envelope.
        CollectedData(
            type: "NSPrivacyCollectedDataTypeUserID", linked: true,
            purposes: ["NSPrivacyCollectedDataTypePurposeAnalytics"], evidence: #","userId":""#),
        // The anonymous id minted per installation.
        CollectedData(
            type: "NSPrivacyCollectedDataTypeDeviceID", linked: true,
            purposes: ["NSPrivacyCollectedDataTypePurposeAnalytics"], evidence: #","anonymousId":""#),
        // Every tracked event.
        CollectedData(
            type: "NSPrivacyCollectedDataTypeProductInteraction", linked: true,
            purposes: ["NSPrivacyCollectedDataTypePurposeAnalytics"], evidence: #","eventId":""#),
        // ad_impression events: the ads the user was shown.
        CollectedData(
            type: "NSPrivacyCollectedDataTypeAdvertisingData", linked: true,
            purposes: ["NSPrivacyCollectedDataTypePurposeAnalytics"], evidence: #""ad_impression""#),
    ]

    @Test func AP21_privacyManifestMatchesTheSources() {
        #expect(PrivacyManifestAudit.problems(packageRoot: PackagePaths.packageRoot(#filePath), collects: Self.collects) == [])
    }
}
