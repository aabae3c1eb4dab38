/// Where and how the SDKs keep their files on each platform (issue 17, item 4), as portable
/// policy: the decisions are made here and tested on Linux; `AppleStorageDirectory.swift` only
/// applies them through the OS.
///
/// - iOS, visionOS, macOS: Application Support (the app's own data, kept across launches and
///   not purged by the system), excluded from iCloud and device backups (the events are resent
///   from the device, a restored backup would resend stale ones), iOS and visionOS with the
///   "complete until first user authentication" protection class so that background sends work
///   while the device is locked after its first unlock.
/// - tvOS: Caches (tvOS gives apps no persistent local storage beyond it), never backed up.
/// - Linux: the directory the host passes; nothing else applies.
public struct StorageLocation: Sendable, Equatable {
    /// The platform a location is for.
    public enum Platform: Sendable, Equatable, CaseIterable {
        /// iOS and iPadOS.
        case iOS
        /// macOS.
        case macOS
        /// tvOS.
        case tvOS
        /// visionOS.
        case visionOS
        /// Linux.
        case linux

        /// The platform this code was built for.
        public static var current: Platform {
            #if os(iOS)
                return .iOS
            #elseif os(tvOS)
                return .tvOS
            #elseif os(visionOS)
                return .visionOS
            #elseif os(macOS)
                return .macOS
            #else
                return .linux
            #endif
        }
    }

    /// The system directory the SDK folder lives in.
    public enum BaseDirectory: Sendable, Equatable {
        /// `FileManager.SearchPathDirectory.applicationSupportDirectory`.
        case applicationSupport
        /// `FileManager.SearchPathDirectory.cachesDirectory`.
        case caches
        /// A directory the host chose (Linux, tests).
        case hostProvided
    }

    /// Data protection classes the SDK uses (`FileProtectionType`).
    public enum FileProtection: String, Sendable, Equatable {
        /// `FileProtectionType.completeUntilFirstUserAuthentication`: readable once the user has
        /// unlocked the device after boot, also while it is locked later.
        case completeUntilFirstUserAuthentication = "NSFileProtectionCompleteUntilFirstUserAuthentication"
    }

    /// The base directory.
    public var base: BaseDirectory
    /// Whether the SDK folder is marked excluded from backup (`isExcludedFromBackup`).
    public var excludedFromBackup: Bool
    /// The protection class set on the folder and its files; `nil` sets none.
    public var protection: FileProtection?

    /// Creates a location.
    public init(base: BaseDirectory, excludedFromBackup: Bool, protection: FileProtection?) {
        self.base = base
        self.excludedFromBackup = excludedFromBackup
        self.protection = protection
    }

    /// The SDKs' location on `platform`.
    public static func standard(for platform: Platform = .current) -> StorageLocation {
        switch platform {
        case .iOS, .visionOS:
            return StorageLocation(base: .applicationSupport, excludedFromBackup: true, protection: .completeUntilFirstUserAuthentication)
        case .macOS:
            // File protection classes have no effect for a Mac app's container; backup exclusion does (Time Machine).
            return StorageLocation(base: .applicationSupport, excludedFromBackup: true, protection: nil)
        case .tvOS:
            return StorageLocation(base: .caches, excludedFromBackup: true, protection: nil)
        case .linux:
            return StorageLocation(base: .hostProvided, excludedFromBackup: false, protection: nil)
        }
    }

    /// The system directories a location's base resolves to, as the OS names them
    /// (`FileManager.urls(for:in:)` on Apple platforms: `AppleStorageDirectory.systemDirectories()`).
    public struct SystemDirectories: Sendable, Equatable {
        /// The app's Application Support directory.
        public var applicationSupport: String
        /// The app's Caches directory.
        public var caches: String
        /// The app's bundle identifier (or, without one, its process name): on macOS, a
        /// non-sandboxed app's directories are the user's, shared by every app, and the SDK folder
        /// goes under this name (``appFolder(basePath:platform:appIdentifier:)``); `nil` for none.
        public var appIdentifier: String?

        /// Creates the pair.
        public init(applicationSupport: String, caches: String, appIdentifier: String? = nil) {
            self.applicationSupport = applicationSupport
            self.caches = caches
            self.appIdentifier = appIdentifier
        }
    }

    /// The directory this location's base resolves to: Application Support or Caches of
    /// `system`, and `hostProvided` for ``BaseDirectory/hostProvided`` or when the system
    /// directories are unknown.
    public func basePath(system: SystemDirectories?, hostProvided: String) -> String {
        switch base {
        case .applicationSupport: return system?.applicationSupport ?? hostProvided
        case .caches: return system?.caches ?? hostProvided
        case .hostProvided: return hostProvided
        }
    }

