import TrackerCore

/// Device and app facts captured once per presentation, at `start()` (`RunContextInput`).
///
/// Take `platform` and `locale` from the device (the host passes them in) and `timezone` from the
/// system; never hard-code them.
public struct PaywallContext: Sendable, Equatable {
    /// The app's marketing version (1 to 32 characters).
    public var appVersion: String
    /// The build number (1 to 32), or `nil`.
    public var build: String?
    /// `ios`, `android` or `web`.
    public var platform: String
    /// The OS version (1 to 32), or `nil`.
    public var osVersion: String?
    /// The device locale as a BCP 47 tag, e.g. `en-US`.
    public var locale: String
    /// The IANA time zone name, e.g. `America/New_York` (at most 64 characters).
    public var timezone: String

    /// Creates a context.
    public init(appVersion: String, build: String?, platform: String, osVersion: String?, locale: String, timezone: String) {
        self.appVersion = appVersion
        self.build = build
        self.platform = platform
        self.osVersion = osVersion
        self.locale = locale
        self.timezone = timezone
    }

    /// The problems that make this context unusable, in the contract's order (empty when valid).
    func problems() -> [String] {
        var p: [String] = []
        if !Patterns.codePointLength(appVersion, 1...32) { p.append("appVersion must be 1 to 32 characters") }
        if let build, !Patterns.codePointLength(build, 1...32) { p.append("build must be null or 1 to 32 characters") }
        if !["ios", "android", "web"].contains(platform) { p.append("platform must be ios, android or web") }
        if let osVersion, !Patterns.codePointLength(osVersion, 1...32) { p.append("osVersion must be null or 1 to 32 characters") }
        if !Patterns.isLocale(locale) { p.append("locale must be a BCP 47 tag") }
        if !Patterns.isTimezone(timezone) { p.append("timezone must be an IANA name of at most 64 characters") }
        return p
    }

    /// The wire `context` object, with `library_version`.
    func wire() -> JSONObject {
        var o = JSONObject()
        o.appendUnchecked("app_version", .string(appVersion))
        o.appendUnchecked("build", build.map(JSONValue.string) ?? .null)
        o.appendUnchecked("platform", .string(platform))
        o.appendUnchecked("os_version", osVersion.map(JSONValue.string) ?? .null)
        o.appendUnchecked("locale", .string(locale))
        o.appendUnchecked("timezone", .string(timezone))
        o.appendUnchecked("library_version", .string(PaywallTrackerVersion.current))
        return o
    }
}

/// Where the tracker gets the context: a fixed value or a function called once per presentation.
public enum PaywallContextSource: Sendable {
    /// The same context for every presentation.
    case value(PaywallContext)
    /// Called once, at each `start()`; a throw refuses the presentation (`invalid-context`).
    case provider(@Sendable () throws -> PaywallContext)
}
