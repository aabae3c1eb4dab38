// Apple-only: `.systemDefault` on iOS, iPadOS, tvOS and visionOS. This file only calls the OS;
// every decision (Keychain layout and read order, names, formats, fallbacks) is in Keychain.swift
// and SystemFacts.swift, tested on Linux.

#if canImport(UIKit) && canImport(Security) && !os(watchOS)
    import Foundation
    import Security
    import UIKit

    /// `SecItem*` over the portable query dictionaries (their keys are the SDK constants' values).
    struct SecItemBackend: KeychainBackend {
        static func dictionary(_ query: KeychainQuery) -> CFDictionary {
            var d: [String: Any] = [:]
            for (k, v) in query {
                switch v {
                case .string(let s): d[k] = s
                case .data(let b): d[k] = Data(b)
                case .bool(let b): d[k] = b
                }
            }
            return d as CFDictionary
        }

        func copyMatching(_ query: KeychainQuery) -> (status: Int32, data: [UInt8]?) {
            var result: CFTypeRef?
            let status = SecItemCopyMatching(Self.dictionary(query), &result)
            return (status, (result as? Data).map { Array($0) })
        }

        func add(_ item: KeychainQuery) -> Int32 { SecItemAdd(Self.dictionary(item), nil) }

        func update(_ query: KeychainQuery, attributes: KeychainQuery) -> Int32 {
            SecItemUpdate(Self.dictionary(query), Self.dictionary(attributes))
        }

        /// Whether the SDK's constants have the literal values Keychain.swift uses (a Mac test).
        static var sdkConstantsMatch: Bool {
            (kSecClass as String) == KeychainKey.itemClass && (kSecAttrService as String) == KeychainKey.service
                && (kSecAttrAccount as String) == KeychainKey.account && (kSecAttrGeneric as String) == KeychainKey.generic
                && (kSecAttrAccessible as String) == KeychainKey.accessible && (kSecValueData as String) == KeychainKey.valueData
                && (kSecMatchLimit as String) == KeychainKey.matchLimit && (kSecReturnData as String) == KeychainKey.returnData
                && (kSecClassGenericPassword as String) == KeychainKey.genericPassword
                && (kSecAttrAccessibleAfterFirstUnlock as String) == KeychainKey.afterFirstUnlock
                && (kSecMatchLimitOne as String) == KeychainKey.matchLimitOne
                && errSecItemNotFound == KeychainStatus.itemNotFound && errSecDuplicateItem == KeychainStatus.duplicateItem
                && errSecInteractionNotAllowed == KeychainStatus.interactionNotAllowed
                && (kSecAttrAccessGroup as String) == KeychainKey.accessGroup
                && errSecMissingEntitlement == KeychainStatus.missingEntitlement
        }
    }

    /// The facts UIKit gives only on the main actor, read once.
    struct UIKitSnapshot: Sendable {
        var systemName: String
        var systemVersion: String
        var screen: RocalyticsScreen
    }

    /// The application object without naming `UIApplication.shared`, which is unavailable to code
    /// that may be linked into an app extension (Xcode compiles packages extension-safe, so naming it
    /// fails every build). `nil` inside an app extension, which has no application object.
    @MainActor private func applicationIfAny() -> UIApplication? {
        guard !Bundle.main.bundlePath.hasSuffix(".appex") else { return nil }
        // +[UIApplication sharedApplication] through key-value coding on the class object.
        return (UIApplication.self as AnyObject).value(forKey: "sharedApplication") as? UIApplication
    }

    /// Signals waiters of ``ProtectedDataSignal`` from the OS notifications (observed from the first
    /// ``AppleSystemPlatform/make()`` on).
    private let protectedData = ProtectedDataSignal()
    @MainActor private var protectedDataObserved = false

    /// Registers the observers that signal ``protectedData``, once. On the main actor: UIApplication's
    /// notification names are isolated to it (an error under Swift 6 with recent SDKs elsewhere).
    @MainActor private func observeProtectedData() {
        guard !protectedDataObserved else { return }
        protectedDataObserved = true
        let signal = protectedData
        for name in [UIApplication.protectedDataDidBecomeAvailableNotification, UIApplication.didBecomeActiveNotification] {
            _ = NotificationCenter.default.addObserver(forName: name, object: nil, queue: nil) { _ in signal.signal() }
        }
    }

    struct AppleSystemPlatform: RocalyticsPlatform {
        let store: KeychainSecureStore
        let info: [String: String]
        let ui: UIKitSnapshot
        let hardwareId: String

        static func make(keychainAccessGroup: String? = nil) async -> AppleSystemPlatform {
            let ui = await MainActor.run { () -> UIKitSnapshot in
                observeProtectedData()  // from now on
                let device = UIDevice.current
                return UIKitSnapshot(systemName: device.systemName, systemVersion: device.systemVersion, screen: mainScreen())
            }
            var raw: [String: String] = [:]
            let plist = Bundle.main.infoDictionary ?? [:]
            for key in ["CFBundleIdentifier", "CFBundleShortVersionString", "CFBundleVersion"] {
                raw[key] = AppleDeviceFacts.infoString(plist, key)
            }
            raw["name"] = AppleDeviceFacts.applicationName(info: plist)
            var u = utsname()
            uname(&u)
            let machine = withUnsafeBytes(of: &u.machine) { Array($0.bindMemory(to: CChar.self)) }
            return AppleSystemPlatform(
                store: KeychainSecureStore(backend: SecItemBackend(), accessGroup: keychainAccessGroup), info: raw, ui: ui,
                hardwareId: AppleDeviceFacts.hardwareId(fromMachine: machine))
        }

        @MainActor private static func mainScreen() -> RocalyticsScreen {
            #if os(iOS) || os(tvOS)
                let scenes = (applicationIfAny()?.connectedScenes ?? []).compactMap { $0 as? UIWindowScene }.map { scene in
                    let rank: Int
                    switch scene.activationState {
                    case .foregroundActive: rank = 0
                    case .foregroundInactive: rank = 1
                    case .background: rank = 2
                    default: rank = 3
                    }
                    let b = scene.screen.bounds
                    return AppleDeviceFacts.SceneScreen(
                        activation: rank,
                        screen: RocalyticsScreen(
                            width: Double(b.width), height: Double(b.height), scale: Double(scene.screen.scale)))
                }
                let m = UIScreen.main
                return AppleDeviceFacts.screen(
                    of: scenes,
                    fallback: RocalyticsScreen(
                        width: Double(m.bounds.width), height: Double(m.bounds.height), scale: Double(m.scale)))
            #else
                return RocalyticsScreen(width: 0, height: 0, scale: 1)
            #endif
        }

        func secureValue(forKey key: String) async throws -> String? { try store.value(forKey: key) }
        func setSecureValue(_ value: String, forKey key: String) async throws { try store.setValue(value, forKey: key) }
        func addSecureValueIfAbsent(_ value: String, forKey key: String) async throws -> String {
            try store.addValueIfAbsent(value, forKey: key)
        }
        func waitForProtectedData() async -> Bool { await protectedData.wait() }

        var platformName: String { "ios" }
        var platformVersion: RocalyticsPlatformVersion { .string(ui.systemVersion) }
        var applicationId: String? { info["CFBundleIdentifier"] }
        var applicationName: String? { info["name"] }
        var applicationVersion: String? { info["CFBundleShortVersionString"] }
        var buildNumber: String? { info["CFBundleVersion"] }
        var deviceBrand: String? { "Apple" }
        var deviceModelName: String? {
            #if os(tvOS)
                AppleDeviceFacts.modelName(forHardwareId: hardwareId, tvOS: true)
            #else
                AppleDeviceFacts.modelName(forHardwareId: hardwareId)
            #endif
        }
        var deviceManufacturer: String? { "Apple" }
        var osName: String? { AppleDeviceFacts.osName(systemName: ui.systemName) }
        var osVersion: String? { ui.systemVersion }
        var screen: RocalyticsScreen { ui.screen }
        var localeIdentifier: String { AppleDeviceFacts.bcp47(fromLocaleIdentifier: Locale.current.identifier) }
        var timeZoneIdentifier: String { AppleDeviceFacts.timeZone(TimeZone.current.identifier) }

        func identifierForVendor() async -> String? {
            await readRetryingOnce(
                { await MainActor.run { AppleDeviceFacts.idfv(UIDevice.current.identifierForVendor) } },
                waitForRetry: {
                    // nil before the first unlock after a restart: wait for it; otherwise do not wait.
                    let locked = await MainActor.run { !(applicationIfAny()?.isProtectedDataAvailable ?? true) }
                    return locked ? await protectedData.wait() : false
                })
        }

        func androidId() -> String? { nil }

        func installationTime() async throws -> Date {
            try AppleDeviceFacts.installationTime(
                documentsDirectory: FileManager.default.urls(for: .documentDirectory, in: .userDomainMask).last)
        }

        func ipAddress() async throws -> String? { AppleDeviceFacts.ipAddress(from: try AppleDeviceFacts.interfaceAddresses()) }
    }
#endif