    /// The default folder of SDK `name` on `platform` (issue 27, item 5): in the standard
    /// location's base directory (Caches on tvOS, Application Support on the other Apple
    /// platforms), `<base>/Rocalytics/<name>`, and on macOS outside an app sandbox
    /// `<base>/<bundle id>/Rocalytics/<name>` (``appFolder(basePath:platform:appIdentifier:)``); on
    /// Linux `hostFolder`, the folder the package itself chooses there. Every package's default
    /// store takes its folder from here.
    public static func defaultFolder(
        _ name: String, platform: Platform = .current, system: SystemDirectories?, hostFolder: String
    ) -> String {
        let location = standard(for: platform)
        guard location.base != .hostProvided, let system else { return hostFolder }
        let base = location.basePath(system: system, hostProvided: hostFolder)
        return folder(name, under: appFolder(basePath: base, platform: platform, appIdentifier: system.appIdentifier))
    }

    /// The directory the SDK folder goes in (issue 38, item 8). On iOS, tvOS and visionOS, and for
    /// a sandboxed Mac app (its directories are inside its container, `…/Library/Containers/<id>/`),
    /// `basePath` is the app's own. A non-sandboxed Mac app's Application Support is the user's
    /// (`~/Library/Application Support`), shared with every other app using the SDKs: there the
    /// folder is `<basePath>/<appIdentifier>` (letters, digits, `-`, `_`, `.` kept; `unidentified`
    /// when nothing is left), as Apple's file system guide asks apps to name theirs by bundle
    /// identifier. A `nil` identifier (directories built by hand, without
    /// `AppleStorageDirectory.systemDirectories()`, which always names one) leaves `basePath`.
    public static func appFolder(basePath: String, platform: Platform, appIdentifier: String?) -> String {
        guard platform == .macOS, !basePath.contains("/Library/Containers/"), let appIdentifier else { return basePath }
        var safe = String(
            appIdentifier.unicodeScalars.filter {
                ($0 >= "a" && $0 <= "z") || ($0 >= "A" && $0 <= "Z") || ($0 >= "0" && $0 <= "9") || $0 == "-" || $0 == "_" || $0 == "."
            }.map(Character.init))
        if safe.isEmpty || safe.allSatisfy({ $0 == "." }) { safe = "unidentified" }
        let trimmed = basePath.hasSuffix("/") ? String(basePath.dropLast()) : basePath
        return "\(trimmed)/\(safe)"
    }

    /// The folder of SDK `name` (e.g. `score`) under `basePath`: `<base>/Rocalytics/<name>`.
    /// `name` keeps only letters, digits, `-`, `_` and `.` (never `..`), so it cannot escape.
    public static func folder(_ name: String, under basePath: String) -> String {
        var safe = String(
            name.unicodeScalars.filter {
                ($0 >= "a" && $0 <= "z") || ($0 >= "A" && $0 <= "Z") || ($0 >= "0" && $0 <= "9") || $0 == "-" || $0 == "_" || $0 == "."
            }.map(Character.init))
        if safe.isEmpty || safe.allSatisfy({ $0 == "." }) { safe = "default" }
        let trimmed = basePath.hasSuffix("/") ? String(basePath.dropLast()) : basePath
        return "\(trimmed)/Rocalytics/\(safe)"
    }

    /// Why a stored file could not be read.
    public enum ReadFailure: Sendable, Equatable {
        /// The data exists but is protected and the device has not been unlocked since boot
        /// (Darwin answers `EPERM`/`EACCES` for a protected file): try again later. A store in
        /// this state must never be treated as empty: no new identity is minted, no event is
        /// compacted away, nothing is overwritten.
        case protectedDataUnavailable
        /// Any other failure.
        case other
    }

    /// The error a store throws when it finds its data in the state of
    /// ``ReadFailure/protectedDataUnavailable``: the caller must not treat the store as empty.
    public struct ProtectedDataUnavailable: Error, Sendable, Equatable, CustomStringConvertible {
        /// Creates the error.
        public init() {}
        public var description: String { "the stored data is protected until the device is unlocked" }
    }

    /// Classifies the `errno` of a failed open or read of an existing SDK file.
    public static func readFailure(errno code: Int32, platform: Platform = .current) -> ReadFailure {
        switch platform {
        case .iOS, .visionOS, .tvOS, .macOS:
            // EPERM = 1, EACCES = 13 on every Darwin; the SDK's own 0600 files never deny their
            // owner otherwise.
            return code == 1 || code == 13 ? .protectedDataUnavailable : .other
        case .linux:
            return .other
        }
    }
}
