import Testing
import TrackerCoreTestKit

// Issue 17: a package ships a PrivacyInfo.xcprivacy exactly when its sources use a
// required-reason API, declaring exactly those categories (TrackerCoreTestKit.PrivacyManifestAudit).
// Issue 27, item 6: and a package whose SDK collects data declares exactly what it collects
// (NSPrivacyCollectedDataTypes), each entry tied to the code that sends it.
//
// Scenario:
//   AP19 the Paywall package's privacy manifest matches its sources: no required-reason API; the presentation and its purchase (not linked: the snapshot has no identifier)
@Suite struct PrivacyManifestTests {
    /// What the Paywall SDK collects, and where its sources send it.
    static let collects: [CollectedData] = [
        // The presentation: shown, dismissed, cancelled.
        CollectedData(
            type: "NSPrivacyCollectedDataTypeProductInteraction", linked: false,
            purposes: ["NSPrivacyCollectedDataTypePurposeAnalytics"], evidence: "public func shown()"),
        // A purchase"s store transaction (never a price).
        CollectedData(
            type: "NSPrivacyCollectedDataTypePurchaseHistory", linked: false,
            purposes: ["NSPrivacyCollectedDataTypePurposeAnalytics"], evidence: "originalTransactionIdentifier"),
    ]

    @Test func AP19_privacyManifestMatchesTheSources() {
        #expect(PrivacyManifestAudit.problems(packageRoot: PackagePaths.packageRoot(#filePath), collects: Self.collects) == [])
    }
}
