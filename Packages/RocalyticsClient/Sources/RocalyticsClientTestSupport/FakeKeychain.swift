import Foundation
import RocalyticsClient
import TrackerCore

/// A Keychain double that matches items the way `SecItemCopyMatching` does for generic
/// passwords: every attribute of the query (search-control keys aside) must equal the item's;
/// `SecItemAdd` refuses a second item with the same class, service, account and access group.
/// While ``locked`` it answers `errSecInteractionNotAllowed`, as a locked device does.
///
/// Access groups (issue 38, item 7): a keychain from ``init(items:)`` is one process with no
/// access group entitlement (an item added with `agrp` is refused with `errSecMissingEntitlement`).
/// ``process(defaultGroup:accessGroups:)`` gives processes sharing one keychain: each writes its
/// items without `agrp` into its `defaultGroup`, may name only its groups, and finds items only
/// there (a search without `agrp` covers all of them). Naming a group it lacks answers
/// `errSecMissingEntitlement` to every call, searches included, as a real device does (reported
/// in Apple's developer forums, thread 655285).
public final class FakeKeychain: KeychainBackend, @unchecked Sendable {
    private struct State {
        var items: [KeychainQuery] = []
        var queries: [KeychainQuery] = []
        var locked = false
        var beforeNextAdd: [KeychainQuery] = []
    }

    private let state: Locked<State>
    private let defaultGroup: String?
    private let groups: Set<String>

    /// A keychain holding `items`.
    public init(items: [KeychainQuery] = []) {
        state = Locked(State(items: items))
        defaultGroup = nil
        groups = []
    }

    private init(sharing state: Locked<State>, defaultGroup: String, groups: Set<String>) {
        self.state = state
        self.defaultGroup = defaultGroup
        self.groups = groups.union([defaultGroup])
    }

    /// A process over the same items: its own items go in `defaultGroup` (its application
    /// identifier), and it may use `accessGroups` (its `keychain-access-groups` entitlement).
    public func process(defaultGroup: String, accessGroups: Set<String>) -> FakeKeychain {
        FakeKeychain(sharing: state, defaultGroup: defaultGroup, groups: accessGroups)
    }

    /// Another process adds `item` just before this keychain's next `SecItemAdd` (a race lost).
    public func insertBeforeNextAdd(_ item: KeychainQuery) { state.withLock { $0.beforeNextAdd.append(item) } }

    /// Whether the device is locked.
    public var locked: Bool {
        get { state.withLock { $0.locked } }
        set { state.withLock { $0.locked = newValue } }
    }

    /// The items stored.
    public var items: [KeychainQuery] { state.withLock { $0.items } }
    /// Every `SecItemCopyMatching` query, in order.
    public var queries: [KeychainQuery] { state.withLock { $0.queries } }
    /// The services searched, in order.
    public var searchedServices: [String] {
        queries.compactMap { if case .string(let s)? = $0[KeychainKey.service] { s } else { nil } }
    }

    /// The item expo-secure-store's `setItemAsync(key, value)` writes (service `app:no-auth`,
    /// its default `WHEN_UNLOCKED` accessibility), or its pre-split layout (service `app`); in
    /// `accessGroup` when given.
    public static func expoItem(key: String, value: String, service: String = "app:no-auth", accessGroup: String? = nil)
        -> KeychainQuery
    {
        var item: KeychainQuery = [
            KeychainKey.itemClass: .string(KeychainKey.genericPassword), KeychainKey.service: .string(service),
            KeychainKey.generic: .data(Array(key.utf8)), KeychainKey.account: .data(Array(key.utf8)),
            KeychainKey.valueData: .data(Array(value.utf8)), KeychainKey.accessible: .string("ak"),
        ]
        if let accessGroup { item[KeychainKey.accessGroup] = .string(accessGroup) }
        return item
    }

    private func group(of query: KeychainQuery) -> String? {
        if case .string(let g)? = query[KeychainKey.accessGroup] { return g }
        return nil
    }

    private func visible(_ item: KeychainQuery) -> Bool {
        guard defaultGroup != nil else { return true }
        guard let g = group(of: item) else { return true }
        return groups.contains(g)
    }

    private func matches(_ item: KeychainQuery, _ query: KeychainQuery) -> Bool {
        visible(item) && query.allSatisfy { k, v in KeychainKey.controlKeys.contains(k) || item[k] == v }
    }

    /// Whether `query` names an access group this process is not entitled to (only processes
    /// from ``process(defaultGroup:accessGroups:)`` have groups).
    private func unentitled(_ query: KeychainQuery) -> Bool {
        guard let g = group(of: query) else { return false }
        return !groups.contains(g)
    }

