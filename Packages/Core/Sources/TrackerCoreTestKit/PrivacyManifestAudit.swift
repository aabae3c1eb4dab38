import Foundation

/// A category of Apple's required-reason APIs, named as in a privacy manifest.
///
/// Categories, APIs and reason codes follow Apple's "Describing use of required reason API"
/// (developer.apple.com/documentation/bundleresources/describing-use-of-required-reason-api).
public enum RequiredReasonCategory: String, CaseIterable, Sendable, Comparable {
    case fileTimestamp = "NSPrivacyAccessedAPICategoryFileTimestamp"
    case systemBootTime = "NSPrivacyAccessedAPICategorySystemBootTime"
    case diskSpace = "NSPrivacyAccessedAPICategoryDiskSpace"
    case userDefaults = "NSPrivacyAccessedAPICategoryUserDefaults"
    case activeKeyboards = "NSPrivacyAccessedAPICategoryActiveKeyboards"

    public static func < (a: Self, b: Self) -> Bool { a.rawValue < b.rawValue }

    /// Identifiers whose appearance in a source file counts as a use of the category.
    ///
    /// Apple's lists, plus (a deliberate, conservative choice) the POSIX monotonic clocks for
    /// system boot time: on Darwin `clock_gettime(CLOCK_MONOTONIC)` reads the same uptime as
    /// `mach_absolute_time()`, so the SDK declares why it measures elapsed time.
    public var identifiers: Set<String> {
        switch self {
        case .fileTimestamp:
            return [
                "creationDate", "modificationDate", "fileModificationDate", "contentModificationDateKey",
                "creationDateKey", "NSFileCreationDate", "NSFileModificationDate", "NSURLContentModificationDateKey",
                "NSURLCreationDateKey", "getattrlist", "getattrlistbulk", "fgetattrlist", "getattrlistat",
                "stat", "fstat", "fstatat", "lstat",
            ]
        case .systemBootTime:
            return [
                "systemUptime", "mach_absolute_time", "mach_continuous_time", "CLOCK_MONOTONIC",
                "CLOCK_MONOTONIC_RAW", "CLOCK_UPTIME_RAW", "CLOCK_BOOTTIME",
            ]
        case .diskSpace:
            return [
                "volumeAvailableCapacityKey", "volumeAvailableCapacityForImportantUsageKey",
                "volumeAvailableCapacityForOpportunisticUsageKey", "volumeTotalCapacityKey",
                "NSURLVolumeAvailableCapacityKey", "NSURLVolumeAvailableCapacityForImportantUsageKey",
                "NSURLVolumeAvailableCapacityForOpportunisticUsageKey", "NSURLVolumeTotalCapacityKey",
                "systemFreeSize", "systemSize", "NSFileSystemFreeSize", "NSFileSystemSize",
                "statfs", "statvfs", "fstatfs", "fstatvfs",
            ]
        case .userDefaults:
            return ["UserDefaults", "NSUserDefaults"]
        case .activeKeyboards:
            return ["activeInputModes"]
        }
    }

    /// The reason codes Apple accepts for the category.
    public var reasons: Set<String> {
        switch self {
        case .fileTimestamp: return ["DDA9.1", "C617.1", "3B52.1", "0A2A.1"]
        case .systemBootTime: return ["35F9.1", "8FFB.1", "3D61.1"]
        case .diskSpace: return ["85F4.1", "E174.1", "7D9E.1", "B728.1"]
        case .userDefaults: return ["CA92.1", "1C8F.1", "C56D.1", "AC6B.1"]
        case .activeKeyboards: return ["3EC4.1", "54BD.1"]
        }
    }
}

/// One entry of a privacy manifest's `NSPrivacyCollectedDataTypes` (issue 27, item 6), as Apple's
/// "Describing data use in privacy manifests" defines it: the data type, whether it is linked to
/// the user's identity, whether it is used for tracking, and why it is collected.
public struct CollectedData: Sendable, Hashable, CustomStringConvertible {
    /// `NSPrivacyCollectedDataType`, e.g. `NSPrivacyCollectedDataTypeUserID`.
    public var type: String
    /// `NSPrivacyCollectedDataTypeLinked`.
    public var linked: Bool
    /// `NSPrivacyCollectedDataTypeTracking`.
    public var tracking: Bool
    /// `NSPrivacyCollectedDataTypePurposes`.
    public var purposes: Set<String>
    /// Text the package's Swift sources contain where they send this data (a wire key, say): the
    /// audit reports a declaration whose evidence is gone. Not part of the manifest.
    public var evidence: String

