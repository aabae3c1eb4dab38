// The Keychain layout of `.systemDefault`, as platform-independent code: the item and query
// dictionaries with Apple's literal attribute values, and the read and write order. The
// Apple-only file (SystemPlatformApple.swift) only hands these dictionaries to `SecItem*`.
//
// Compatibility with an earlier Expo build of the same app (expo-secure-store's iOS module,
// `packages/expo-secure-store/ios/SecureStoreModule.swift` in github.com/expo/expo):
// - `query(with:options:requireAuthentication:)` builds `kSecClass: kSecClassGenericPassword`,
//   `kSecAttrService: "app"` plus `":no-auth"` / `":auth"` when `requireAuthentication` is given
//   (`"app"` alone for the legacy lookup), and `kSecAttrGeneric` and `kSecAttrAccount` both
//   `Data(key.utf8)`; no access group unless `appGroup` is set (we never set one: the default group);
// - `get` searches `app:no-auth`, then `app:auth`, then `app` (`kSecMatchLimitOne`, `kSecReturnData`);
//   we skip `app:auth` (biometry-protected: reading it would prompt);
// - `set` adds with `kSecValueData` and `kSecAttrAccessible`, updating the data on
//   `errSecDuplicateItem`. Expo's default accessibility is `WHEN_UNLOCKED`; we write
//   after-first-unlock so that a background launch can read the id.
//
// Literal values: Apple's open-source Security framework (`SecItemConstants.c`) declares
// `kSecClass` "class", `kSecClassGenericPassword` "genp", `kSecAttrService` "svce",
// `kSecAttrAccount` "acct", `kSecAttrGeneric` "gena", `kSecAttrAccessible` "pdmn",
// `kSecAttrAccessibleAfterFirstUnlock` "ck", `kSecValueData` "v_Data", `kSecMatchLimit`
// "m_Limit", `kSecMatchLimitOne` "m_LimitOne", `kSecReturnData` "r_Data",
// `kSecUseAuthenticationUI` "u_AuthUI", `kSecUseAuthenticationUIFail` "u_AuthUIF",
// `kSecAttrAccessGroup` "agrp".
// Status codes (SecBase.h): errSecSuccess 0, errSecDuplicateItem -25299, errSecItemNotFound
// -25300, errSecInteractionNotAllowed -25308, errSecMissingEntitlement -34018.
//
// Shared identity (issue 38, item 7): with a keychain access group (an app and its extensions
// list the same group in their `keychain-access-groups` entitlement, `<team id>.<group>`), the
// store keeps its items in that group, so the app and its extensions read one roca id and one
// install flag. The decisions, tested on Linux against a fake that keeps groups apart:
// - read: the shared group first; then the process's own items (an earlier, unshared build's or
//   an Expo build's), copied into the group, where an item already there wins;
// - write: into the group (updated in place when present);
// - a new identity is added only when the group has none (`addValueIfAbsent`): when another
//   process (the app and a widget launching together) added one first, its value is adopted, so
//   both send under one id. The install flag is written only once `install` succeeded, so two
//   processes starting together before either has sent it may both send it, under that one id;
// - a group missing from the entitlements (any call naming it answers errSecMissingEntitlement,
//   a search included: Apple's developer forums, thread 655285): the process's own items, as
//   without a group, and ``KeychainSecureStore/sharingUnavailable`` is set.

import Foundation
import TrackerCore

/// One value of a Keychain query or item.
public enum KeychainValue: Sendable, Equatable {
    /// A string (CFString).
    case string(String)
    /// Bytes (CFData).
    case data([UInt8])
    /// A boolean (CFBoolean).
    case bool(Bool)
}

/// A Keychain query or item: Apple's attribute keys (their literal values) to values.
public typealias KeychainQuery = [String: KeychainValue]

