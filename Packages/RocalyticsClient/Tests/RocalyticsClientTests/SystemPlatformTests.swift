import Foundation
import RocalyticsClient
import RocalyticsClientExamples
import RocalyticsClientTestSupport
import Testing
import TrackerCore
import TrackerCoreTestKit

/// `.systemDefault` on Apple platforms, in its platform-independent parts (issue 18): the
/// Keychain layout of expo-secure-store with Apple's literal attribute values, the read order
/// against a fake that matches items as `SecItem` does, the locked-device start-up, and the
/// device facts.
///
/// New scenarios:
/// - SV1: item and query dictionaries use Apple's literal keys and values.
/// - SV2: a roca id written by an Expo build (`app:no-auth`) is found: no new id, no second install.
/// - SV3: a legacy `app` item is found and kept.
/// - SV4: `app:auth` is never searched (it would prompt for biometry).
/// - SV5: a locked device at a background launch: start-up waits, mints nothing, and starts once protected data is available.
/// - SV6: what we write, an Expo build's own lookup (rollback) finds; a second write updates in place.
/// - SV7: other Keychain failures keep the client inert without minting.
/// - SV8: model names, BCP 47 locale, idfv, bundle names, OS name, time zone.
/// - SV9: IP address: first IPv4 of en0/en1 from getifaddrs; screen of the most active scene.
/// - SV10: install time from a directory's creation date; a value read again once after the unlock.
/// - SV11: on Linux `.systemDefault` stays inert with its diagnostic.
/// - SV12: the README's one-line Apple setup (`RocalyticsClient()`) compiles and runs (inert on Linux).
@Suite struct SystemPlatformTests {
    func bytes(_ s: String) -> KeychainValue { .data(Array(s.utf8)) }

    func harness(_ keychain: FakeKeychain) -> (ClientFixture, KeychainFixturePlatform) {
        let p = KeychainFixturePlatform(keychain: keychain)
        return (ClientFixture(choice: .custom(p)), p)
    }

