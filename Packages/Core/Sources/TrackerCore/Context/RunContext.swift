/// The platform an app runs on, sent as `context.platform`.
///
/// A struct with static members rather than an enum, as `HTTPError.Code` is: a value read from
/// untyped input that is none of the contract's platforms can be represented, and is reported by
/// ``RunContextInput/problems`` instead of being sent.
public struct Platform: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    /// The wire spelling.
    public let rawValue: String

    /// Creates a platform from its wire spelling (validated when the context is read).
    public init(rawValue: String) { self.rawValue = rawValue }

    /// iOS, iPadOS and the other Apple platforms.
    public static let ios = Platform(rawValue: "ios")
    /// Android.
    public static let android = Platform(rawValue: "android")
    /// The web.
    public static let web = Platform(rawValue: "web")

    /// The platforms the contracts accept, in their order.
    public static let contractValues: [Platform] = [.ios, .android, .web]

    /// Whether the contracts accept this platform.
    public var isContractValue: Bool { Platform.contractValues.contains(self) }

    public var description: String { rawValue }
}

/// The device and app context of an onboarding run or a paywall presentation, read once when it
/// starts. Take `platform` and `locale` from the device and `timezone` from the system; never
/// hard-code them.
public struct RunContextInput: Sendable, Equatable {
    /// The app's marketing version (1 to 32 characters).
    public var appVersion: String
    /// The build number (1 to 32 characters), or `nil`.
    public var build: String?
    /// The platform.
    public var platform: Platform
    /// The OS version (1 to 32 characters), or `nil`.
    public var osVersion: String?
    /// The locale as a BCP 47 tag, e.g. `en-US`.
    public var locale: String
    /// The IANA time zone name, e.g. `America/New_York` (at most 64 characters).
    public var timezone: String

    /// Creates a context.
    public init(appVersion: String, build: String?, platform: Platform, osVersion: String?, locale: String, timezone: String) {
        self.appVersion = appVersion
        self.build = build
        self.platform = platform
        self.osVersion = osVersion
        self.locale = locale
        self.timezone = timezone
    }

    /// Creates a context from a platform's wire spelling (`PaywallContext`'s initializer).
    @available(*, deprecated, message: "pass a Platform: .ios, .android, .web or Platform(rawValue:)")
    public init(appVersion: String, build: String?, platform: String, osVersion: String?, locale: String, timezone: String) {
        self.init(
            appVersion: appVersion, build: build, platform: Platform(rawValue: platform), osVersion: osVersion,
            locale: locale, timezone: timezone)
    }

    /// The problems that make this context unusable, in the contracts' member order (empty when
    /// it is valid). Each names the member by its Swift name.
    public var problems: [String] {
        var p: [String] = []
        if !InputPatterns.codePointLength(appVersion, 1...32) { p.append("appVersion must be 1 to 32 characters") }
        if let build, !InputPatterns.codePointLength(build, 1...32) { p.append("build must be null or 1 to 32 characters") }
        if !platform.isContractValue { p.append("platform must be ios, android or web") }
        if let osVersion, !InputPatterns.codePointLength(osVersion, 1...32) { p.append("osVersion must be null or 1 to 32 characters") }
        if !InputPatterns.isLocale(locale) { p.append("locale must be a BCP 47 tag") }
        if !InputPatterns.isTimezone(timezone) { p.append("timezone must be an IANA name of at most 64 characters") }
        return p
    }

    /// The onboarding snapshot's `context`, with `library_version`; `nil` when the platform is
    /// not one the contract accepts (check ``problems`` first).
    public func onboardingRunContext(libraryVersion: String) -> OnboardingRunSnapshot.Context? {
        guard let platform = OnboardingRunSnapshot.Platform(rawValue: platform.rawValue) else { return nil }
        return OnboardingRunSnapshot.Context(
            appVersion: appVersion, build: build, platform: platform, osVersion: osVersion,
            locale: locale, timezone: timezone, libraryVersion: libraryVersion)
    }

    /// The paywall snapshot's `context`, with `library_version`; `nil` when the platform is not
    /// one the contract accepts (check ``problems`` first).
    public func paywallPresentationContext(libraryVersion: String) -> PaywallPresentationSnapshot.Context? {
        guard let platform = PaywallPresentationSnapshot.Platform(rawValue: platform.rawValue) else { return nil }
        return PaywallPresentationSnapshot.Context(
            appVersion: appVersion, build: build, platform: platform, osVersion: osVersion,
            locale: locale, timezone: timezone, libraryVersion: libraryVersion)
    }
}

/// Where a tracker reads the context: a value, or a closure called once at each start.
public enum ContextSource: Sendable {
    /// The same context every time.
    case value(RunContextInput)
    /// Called once at each start; a throw refuses that start.
    case provider(@Sendable () throws -> RunContextInput)

    /// Reads the context: the value, or the closure's result.
    public func read() throws -> RunContextInput {
        switch self {
        case .value(let c): c
        case .provider(let read): try read()
        }
    }
}