/// Apple's Keychain keys and values, by their literal values (see the file header).
public enum KeychainKey {
    /// `kSecClass`.
    public static let itemClass = "class"
    /// `kSecAttrService`.
    public static let service = "svce"
    /// `kSecAttrAccount`.
    public static let account = "acct"
    /// `kSecAttrGeneric`.
    public static let generic = "gena"
    /// `kSecAttrAccessible`.
    public static let accessible = "pdmn"
    /// `kSecValueData`.
    public static let valueData = "v_Data"
    /// `kSecMatchLimit`.
    public static let matchLimit = "m_Limit"
    /// `kSecReturnData`.
    public static let returnData = "r_Data"
    /// `kSecUseAuthenticationUI`.
    public static let authenticationUI = "u_AuthUI"
    /// `kSecClassGenericPassword`.
    public static let genericPassword = "genp"
    /// `kSecAttrAccessibleAfterFirstUnlock`.
    public static let afterFirstUnlock = "ck"
    /// `kSecMatchLimitOne`.
    public static let matchLimitOne = "m_LimitOne"
    /// `kSecUseAuthenticationUIFail`: fail instead of prompting.
    public static let authenticationUIFail = "u_AuthUIF"
    /// `kSecAttrAccessGroup`.
    public static let accessGroup = "agrp"
    /// The keys that control a search rather than match an attribute.
    public static let controlKeys: Set<String> = [matchLimit, returnData, authenticationUI, valueData]
}

/// Keychain result codes (`OSStatus`).
public enum KeychainStatus {
    /// `errSecSuccess`.
    public static let success: Int32 = 0
    /// `errSecDuplicateItem`.
    public static let duplicateItem: Int32 = -25299
    /// `errSecItemNotFound`.
    public static let itemNotFound: Int32 = -25300
    /// `errSecInteractionNotAllowed`: the device is locked (protected data is unavailable), or
    /// the item would need a prompt.
    public static let interactionNotAllowed: Int32 = -25308
    /// `errSecMissingEntitlement`: the access group is not in the process's entitlements.
    public static let missingEntitlement: Int32 = -34018
}

/// The `SecItem` calls the secure store makes; the Apple implementation forwards to
/// `SecItemCopyMatching`, `SecItemAdd` and `SecItemUpdate`, tests use a fake that matches items
/// as the Keychain does.
public protocol KeychainBackend: Sendable {
    /// `SecItemCopyMatching` returning data: the status and, on success, the item's data.
    func copyMatching(_ query: KeychainQuery) -> (status: Int32, data: [UInt8]?)
    /// `SecItemAdd`.
    func add(_ item: KeychainQuery) -> Int32
    /// `SecItemUpdate`.
    func update(_ query: KeychainQuery, attributes: KeychainQuery) -> Int32
}

/// Why a secure-store call failed.
///
/// A struct with a stable ``code`` rather than an enum, so that a new kind of failure never
/// breaks a `switch` in your code. `error == .locked` and `error.code == .locked` both work.
public struct RocalyticsSecureStoreError: Error, Sendable, Hashable, CustomStringConvertible {
    /// A stable kind of failure. New codes may be added in any release.
    public struct Code: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
        /// The code's kebab-case text, e.g. `locked`.
        public let rawValue: String
        /// A code from its text.
        public init(rawValue: String) { self.rawValue = rawValue }

        /// The device is locked (a background launch before the first unlock, or data
        /// protection): the client waits for protected data and tries again, minting nothing
        /// meanwhile.
        public static let locked = Code(rawValue: "locked")
        /// Any other Keychain failure (``RocalyticsSecureStoreError/status``).
        public static let keychain = Code(rawValue: "keychain")
        /// The stored item is not UTF-8 text.
        public static let undecodable = Code(rawValue: "undecodable")