    /// Creates an entry.
    public init(type: String, linked: Bool, tracking: Bool = false, purposes: Set<String>, evidence: String = "") {
        self.type = type
        self.linked = linked
        self.tracking = tracking
        self.purposes = purposes
        self.evidence = evidence
    }

    public var description: String {
        "\(type) (linked \(linked), tracking \(tracking), \(purposes.sorted().joined(separator: ", ")))"
    }

    /// Equal as manifest entries (the evidence aside).
    func sameEntry(as other: CollectedData) -> Bool {
        type == other.type && linked == other.linked && tracking == other.tracking && purposes == other.purposes
    }

    /// The data type identifiers of Apple's "Describing data use in privacy manifests".
    public static let knownTypes: Set<String> = Set(
        [
            "Name", "EmailAddress", "PhoneNumber", "PhysicalAddress", "OtherUserContactInfo", "Health", "Fitness",
            "PaymentInfo", "CreditInfo", "OtherFinancialInfo", "PreciseLocation", "CoarseLocation", "SensitiveInfo",
            "Contacts", "EmailsOrTextMessages", "PhotosorVideos", "AudioData", "GameplayContent", "CustomerSupport",
            "OtherUserContent", "BrowsingHistory", "SearchHistory", "UserID", "DeviceID", "PurchaseHistory",
            "ProductInteraction", "AdvertisingData", "OtherUsageData", "CrashData", "PerformanceData",
            "OtherDiagnosticData", "EnvironmentScanning", "Hands", "Head", "OtherDataTypes",
        ].map { "NSPrivacyCollectedDataType" + $0 })

    /// The collection purposes of the same document.
    public static let knownPurposes: Set<String> = Set(
        ["ThirdPartyAdvertising", "DeveloperAdvertising", "Analytics", "ProductPersonalization", "AppFunctionality", "Other"]
            .map { "NSPrivacyCollectedDataTypePurpose" + $0 })
}

/// Checks that a package's `PrivacyInfo.xcprivacy` declares exactly the required-reason API
/// categories its sources use (issue 17): a use without a declaration fails App Store review,
/// a declaration without a use is a false statement. With `collects`, it also checks the
/// collected data types (issue 27, item 6): the manifest declares exactly those entries, each with
/// a known type, both booleans and known purposes, consistent with `NSPrivacyTracking`, and the
/// sources still contain each entry's evidence.
public enum PrivacyManifestAudit {
    /// Categories used by `source` (Swift or C), with the identifiers that matched. Comments
    /// and string literals are ignored.
    public static func categoriesUsed(inSource source: String) -> [RequiredReasonCategory: Set<String>] {
        var found: [RequiredReasonCategory: Set<String>] = [:]
        for token in identifiers(in: source) {
            for category in RequiredReasonCategory.allCases where category.identifiers.contains(token) {
                found[category, default: []].insert(token)
            }
        }
        return found
    }

    /// The categories a manifest declares, with their reasons; `nil` when it is not a valid
    /// privacy manifest property list.
    public static func declaredCategories(manifest: Data) -> [String: [String]]? {
        guard let plist = try? PropertyListSerialization.propertyList(from: manifest, options: [], format: nil),
            let root = plist as? [String: Any]
        else { return nil }
        guard let types = root["NSPrivacyAccessedAPITypes"] as? [[String: Any]] else { return [:] }
        var out: [String: [String]] = [:]
        for entry in types {
            guard let name = entry["NSPrivacyAccessedAPIType"] as? String else { return nil }
            out[name, default: []] += (entry["NSPrivacyAccessedAPITypeReasons"] as? [String]) ?? []
        }
        return out
    }

