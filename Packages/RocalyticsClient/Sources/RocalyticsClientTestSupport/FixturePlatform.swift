import Foundation
import RocalyticsClient
import TrackerCore

/// Platform services with fixed values, for tests and previews: the fixture's `device` object
/// (RocalyticsClient's Testing article) or any values you set.
public struct FixturePlatform: RocalyticsPlatform {
    /// The secure store behind ``secureValue(forKey:)``.
    public var store: InMemorySecureStore
    /// Returned as ``RocalyticsPlatform`` requires (`platformName`).
    public var platformName: String
    /// Returned as ``RocalyticsPlatform`` requires (`platformVersion`).
    public var platformVersion: RocalyticsPlatformVersion
    /// Returned as ``RocalyticsPlatform`` requires (`applicationId`).
    public var applicationId: String?
    /// Returned as ``RocalyticsPlatform`` requires (`applicationName`).
    public var applicationName: String?
    /// Returned as ``RocalyticsPlatform`` requires (`applicationVersion`).
    public var applicationVersion: String?
    /// Returned as ``RocalyticsPlatform`` requires (`buildNumber`).
    public var buildNumber: String?
    /// Returned as ``RocalyticsPlatform`` requires (`idfv`).
    public var idfv: String?
    /// Returned as ``RocalyticsPlatform`` requires (`androidIdValue`).
    public var androidIdValue: String?
    /// Milliseconds since the epoch.
    public var installTimeMs: Int64
    /// Returned as ``RocalyticsPlatform`` requires (`deviceBrand`).
    public var deviceBrand: String?
    /// Returned as ``RocalyticsPlatform`` requires (`deviceModelName`).
    public var deviceModelName: String?
    /// Returned as ``RocalyticsPlatform`` requires (`deviceManufacturer`).
    public var deviceManufacturer: String?
    /// Returned as ``RocalyticsPlatform`` requires (`osName`).
    public var osName: String?
    /// Returned as ``RocalyticsPlatform`` requires (`osVersion`).
    public var osVersion: String?
    /// Returned as ``RocalyticsPlatform`` requires (`ip`).
    public var ip: String?
    /// When set, ``ipAddress()`` throws.
    public var ipLookupFails = false
    /// Returned as ``RocalyticsPlatform`` requires (`screen`).
    public var screen: RocalyticsScreen
    /// Returned as ``RocalyticsPlatform`` requires (`uuid`).
    public var uuid: String
    /// Returned as ``RocalyticsPlatform`` requires (`localeIdentifier`).
    public var localeIdentifier: String
    /// Returned as ``RocalyticsPlatform`` requires (`timeZoneIdentifier`).
    public var timeZoneIdentifier: String

    /// The fixture's iOS device (the Testing article's iOS device).
    public static func ios(store: InMemorySecureStore = InMemorySecureStore()) -> FixturePlatform {
        FixturePlatform(
            store: store, platformName: "ios", platformVersion: .string("18.1"), applicationId: "com.example.app",
            applicationName: "Example", applicationVersion: "2.4.0", buildNumber: "412",
            idfv: "0A1B2C3D-4E5F-4061-8273-94A5B6C7D8E9", androidIdValue: nil, installTimeMs: 1_768_031_940_000,
            deviceBrand: "Apple", deviceModelName: "iPhone 15 Pro", deviceManufacturer: "Apple", osName: "iOS",
            osVersion: "18.1", ip: "203.0.113.7", screen: RocalyticsScreen(width: 393, height: 852, scale: 3),
            uuid: "6f1c2a4e-8b3d-4c5e-9f70-1a2b3c4d5e6f", localeIdentifier: "en-US", timeZoneIdentifier: "Europe/Paris")
    }

