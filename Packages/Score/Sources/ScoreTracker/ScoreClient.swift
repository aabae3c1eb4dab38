import Dispatch
import TrackerCore

#if canImport(Darwin)
    import Foundation
#elseif canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// The Score mobile tracker.
///
/// Recording calls (`track`, `screen`, `identify`, …) never throw, never block on I/O and never
/// crash the host: they check the input, check consent, scrub PII, stamp the envelope and hand
/// it to an in-memory queue. Persistence (an append-only log) and sending run in the background
/// through the injected scheduler.
public final class ScoreClient: Sendable {
    /// Events per request at most.
    static let maxBatchEvents = 100
    /// Request body bytes at most (512 KiB).
    static let maxBodyBytes = 524_288
    /// `delivery_failed` notices held at most.
    static let maxNotices = 100
    /// Background time after which a foreground starts a new session (30 min).
    static let sessionTimeoutMs: Int64 = 30 * 60 * 1000
    /// Write operations per queue-log append at most.
    static let writerBatch = 256
    /// How long the queue writer naps, one nap after the other, when it finds no work, before it
    /// goes idle (when the scheduler pauses I/O steps: ``SystemScheduler``). During a burst the
    /// recording calls then find it running and only append to its backlog: starting an idle
    /// writer wakes a thread, which costs a recording call far more than the append.
    static let writerNapsUs = [250, 500, 1_000, 2_000]
    /// The queue log is compacted once it holds more than this many dead records (removed
    /// events and removal records) …
    static let compactionMinDead = 512
    /// … and more than this many per queued event. Each compaction rewrites every queued event
    /// and syncs twice, so a full queue that keeps shedding (say 1,000 queued and thousands of
    /// events a second) compacts every 3,000 sheds instead of every 1,000; the log stays within
    /// about four times the queue's own size.
    static let compactionDeadPerLive = 3
    /// How long queued events may stay written but not yet synced to the device (`fsync`), in
    /// milliseconds: 50.
    ///
    /// Every event reaches the queue log's file as soon as the background writer gets to it, so
    /// it survives the app crashing or being killed. Syncing it to the device as well, which only
    /// matters for a power loss or an OS crash, happens at once when the last sync is older than
    /// this, and otherwise at most this long later: during a burst many appends share one sync.
    public static let queueSyncIntervalMs: Int64 = 50

    /// The SDK name sent as `sdk.name` (`score-tracker-ios`, `score-tracker-linux`, …).
    public static var sdkName: String { ScoreSDK.name }
    /// The SDK version sent as `sdk.version`: the package release.
    public static var sdkVersion: String { ScoreSDK.version }

    let publishableKey: String
    let siteId: String
    let endpoint: String
    let context: JSONObject
    /// The envelope's constant tail (`context`, `sdk`), encoded once.
    let envelopeTail: [UInt8]
    let privacy: ResolvedPrivacy
    let scrubber: PiiScrubber
    let maxQueueSize: Int
    let replayCapacity: Int
    let tokenTimeoutMs: Int64
    let store: any ScoreStore
    let transport: any HTTPTransport
    let clock: any TrackerClock
    let scheduler: any TrackerScheduler
    let ids: any ScoreIdSource
    /// `ids` when it is the production source (recording calls then mint packed event ids).
    let systemIds: SystemScoreIdSource?
    let diagnose: DiagnosticHandler
    let state: Locked<ClientState>
    /// What a recording call reads first (consent, the identity to stamp), published apart from
    /// `state` whenever either changes, so that this first look never waits for the background
    /// writer. The hand-over re-checks both under `state`'s lock: a stale view costs a re-stamp,
    /// never a wrong or lost event.
    let view: Locked<RecordingView>
    /// Left once the start-up load is merged (see `loadStored()`); `inspect()` waits on it.
    let loadDone = DispatchGroup()
    /// Left once the lazy launch's tail is spliced (entered when a launch leaves one unloaded).
    let tailDone = DispatchGroup()
    /// The `consent` diagnostic and the stored consent (`ConsentKeeper.swift`).
    let consentKeeper: ConsentKeeper

