import Foundation
import RocalyticsClient
import RocalyticsClientTestSupport
import Testing
import TrackerCore
import TrackerCoreTestKit

// Launch cost (issue 19): the client's constructor does no secure-store I/O on the caller's
// thread.
//
// New scenario: L1 the constructor returns while the secure store's first read is held (the
// read blocks its thread until the test opens the gate); once released, start-up finishes with
// the stored roca id.

/// The fixture platform with every secure-store read passing through `gate` first.
private struct GatedPlatform: RocalyticsPlatform {
    let base: FixturePlatform
    let gate: ReadGate

    func secureValue(forKey key: String) async throws -> String? {
        gate.pass()
        return try await base.secureValue(forKey: key)
    }
    func setSecureValue(_ value: String, forKey key: String) async throws { try await base.setSecureValue(value, forKey: key) }
    var platformName: String { base.platformName }
    var platformVersion: RocalyticsPlatformVersion { base.platformVersion }
    var applicationId: String? { base.applicationId }
    var applicationName: String? { base.applicationName }
    var applicationVersion: String? { base.applicationVersion }
    var buildNumber: String? { base.buildNumber }
    var deviceBrand: String? { base.deviceBrand }
    var deviceModelName: String? { base.deviceModelName }
    var deviceManufacturer: String? { base.deviceManufacturer }
    var osName: String? { base.osName }
    var osVersion: String? { base.osVersion }
    var screen: RocalyticsScreen { base.screen }
    var localeIdentifier: String { base.localeIdentifier }
    var timeZoneIdentifier: String { base.timeZoneIdentifier }
    func identifierForVendor() async -> String? { await base.identifierForVendor() }
    func androidId() -> String? { base.androidId() }
    func installationTime() async throws -> Date { try await base.installationTime() }
    func ipAddress() async throws -> String? { try await base.ipAddress() }
    func makeUUID() -> String { base.makeUUID() }
}

@Suite struct LaunchTests {
    @Test func L1_constructorReturnsWhileTheFirstSecureStoreReadIsHeld() async {
        let store = RETURNING()
        let gate = ReadGate()
        // A constructor that read on the caller's thread would never get past this line.
        let h = ClientFixture(store: store, choice: .custom(GatedPlatform(base: .ios(store: store), gate: gate)))
        // Start-up runs in the background and its read is held there now.
        #expect(await gate.waitUntilEntered())
        #expect(h.client.rocaId == nil)
        #expect(store.writes.isEmpty)

        gate.open()
        await h.client.ready()
        #expect(h.client.rocaId == ID)
        #expect(gate.entered >= 1)
    }
}
