import Foundation
import RocalyticsClient
import TrackerCore

/// The platform services a host app gives the Rocalytics client (on a phone: the Keychain,
/// the bundle and device facts). Here: a secure store kept in memory and fixed device facts.
final class DemoPlatform: RocalyticsPlatform {
    private let store = Locked<[String: String]>([:])

    func secureValue(forKey key: String) async throws -> String? { store.withLock { $0[key] } }
    func setSecureValue(_ value: String, forKey key: String) async throws { store.withLock { $0[key] = value } }

    let platformName = "ios"
    let platformVersion = RocalyticsPlatformVersion.string("18.1")
    let applicationId: String? = "com.example.demo"
    let applicationName: String? = "Demo"
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
    let idfv = IDs.uuidV4().uppercased()

    func identifierForVendor() async -> String? { idfv }
    func androidId() -> String? { nil }
    func installationTime() async throws -> Date { Date(timeIntervalSince1970: 1_767_225_600) }
    func ipAddress() async throws -> String? { nil }
}
