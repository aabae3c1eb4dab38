import TrackerCore

/// How a ``ScoreClient`` is set up: the one configuration of the tracker, taken by
/// ``ScoreClient/init(configuration:)``, the tracker's one initializer.
///
/// Only `publishableKey`, `siteId` and `endpoint` are required; pass the others by label or set
/// them as properties:
///
/// ```swift
/// var configuration = ScoreConfiguration(publishableKey: "pk_live_…", siteId: "urc-ios", endpoint: "https://score.example")
/// configuration.appVersion = "4.2.0"
/// configuration.maxQueueSize = 2_000
/// let score = ScoreClient(configuration: configuration)
/// ```
public struct ScoreConfiguration: Sendable {
    /// Sent as `X-Publishable-Key`. Required.
    public var publishableKey: String
    /// Sent in every envelope (`siteId`). Required.
    public var siteId: String
    /// The base URL of the Score API; one trailing `/` is dropped. Required.
    public var endpoint: String
    /// `context.appVersion`; left out when `nil`. Default: `nil`.
    public var appVersion: String?
    /// `context.os`; left out when `nil`. Default: `nil`.
    public var os: String?
    /// `context.device`; left out when `nil` or when the privacy policy drops it. Default: `nil`.
    public var device: String?
    /// `context.locale`; left out when `nil` or when the privacy policy drops it. Default: `nil`.
    public var locale: String?
    /// The regional policy, fixed for the tracker's lifetime. Default: `nil` (no policy).
    public var privacy: PrivacyOptions?
    /// Scrubbing applied to `props` and `traits` before queueing. Default: `nil` (none).
    public var pii: PiiOptions?
    /// The starting consent. Default: `nil` (the policy's starting consent; else nothing granted).
    public var initialConsent: ConsentState?
    /// Whether the consent the app sets (``ScoreClient/setConsent(_:)``, ``ScoreClient/grantAllConsent()``)
    /// is remembered across launches: written to a small file beside the queue (in the
    /// ``FileScoreStore``'s directory, private to the app), and the next launch starts from it
    /// instead of the privacy policy's starting consent. An ``ScoreConfiguration/initialConsent`` you pass still wins,
    /// and so does a `setConsent` call made before the stored value is read (a background step:
    /// events recorded meanwhile wait in memory for it, then are queued or dropped by it).
    /// Needs the file store (another store reports a `storage` diagnostic and stores nothing).
    /// Default: `false`: each launch starts from the starting consent and the app applies its
    /// CMP's state again (the tracker's documented behaviour since 0.6.0).
    public var persistConsent = false
    /// Anonymously sent events kept in memory for replay after `identify`. Default: 100.
    public var identifyReplayBufferSize = 100
    /// The queue cap (`delivery_failed` notices excluded); at least 1. Default: 1,000.
    public var maxQueueSize = 1_000
    /// How long a flush waits for the token provider, in seconds. Default: 5.
    public var tokenRefreshTimeoutSeconds: TimeInterval = 5
    /// Durable storage. Default: `nil`, a ``FileScoreStore`` in the platform's data directory.
    public var store: (any ScoreStore)?
    /// HTTP. Default: `nil`, Core's libcurl transport.
    public var transport: (any HTTPTransport)?
    /// The time source (tests inject a manual clock). Default: `SystemClock()`.
    public var clock: any TrackerClock = SystemClock()
    /// Runs every timer and background step (tests inject a manual scheduler).
    /// Default: `SystemScheduler.shared`.
    public var scheduler: any TrackerScheduler = SystemScheduler.shared
    /// Mints event, anonymous and session ids. Default: `SystemScoreIdSource()`.
    public var idSource: any ScoreIdSource = SystemScoreIdSource()
    /// Receives diagnostics (never tokens or personal data). Default: `nil`, the unified log
    /// (`os.Logger`, subsystem `com.rocapine.score`) on Apple platforms, stderr elsewhere.
    public var onDiagnostic: DiagnosticHandler?

    /// Whether the process renders Xcode Previews (Core's `RuntimeEnvironment.isXcodePreview`);
    /// tests replace it. In previews the client keeps everything in memory and sends nothing.
    var runningForPreviews: @Sendable () -> Bool = { RuntimeEnvironment.isXcodePreview }

    /// Creates a configuration. Only the three first values are required; every other one has the
    /// default its property documents.
    public init(
        publishableKey: String, siteId: String, endpoint: String,
        appVersion: String? = nil, os: String? = nil, device: String? = nil, locale: String? = nil,
        privacy: PrivacyOptions? = nil, pii: PiiOptions? = nil, initialConsent: ConsentState? = nil,
        persistConsent: Bool = false, identifyReplayBufferSize: Int = 100, maxQueueSize: Int = 1_000,
        tokenRefreshTimeoutSeconds: TimeInterval = 5, store: (any ScoreStore)? = nil, transport: (any HTTPTransport)? = nil,
        clock: any TrackerClock = SystemClock(), scheduler: any TrackerScheduler = SystemScheduler.shared,
        idSource: any ScoreIdSource = SystemScoreIdSource(), onDiagnostic: DiagnosticHandler? = nil
    ) {
        self.publishableKey = publishableKey
        self.siteId = siteId
        self.endpoint = endpoint
        (self.appVersion, self.os, self.device, self.locale) = (appVersion, os, device, locale)
        (self.privacy, self.pii, self.initialConsent, self.persistConsent) = (privacy, pii, initialConsent, persistConsent)
        (self.identifyReplayBufferSize, self.maxQueueSize) = (identifyReplayBufferSize, maxQueueSize)
        self.tokenRefreshTimeoutSeconds = tokenRefreshTimeoutSeconds
        (self.store, self.transport, self.clock, self.scheduler) = (store, transport, clock, scheduler)
        (self.idSource, self.onDiagnostic) = (idSource, onDiagnostic)
    }
}
