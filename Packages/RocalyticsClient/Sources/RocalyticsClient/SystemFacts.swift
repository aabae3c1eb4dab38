import Foundation
import TrackerCore

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

// The device facts of `.systemDefault`, as platform-independent code tested on Linux. The
// Apple-only file reads the raw values from the OS and passes them through these functions, so
// that every decision (names, fallbacks, formats) is made here.

/// Turns the raw facts of an Apple device into what the client sends.
public enum AppleDeviceFacts {
    /// The marketing name of a hardware identifier (`utsname.machine`, e.g. `iPhone16,1`), as
    /// expo-device maps it: simulators are `Simulator iOS` (`Simulator tvOS` on tvOS), an
    /// identifier missing from the table is returned as it is.
    public static func modelName(forHardwareId id: String, tvOS: Bool = false) -> String {
        if ["i386", "x86_64", "arm64"].contains(id) { return tvOS ? "Simulator tvOS" : "Simulator iOS" }
        return modelNames[id] ?? id
    }

    /// Hardware identifiers to marketing names (Apple's published model identifiers).
    static let modelNames: [String: String] = {
        var t: [String: String] = [:]
        func add(_ name: String, _ ids: String...) { for id in ids { t[id] = name } }
        add("iPod touch (7th generation)", "iPod9,1")
        add("iPhone 8", "iPhone10,1", "iPhone10,4")
        add("iPhone 8 Plus", "iPhone10,2", "iPhone10,5")
        add("iPhone X", "iPhone10,3", "iPhone10,6")
        add("iPhone XS", "iPhone11,2")
        add("iPhone XS Max", "iPhone11,4", "iPhone11,6")
        add("iPhone XR", "iPhone11,8")
        add("iPhone 11", "iPhone12,1")
        add("iPhone 11 Pro", "iPhone12,3")
        add("iPhone 11 Pro Max", "iPhone12,5")
        add("iPhone SE (2nd generation)", "iPhone12,8")
        add("iPhone 12 mini", "iPhone13,1")
        add("iPhone 12", "iPhone13,2")
        add("iPhone 12 Pro", "iPhone13,3")
        add("iPhone 12 Pro Max", "iPhone13,4")
        add("iPhone 13 Pro", "iPhone14,2")
        add("iPhone 13 Pro Max", "iPhone14,3")
        add("iPhone 13 mini", "iPhone14,4")
        add("iPhone 13", "iPhone14,5")
        add("iPhone SE (3rd generation)", "iPhone14,6")
        add("iPhone 14", "iPhone14,7")
        add("iPhone 14 Plus", "iPhone14,8")
        add("iPhone 14 Pro", "iPhone15,2")
        add("iPhone 14 Pro Max", "iPhone15,3")
        add("iPhone 15", "iPhone15,4")
        add("iPhone 15 Plus", "iPhone15,5")
        add("iPhone 15 Pro", "iPhone16,1")
        add("iPhone 15 Pro Max", "iPhone16,2")
        add("iPhone 16 Pro", "iPhone17,1")
        add("iPhone 16 Pro Max", "iPhone17,2")
        add("iPhone 16", "iPhone17,3")
        add("iPhone 16 Plus", "iPhone17,4")
        add("iPhone 16e", "iPhone17,5")
        add("iPad (7th generation)", "iPad7,11", "iPad7,12")
        add("iPad (8th generation)", "iPad11,6", "iPad11,7")
        add("iPad (9th generation)", "iPad12,1", "iPad12,2")
        add("iPad (10th generation)", "iPad13,18", "iPad13,19")
        add("iPad Air (3rd generation)", "iPad11,3", "iPad11,4")
        add("iPad Air (4th generation)", "iPad13,1", "iPad13,2")
        add("iPad Air (5th generation)", "iPad13,16", "iPad13,17")
        add("iPad Air (11-inch) (M2)", "iPad14,8", "iPad14,9")
        add("iPad Air (13-inch) (M2)", "iPad14,10", "iPad14,11")
        add("iPad mini (5th generation)", "iPad11,1", "iPad11,2")
        add("iPad mini (6th generation)", "iPad14,1", "iPad14,2")
        add("iPad Pro (11-inch) (3rd generation)", "iPad13,4", "iPad13,5", "iPad13,6", "iPad13,7")
        add("iPad Pro (12.9-inch) (5th generation)", "iPad13,8", "iPad13,9", "iPad13,10", "iPad13,11")
        add("iPad Pro (11-inch) (4th generation)", "iPad14,3", "iPad14,4")
        add("iPad Pro (12.9-inch) (6th generation)", "iPad14,5", "iPad14,6")
        add("iPad Pro (11-inch) (M4)", "iPad16,3", "iPad16,4")
        add("iPad Pro (13-inch) (M4)", "iPad16,5", "iPad16,6")
        add("Apple TV HD", "AppleTV5,3")
        add("Apple TV 4K", "AppleTV6,2")
        add("Apple TV 4K (2nd generation)", "AppleTV11,1")
        add("Apple TV 4K (3rd generation)", "AppleTV14,1")
        return t
    }()