    /// The collected data a manifest declares; `nil` when it is not a property list, or an entry
    /// lacks a key or has one of the wrong type. `tracking` is `NSPrivacyTracking` (`nil` when absent).
    public static func declaredCollection(manifest: Data) -> (entries: [CollectedData], tracking: Bool?)? {
        guard let plist = try? PropertyListSerialization.propertyList(from: manifest, options: [], format: nil),
            let root = plist as? [String: Any]
        else { return nil }
        let tracking = root["NSPrivacyTracking"] as? Bool
        guard let list = root["NSPrivacyCollectedDataTypes"] else { return ([], tracking) }
        guard let entries = list as? [[String: Any]] else { return nil }
        var out: [CollectedData] = []
        for e in entries {
            guard let type = e["NSPrivacyCollectedDataType"] as? String,
                let linked = e["NSPrivacyCollectedDataTypeLinked"] as? Bool,
                let tracks = e["NSPrivacyCollectedDataTypeTracking"] as? Bool,
                let purposes = e["NSPrivacyCollectedDataTypePurposes"] as? [String]
            else { return nil }
            out.append(CollectedData(type: type, linked: linked, tracking: tracks, purposes: Set(purposes)))
        }
        return (out, tracking)
    }

    /// The comparison of collected data, on values (tests feed it directly): `expected` against
    /// what the manifests declare (`nil`: no manifest), and each expected entry's evidence against
    /// `sources` (the package's Swift sources, concatenated).
    public static func compareCollected(
        expected: [CollectedData], declared: [CollectedData]?, tracking: Bool?, sources: String
    ) -> [String] {
        var out: [String] = []
        guard let declared else {
            return expected.isEmpty ? [] : ["the package collects data but has no PrivacyInfo.xcprivacy"]
        }
        for d in declared {
            if !CollectedData.knownTypes.contains(d.type) { out.append("\(d.type) is not a collected data type") }
            if d.purposes.isEmpty { out.append("\(d.type) declares no purpose") }
            for p in d.purposes.sorted() where !CollectedData.knownPurposes.contains(p) {
                out.append("\(p) is not a collection purpose")
            }
            if d.tracking && tracking != true { out.append("\(d.type) is used for tracking but NSPrivacyTracking is not true") }
            if !expected.contains(where: { $0.sameEntry(as: d) }) { out.append("\(d) is declared but the package does not collect it so") }
        }
        for e in expected {
            if !declared.contains(where: { $0.sameEntry(as: e) }) { out.append("\(e) is collected but not declared") }
            if !e.evidence.isEmpty && !sources.contains(e.evidence) {
                out.append("\(e.type): the sources no longer contain \(e.evidence.debugDescription); is it still collected?")
            }
        }
        if tracking == nil { out.append("the manifest has no NSPrivacyTracking") }
        return out
    }

    /// Every problem of the package at `packageRoot`: its sources under `Sources/` against the
    /// `PrivacyInfo.xcprivacy` files there (required-reason APIs, and the collected data types
    /// `collects` lists), and the manifest's declaration in `Package.swift`.
    public static func problems(packageRoot: String, collects: [CollectedData]) -> [String] {
        let fm = FileManager.default
        let sourcesRoot = packageRoot + "/Sources"
        var sources = ""
        var declared: [CollectedData]?
        var tracking: Bool?
        var out: [String] = []
        for relative in ((fm.enumerator(atPath: sourcesRoot)?.allObjects as? [String]) ?? []).sorted() {
            let path = sourcesRoot + "/" + relative
            if relative.hasSuffix("PrivacyInfo.xcprivacy") {
                guard let data = fm.contents(atPath: path), let d = declaredCollection(manifest: data) else {
                    out.append("\(path) does not declare its collected data types as Apple documents them")
                    continue
                }
                declared = (declared ?? []) + d.entries
                if let t = d.tracking { tracking = (tracking ?? false) || t }
            } else if relative.hasSuffix(".swift"), let text = try? String(contentsOfFile: path, encoding: .utf8) {
                sources += text
            }
        }
        return problems(packageRoot: packageRoot)
            + out + compareCollected(expected: collects, declared: declared, tracking: tracking, sources: sources)
    }