        public var description: String { rawValue }
    }

    /// The kind of failure.
    public let code: Code
    /// What failed, for developers (never the stored value).
    public let message: String
    /// The Keychain's `OSStatus` for a ``Code/keychain`` failure.
    public let status: Int32?

    /// Creates an error.
    public init(code: Code, message: String, status: Int32? = nil) {
        self.code = code
        self.message = message
        self.status = status
    }

    /// The device is locked. Was the enum case of the same name.
    public static let locked = RocalyticsSecureStoreError(code: .locked, message: "the Keychain is unavailable while the device is locked")
    /// A Keychain failure with `status`. Was the enum case of the same name.
    public static func keychain(status: Int32) -> RocalyticsSecureStoreError {
        RocalyticsSecureStoreError(code: .keychain, message: "Keychain error \(status)", status: status)
    }
    /// The stored item is not UTF-8 text. Was the enum case of the same name.
    public static let undecodable = RocalyticsSecureStoreError(code: .undecodable, message: "the Keychain item is not UTF-8 text")

    public var description: String { message }

    /// Lets `catch RocalyticsSecureStoreError.locked` match as it did when this was an enum: by
    /// code for `locked` and `undecodable`, by code and status for `keychain(status:)`.
    public static func ~= (pattern: RocalyticsSecureStoreError, error: any Error) -> Bool {
        guard let e = error as? RocalyticsSecureStoreError else { return false }
        return e.code == pattern.code && e.status == pattern.status
    }
}

/// expo-secure-store's item layout, as pure functions (see the file header).
public enum ExpoKeychainLayout {
    /// Services read, in order: `app:no-auth`, then the legacy `app`. Never `app:auth`.
    public static let readServices = ["app:no-auth", "app"]
    /// The service written.
    public static let writeService = "app:no-auth"

    /// The attributes that identify the item of `key` in `service`.
    public static func itemQuery(key: String, service: String) -> KeychainQuery {
        let encoded = KeychainValue.data(Array(key.utf8))
        return [
            KeychainKey.itemClass: .string(KeychainKey.genericPassword),
            KeychainKey.service: .string(service),
            KeychainKey.generic: encoded,
            KeychainKey.account: encoded,
        ]
    }

    /// The search for the value of `key` in `service`: one item, its data, never a prompt.
    public static func readQuery(key: String, service: String) -> KeychainQuery {
        var q = itemQuery(key: key, service: service)
        q[KeychainKey.matchLimit] = .string(KeychainKey.matchLimitOne)
        q[KeychainKey.returnData] = .bool(true)
        q[KeychainKey.authenticationUI] = .string(KeychainKey.authenticationUIFail)
        return q
    }

    /// The new item holding `value` for `key`, readable after the first unlock.
    public static func addItem(key: String, value: String) -> KeychainQuery {
        var q = itemQuery(key: key, service: writeService)
        q[KeychainKey.valueData] = .data(Array(value.utf8))
        q[KeychainKey.accessible] = .string(KeychainKey.afterFirstUnlock)
        return q
    }

    /// What changes when the item exists already.
    public static func updateAttributes(value: String) -> KeychainQuery {
        [KeychainKey.valueData: .data(Array(value.utf8)), KeychainKey.accessible: .string(KeychainKey.afterFirstUnlock)]
    }
}

/// The secure store of `.systemDefault`: expo-secure-store's items in the Keychain, in a shared
/// keychain access group when one is given (see the file header).
public struct KeychainSecureStore: Sendable {
    let backend: any KeychainBackend
    /// The shared keychain access group (`<team id>.<group>`), or `nil` for the process's own.
    public let accessGroup: String?
    private let unavailable = Locked(false)

    /// A store over `backend`, in `accessGroup` when given.
    public init(backend: any KeychainBackend, accessGroup: String? = nil) {
        self.backend = backend
        self.accessGroup = accessGroup.flatMap { $0.isEmpty ? nil : $0 }
    }

    /// Whether the access group turned out to be missing from the entitlements: the store then
    /// keeps the process's own items, unshared.
    public var sharingUnavailable: Bool { unavailable.withLock { $0 } }

    private var sharedGroup: String? { sharingUnavailable ? nil : accessGroup }

    private func inGroup(_ query: KeychainQuery, _ group: String?) -> KeychainQuery {
        guard let group else { return query }
        var q = query
        q[KeychainKey.accessGroup] = .string(group)
        return q
    }

