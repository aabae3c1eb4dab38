#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// The run context read from the system (issue 37 item 1): the facts RocalyticsClient's
/// `.systemDefault` reads (app version and build from Info.plist, the OS version, the locale and
/// the time zone), as portable decisions tested on Linux. The Apple-only reader
/// (`SystemContextApple.swift`) only calls the OS and passes the raw values through ``context(_:)``.
public enum SystemContext {
    /// The raw facts, as the OS gives them.
    public struct Facts: Sendable, Equatable {
        /// `CFBundleShortVersionString`, when present.
        public var appVersion: String?
        /// `CFBundleVersion`, when present.
        public var build: String?
        /// The platform (`.ios` on every Apple platform the contracts know).
        public var platform: Platform
        /// The OS version, e.g. `18.1`.
        public var osVersion: String?
        /// The locale identifier, e.g. `en_US`, `zh-Hans_CN`, `en_US.UTF-8` (a POSIX `LANG`).
        public var localeIdentifier: String
        /// The IANA time zone id.
        public var timeZoneIdentifier: String

        /// Creates the facts.
        public init(
            appVersion: String?, build: String?, platform: Platform, osVersion: String?, localeIdentifier: String,
            timeZoneIdentifier: String
        ) {
            self.appVersion = appVersion
            self.build = build
            self.platform = platform
            self.osVersion = osVersion
            self.localeIdentifier = localeIdentifier
            self.timeZoneIdentifier = timeZoneIdentifier
        }
    }

    /// The app version sent when the bundle names none (a command-line tool, a test host).
    public static let unknownAppVersion = "0.0.0"

    /// The context the trackers send for `facts`: the locale as a BCP 47 tag (``bcp47(fromLocaleIdentifier:)``),
    /// `UTC` for an empty zone, ``unknownAppVersion`` without an app version, each text cut to its
    /// contract length (32 characters; 64 for the zone).
    public static func context(_ facts: Facts) -> RunContextInput {
        func fit(_ s: String?, _ max: Int) -> String? {
            guard let s, !s.isEmpty else { return nil }
            return String(s.prefix(max))
        }
        return RunContextInput(
            appVersion: fit(facts.appVersion, 32) ?? unknownAppVersion, build: fit(facts.build, 32), platform: facts.platform,
            osVersion: fit(facts.osVersion, 32), locale: bcp47(fromLocaleIdentifier: facts.localeIdentifier),
            timezone: fit(facts.timeZoneIdentifier, 64) ?? "UTC")
    }

    /// A BCP 47 language tag as JavaScript's `Intl` gives it from an Apple locale identifier (the
    /// same rule as RocalyticsClient's `.systemDefault`): `en_US` → `en-US`, `zh-Hans_CN` →
    /// `zh-Hans-CN`, `en_US@rg=gbzzzz` → `en-US`, `de-DE-u-co-phonebk` → `de-DE`. Unicode (`-u-`)
    /// extensions and `@` keywords are dropped, so is a POSIX encoding (`en_US.UTF-8` → `en-US`);
    /// the language is lower case, the script title case, the region upper case. Empty, `C` or
    /// `POSIX` → `en-US`.
    public static func bcp47(fromLocaleIdentifier identifier: String) -> String {
        let base = identifier.split(separator: "@", maxSplits: 1, omittingEmptySubsequences: false).first.map(String.init) ?? ""
        let noEncoding = base.split(separator: ".", maxSplits: 1, omittingEmptySubsequences: false).first.map(String.init) ?? ""
        let parts = noEncoding.split(whereSeparator: { $0 == "_" || $0 == "-" }).map(String.init)
        var out: [String] = []
        var skipping = false
        for (i, p) in parts.enumerated() {
            if p.count == 1 {
                skipping = p.lowercased() == "u"
                if skipping { continue }
            }
            if skipping { continue }
            if i == 0 {
                out.append(p.lowercased())
                continue
            }
            if p.count == 4, p.allSatisfy(\.isLetter), out.count == 1 {
                out.append(p.prefix(1).uppercased() + p.dropFirst().lowercased())
            } else if (p.count == 2 && p.allSatisfy(\.isLetter)) || (p.count == 3 && p.allSatisfy(\.isNumber)) {
                out.append(p.uppercased())
            } else {
                out.append(p.lowercased())
            }
        }
        if out.count > 1 { out.removeAll { $0 == "posix" } }  // en_US_POSIX
        if out.isEmpty || out[0].isEmpty || out[0] == "posix" || out[0] == "c" { return "en-US" }
        return out.joined(separator: "-")
    }

    /// The IANA zone id, `UTC` when empty.
    public static func timeZone(_ identifier: String) -> String { identifier.isEmpty ? "UTC" : identifier }

    /// The facts of this process. On Apple platforms: Info.plist, the OS version, `Locale.current`
    /// and `TimeZone.current`. Elsewhere (no bundle, and no platform the contracts know): the
    /// platform is `linux` (``RunContextInput/problems`` reports it, so a start with it is
    /// refused), the locale from `LC_ALL`, `LC_MESSAGES` or `LANG`, the zone from `TZ`, the OS
    /// version from `uname`. No file I/O.
    public static func currentFacts() -> Facts {
        #if canImport(Darwin)
            return appleFacts()
        #else
            func env(_ key: String) -> String? { getenv(key).map { String(cString: $0) }.flatMap { $0.isEmpty ? nil : $0 } }
            var u = utsname()
            let release: String? =
                uname(&u) == 0
                ? withUnsafeBytes(of: &u.release) { raw in
                    String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
                } : nil
            let zone = env("TZ").map { $0.hasPrefix(":") ? String($0.dropFirst()) : $0 } ?? "UTC"
            return Facts(
                appVersion: nil, build: nil, platform: Platform(rawValue: "linux"), osVersion: release,
                localeIdentifier: env("LC_ALL") ?? env("LC_MESSAGES") ?? env("LANG") ?? "", timeZoneIdentifier: zone)
        #endif
    }
}

extension ContextSource {
    /// The context read from the system at each start (``SystemContext``): app version and build
    /// from Info.plist, the OS version, the current locale and time zone, the same facts as
    /// RocalyticsClient's `.systemDefault`.
    public static let system = ContextSource.provider { SystemContext.context(SystemContext.currentFacts()) }
}