    public func copyMatching(_ query: KeychainQuery) -> (status: Int32, data: [UInt8]?) {
        state.withLock { s in
            s.queries.append(query)
            if s.locked { return (KeychainStatus.interactionNotAllowed, nil) }
            if unentitled(query) { return (KeychainStatus.missingEntitlement, nil) }
            guard let item = s.items.first(where: { matches($0, query) }) else { return (KeychainStatus.itemNotFound, nil) }
            if case .data(let d)? = item[KeychainKey.valueData] { return (KeychainStatus.success, d) }
            return (KeychainStatus.success, nil)
        }
    }

    public func add(_ item: KeychainQuery) -> Int32 {
        state.withLock { s in
            if s.locked { return KeychainStatus.interactionNotAllowed }
            s.items += s.beforeNextAdd
            s.beforeNextAdd = []
            var item = item
            if let g = group(of: item) {
                guard groups.contains(g) else { return KeychainStatus.missingEntitlement }
            } else if let defaultGroup {
                item[KeychainKey.accessGroup] = .string(defaultGroup)
            }
            let primary = [KeychainKey.itemClass, KeychainKey.service, KeychainKey.account, KeychainKey.accessGroup]
            if s.items.contains(where: { existing in primary.allSatisfy { existing[$0] == item[$0] } }) {
                return KeychainStatus.duplicateItem
            }
            s.items.append(item)
            return KeychainStatus.success
        }
    }

    public func update(_ query: KeychainQuery, attributes: KeychainQuery) -> Int32 {
        state.withLock { s in
            if s.locked { return KeychainStatus.interactionNotAllowed }
            if unentitled(query) { return KeychainStatus.missingEntitlement }
            var found = false
            for i in s.items.indices where matches(s.items[i], query) {
                found = true
                for (k, v) in attributes { s.items[i][k] = v }
            }
            return found ? KeychainStatus.success : KeychainStatus.itemNotFound
        }
    }
}

/// The fixture's iOS device with ``KeychainSecureStore`` over a ``FakeKeychain`` as its secure
/// store, and a protected-data signal the test sends.
public final class KeychainFixturePlatform: RocalyticsPlatform, @unchecked Sendable {
    /// The keychain.
    public let keychain: FakeKeychain
    let facts: FixturePlatform
    let store: KeychainSecureStore
    private let waiters = Locked<[CheckedContinuation<Bool, Never>]>([])

    /// The fixture's iOS facts over `keychain`, its items in `accessGroup` when given; `uuid`
    /// replaces the fixture's new roca id (two processes mint different ids).
    public init(keychain: FakeKeychain, accessGroup: String? = nil, uuid: String? = nil) {
        self.keychain = keychain
        var facts = FixturePlatform.ios()
        if let uuid { facts.uuid = uuid }
        self.facts = facts
        store = KeychainSecureStore(backend: keychain, accessGroup: accessGroup)
    }

    /// Whether the store found its access group missing from the entitlements.
    public var sharingUnavailable: Bool { store.sharingUnavailable }

    /// Number of start-ups waiting for protected data.
    public var waitingForProtectedData: Int { waiters.withLock { $0.count } }

    /// Protected data became available (`protectedDataDidBecomeAvailable`).
    public func protectedDataBecameAvailable() {
        let all = waiters.withLock { w -> [CheckedContinuation<Bool, Never>] in
            defer { w = [] }
            return w
        }
        for c in all { c.resume(returning: true) }
    }

    public func waitForProtectedData() async -> Bool {
        await withCheckedContinuation { c in waiters.withLock { $0.append(c) } }
    }

    public func secureValue(forKey key: String) async throws -> String? { try store.value(forKey: key) }
    public func setSecureValue(_ value: String, forKey key: String) async throws { try store.setValue(value, forKey: key) }
    public func addSecureValueIfAbsent(_ value: String, forKey key: String) async throws -> String {
        try store.addValueIfAbsent(value, forKey: key)
    }
    public var platformName: String { facts.platformName }
    public var platformVersion: RocalyticsPlatformVersion { facts.platformVersion }
    public var applicationId: String? { facts.applicationId }
    public var applicationName: String? { facts.applicationName }
    public var applicationVersion: String? { facts.applicationVersion }
    public var buildNumber: String? { facts.buildNumber }
    public var deviceBrand: String? { facts.deviceBrand }
    public var deviceModelName: String? { facts.deviceModelName }
    public var deviceManufacturer: String? { facts.deviceManufacturer }
    public var osName: String? { facts.osName }
    public var osVersion: String? { facts.osVersion }
    public var screen: RocalyticsScreen { facts.screen }
    public var localeIdentifier: String { facts.localeIdentifier }
    public var timeZoneIdentifier: String { facts.timeZoneIdentifier }
    public func identifierForVendor() async -> String? { facts.idfv }
    public func androidId() -> String? { nil }
    public func installationTime() async throws -> Date { try await facts.installationTime() }
    public func ipAddress() async throws -> String? { try await facts.ipAddress() }
    public func makeUUID() -> String { facts.uuid }
}
