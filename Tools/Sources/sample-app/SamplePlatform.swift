import Foundation
import RocalyticsClient
import TrackerCore

/// The platform services a host app gives the Rocalytics client. On a phone they are the
/// Keychain, the bundle and the device facts; here the "secure store" is a `FileKeyValueStorage`
/// in the app's data directory (owner-only files), so the roca id, the install flag and the
/// vendor id survive the app being killed and relaunched, as they do on a device.
final class SamplePlatform: RocalyticsPlatform {
    private let store: FileKeyValueStorage

    init(directory: String) { store = FileKeyValueStorage(directory: directory) }

    func secureValue(forKey key: String) async throws -> String? { try await store.getItem(key) }
    func setSecureValue(_ value: String, forKey key: String) async throws { try await store.setItem(key, value) }

    let platformName = "ios"
    let platformVersion = RocalyticsPlatformVersion.string("18.1")
    let applicationId: String? = "com.example.sampleapp"
    let applicationName: String? = "Sample App"
    let applicationVersion: String? = "2.4.0"
    let buildNumber: String? = "412"
    let deviceBrand: String? = "Apple"
    let deviceModelName: String? = "iPhone 15"
    let deviceManufacturer: String? = "Apple"
    let osName: String? = "iOS"
    let osVersion: String? = "18.1"
    let screen = RocalyticsScreen(width: 393, height: 852, scale: 3)
    let localeIdentifier = "en-US"
    let timeZoneIdentifier = "Europe/Paris"

    /// Stable for the app's installation, like `identifierForVendor`.
    func identifierForVendor() async -> String? {
        if let stored = try? await store.getItem("sample.idfv") { return stored }
        let fresh = IDs.uuidV4().uppercased()
        try? await store.setItem("sample.idfv", fresh)
        return fresh
    }

    func androidId() -> String? { nil }
    func installationTime() async throws -> Date { Date(timeIntervalSince1970: 1_767_225_600) }
    func ipAddress() async throws -> String? { nil }
}
