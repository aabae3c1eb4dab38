import Foundation
import RocalyticsClient
import RocalyticsClientTestSupport
import Testing
import TrackerCore
import TrackerCoreTestKit

/// One identity for an app and its extensions (issue 38, item 7): with
/// ``RocalyticsConfiguration/keychainAccessGroup`` the roca id and the install flag live in a
/// keychain access group both processes share. The decisions, against a fake keychain that keeps
/// each process's own items and the groups apart as the Keychain does:
///
/// - SV14: the app mints into the group; the widget, started later, reads that id and sends no
///   second `install`.
/// - SV15: an earlier unshared build's id (the app's own items) is copied into the group and kept;
///   the widget then reads it too.
/// - SV16: the app and the widget start together: the widget's add meets the app's id, written
///   after its read; it adopts that id instead of keeping its own.
/// - SV17: a group missing from the entitlements: the process's own items, as without a group.
/// - SV18: the store's queries name the group; a write in it updates in place.
@Suite struct SharedIdentityTests {
    static let group = "ABCDE12345.com.rocalytics.example.shared"
    static let app = "ABCDE12345.com.rocalytics.example.TrackerExample"
    static let widget = "ABCDE12345.com.rocalytics.example.TrackerExample.Widget"
    static let widgetUUID = "0a0b0c0d-1111-4222-8333-444455556666"

    func client(_ platform: KeychainFixturePlatform) -> ClientFixture { ClientFixture(choice: .custom(platform)) }

    func items(_ keychain: FakeKeychain, key: String, group: String) -> [String] {
        keychain.items.compactMap { item in
            guard item[KeychainKey.account] == .data(Array(key.utf8)), item[KeychainKey.accessGroup] == .string(group),
                case .data(let d)? = item[KeychainKey.valueData]
            else { return nil }
            return String(decoding: d, as: UTF8.self)
        }
    }

    @Test func SV14_theWidgetReadsTheAppsIdentityAndSendsNoSecondInstall() async {
        let keychain = FakeKeychain()
        let appProcess = KeychainFixturePlatform(
            keychain: keychain.process(defaultGroup: Self.app, accessGroups: [Self.group]), accessGroup: Self.group)
        let a = client(appProcess)
        await a.client.ready()
        #expect(a.client.rocaId == FixturePlatform.ios().uuid)
        #expect(a.paths == ["/functions/v1/identify", "/functions/v1/track"])  // identify, install
        #expect(items(keychain, key: ROCA_ID_KEY, group: Self.group) == [FixturePlatform.ios().uuid])
        #expect(items(keychain, key: INSTALL_TRACKED_KEY, group: Self.group) == ["true"])

        let widgetProcess = KeychainFixturePlatform(
            keychain: keychain.process(defaultGroup: Self.widget, accessGroups: [Self.group]), accessGroup: Self.group,
            uuid: Self.widgetUUID)
        let w = client(widgetProcess)
        await w.client.ready()
        #expect(w.client.rocaId == a.client.rocaId)
        #expect(w.paths == ["/functions/v1/identify"])  // no second install
        #expect(!keychain.items.contains { $0[KeychainKey.valueData] == .data(Array(Self.widgetUUID.utf8)) })
        #expect(w.log.codes.isEmpty)
    }

    @Test func SV15_anEarlierUnsharedIdIsCopiedIntoTheGroup() async {
        let keychain = FakeKeychain()
        // Written by an earlier build of the app without the group (its own default group).
        let before = keychain.process(defaultGroup: Self.app, accessGroups: [])
        #expect(before.add(ExpoKeychainLayout.addItem(key: ROCA_ID_KEY, value: OTHER)) == KeychainStatus.success)
        #expect(before.add(ExpoKeychainLayout.addItem(key: INSTALL_TRACKED_KEY, value: "true")) == KeychainStatus.success)

        let a = client(
            KeychainFixturePlatform(
                keychain: keychain.process(defaultGroup: Self.app, accessGroups: [Self.group]), accessGroup: Self.group))
        await a.client.ready()
        #expect(a.client.rocaId == OTHER)
        #expect(a.paths == ["/functions/v1/identify"])
        #expect(items(keychain, key: ROCA_ID_KEY, group: Self.group) == [OTHER])
        #expect(items(keychain, key: INSTALL_TRACKED_KEY, group: Self.group) == ["true"])

        // The widget never saw the app's own items; it finds the copy in the group.
        let w = client(
            KeychainFixturePlatform(
                keychain: keychain.process(defaultGroup: Self.widget, accessGroups: [Self.group]), accessGroup: Self.group,
                uuid: Self.widgetUUID))
        await w.client.ready()
        #expect(w.client.rocaId == OTHER)
        #expect(w.paths == ["/functions/v1/identify"])
    }