    /// The integration guide's spelling of ``init(configuration:)``: the same tracker as
    /// `ScoreClient(configuration: ScoreConfiguration(…))` given the same labelled values.
    @available(
        *, deprecated,
        message: "use init(configuration:): ScoreClient(configuration: ScoreConfiguration(publishableKey:siteId:endpoint:…))"
    )
    public convenience init(
        publishableKey: String, siteId: String, endpoint: String,
        appVersion: String? = nil, os: String? = nil, device: String? = nil, locale: String? = nil,
        privacy: PrivacyOptions? = nil, pii: PiiOptions? = nil, initialConsent: ConsentState? = nil,
        identifyReplayBufferSize: Int = 100, maxQueueSize: Int = 1_000, tokenRefreshTimeoutSeconds: TimeInterval = 5,
        store: (any ScoreStore)? = nil, transport: (any HTTPTransport)? = nil,
        clock: any TrackerClock = SystemClock(), scheduler: any TrackerScheduler = SystemScheduler.shared,
        idSource: any ScoreIdSource = SystemScoreIdSource(), onDiagnostic: DiagnosticHandler? = nil
    ) {
        self.init(
            configuration: ScoreConfiguration(
                publishableKey: publishableKey, siteId: siteId, endpoint: endpoint, appVersion: appVersion, os: os,
                device: device, locale: locale, privacy: privacy, pii: pii, initialConsent: initialConsent,
                identifyReplayBufferSize: identifyReplayBufferSize, maxQueueSize: maxQueueSize,
                tokenRefreshTimeoutSeconds: tokenRefreshTimeoutSeconds, store: store, transport: transport, clock: clock,
                scheduler: scheduler, idSource: idSource, onDiagnostic: onDiagnostic))
    }

    /// Creates a tracker: the tracker's one initializer.
    ///
    /// ```swift
    /// let score = ScoreClient(
    ///     configuration: ScoreConfiguration(
    ///         publishableKey: "pk_live_…", siteId: "urc-ios", endpoint: "https://score.example", appVersion: "4.2.0"))
    /// ```
    ///
    /// No file I/O happens here: the stored queue and identity are read by a background step.
    /// See ``ScoreConfiguration`` for every option and its default.
    public init(configuration: ScoreConfiguration) {
        let c = configuration
        self.publishableKey = c.publishableKey
        self.siteId = c.siteId
        self.endpoint = c.endpoint.hasSuffix("/") ? String(c.endpoint.dropLast()) : c.endpoint
        let resolved = ResolvedPrivacy.resolve(c.privacy)
        self.privacy = resolved
        var ctx = JSONObject()
        if let os = c.os { ctx.appendUnchecked("os", .string(os)) }
        if let appVersion = c.appVersion { ctx.appendUnchecked("appVersion", .string(appVersion)) }
        if !resolved.dropsDeviceSignals {
            if let device = c.device { ctx.appendUnchecked("device", .string(device)) }
            if let locale = c.locale { ctx.appendUnchecked("locale", .string(locale)) }
        }
        self.context = ctx
        var tail = [UInt8]()
        EnvelopeWriter.tail(context: ctx, sdkName: ScoreSDK.name, sdkVersion: ScoreSDK.version, into: &tail)
        self.envelopeTail = tail
        self.scrubber = PiiScrubber(c.pii)
        self.maxQueueSize = max(1, c.maxQueueSize)
        self.replayCapacity = max(0, c.identifyReplayBufferSize)
        self.tokenTimeoutMs = Int64((max(0, c.tokenRefreshTimeoutSeconds) * 1000).rounded())
        // In Xcode Previews nothing is written or sent (issue 37 item 7): memory only.
        let inPreviews = c.runningForPreviews()
        self.store =
            inPreviews
            ? InMemoryScoreStore()
            : c.store ?? FileScoreStore(directory: FileScoreStore.defaultDirectory(siteId: c.siteId), location: .standard())
        self.transport = inPreviews ? PreviewTransport() : c.transport ?? ScoreClient.defaultTransport()
        self.clock = c.clock
        self.scheduler = c.scheduler
        self.ids = c.idSource
        self.systemIds = c.idSource as? SystemScoreIdSource
        self.diagnose = Diagnostics.stamped(
            .score, c.onDiagnostic ?? Diagnostics.systemLog(subsystem: LogSubsystem.score, prefix: "score-tracker"))
        let consentDirectory = c.persistConsent ? (self.store as? FileScoreStore)?.directory : nil
        self.consentKeeper = ConsentKeeper(directory: consentDirectory, reading: c.initialConsent == nil)

        // Start-up: no I/O here. The stored queue and identity are read by a background step
        // (see `loadStored()`); until it is done, recording calls queue in memory with a
        // placeholder anonymous id, and nothing is written, sent or shown (see `ClientState.loaded`).
        var s = ClientState(
            consent: c.initialConsent ?? resolved.startingConsent,
            anonymousId: ScoreClient.anonymousIdBeforeLoad, sessionId: c.idSource.newSessionId())
        self.view = Locked(ScoreClient.makeView(&s, siteId: c.siteId))
        self.state = Locked(s)
        loadDone.enter()
        c.scheduler.spawnIO { [self] in loadStoredIfUnclaimed() }
        if consentKeeper.reading { c.scheduler.spawnIO { [self] in readStoredConsent() } }
        if c.persistConsent && consentDirectory == nil && !inPreviews {
            diagnose(Diagnostic(code: "storage", message: "persistConsent needs a FileScoreStore: consent is not stored"))
        }
    }