    /// Every problem of the package at `packageRoot`: its sources under `Sources/` against the
    /// `PrivacyInfo.xcprivacy` files there, and the manifest's declaration in `Package.swift`.
    public static func problems(packageRoot: String) -> [String] {
        let fm = FileManager.default
        let sources = packageRoot + "/Sources"
        var used: [RequiredReasonCategory: Set<String>] = [:]
        var manifests: [String] = []
        let files = ((fm.enumerator(atPath: sources)?.allObjects as? [String]) ?? []).sorted()
        for relative in files {
            let path = sources + "/" + relative
            if relative.hasSuffix("PrivacyInfo.xcprivacy") {
                manifests.append(path)
                continue
            }
            guard relative.hasSuffix(".swift") || relative.hasSuffix(".c") || relative.hasSuffix(".h"),
                let text = try? String(contentsOfFile: path, encoding: .utf8)
            else { continue }
            for (category, names) in categoriesUsed(inSource: text) {
                used[category, default: []].formUnion(names.map { "\($0) (\(relative))" })
            }
        }
        var declared: [String: [String]] = [:]
        var out: [String] = []
        for path in manifests {
            guard let data = fm.contents(atPath: path), let d = declaredCategories(manifest: data) else {
                out.append("\(path) is not a valid privacy manifest")
                continue
            }
            declared.merge(d) { $0 + $1 }
        }
        return out
            + compare(
                used: used, declared: declared, hasManifest: !manifests.isEmpty,
                packageManifest: try? String(contentsOfFile: packageRoot + "/Package.swift", encoding: .utf8))
    }

    /// The comparison behind ``problems(packageRoot:)``, on values (tests feed it directly).
    public static func compare(
        used: [RequiredReasonCategory: Set<String>], declared: [String: [String]],
        hasManifest: Bool, packageManifest: String?
    ) -> [String] {
        var out: [String] = []
        if !used.isEmpty && !hasManifest {
            out.append("sources use required-reason APIs but the package has no PrivacyInfo.xcprivacy")
        }
        for category in used.keys.sorted() where declared[category.rawValue] == nil {
            out.append("\(category.rawValue) is used (\(used[category]!.sorted().joined(separator: ", "))) but not declared")
        }
        for (name, reasons) in declared.sorted(by: { $0.key < $1.key }) {
            guard let category = RequiredReasonCategory(rawValue: name) else {
                out.append("\(name) is not a required-reason API category")
                continue
            }
            if used[category] == nil { out.append("\(name) is declared but no source uses it") }
            if reasons.isEmpty { out.append("\(name) declares no reason") }
            for reason in reasons where !category.reasons.contains(reason) {
                out.append("\(reason) is not a reason Apple accepts for \(name)")
            }
        }
        if hasManifest, let manifest = packageManifest {
            // Declared as a resource on Apple hosts, excluded on Linux (see Package.swift).
            if !manifest.contains(".copy(\"PrivacyInfo.xcprivacy\")") || !manifest.contains("\"PrivacyInfo.xcprivacy\"]") {
                out.append("Package.swift must copy PrivacyInfo.xcprivacy as a resource on Apple hosts and exclude it on Linux")
            }
        }
        return out
    }

    /// Identifiers of `source` outside comments and string literals.
    static func identifiers(in source: String) -> [String] {
        let b = Array(source.utf8)
        var out: [String] = []
        var i = 0
        func isStart(_ c: UInt8) -> Bool { c == 0x5F || (c | 0x20 >= 0x61 && c | 0x20 <= 0x7A) }
        func isPart(_ c: UInt8) -> Bool { isStart(c) || (c >= 0x30 && c <= 0x39) }
        while i < b.count {
            let c = b[i]
            if c == UInt8(ascii: "/"), i + 1 < b.count, b[i + 1] == UInt8(ascii: "/") {
                while i < b.count, b[i] != 0x0A { i += 1 }
            } else if c == UInt8(ascii: "/"), i + 1 < b.count, b[i + 1] == UInt8(ascii: "*") {
                i += 2
                while i + 1 < b.count, !(b[i] == UInt8(ascii: "*") && b[i + 1] == UInt8(ascii: "/")) { i += 1 }
                i += 2
            } else if c == UInt8(ascii: "\"") {
                i += 1
                while i < b.count, b[i] != UInt8(ascii: "\"") {
                    if b[i] == UInt8(ascii: "\\") { i += 1 }
                    i += 1
                }
                i += 1
            } else if isStart(c) {
                let start = i
                while i < b.count, isPart(b[i]) { i += 1 }
                out.append(String(decoding: b[start..<i], as: UTF8.self))
            } else {
                i += 1
            }
        }
        return out
    }
}
