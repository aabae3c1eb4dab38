import TrackerCore

/// How a ``RocalyticsClient`` is built (the reference client's `options`). Every property is for
/// tests or unusual hosts: on Apple platforms the default ``platform`` (`.systemDefault`) is what
/// an app needs; elsewhere an app sets it to its own ``RocalyticsPlatform``.
public struct RocalyticsConfiguration: Sendable {
    /// The platform services: `.systemDefault` (the system's, on iOS, iPadOS, tvOS and
    /// visionOS), `.custom(...)` (your own), or `.none` to run inert on purpose. Default:
    /// `.systemDefault`.
    public var platform: RocalyticsPlatformChoice
    /// The HTTP transport; `nil` is Core's libcurl transport (`CurlTransport.shared`). An
    /// injected transport is the "custom fetch" case and marks the sink destinations. Default: `nil`.
    public var transport: (any HTTPTransport)?
    /// The API base, joined as given: `<baseURL>/functions/v1/<endpoint>`. Default:
    /// ``rocalyticsDefaultBaseURL``.
    public var baseURL: String
    /// Wall-clock time (the `trackOnboarding` timestamps). Default: `SystemClock()`.
    public var clock: any TrackerClock
    /// Runs the start-up in the background. Default: `SystemScheduler.shared`.
    public var scheduler: any TrackerScheduler
    /// Receives why start-up failed or the client went inert, and the `install-ping-failed`,
    /// `unknown-purchase-type`, `recorded-request-rejected`, `storage`, `storage-cap` and `invalid-stored` reports. Default: the unified log (`os.Logger`, subsystem
    /// `com.rocapine.rocalytics.client`) on Apple platforms, one line on standard error elsewhere.
    /// Called on any thread (whichever noticed the problem): hop to the main actor before touching
    /// UI state (`Task { @MainActor in … }`).
    public var onDiagnostic: DiagnosticHandler
    /// Sends `{idfv, android_id, locale}` at start-up. Pass `false` when the app identifies
    /// the device itself with richer fields; it must then call ``RocalyticsClient/identify(_:)`` before
    /// anything that needs the identity row (the onboarding endpoint answers 404 until then).
    /// Default: `true`.
    public var identifyOnStart: Bool
    /// Follows the install event with `POST <attributionBaseURL>/install` (identity headers,
    /// no body), once per device, for ad attribution. Default: `true`.
    public var installPing: Bool
    /// Base of the install ping; a trailing slash is dropped. Default:
    /// ``rocalyticsDefaultAttributionBaseURL``.
    public var attributionBaseURL: String
    /// A keychain access group the app and its extensions share (`<team id>.<group>`, listed in
    /// every target's `keychain-access-groups` entitlement): `.systemDefault` keeps the roca id and
    /// the install flag there, so a widget or another extension reads the app's identity instead
    /// of minting its own and sending a second `install` (issue 38, item 7). An earlier unshared
    /// build's (or Expo build's) id is copied into the group; when the app and an extension start
    /// together, the first id written wins and the other adopts it. A group missing from the
    /// entitlements falls back to the process's own items. `nil`: the process's own. Default: `nil`.
    public var keychainAccessGroup: String?
    /// Where the requests of the `record…` methods (``RocalyticsClient/recordPurchase(_:)-(TrackPurchaseParams)``,
    /// ``RocalyticsClient/recordIdentify(_:)``, ``RocalyticsClient/record(_:properties:)``) wait
    /// until they are sent, and where ``RocalyticsClient/optOut()`` is kept. `nil`: Core's
    /// `StandardFileStorage` in ``RocalyticsConfiguration/defaultStorageDirectory()``, whose folder
    /// is prepared on the store's own queue (the constructor does no file I/O). Default: `nil`.
    public var storage: (any KeyValueStorage)?

    /// Creates a configuration; every argument has the default documented on its property.
    public init(
        platform: RocalyticsPlatformChoice = .systemDefault,
        transport: (any HTTPTransport)? = nil,
        baseURL: String = rocalyticsDefaultBaseURL,
        clock: any TrackerClock = SystemClock(),
        scheduler: any TrackerScheduler = SystemScheduler.shared,
        onDiagnostic: @escaping DiagnosticHandler = Diagnostics.systemLog(
            subsystem: LogSubsystem.rocalyticsClient, prefix: "rocalytics-sdk"),
        identifyOnStart: Bool = true,
        installPing: Bool = true,
        attributionBaseURL: String = rocalyticsDefaultAttributionBaseURL,
        keychainAccessGroup: String? = nil,
        storage: (any KeyValueStorage)? = nil
    ) {
        self.platform = platform
        self.transport = transport
        self.baseURL = baseURL
        self.clock = clock
        self.scheduler = scheduler
        self.onDiagnostic = onDiagnostic
        self.identifyOnStart = identifyOnStart
        self.installPing = installPing
        self.attributionBaseURL = attributionBaseURL
        self.keychainAccessGroup = keychainAccessGroup
        self.storage = storage
    }
}