    /// Deprecated: the SDK version is baked into the build; `sdkVersion` is ignored.
    @available(*, deprecated, message: "sdk.version is baked into the build; this argument is ignored")
    public convenience init(
        publishableKey: String, siteId: String, endpoint: String,
        appVersion: String? = nil, os: String? = nil, device: String? = nil, locale: String? = nil,
        sdkVersion: String,
        privacy: PrivacyOptions? = nil, pii: PiiOptions? = nil, initialConsent: ConsentState? = nil,
        identifyReplayBufferSize: Int = 100, maxQueueSize: Int = 1_000, tokenRefreshTimeoutSeconds: TimeInterval = 5,
        store: (any ScoreStore)? = nil, transport: (any HTTPTransport)? = nil,
        clock: any TrackerClock = SystemClock(), scheduler: any TrackerScheduler = SystemScheduler.shared,
        idSource: any ScoreIdSource = SystemScoreIdSource(), onDiagnostic: DiagnosticHandler? = nil
    ) {
        self.init(
            configuration: ScoreConfiguration(
                publishableKey: publishableKey, siteId: siteId, endpoint: endpoint, appVersion: appVersion, os: os,
                device: device, locale: locale, privacy: privacy, pii: pii, initialConsent: initialConsent,
                identifyReplayBufferSize: identifyReplayBufferSize, maxQueueSize: maxQueueSize,
                tokenRefreshTimeoutSeconds: tokenRefreshTimeoutSeconds, store: store, transport: transport, clock: clock,
                scheduler: scheduler, idSource: idSource, onDiagnostic: onDiagnostic))
    }

    static func defaultTransport() -> any HTTPTransport {
        CurlTransport.shared
    }

    // MARK: - Consent

    /// Grants every category (ends any policy's starting consent).
    public func grantAllConsent() {
        setConsent(.all)
    }

    /// Replaces the consent state. Withdrawing a category removes the queued events that require it.
    public func setConsent(analytics: Bool, personalization: Bool, advertising: Bool) {
        setConsent(ConsentState(analytics: analytics, personalization: personalization, advertising: advertising))
    }

    /// Replaces the consent state. Withdrawing a category removes the queued events that require it.
    /// With ``ScoreConfiguration/persistConsent``, the state is stored for the next launches.
    public func setConsent(_ consent: ConsentState) {
        consentSetByApp(consent)
        applyConsent(consent)
    }

    /// Puts `consent` in force (from the app, or the stored consent at launch).
    func applyConsent(_ consent: ConsentState) {
        state.withLock { s in
            let withdrawn = s.consent.mask & ~consent.mask
            let added = consent.mask & ~s.consent.mask
            s.consent = consent
            publishView(&s)
            // The stored events are not in the queue yet: they leave when the load merges them.
            if !s.loaded { s.withdrawnBeforeLoad |= withdrawn }
            // The lazy launch's tail: its events leave when it is spliced.
            s.tail?.withdrawn |= withdrawn
            if added != 0 && hasAutoFlushWork(&s) { armAutoFlushIfIdle(&s) }
            if withdrawn != 0 {
                let gone = s.queue.filter { $0.requires & withdrawn != 0 }
                if !gone.isEmpty { removeFromQueue(&s, gone) }
            }
        }
    }