    @Test func SV16_twoProcessesStartingTogetherKeepTheFirstIdWritten() async {
        let keychain = FakeKeychain()
        let widgetKeychain = keychain.process(defaultGroup: Self.widget, accessGroups: [Self.group])
        // The app's id lands between the widget's read (nothing) and its add.
        widgetKeychain.insertBeforeNextAdd(
            FakeKeychain.expoItem(key: ROCA_ID_KEY, value: OTHER, accessGroup: Self.group))
        let w = client(KeychainFixturePlatform(keychain: widgetKeychain, accessGroup: Self.group, uuid: Self.widgetUUID))
        await w.client.ready()
        #expect(w.client.rocaId == OTHER)
        #expect(items(keychain, key: ROCA_ID_KEY, group: Self.group) == [OTHER])
        #expect(items(keychain, key: LEGACY_ROCA_ID_KEY, group: Self.group) == [OTHER])
        #expect(!keychain.items.contains { $0[KeychainKey.valueData] == .data(Array(Self.widgetUUID.utf8)) })
    }

    @Test func SV17_aGroupMissingFromTheEntitlementsFallsBackToTheProcesssOwnItems() async {
        let keychain = FakeKeychain()
        let platform = KeychainFixturePlatform(
            keychain: keychain.process(defaultGroup: Self.app, accessGroups: []), accessGroup: Self.group)
        let a = client(platform)
        await a.client.ready()
        #expect(a.client.rocaId == FixturePlatform.ios().uuid)
        #expect(platform.sharingUnavailable)
        #expect(items(keychain, key: ROCA_ID_KEY, group: Self.app) == [FixturePlatform.ios().uuid])
        #expect(items(keychain, key: ROCA_ID_KEY, group: Self.group).isEmpty)
        // A relaunch reads its own item: the same id, no second install.
        let again = client(
            KeychainFixturePlatform(
                keychain: keychain.process(defaultGroup: Self.app, accessGroups: []), accessGroup: Self.group,
                uuid: Self.widgetUUID))
        await again.client.ready()
        #expect(again.client.rocaId == a.client.rocaId)
        #expect(again.paths == ["/functions/v1/identify"])
    }

    @Test func SV18_theStoreNamesTheGroupAndUpdatesInPlace() throws {
        let keychain = FakeKeychain()
        let process = keychain.process(defaultGroup: Self.app, accessGroups: [Self.group])
        let store = KeychainSecureStore(backend: process, accessGroup: Self.group)
        #expect(try store.addValueIfAbsent("first", forKey: "k") == "first")
        #expect(try store.addValueIfAbsent("second", forKey: "k") == "first")
        try store.setValue("third", forKey: "k")
        #expect(try store.value(forKey: "k") == "third")
        #expect(items(keychain, key: "k", group: Self.group) == ["third"])
        #expect(process.queries.first?[KeychainKey.accessGroup] == .string(Self.group))
        #expect(KeychainKey.accessGroup == "agrp" && KeychainStatus.missingEntitlement == -34018)
        // Without a group nothing names one, and a second add replaces the value (the old behaviour).
        let own = KeychainSecureStore(backend: FakeKeychain())
        #expect(try own.addValueIfAbsent("a", forKey: "k") == "a")
        #expect(try own.addValueIfAbsent("b", forKey: "k") == "b")
        #expect(KeychainSecureStore(backend: FakeKeychain(), accessGroup: "").accessGroup == nil)
    }
}
