import Testing
import TrackerCore
import TrackerCoreTestKit

@testable import RocalyticsClient

/// G93 (issue 37 item 7): a client built in Xcode Previews uses no platform services and keeps its
/// recorded requests in memory: nothing is read from or written to the Keychain or the disk, and
/// nothing is sent.
@Suite struct PreviewTests {
    @Test func G93_inXcodePreviewsTheClientIsInertAndKeepsNothingOnDisk() async throws {
        let disk = InMemoryKeyValueStorage()
        let configured = RocalyticsConfiguration(platform: .systemDefault, storage: disk)
        let safe = RocalyticsClient.previewSafe(configured, inPreviews: true)
        guard case .none = safe.platform else {
            Issue.record("the preview client kept platform services")
            return
        }
        #expect(!(safe.storage === disk), "the preview client records into the app's store")
        let real = RocalyticsClient.previewSafe(configured, inPreviews: false)
        #expect(real.storage === disk)
        if case .none = real.platform { Issue.record("outside previews the platform changed") }

        // Run as a client: inert, nothing sent, nothing stored in the configured store.
        let transport = RecordingTransport()
        let client = RocalyticsClient(
            configuration: RocalyticsClient.previewSafe(
                RocalyticsConfiguration(platform: .systemDefault, transport: transport, onDiagnostic: { _ in }, storage: disk),
                inPreviews: true))
        await client.ready()
        client.recordPurchase(originalTransactionIdentifier: "1", price: 1, currency: "EUR")
        #expect(client.isInert)
        #expect(transport.requests.isEmpty)
        #expect(try await disk.getItem("rocalytics-recorded-requests") == nil)
    }
}