    /// The fixture's Android device (the Testing article's Android device).
    public static func android(store: InMemorySecureStore = InMemorySecureStore()) -> FixturePlatform {
        var p = ios(store: store)
        p.platformName = "android"
        p.platformVersion = .number(34)
        p.idfv = nil
        p.androidIdValue = "9774d56d682e549c"
        p.deviceBrand = "google"
        p.deviceModelName = nil
        p.deviceManufacturer = "Google"
        p.osName = "Android"
        p.osVersion = nil
        p.ip = "0.0.0.0"
        p.screen = RocalyticsScreen(width: 411.4, height: 914.3, scale: 2.625)
        p.localeIdentifier = "fr-FR"
        return p
    }

    /// Creates a platform from every value.
    public init(
        store: InMemorySecureStore, platformName: String, platformVersion: RocalyticsPlatformVersion,
        applicationId: String?, applicationName: String?, applicationVersion: String?, buildNumber: String?,
        idfv: String?, androidIdValue: String?, installTimeMs: Int64, deviceBrand: String?, deviceModelName: String?,
        deviceManufacturer: String?, osName: String?, osVersion: String?, ip: String?, screen: RocalyticsScreen,
        uuid: String, localeIdentifier: String, timeZoneIdentifier: String
    ) {
        self.store = store
        self.platformName = platformName
        self.platformVersion = platformVersion
        self.applicationId = applicationId
        self.applicationName = applicationName
        self.applicationVersion = applicationVersion
        self.buildNumber = buildNumber
        self.idfv = idfv
        self.androidIdValue = androidIdValue
        self.installTimeMs = installTimeMs
        self.deviceBrand = deviceBrand
        self.deviceModelName = deviceModelName
        self.deviceManufacturer = deviceManufacturer
        self.osName = osName
        self.osVersion = osVersion
        self.ip = ip
        self.screen = screen
        self.uuid = uuid
        self.localeIdentifier = localeIdentifier
        self.timeZoneIdentifier = timeZoneIdentifier
    }

    /// A platform from a fixture scenario's `device` object; `nil` when a required member is missing.
    public init?(fixtureDevice d: JSONValue, store: InMemorySecureStore) {
        func s(_ k: String) -> String? { d[k]?.stringValue }
        guard let platform = s("platform"), let install = s("installTime").flatMap(Timestamp.parse),
            let screen = d["screen"], let w = screen["width"]?.numberValue, let h = screen["height"]?.numberValue,
            let scale = screen["scale"]?.numberValue, let uuid = s("uuid"), let locale = s("locale"),
            let zone = s("timeZone")
        else { return nil }
        let version: RocalyticsPlatformVersion
        switch d["platformVersion"] {
        case .string(let v)?: version = .string(v)
        case .number(let n)?: version = .number(n)
        default: return nil
        }
        self.init(
            store: store, platformName: platform, platformVersion: version, applicationId: s("applicationId"),
            applicationName: s("applicationName"), applicationVersion: s("nativeApplicationVersion"),
            buildNumber: s("nativeBuildVersion"), idfv: s("idfv"), androidIdValue: s("androidId"), installTimeMs: install,
            deviceBrand: s("brand"), deviceModelName: s("modelName"), deviceManufacturer: s("manufacturer"),
            osName: s("osName"), osVersion: s("osVersion"), ip: s("ip"),
            screen: RocalyticsScreen(width: w, height: h, scale: scale), uuid: uuid, localeIdentifier: locale,
            timeZoneIdentifier: zone)
    }

    public func secureValue(forKey key: String) async throws -> String? { try store.value(forKey: key) }
    public func setSecureValue(_ value: String, forKey key: String) async throws { try store.setValue(value, forKey: key) }
    public func identifierForVendor() async -> String? { idfv }
    public func androidId() -> String? { androidIdValue }
    public func installationTime() async throws -> Date { Date(timeIntervalSince1970: Double(installTimeMs) / 1000) }
    public func ipAddress() async throws -> String? {
        if ipLookupFails { throw InMemorySecureStore.Failure(operation: "ip lookup") }
        return ip
    }
    public func makeUUID() -> String { uuid }
}