    // MARK: - Recording

    /// Tracks a typed event of the taxonomy (`score.track(.pollVote, properties: ["pollId": "p1"])`);
    /// its consent `requires` come from the definition. `properties` hold JSON values, `Date`,
    /// `URL`, `UUID`, `Decimal` (Apple platforms), ``ScorePropertyConvertible`` and `Encodable`
    /// values; a key whose value converts to none is dropped and reported.
    public func track(_ event: EventDefinition, properties: [String: Any] = [:], delivery: DeliveryMode = .bestEffort) {
        record(
            type: "track", name: event.name, props: properties, traits: nil, requires: ScoreClient.mask(event.requires),
            critical: delivery == .critical)
    }

    /// The integration guide's spelling of `track(_:properties:delivery:)`.
    @available(*, deprecated, renamed: "track(_:properties:delivery:)")
    public func track(_ event: EventDefinition, props: [String: Any], delivery: DeliveryMode = .bestEffort) {
        track(event, properties: props, delivery: delivery)
    }

    /// Tracks a named event. Without `requires:` it requires analytics; `requires: []` needs no
    /// particular category but is still dropped while nothing at all is granted.
    public func track(
        _ name: String, properties: [String: Any] = [:], requires: [ConsentCategory] = [.analytics],
        delivery: DeliveryMode = .bestEffort
    ) {
        record(
            type: "track", name: name, props: properties, traits: nil, requires: ScoreClient.mask(requires),
            critical: delivery == .critical)
    }

    /// The integration guide's spelling of `track(_:properties:requires:delivery:)`.
    @available(*, deprecated, renamed: "track(_:properties:requires:delivery:)")
    public func track(
        _ name: String, props: [String: Any], requires: [ConsentCategory] = [.analytics], delivery: DeliveryMode = .bestEffort
    ) {
        track(name, properties: props, requires: requires, delivery: delivery)
    }

    /// Tracks a named event that requires advertising consent.
    public func trackAdvertising(_ name: String, properties: [String: Any] = [:], delivery: DeliveryMode = .bestEffort) {
        record(
            type: "track", name: name, props: properties, traits: nil, requires: ConsentCategory.advertising.bit,
            critical: delivery == .critical)
    }

    /// The integration guide's spelling of ``trackAdvertising(_:properties:delivery:)``.
    @available(*, deprecated, renamed: "trackAdvertising(_:properties:delivery:)")
    public func trackAdvertising(_ name: String, props: [String: Any], delivery: DeliveryMode = .bestEffort) {
        trackAdvertising(name, properties: props, delivery: delivery)
    }

    /// Records a screen view (requires analytics).
    public func screen(_ name: String, properties: [String: Any] = [:]) {
        record(
            type: "screen", name: name, props: properties, traits: nil, requires: ConsentCategory.analytics.bit, critical: false)
    }

    /// The integration guide's spelling of ``screen(_:properties:)``.
    @available(*, deprecated, renamed: "screen(_:properties:)")
    public func screen(_ name: String, props: [String: Any]) {
        screen(name, properties: props)
    }

