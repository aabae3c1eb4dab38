import TrackerCore

/// The Rocalytics API's default base URL.
public let rocalyticsDefaultBaseURL = "https://rocalytics-api.rocapine.io"
/// The attribution worker's default base URL (the install ping).
public let rocalyticsDefaultAttributionBaseURL = "https://track.rocapi.ne"

/// Secure-store key of the roca id.
public let ROCA_ID_KEY = "rocalytics-roca-id"
/// The misspelled key the copied clients used: read as a fallback, written when an id is minted.
public let LEGACY_ROCA_ID_KEY = "rocalitics-roca-id"
/// Secure-store key set to `"true"` once `install` was sent.
public let INSTALL_TRACKED_KEY = "rocadata-install-tracked"
/// Install keys of copied clients: only read; either install key counts as "sent".
public let LEGACY_INSTALL_TRACKED_KEYS = ["rocadata-install-tracked-4"]

/// Bound on one Rocalytics request, connection included. The reference sets none; the port
/// bounds it so that a request that never answers cannot hold `ready` forever.
public let rocalyticsRequestTimeoutMs: Int64 = 60_000

/// What every Rocalytics request needs: who sends it and where.
public struct RocalyticsRequestContext: Sendable, Equatable {
    /// The roca id (`X-Roca-ID`).
    public var rocaId: String
    /// Bundle id or package name; `nil` is sent as `unknown`.
    public var applicationId: String?
    /// `X-Platform`: `ios`, `android` or `web`.
    public var platform: String
    /// The API base; `nil` is ``rocalyticsDefaultBaseURL``. Joined as given (no slash trimming).
    public var baseURL: String?

    /// Creates a request context.
    public init(rocaId: String, applicationId: String?, platform: String, baseURL: String? = nil) {
        self.rocaId = rocaId
        self.applicationId = applicationId
        self.platform = platform
        self.baseURL = baseURL
    }

    /// `<base>/functions/v1/<endpoint>`.
    public func url(_ endpoint: String) -> String {
        "\(baseURL ?? rocalyticsDefaultBaseURL)/functions/v1/\(endpoint)"
    }
}

/// The four headers of every Rocalytics request, in order: `Content-Type`, `X-Roca-ID`,
/// `X-Application-ID` (`unknown` when none) and `X-Platform`. Nothing else: no token, no
/// version, no user agent.
public func rocalyticsHeaders(_ context: RocalyticsRequestContext) -> [HTTPHeader] {
    [
        HTTPHeader("Content-Type", "application/json"),
        HTTPHeader("X-Roca-ID", context.rocaId),
        HTTPHeader("X-Application-ID", context.applicationId ?? "unknown"),
        HTTPHeader("X-Platform", context.platform),
    ]
}

/// The device facts sent with every event as `device_context`, read once per process.
public struct DeviceContext: Sendable, Equatable {
    /// Device IP; `nil` when unknown (sent as `null`).
    public var ip: String?
    /// `{appName}/{appVersion} ({brand} {model}; {osName} {osVersion}; {locale})`.
    public var userAgent: String
    /// `device_model` (`null` when unknown).
    public var deviceModel: String?
    /// `device_brand` (`null` when unknown).
    public var deviceBrand: String?
    /// `device_manufacturer` (`null` when unknown).
    public var deviceManufacturer: String?
    /// `os_name` (`null` when unknown).
    public var osName: String?
    /// `os_version` (`null` when unknown).
    public var osVersion: String?
    /// `screen_width`.
    public var screenWidth: Double
    /// `screen_height`.
    public var screenHeight: Double
    /// `screen_scale`.
    public var screenScale: Double
    /// IANA zone id.
    public var timezone: String
    /// BCP 47 device locale.
    public var locale: String
    /// `app_version` (`null` when unknown).
    public var appVersion: String?
    /// `app_build` (`null` when unknown).
    public var appBuild: String?

    /// Creates a device context.
    public init(
        ip: String?, userAgent: String, deviceModel: String?, deviceBrand: String?, deviceManufacturer: String?,
        osName: String?, osVersion: String?, screenWidth: Double, screenHeight: Double, screenScale: Double,
        timezone: String, locale: String, appVersion: String?, appBuild: String?
    ) {
        self.ip = ip
        self.userAgent = userAgent
        self.deviceModel = deviceModel
        self.deviceBrand = deviceBrand
        self.deviceManufacturer = deviceManufacturer
        self.osName = osName
        self.osVersion = osVersion
        self.screenWidth = screenWidth
        self.screenHeight = screenHeight
        self.screenScale = screenScale
        self.timezone = timezone
        self.locale = locale
        self.appVersion = appVersion
        self.appBuild = appBuild
    }

    /// The wire object, members in the reference's order, unknown values as `null`.
    public var json: JSONValue {
        func s(_ v: String?) -> JSONValue { v.map(JSONValue.string) ?? .null }
        var o = JSONObject()
        o.appendUnchecked("ip", s(ip))
        o.appendUnchecked("user_agent", .string(userAgent))
        o.appendUnchecked("device_model", s(deviceModel))
        o.appendUnchecked("device_brand", s(deviceBrand))
        o.appendUnchecked("device_manufacturer", s(deviceManufacturer))
        o.appendUnchecked("os_name", s(osName))
        o.appendUnchecked("os_version", s(osVersion))
        o.appendUnchecked("screen_width", .number(screenWidth))
        o.appendUnchecked("screen_height", .number(screenHeight))
        o.appendUnchecked("screen_scale", .number(screenScale))
        o.appendUnchecked("timezone", .string(timezone))
        o.appendUnchecked("locale", .string(locale))
        o.appendUnchecked("app_version", s(appVersion))
        o.appendUnchecked("app_build", s(appBuild))
        return .object(o)
    }