    @Test func SV1_literalAttributeValues() {
        #expect(
            ExpoKeychainLayout.itemQuery(key: "rocalytics-roca-id", service: "app:no-auth") == [
                "class": .string("genp"), "svce": .string("app:no-auth"),
                "acct": bytes("rocalytics-roca-id"), "gena": bytes("rocalytics-roca-id"),
            ])
        let read = ExpoKeychainLayout.readQuery(key: "k", service: "app")
        #expect(read["m_Limit"] == .string("m_LimitOne"))
        #expect(read["r_Data"] == .bool(true))
        #expect(read["u_AuthUI"] == .string("u_AuthUIF"))
        #expect(read["svce"] == .string("app"))
        let add = ExpoKeychainLayout.addItem(key: "k", value: "v")
        #expect(add["svce"] == .string("app:no-auth"))
        #expect(add["v_Data"] == bytes("v"))
        #expect(add["pdmn"] == .string("ck"))
        #expect(add["agrp"] == nil)  // the default access group
        #expect(ExpoKeychainLayout.readServices == ["app:no-auth", "app"])
        #expect(KeychainStatus.interactionNotAllowed == -25308 && KeychainStatus.itemNotFound == -25300)
    }

    @Test func SV2_anIdWrittenByAnExpoBuildIsFound() async {
        let keychain = FakeKeychain(items: [
            FakeKeychain.expoItem(key: ROCA_ID_KEY, value: OTHER),
            FakeKeychain.expoItem(key: INSTALL_TRACKED_KEY, value: "true"),
        ])
        let (h, _) = harness(keychain)
        await h.client.ready()
        #expect(h.client.rocaId == OTHER)
        #expect(h.paths == ["/functions/v1/identify"])  // no second install
        #expect(keychain.items.count == 2)  // nothing minted or written
        #expect(h.log.codes.isEmpty)
    }

    @Test func SV3_aLegacyAppItemIsFound() async {
        let keychain = FakeKeychain(items: [
            FakeKeychain.expoItem(key: ROCA_ID_KEY, value: OTHER, service: "app"),
            FakeKeychain.expoItem(key: INSTALL_TRACKED_KEY, value: "true", service: "app"),
        ])
        let (h, _) = harness(keychain)
        await h.client.ready()
        #expect(h.client.rocaId == OTHER)
        #expect(h.paths == ["/functions/v1/identify"])
        #expect(Array(keychain.searchedServices.prefix(2)) == ["app:no-auth", "app"])
    }

    @Test func SV4_appAuthIsNeverSearched() async {
        let keychain = FakeKeychain(items: [FakeKeychain.expoItem(key: ROCA_ID_KEY, value: OTHER, service: "app:auth")])
        let (h, _) = harness(keychain)
        await h.client.ready()
        #expect(!keychain.searchedServices.isEmpty)
        #expect(!keychain.searchedServices.contains("app:auth"))
        #expect(keychain.queries.allSatisfy { $0["u_AuthUI"] == .string("u_AuthUIF") })  // never a prompt
    }

    @Test func SV5_aLockedDeviceRetriesAndNeverMints() async {
        let keychain = FakeKeychain(items: [
            FakeKeychain.expoItem(key: ROCA_ID_KEY, value: OTHER),
            FakeKeychain.expoItem(key: INSTALL_TRACKED_KEY, value: "true"),
        ])
        keychain.locked = true
        let (h, platform) = harness(keychain)
        let readyTask = Task {
            await h.client.ready()
            return h.client.rocaId
        }
        await h.clock.settle()
        #expect(platform.waitingForProtectedData == 1)
        #expect(h.client.rocaId == nil && !h.client.isInert)
        #expect(keychain.items.count == 2)  // nothing minted
        #expect(h.requests.isEmpty)
        #expect(h.log.codes == ["identity-locked"])

        // Woken while still locked: waits again, reports once.
        platform.protectedDataBecameAvailable()
        await h.clock.settle()
        #expect(platform.waitingForProtectedData == 1)
        #expect(h.log.codes == ["identity-locked"])

        keychain.locked = false
        platform.protectedDataBecameAvailable()
        #expect(await readyTask.value == OTHER)
        #expect(h.paths == ["/functions/v1/identify"])
        #expect(keychain.items.count == 2)
    }

    @Test func SV6_whatWeWriteAnExpoRollbackReads() throws {
        let keychain = FakeKeychain()
        let store = KeychainSecureStore(backend: keychain)
        try store.setValue(ID, forKey: ROCA_ID_KEY)
        // expo-secure-store's own lookup: service app:no-auth, account and generic the key's bytes.
        let expoQuery: KeychainQuery = [
            "class": .string("genp"), "svce": .string("app:no-auth"), "gena": bytes(ROCA_ID_KEY), "acct": bytes(ROCA_ID_KEY),
            "m_Limit": .string("m_LimitOne"), "r_Data": .bool(true),
        ]
        #expect(keychain.copyMatching(expoQuery).data == Array(ID.utf8))
        try store.setValue(OTHER, forKey: ROCA_ID_KEY)
        #expect(keychain.items.count == 1)
        #expect(try store.value(forKey: ROCA_ID_KEY) == OTHER)
        // An item the earlier build wrote with WHEN_UNLOCKED becomes readable after the first unlock.
        let k2 = FakeKeychain(items: [FakeKeychain.expoItem(key: "x", value: "1")])
        try KeychainSecureStore(backend: k2).setValue("2", forKey: "x")
        #expect(k2.items.first?["pdmn"] == .string("ck"))
    }

    @Test func SV7_otherKeychainFailuresNeverMint() async throws {
        final class Failing: KeychainBackend {
            func copyMatching(_ query: KeychainQuery) -> (status: Int32, data: [UInt8]?) { (-34018, nil) }  // errSecMissingEntitlement
            func add(_ item: KeychainQuery) -> Int32 { 0 }
            func update(_ query: KeychainQuery, attributes: KeychainQuery) -> Int32 { 0 }
        }
        #expect(throws: RocalyticsSecureStoreError.keychain(status: -34018)) {
            try KeychainSecureStore(backend: Failing()).value(forKey: "k")
        }
        let notText = FakeKeychain(items: [
            [
                "class": .string("genp"), "svce": .string("app:no-auth"), "acct": bytes("k"), "gena": bytes("k"),
                "v_Data": .data([0xFF, 0xFE]),
            ]
        ])
        #expect(throws: RocalyticsSecureStoreError.undecodable) { try KeychainSecureStore(backend: notText).value(forKey: "k") }
        let lockedWrite = FakeKeychain()
        lockedWrite.locked = true
        #expect(throws: RocalyticsSecureStoreError.locked) { try KeychainSecureStore(backend: lockedWrite).setValue("v", forKey: "k") }
    }

    @Test func SV8_deviceFacts() {
        #expect(AppleDeviceFacts.modelName(forHardwareId: "iPhone16,1") == "iPhone 15 Pro")
        #expect(AppleDeviceFacts.modelName(forHardwareId: "iPhone17,3") == "iPhone 16")
        #expect(AppleDeviceFacts.modelName(forHardwareId: "iPad13,18") == "iPad (10th generation)")
        #expect(AppleDeviceFacts.modelName(forHardwareId: "iPhone99,9") == "iPhone99,9")
        #expect(AppleDeviceFacts.modelName(forHardwareId: "arm64") == "Simulator iOS")
        #expect(AppleDeviceFacts.modelName(forHardwareId: "x86_64", tvOS: true) == "Simulator tvOS")
        #expect(AppleDeviceFacts.hardwareId(fromMachine: Array("iPhone16,1".utf8CString) + [0, 0]) == "iPhone16,1")

        let cases: [(String, String)] = [
            ("en_US", "en-US"), ("en-US", "en-US"), ("fr_FR@rg=gbzzzz", "fr-FR"), ("zh-Hans_CN", "zh-Hans-CN"),
            ("de-DE-u-co-phonebk", "de-DE"), ("en_US@calendar=buddhist", "en-US"), ("ja-JP-u-ca-japanese-nu-latn", "ja-JP"),
            ("EN_gb", "en-GB"), ("es_419", "es-419"), ("pt", "pt"), ("", "en-US"), ("en_US_POSIX", "en-US"),
            ("sr-latn-RS", "sr-Latn-RS"),
        ]
        for (raw, tag) in cases { #expect(AppleDeviceFacts.bcp47(fromLocaleIdentifier: raw) == tag, "\(raw)") }

        #expect(AppleDeviceFacts.idfv(UUID(uuidString: IDFV)) == IDFV)
        #expect(AppleDeviceFacts.idfv(nil) == nil)
        #expect(AppleDeviceFacts.applicationName(info: ["CFBundleDisplayName": "Example", "CFBundleName": "Ex"]) == "Example")
        #expect(AppleDeviceFacts.applicationName(info: ["CFBundleDisplayName": "", "CFBundleName": "Ex"]) == "Ex")
        #expect(AppleDeviceFacts.applicationName(info: [:]) == nil)
        #expect(AppleDeviceFacts.infoString(["CFBundleVersion": "412"], "CFBundleVersion") == "412")
        #expect(AppleDeviceFacts.infoString(["CFBundleVersion": 412], "CFBundleVersion") == nil)
        #expect(AppleDeviceFacts.osName(systemName: "iPadOS") == "iPadOS")
        #expect(AppleDeviceFacts.osName(systemName: "") == "iOS")
        #expect(AppleDeviceFacts.timeZone("Europe/Paris") == "Europe/Paris")
        #expect(AppleDeviceFacts.timeZone("") == "UTC")
    }

    @Test func SV9_ipAddressAndScreen() throws {
        typealias I = AppleDeviceFacts.InterfaceAddress
        #expect(
            AppleDeviceFacts.ipAddress(from: [
                I(name: "lo0", ipv4: "127.0.0.1"), I(name: "pdp_ip0", ipv4: "10.1.2.3"),
                I(name: "en0", ipv4: "192.168.1.20"), I(name: "en1", ipv4: "192.168.2.9"),
            ]) == "192.168.1.20")
        #expect(AppleDeviceFacts.ipAddress(from: [I(name: "en1", ipv4: "192.168.2.9")]) == "192.168.2.9")
        #expect(AppleDeviceFacts.ipAddress(from: [I(name: "utun0", ipv4: "10.0.0.1")]) == "0.0.0.0")
        // The real getifaddrs walk: this machine's loopback is listed as an IPv4 address.
        let mine = try AppleDeviceFacts.interfaceAddresses()
        #expect(mine.contains { $0.name == "lo" && $0.ipv4 == "127.0.0.1" })

        typealias S = AppleDeviceFacts.SceneScreen
        let fallback = RocalyticsScreen(width: 1, height: 2, scale: 1)
        let phone = RocalyticsScreen(width: 393, height: 852, scale: 3)
        let ext = RocalyticsScreen(width: 1920, height: 1080, scale: 1)
        #expect(AppleDeviceFacts.screen(of: [], fallback: fallback) == fallback)
        #expect(AppleDeviceFacts.screen(of: [S(activation: 2, screen: ext), S(activation: 0, screen: phone)], fallback: fallback) == phone)
        #expect(AppleDeviceFacts.screen(of: [S(activation: 1, screen: phone), S(activation: 1, screen: ext)], fallback: fallback) == phone)
    }

    @Test func SV10_installTimeAndOneRetry() async throws {
        let dir = URL(fileURLWithPath: NSTemporaryDirectory()).appendingPathComponent("ap10-\(IDs.uuidV4())")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        if let created = try FileManager.default.attributesOfItem(atPath: dir.path)[.creationDate] as? Date {
            #expect(try AppleDeviceFacts.installationTime(documentsDirectory: dir) == created)
        } else {
            // A file system without birth times: reported, never invented.
            #expect(throws: SystemFactError.self) { try AppleDeviceFacts.installationTime(documentsDirectory: dir) }
        }
        #expect(throws: SystemFactError.self) { try AppleDeviceFacts.installationTime(documentsDirectory: nil) }
        #expect(throws: (any Error).self) {
            try AppleDeviceFacts.installationTime(documentsDirectory: dir.appendingPathComponent("missing"))
        }

        let reads = Locked(0)
        let later = await readRetryingOnce(
            {
                reads.withLock { r -> String? in
                    r += 1
                    return r == 1 ? nil : IDFV
                }
            }, waitForRetry: { true })
        #expect(later == IDFV && reads.value == 2)
        let never = await readRetryingOnce({ () -> String? in nil }, waitForRetry: { false })
        #expect(never == nil)
    }

    @Test func SV11_systemDefaultIsInertOnLinux() async {
        #if os(Linux)
            let log = DiagnosticLog()
            let client = RocalyticsClient(
                configuration: .init(platform: .systemDefault, transport: RecordingTransport.rocalytics(), onDiagnostic: log.handler))
            await client.ready()
            #expect(client.isInert)
            #expect(log.all.first?.message.contains("Linux") == true)
        #endif
    }
}

/// SV12: the README's one-line Apple setup compiles here; it is `RocalyticsClient()` with the
/// default options, which C26 runs (inert on Linux, one diagnostic on standard error). Not run
/// here: it would print while OutputTests captures the process's standard error.
@Suite struct AppleSetupExampleTests {
    @Test func SV12_theOneLineSetupIsTheDefaultClient() {
        let setup: () -> RocalyticsClient = startRocalyticsOnApplePlatforms
        #expect(type(of: setup) == (() -> RocalyticsClient).self)
        #expect(RocalyticsConfiguration().platform.isSystemDefault)
    }
}

extension RocalyticsPlatformChoice {
    var isSystemDefault: Bool { if case .systemDefault = self { true } else { false } }
}