    /// Sets the fan's `userId` (persisted, even when consent drops the event), queues an
    /// `identify` event with the scrubbed `traits`, and with `replayAnonymousEvents` re-sends the
    /// events recently sent anonymously, marked `_backfill`.
    public func identify(userId: String, traits: [String: Any] = [:], replayAnonymousEvents: Bool = false) {
        guard !userId.isEmpty else {
            countInvalid("identify needs a non-empty userId")
            return
        }
        guard ScoreClient.validUserId(userId) else {
            // Never stored: every later envelope carries the userId, so an oversized one would
            // make every event too large for a request, across launches.
            countInvalid("identify userId is longer than \(ScoreClient.maxUserIdCodePoints) code points")
            return
        }
        var size = 0
        let scrubbedTraits: JSONObject
        var droppedKeys = DroppedKeys()
        do { scrubbedTraits = try scrubber.object(traits, size: &size, dropped: &droppedKeys) } catch {
            countInvalid("identify traits are nested deeper than \(PiiScrubber.maxDepth) levels")
            return
        }
        reportDropped(droppedKeys, traits: true)
        let now = clock.nowMs()
        // While the stored consent is read, the identify event waits for it (see `ConsentKeeper`).
        let parking = consentKeeper.reading
        var parked: QueuedEvent?
        var droppedUnder: ConsentState?
        state.withLock { s in
            s.userId = userId
            s.identityGeneration += 1
            publishView(&s)
            s.identityWriter.changed()
            let buffered = s.replay
            s.replay = []
            let req = ConsentCategory.analytics.bit
            if parking || allowed(req, s.consent) {
                let e = makeEvent(
                    &s, type: "identify", name: "identify", eventId: ids.newEventId(nowMs: now), timestampMs: now,
                    props: JSONObject(), traits: scrubbedTraits, requires: req, notice: false)
                if !ScoreClient.fitsAlone(e.encoded?.count ?? 0) {
                    s.counts.invalid += 1
                } else if parking {
                    parked = e
                } else {
                    enqueue(&s, e)
                }
            } else {
                countDropped(&s, req)
                droppedUnder = s.consent
            }
            if replayAnonymousEvents {
                for entry in buffered where allowed(entry.requires, s.consent) {
                    let newId = ids.newEventId(nowMs: now)
                    let bytes = EnvelopeBytes.replayCopy(
                        entry.bytes, entry.layout, originalEventId: entry.eventId, newEventId: newId, userId: userId)
                    let e = QueuedEvent(
                        eventId: newId, name: "", timestampMs: entry.timestampMs,
                        anonymousEpoch: s.anonymousEpoch, hasUserId: true, critical: false, notice: false,
                        requires: entry.requires, encoded: bytes)
                    enqueue(&s, e)
                }
            }
            kickWriters(&s)
        }
        if let droppedUnder { noteDroppedByConsent(droppedUnder) }
        if let parked {
            let p = Parked(event: parked, requires: parked.requires, restamp: nil)
            if !consentKeeper.park(p) {
                let consent = state.withLock { s -> ConsentState? in
                    defer { kickWriters(&s) }
                    return handOverParked(&s, p) ? nil : s.consent
                }
                if let consent { noteDroppedByConsent(consent) }
            }
        }
    }

    /// Signs the fan out: forgets `userId` and the token (the provider stays), mints a new
    /// `anonymousId`, starts a new session and empties the replay buffer. The queue is kept.
    public func reset() {
        // Before the start-up load, the anonymous id the events recorded so far get when the
        // store holds none is minted first, as the constructor of an earlier version did.
        let fallback = state.withLock { !$0.loaded && $0.fallbackAnonymousId == nil } ? ids.newAnonymousId() : nil
        let anon = ids.newAnonymousId()
        let session = ids.newSessionId()
        state.withLock { s in
            if let fallback, !s.loaded, s.fallbackAnonymousId == nil { s.fallbackAnonymousId = fallback }
            s.userId = nil
            s.tokens.token = nil
            s.anonymousId = anon
            s.anonymousEpoch = s.anonymousEpoch &+ 1 == QueuedEvent.otherAnonymous ? 0 : s.anonymousEpoch &+ 1
            s.sessionId = session
            s.identityGeneration += 1
            publishView(&s)
            s.replay = []
            s.lastSkip = nil
            s.identityWriter.changed()
            kickWriters(&s)
        }
    }

    // MARK: - Token

    /// Sets the token provider, consulted before each flush (single-flight, bounded by
    /// `tokenRefreshTimeoutSeconds`). A throw or `nil` keeps the last known token.
    public func setTokenProvider(_ provider: @escaping @Sendable () async throws -> String?) {
        state.withLock { $0.tokens.provider = provider }
    }

    /// Sets the last known token; `nil` clears it.
    public func setToken(_ token: String?) {
        state.withLock { $0.tokens.token = token }
    }

    /// Why the link-anonymous request has not happened, or `nil`.
    public var lastLinkSkipReason: LinkSkipReason? {
        state.withLock { $0.lastSkip }
    }

}

/// A thin wrapper so call sites read plainly.
enum WireJSONDecoderShim {
    static func decode(_ bytes: [UInt8]) throws -> JSONValue {
        try WireJSON.decode(bytes)
    }
}
