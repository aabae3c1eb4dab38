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
        case .string(let s): s
        case .number(let n): WireJSON.formatNumber(n)
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
/// UUIDs). The host injects one value per app through ``RocalyticsConfiguration/platform``.
///
/// Methods may throw where the native module could; the client turns failures into the
/// behaviour of the README (inert, or start-up skipped) and never lets them reach the app.
///
/// **Roca ids stored by an earlier Expo build** (<doc:PlatformServices>): the client reads the
/// keys `rocalytics-roca-id` and `rocalitics-roca-id` through ``secureValue(forKey:)``. An Expo
/// build's ids are found only if this implementation reads the same Keychain items as
/// `expo-secure-store` did (same service and account naming); otherwise a new id is minted.
public protocol RocalyticsPlatform: Sendable {
    /// Reads a secure-store item. `nil` (or an empty string) means "no value".
    func secureValue(forKey key: String) async throws -> String?
    /// Writes a secure-store item.
    func setSecureValue(_ value: String, forKey key: String) async throws
    /// Writes a secure-store item unless one is there already, and returns the value stored:
    /// `value`, or the one another process sharing the store wrote first (the roca id an app and
    /// its extensions share, ``RocalyticsConfiguration/keychainAccessGroup``). Default: writes
    /// `value` with ``setSecureValue(_:forKey:)`` and returns it.
    func addSecureValueIfAbsent(_ value: String, forKey key: String) async throws -> String

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
    /// Called when a secure-store call threw ``RocalyticsSecureStoreError/locked`` during
    /// start-up: returns `true` once the store may be readable again (protected data became
    /// available, or the app came to the foreground), `false` when it never will. The client
    /// mints nothing meanwhile. Default: `false` (the client goes inert, as for any read failure).
    func waitForProtectedData() async -> Bool
}

extension RocalyticsPlatform {
    /// Default: writes `value` and returns it.
    public func addSecureValueIfAbsent(_ value: String, forKey key: String) async throws -> String {
        try await setSecureValue(value, forKey: key)
        return value
    }
    /// Default: a random lowercase UUIDv4.
    public func makeUUID() -> String { IDs.uuidV4() }
    /// Default: never (`false`).
    public func waitForProtectedData() async -> Bool { false }
}

/// Which platform services the client uses.
public enum RocalyticsPlatformChoice: Sendable {
    /// The system's services. On iOS, iPadOS, tvOS and visionOS: the Keychain (the items of
    /// expo-secure-store, so an earlier Expo build's roca id is kept), the bundle's Info.plist,
    /// `UIDevice`, the window scene's screen, `Locale.current` and `TimeZone.current`, the
    /// Documents directory's creation date and `getifaddrs`. Elsewhere (Linux, macOS) there are
    /// none: the client is inert and reports `native-modules-unavailable`; pass ``custom(_:)``.
    case systemDefault
    /// No services, on purpose: the client is inert.
    case none
    /// The host's implementation.
    case custom(any RocalyticsPlatform)
    /// Services that could not be loaded, with the reason (reported as `native-modules-unavailable`).
    case unavailable(reason: String)

    /// The services, or the reason there are none. The system services snapshot their UIKit
    /// facts on the main actor (awaited, never waited for synchronously).
    func resolve(keychainAccessGroup: String? = nil) async -> Result<any RocalyticsPlatform, PlatformUnavailable> {
        switch self {
        case .custom(let platform): .success(platform)
        case .none: .failure(PlatformUnavailable(reason: "no native modules were provided"))
        case .unavailable(let reason): .failure(PlatformUnavailable(reason: reason))
        case .systemDefault: await SystemPlatform.make(keychainAccessGroup: keychainAccessGroup)
        }
    }
}

/// Why no platform services are available.
struct PlatformUnavailable: Error {
    let reason: String
}

/// The system default services: the Apple implementation where UIKit and the Keychain exist,
/// otherwise none, with the reason.
enum SystemPlatform {
    static func make(keychainAccessGroup: String? = nil) async -> Result<any RocalyticsPlatform, PlatformUnavailable> {
        #if canImport(UIKit) && canImport(Security) && !os(watchOS)
            .success(await AppleSystemPlatform.make(keychainAccessGroup: keychainAccessGroup))
        #else
            .failure(PlatformUnavailable(reason: unavailableReason))
        #endif
    }

    static var unavailableReason: String {
        #if os(Linux)
            "this OS (Linux) has no Rocalytics platform services; pass .custom(...) with your own RocalyticsPlatform"
        #else
            "this OS has no Rocalytics platform services (they need UIKit and the Keychain); pass .custom(...) with your own RocalyticsPlatform"
        #endif
    }
}

/// Waiters for "protected data may be readable again" (a one-shot signal per wait): the Apple
/// platform signals it on `protectedDataDidBecomeAvailable` and `didBecomeActive`.
final class ProtectedDataSignal: Sendable {
    private let waiters = Locked<[CheckedContinuation<Bool, Never>]>([])

    /// Number of waiting callers (for tests).
    var waiting: Int { waiters.withLock { $0.count } }

    /// Returns `true` at the next ``signal()``.
    func wait() async -> Bool {
        await withCheckedContinuation { c in waiters.withLock { $0.append(c) } }
    }

    /// Wakes every waiter.
    func signal() {
        let all = waiters.withLock { w -> [CheckedContinuation<Bool, Never>] in
            defer { w = [] }
            return w
        }
        for c in all { c.resume(returning: true) }
    }
}