    /// The hardware identifier in `utsname.machine` (the fixed-size C array of `uname`).
    public static func hardwareId(fromMachine bytes: [CChar]) -> String {
        let upToNul = bytes.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }
        return String(decoding: upToNul, as: UTF8.self)
    }

    /// The app's display name: `CFBundleDisplayName`, else `CFBundleName` (<doc:PlatformServices>).
    public static func applicationName(info: [String: Any]) -> String? {
        nonEmpty(info["CFBundleDisplayName"] as? String) ?? nonEmpty(info["CFBundleName"] as? String)
    }

    /// A string Info.plist value (`CFBundleIdentifier`, `CFBundleShortVersionString`,
    /// `CFBundleVersion`), `nil` when missing or empty.
    public static func infoString(_ info: [String: Any], _ key: String) -> String? { nonEmpty(info[key] as? String) }

    /// The identifier for vendor as sent: the UUID's upper-case string; `nil` stays `nil` (it is
    /// `nil` before the first unlock after a restart: read again later, never mint from it).
    public static func idfv(_ uuid: UUID?) -> String? { uuid?.uuidString.uppercased() }

    /// The OS name as UIKit's `systemName` gives it (`iOS`, `iPadOS`, `tvOS`, `visionOS`), `iOS`
    /// when empty.
    public static func osName(systemName: String) -> String { systemName.isEmpty ? "iOS" : systemName }

    /// A BCP 47 language tag as JavaScript's `Intl` gives it from an Apple locale identifier:
    /// `en_US` → `en-US`, `zh-Hans_CN` → `zh-Hans-CN`, `en_US@rg=gbzzzz` → `en-US`,
    /// `de-DE-u-co-phonebk` → `de-DE`. Core's rule (`SystemContext.bcp47(fromLocaleIdentifier:)`),
    /// which the onboarding and paywall trackers' `ContextSource.system` use too. Empty → `en-US`.
    public static func bcp47(fromLocaleIdentifier identifier: String) -> String {
        SystemContext.bcp47(fromLocaleIdentifier: identifier)
    }

    /// The IANA zone id (`TimeZone.current.identifier`), `UTC` when empty (Core's
    /// `SystemContext.timeZone(_:)`).
    public static func timeZone(_ identifier: String) -> String { SystemContext.timeZone(identifier) }

    /// The install time as expo-application reads it: the creation date of the app's Documents
    /// directory. Throws when the directory or its date cannot be read.
    public static func installationTime(documentsDirectory: URL?, fileManager: FileManager = .default) throws -> Date {
        guard let url = documentsDirectory else { throw SystemFactError("the Documents directory was not found") }
        let attributes = try fileManager.attributesOfItem(atPath: url.path)
        guard let date = attributes[.creationDate] as? Date else { throw SystemFactError("the Documents directory has no creation date") }
        return date
    }

    /// One IPv4 address of a network interface.
    public struct InterfaceAddress: Sendable, Equatable {
        /// The interface name (`en0`).
        public var name: String
        /// The dotted IPv4 address.
        public var ipv4: String
        /// Creates an entry.
        public init(name: String, ipv4: String) {
            self.name = name
            self.ipv4 = ipv4
        }
    }

    /// The IP address sent: the first IPv4 address of `en0` or `en1` (Wi-Fi, wired), as
    /// expo-network looks for it; `0.0.0.0` (unknown) when there is none.
    public static func ipAddress(from interfaces: [InterfaceAddress]) -> String {
        interfaces.first { $0.name == "en0" || $0.name == "en1" }?.ipv4 ?? "0.0.0.0"
    }

    /// Every IPv4 address of this machine's interfaces, in `getifaddrs` order.
    public static func interfaceAddresses() throws -> [InterfaceAddress] {
        var head: UnsafeMutablePointer<ifaddrs>?
        guard getifaddrs(&head) == 0 else { throw SystemFactError("getifaddrs failed (errno \(errno))") }
        defer { freeifaddrs(head) }
        var out: [InterfaceAddress] = []
        var cursor = head
        while let entry = cursor {
            defer { cursor = entry.pointee.ifa_next }
            guard let addr = entry.pointee.ifa_addr, Int32(addr.pointee.sa_family) == AF_INET else { continue }
            var text = [CChar](repeating: 0, count: Int(INET_ADDRSTRLEN))
            let ok = addr.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { sin -> Bool in
                var a = sin.pointee.sin_addr
                return inet_ntop(AF_INET, &a, &text, socklen_t(text.count)) != nil
            }
            guard ok else { continue }
            out.append(
                InterfaceAddress(
                    name: String(cString: entry.pointee.ifa_name),
                    ipv4: hardwareId(fromMachine: text)))
        }
        return out
    }

    /// A window scene's screen, as the screen snapshot chooses among them.
    public struct SceneScreen: Sendable, Equatable {
        /// 0 foreground active, 1 foreground inactive, 2 background, 3 unattached.
        public var activation: Int
        /// The screen's size in points and its scale.
        public var screen: RocalyticsScreen
        /// Creates an entry.
        public init(activation: Int, screen: RocalyticsScreen) {
            self.activation = activation
            self.screen = screen
        }
    }

    /// The screen of the most active window scene (ties: the first); `fallback` when the app has
    /// no window scene yet (a background launch).
    public static func screen(of scenes: [SceneScreen], fallback: RocalyticsScreen) -> RocalyticsScreen {
        var best: SceneScreen?
        for s in scenes where best == nil || s.activation < best!.activation { best = s }
        return best?.screen ?? fallback
    }

    private static func nonEmpty(_ s: String?) -> String? {
        guard let s, !s.isEmpty else { return nil }
        return s
    }
}

/// A device fact that could not be read.
public struct SystemFactError: Error, CustomStringConvertible {
    /// What went wrong.
    public let description: String
    init(_ description: String) { self.description = description }
}

/// Reads a value that can be missing for a while (the identifier for vendor before the first
/// unlock): once, and when `nil`, once more after `waitForRetry` returns `true`. Never invents one.
public func readRetryingOnce<T: Sendable>(_ read: () async -> T?, waitForRetry: () async -> Bool) async -> T? {
    if let v = await read() { return v }
    guard await waitForRetry() else { return nil }
    return await read()
}