    /// Reads the device context from the platform. The IP lookup's failure, an empty IP and
    /// `0.0.0.0` all give `nil`.
    public static func read(from platform: any RocalyticsPlatform) async -> DeviceContext {
        var ip: String?
        do {
            if let value = try await platform.ipAddress(), !value.isEmpty, value != "0.0.0.0" { ip = value }
        } catch {
            ip = nil
        }
        let name = platform.platformName
        let locale = platform.localeIdentifier
        let ua =
            "\(platform.applicationName ?? "App")/\(platform.applicationVersion ?? "1.0") "
            + "(\(platform.deviceBrand ?? name) \(platform.deviceModelName ?? "Unknown"); "
            + "\(platform.osName ?? name) \(platform.osVersion ?? platform.platformVersion.text); \(locale))"
        return DeviceContext(
            ip: ip, userAgent: ua, deviceModel: platform.deviceModelName, deviceBrand: platform.deviceBrand,
            deviceManufacturer: platform.deviceManufacturer, osName: platform.osName, osVersion: platform.osVersion,
            screenWidth: platform.screen.width, screenHeight: platform.screen.height, screenScale: platform.screen.scale,
            timezone: platform.timeZoneIdentifier, locale: locale, appVersion: platform.applicationVersion,
            appBuild: platform.buildNumber)
    }
}

/// The input of ``buildTrackRequest(_:_:)``.
public struct TrackRequestInput: Sendable, Equatable {
    /// Event name.
    public var name: String
    /// Event properties.
    public var properties: JSONObject
    /// The cached device context; `nil` sends `"device_context": null`.
    public var deviceContext: DeviceContext?
    /// `nil` uses `<rocaId>-<name>`.
    public var deduplicationId: String?
    /// Adds `"custom_event": true` (custom events only).
    public var customEvent: Bool

    /// Creates a track input.
    public init(
        name: String, properties: JSONObject = [:], deviceContext: DeviceContext?, deduplicationId: String? = nil, customEvent: Bool = false
    ) {
        self.name = name
        self.properties = properties
        self.deviceContext = deviceContext
        self.deduplicationId = deduplicationId
        self.customEvent = customEvent
    }
}

private func post(_ context: RocalyticsRequestContext, _ endpoint: String, body: JSONValue?) -> HTTPRequest {
    HTTPRequest(
        url: context.url(endpoint), method: "POST", headers: rocalyticsHeaders(context),
        body: body.map(WireJSON.encode), timeoutMs: rocalyticsRequestTimeoutMs)
}

/// `POST /functions/v1/track` with `{name, deduplication_id, properties, device_context[, custom_event]}`.
/// Pure: no I/O, the same output for the same input.
public func buildTrackRequest(_ context: RocalyticsRequestContext, _ input: TrackRequestInput) -> HTTPRequest {
    var body = JSONObject()
    body.appendUnchecked("name", .string(input.name))
    body.appendUnchecked("deduplication_id", .string(input.deduplicationId ?? "\(context.rocaId)-\(input.name)"))
    body.appendUnchecked("properties", .object(input.properties))
    body.appendUnchecked("device_context", input.deviceContext?.json ?? .null)
    if input.customEvent { body.appendUnchecked("custom_event", .bool(true)) }
    return post(context, "track", body: .object(body))
}

/// `POST /functions/v1/identify` with the identifiers as given (the client drops top-level nulls
/// before it calls this). Pure.
public func buildIdentifyRequest(_ context: RocalyticsRequestContext, _ identifiers: JSONObject) -> HTTPRequest {
    post(context, "identify", body: .object(identifiers))
}

/// `POST /functions/v1/onboarding-response` with `payload` as the body. Pure.
public func buildOnboardingResponseRequest(_ context: RocalyticsRequestContext, _ payload: JSONValue) -> HTTPRequest {
    post(context, "onboarding-response", body: payload)
}

/// `POST /functions/v1/demand-score`: the signals as the body, or no body at all when there are
/// none (absent or empty). Pure.
public func buildDemandScoreRequest(_ context: RocalyticsRequestContext, _ signals: DemandScoreSignals?) -> HTTPRequest {
    let o = signals?.json ?? JSONObject()
    return post(context, "demand-score", body: o.isEmpty ? nil : .object(o))
}

/// `POST /functions/v1/paywall-presentations` with the snapshot's wire bytes. Pure.
public func buildPaywallPresentationRequest(_ context: RocalyticsRequestContext, _ snapshot: some WireEncodable) -> HTTPRequest {
    HTTPRequest(
        url: context.url("paywall-presentations"), method: "POST", headers: rocalyticsHeaders(context),
        body: snapshot.wireBytes(), timeoutMs: rocalyticsRequestTimeoutMs)
}