    /// Reads `key`: in the shared group first (when there is one), then `app:no-auth` and `app`
    /// among the process's own items, copied into the group (an item already there wins).
    /// `nil` when none holds it.
    /// - Throws: ``RocalyticsSecureStoreError``; `.locked` while the device is locked.
    public func value(forKey key: String) throws -> String? {
        if let group = sharedGroup, let shared = try read(key: key, service: ExpoKeychainLayout.writeService, group: group) {
            return shared
        }
        for service in ExpoKeychainLayout.readServices {
            guard let own = try read(key: key, service: service, group: nil) else { continue }
            guard sharedGroup != nil else { return own }
            // An unshared earlier build's value: into the group, unless another process got there first.
            return try addValueIfAbsent(own, forKey: key)
        }
        return nil
    }

    private func read(key: String, service: String, group: String?) throws -> String? {
        let (status, data) = backend.copyMatching(inGroup(ExpoKeychainLayout.readQuery(key: key, service: service), group))
        switch status {
        case KeychainStatus.success:
            guard let data else { return nil }
            guard let text = String(bytes: data, encoding: .utf8) else { throw RocalyticsSecureStoreError.undecodable }
            return text
        case KeychainStatus.itemNotFound: return nil
        case KeychainStatus.missingEntitlement where group != nil:
            // The group is not in the entitlements: unshared from now on, the process's own items.
            unavailable.withLock { $0 = true }
            return nil
        case KeychainStatus.interactionNotAllowed: throw RocalyticsSecureStoreError.locked
        default: throw RocalyticsSecureStoreError.keychain(status: status)
        }
    }

    /// Writes `key` in `app:no-auth` (added, or its data updated), in the shared group when there
    /// is one.
    /// - Throws: ``RocalyticsSecureStoreError``; `.locked` while the device is locked.
    public func setValue(_ value: String, forKey key: String) throws {
        var status = add(value, forKey: key)
        if status == KeychainStatus.duplicateItem {
            status = backend.update(
                inGroup(ExpoKeychainLayout.itemQuery(key: key, service: ExpoKeychainLayout.writeService), sharedGroup),
                attributes: ExpoKeychainLayout.updateAttributes(value: value))
        }
        try check(status)
    }

    /// Adds `value` for `key` unless the store holds one already, and returns the value stored:
    /// `value`, or the one another process (sharing the group) added first. Without a shared
    /// group the write replaces any value, as ``setValue(_:forKey:)`` does.
    /// - Throws: ``RocalyticsSecureStoreError``; `.locked` while the device is locked.
    public func addValueIfAbsent(_ value: String, forKey key: String) throws -> String {
        guard sharedGroup != nil else {
            try setValue(value, forKey: key)
            return value
        }
        let status = add(value, forKey: key)
        if status == KeychainStatus.duplicateItem, let group = sharedGroup,
            let existing = try read(key: key, service: ExpoKeychainLayout.writeService, group: group), !existing.isEmpty
        {
            return existing
        }
        if status == KeychainStatus.duplicateItem {
            try setValue(value, forKey: key)  // an empty item: replace it
            return value
        }
        try check(status)
        return value
    }

    /// `SecItemAdd` of the item, in the shared group; a group missing from the entitlements
    /// turns the store unshared and adds the process's own item instead.
    private func add(_ value: String, forKey key: String) -> Int32 {
        let item = ExpoKeychainLayout.addItem(key: key, value: value)
        guard let group = sharedGroup else { return backend.add(item) }
        let status = backend.add(inGroup(item, group))
        guard status == KeychainStatus.missingEntitlement else { return status }
        unavailable.withLock { $0 = true }
        return backend.add(item)
    }

    private func check(_ status: Int32) throws {
        switch status {
        case KeychainStatus.success: return
        case KeychainStatus.interactionNotAllowed: throw RocalyticsSecureStoreError.locked
        default: throw RocalyticsSecureStoreError.keychain(status: status)
        }
    }
}
