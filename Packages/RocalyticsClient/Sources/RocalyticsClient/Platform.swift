import Foundation
import TrackerCore

/// The platform (OS) version: iOS reports a string, Android an API level number.
public enum RocalyticsPlatformVersion: Sendable, Equatable {
    /// A version string such as `18.1`.
    case string(String)
    /// A numeric version such as Android's API level `34`.
    case number(Double)

    /// The version as text, as JavaScript's `String(value)` writes it (`34`, not `34.0`).
    public var text: String {
        switch self {
        case let .string(s): s
        case let .number(n): WireJSON.formatNumber(n)
        }
    }
}

/// Screen size in points, and its scale factor.
public struct RocalyticsScreen: Sendable, Equatable {
    /// Width in points.
    public var width: Double
    /// Height in points.
    public var height: Double
    /// Pixels per point.
    public var scale: Double

    /// Creates a screen description.
    public init(width: Double, height: Double, scale: Double) {
        self.width = width
        self.height = height
        self.scale = scale
    }
}

/// Everything the client reads from the host platform: what the Expo native modules gave the
/// TypeScript client (secure store, application and device info, network, locale and time zone,
/// UUIDs). The host injects one value per app through ``RocalyticsClient/Options/platform``.
///
/// Methods may throw where the native module could; the client turns failures into the
/// behaviour of the README (inert, or start-up skipped) and never lets them reach the app.
///
/// **Roca ids stored by an earlier Expo build** (spec/README.md decision 15): the client reads the
/// keys `rocalytics-roca-id` and `rocalitics-roca-id` through ``secureValue(forKey:)``. An Expo
/// build's ids are found only if this implementation reads the same Keychain items as
/// `expo-secure-store` did (same service and account naming); otherwise a new id is minted.
public protocol RocalyticsPlatform: Sendable {
    /// Reads a secure-store item. `nil` (or an empty string) means "no value".
    func secureValue(forKey key: String) async throws -> String?
    /// Writes a secure-store item.
    func setSecureValue(_ value: String, forKey key: String) async throws

    /// The platform name, sent as `X-Platform` and used for the user agent: `ios`, `android` or
    /// `web` (the same value as the onboarding context's `platform`).
    var platformName: String { get }
    /// The platform version (`Platform.Version`).
    var platformVersion: RocalyticsPlatformVersion { get }
    /// Bundle identifier or package name; `nil` sends `X-Application-ID: unknown`.
    var applicationId: String? { get }
    /// The app's display name.
    var applicationName: String? { get }
    /// The marketing version (`CFBundleShortVersionString`).
    var applicationVersion: String? { get }
    /// The build number (`CFBundleVersion`).
    var buildNumber: String? { get }
    /// Device brand, e.g. `Apple`.
    var deviceBrand: String? { get }
    /// Marketing model name, e.g. `iPhone 15 Pro`.
    var deviceModelName: String? { get }
    /// Manufacturer, e.g. `Apple`.
    var deviceManufacturer: String? { get }
    /// OS name, e.g. `iOS`.
    var osName: String? { get }
    /// OS version, e.g. `18.1`.
    var osVersion: String? { get }
    /// Screen size and scale.
    var screen: RocalyticsScreen { get }
    /// The device locale as a BCP 47 tag with a hyphen (`en-US`).
    var localeIdentifier: String { get }
    /// The IANA time zone (`Europe/Paris`).
    var timeZoneIdentifier: String { get }
    /// The identifier for vendor; read only when ``platformName`` is `ios`.
    func identifierForVendor() async -> String?
    /// The Android id; read only when ``platformName`` is `android`.
    func androidId() -> String?
    /// When the app was installed.
    func installationTime() async throws -> Date
    /// The device IP address; `0.0.0.0`, an empty string or a throw mean "unknown".
    func ipAddress() async throws -> String?
    /// A new lowercase UUID (the roca id of a fresh device).
    func makeUUID() -> String
}

extension RocalyticsPlatform {
    /// Default: a random lowercase UUIDv4.
    public func makeUUID() -> String { IDs.uuidV4() }
}

/// Which platform services the client uses.
public enum RocalyticsPlatformChoice: Sendable {
    /// The system's services when this build has them. This release ships none (on Linux and on
    /// Apple platforms alike): the client is then inert and reports `native-modules-unavailable`.
    /// Pass ``custom(_:)`` with your own implementation.
    case systemDefault
    /// No services, on purpose: the client is inert.
    case none
    /// The host's implementation.
    case custom(any RocalyticsPlatform)
    /// Services that could not be loaded, with the reason (reported as `native-modules-unavailable`).
    case unavailable(reason: String)

    /// The services, or the reason there are none.
    func resolve() -> Result<any RocalyticsPlatform, PlatformUnavailable> {
        switch self {
        case let .custom(platform): .success(platform)
        case .none: .failure(PlatformUnavailable(reason: "no native modules were provided"))
        case let .unavailable(reason): .failure(PlatformUnavailable(reason: reason))
        case .systemDefault: .failure(PlatformUnavailable(reason: SystemPlatform.unavailableReason))
        }
    }
}

/// Why no platform services are available.
struct PlatformUnavailable: Error {
    let reason: String
}

/// The system default services. None ship in this release: every OS reports why.
enum SystemPlatform {
    static var unavailableReason: String {
        #if os(Linux)
        "this OS (Linux) has no Rocalytics platform services; pass .custom(...) with your own RocalyticsPlatform"
        #else
        "no system Rocalytics platform services ship in this version; pass .custom(...) with your own RocalyticsPlatform"
        #endif
    }
}
