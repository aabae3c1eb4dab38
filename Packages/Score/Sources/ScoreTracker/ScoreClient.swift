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

    /// Creates a tracker. Only `publishableKey`, `siteId` and `endpoint` are required.
    ///
    /// The same as ``init(configuration:)`` given a ``ScoreConfiguration`` of these values.
    ///
    /// - Parameters:
    ///   - publishableKey: sent as `X-Publishable-Key`.
    ///   - siteId: sent in every envelope.
    ///   - endpoint: base URL; one trailing `/` is dropped.
    ///   - appVersion: `context.appVersion`; left out when `nil`.
    ///   - os: `context.os`; left out when `nil`.
    ///   - device: `context.device`; left out when `nil` or when the privacy policy drops it.
    ///   - locale: `context.locale`; left out when `nil` or when the privacy policy drops it.
    ///   - privacy: the regional policy, fixed for the tracker's lifetime.
    ///   - pii: scrubbing applied to `props` and `traits` before queueing.
    ///   - initialConsent: the starting consent (else the policy's; else nothing granted).
    ///   - identifyReplayBufferSize: anonymously sent events kept for replay (memory only).
    ///   - maxQueueSize: queue cap (`delivery_failed` notices excluded).
    ///   - tokenRefreshTimeoutSeconds: how long a flush waits for the token provider.
    ///   - store: durable storage; default a ``FileScoreStore`` in the platform's data directory.
    ///   - transport: HTTP; default Core's libcurl transport.
    ///   - clock: time source (tests inject a manual clock).
    ///   - scheduler: runs every timer and background step (tests inject a manual scheduler).
    ///   - idSource: mints event, anonymous and session ids.
    ///   - onDiagnostic: receives diagnostics (never tokens or personal data); default: the unified
    ///     log (`os.Logger`, subsystem `com.rocapine.score`) on Apple platforms, stderr elsewhere.
    public convenience init(
        publishableKey: String, siteId: String, endpoint: String,
        appVersion: String? = nil, os: String? = nil, device: String? = nil, locale: String? = nil,
        privacy: PrivacyOptions? = nil, pii: PiiOptions? = nil, initialConsent: ConsentState? = nil,
        identifyReplayBufferSize: Int = 100, maxQueueSize: Int = 1_000, tokenRefreshTimeoutSeconds: Double = 5,
        store: (any ScoreStore)? = nil, transport: (any HTTPTransport)? = nil,
        clock: any TrackerClock = SystemClock(), scheduler: any TrackerScheduler = SystemScheduler.shared,
        idSource: any ScoreIdSource = SystemScoreIdSource(), onDiagnostic: DiagnosticHandler? = nil
    ) {
        var c = ScoreConfiguration(publishableKey: publishableKey, siteId: siteId, endpoint: endpoint)
        (c.appVersion, c.os, c.device, c.locale) = (appVersion, os, device, locale)
        (c.privacy, c.pii, c.initialConsent) = (privacy, pii, initialConsent)
        (c.identifyReplayBufferSize, c.maxQueueSize) = (identifyReplayBufferSize, maxQueueSize)
        c.tokenRefreshTimeoutSeconds = tokenRefreshTimeoutSeconds
        (c.store, c.transport, c.clock, c.scheduler) = (store, transport, clock, scheduler)
        (c.idSource, c.onDiagnostic) = (idSource, onDiagnostic)
        self.init(configuration: c)
    }

    /// Creates a tracker from a configuration: the same tracker as the labelled initializer
    /// given the same values.
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
        self.store = c.store ?? FileScoreStore(directory: FileScoreStore.defaultDirectory(siteId: c.siteId), location: .standard())
        self.transport = c.transport ?? ScoreClient.defaultTransport()
        self.clock = c.clock
        self.scheduler = c.scheduler
        self.ids = c.idSource
        self.systemIds = c.idSource as? SystemScoreIdSource
        self.diagnose = c.onDiagnostic ?? Diagnostics.systemLog(subsystem: LogSubsystem.score, prefix: "score-tracker")

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
    }

    /// Deprecated: the SDK version is baked into the build; `sdkVersion` is ignored.
    @available(*, deprecated, message: "sdk.version is baked into the build; this argument is ignored")
    public convenience init(
        publishableKey: String, siteId: String, endpoint: String,
        appVersion: String? = nil, os: String? = nil, device: String? = nil, locale: String? = nil,
        sdkVersion: String,
        privacy: PrivacyOptions? = nil, pii: PiiOptions? = nil, initialConsent: ConsentState? = nil,
        identifyReplayBufferSize: Int = 100, maxQueueSize: Int = 1_000, tokenRefreshTimeoutSeconds: Double = 5,
        store: (any ScoreStore)? = nil, transport: (any HTTPTransport)? = nil,
        clock: any TrackerClock = SystemClock(), scheduler: any TrackerScheduler = SystemScheduler.shared,
        idSource: any ScoreIdSource = SystemScoreIdSource(), onDiagnostic: DiagnosticHandler? = nil
    ) {
        self.init(
            publishableKey: publishableKey, siteId: siteId, endpoint: endpoint, appVersion: appVersion, os: os,
            device: device, locale: locale, privacy: privacy, pii: pii, initialConsent: initialConsent,
            identifyReplayBufferSize: identifyReplayBufferSize, maxQueueSize: maxQueueSize,
            tokenRefreshTimeoutSeconds: tokenRefreshTimeoutSeconds, store: store, transport: transport,
            clock: clock, scheduler: scheduler, idSource: idSource, onDiagnostic: onDiagnostic)
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
    public func setConsent(_ consent: ConsentState) {
        state.withLock { s in
            let withdrawn = s.consent.mask & ~consent.mask
            let added = consent.mask & ~s.consent.mask
            s.consent = consent
            publishView(&s)
            // The stored events are not in the queue yet: they leave when the load merges them.
            if !s.loaded { s.withdrawnBeforeLoad |= withdrawn }
            if added != 0 && hasAutoFlushWork(&s) { armAutoFlushIfIdle(&s) }
            if withdrawn != 0 {
                let gone = s.queue.filter { $0.requires & withdrawn != 0 }
                if !gone.isEmpty { removeFromQueue(&s, gone) }
            }
        }
    }

    // MARK: - Recording

    /// Tracks a typed event of the taxonomy; its consent `requires` come from the definition.
    public func track(_ event: EventDefinition, props: [String: Any] = [:], delivery: DeliveryMode = .bestEffort) {
        record(
            type: "track", name: event.name, props: props, traits: nil, requires: ScoreClient.mask(event.requires),
            critical: delivery == .critical)
    }

    /// Tracks a named event. Without `requires:` it requires analytics; `requires: []` needs no
    /// particular category but is still dropped while nothing at all is granted.
    public func track(
        _ name: String, props: [String: Any] = [:], requires: [ConsentCategory] = [.analytics],
        delivery: DeliveryMode = .bestEffort
    ) {
        record(
            type: "track", name: name, props: props, traits: nil, requires: ScoreClient.mask(requires),
            critical: delivery == .critical)
    }

    /// Tracks a named event that requires advertising consent.
    public func trackAdvertising(_ name: String, props: [String: Any] = [:], delivery: DeliveryMode = .bestEffort) {
        record(
            type: "track", name: name, props: props, traits: nil, requires: ConsentCategory.advertising.bit,
            critical: delivery == .critical)
    }

    /// Records a screen view (requires analytics).
    public func screen(_ name: String, props: [String: Any] = [:]) {
        record(type: "screen", name: name, props: props, traits: nil, requires: ConsentCategory.analytics.bit, critical: false)
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
        do { scrubbedTraits = try scrubber.object(traits, size: &size) } catch {
            countInvalid("identify traits hold a value that is not JSON")
            return
        }
        let now = clock.nowMs()
        state.withLock { s in
            s.userId = userId
            s.identityGeneration += 1
            publishView(&s)
            s.identityDirty = true
            let buffered = s.replay
            s.replay = []
            let req = ConsentCategory.analytics.bit
            if allowed(req, s.consent) {
                let fields = EnvelopeFields(
                    type: "identify", name: "identify", eventId: ids.newEventId(nowMs: now), timestampMs: now,
                    anonymousId: s.anonymousId, sessionId: s.sessionId, userId: userId, siteId: siteId, props: JSONObject(),
                    traits: scrubbedTraits, context: context, sdkName: ScoreSDK.name, sdkVersion: ScoreSDK.version)
                if !fitsAlone(fields, sizeBound: size) {
                    s.invalid += 1
                } else {
                    enqueue(&s, makeEvent(&s, fields, requires: req, critical: false, notice: false))
                }
            } else {
                countDropped(&s, req)
            }
            if replayAnonymousEvents {
                for entry in buffered where allowed(entry.requires, s.consent) {
                    let newId = ids.newEventId(nowMs: now)
                    let bytes = EnvelopeBytes.replayCopy(entry.bytes, originalEventId: entry.eventId, newEventId: newId, userId: userId)
                    let e = QueuedEvent(
                        eventId: newId, name: "", timestampMs: entry.timestampMs,
                        anonymousEpoch: s.anonymousEpoch, hasUserId: true, critical: false, notice: false,
                        requires: entry.requires, fields: nil, encoded: bytes)
                    enqueue(&s, e)
                }
            }
            kickWriters(&s)
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
            s.token = nil
            s.anonymousId = anon
            s.anonymousEpoch = s.anonymousEpoch &+ 1 == QueuedEvent.otherAnonymous ? 0 : s.anonymousEpoch &+ 1
            s.sessionId = session
            s.identityGeneration += 1
            publishView(&s)
            s.replay = []
            s.lastSkip = nil
            s.identityDirty = true
            kickWriters(&s)
        }
    }

    // MARK: - Token

    /// Sets the token provider, consulted before each flush (single-flight, bounded by
    /// `tokenRefreshTimeoutSeconds`). A throw or `nil` keeps the last known token.
    public func setTokenProvider(_ provider: @escaping @Sendable () async throws -> String?) {
        state.withLock { $0.provider = provider }
    }

    /// Sets the last known token; `nil` clears it.
    public func setToken(_ token: String?) {
        state.withLock { $0.token = token }
    }

    /// Why the link-anonymous request has not happened, or `nil`.
    public var lastLinkSkipReason: LinkSkipReason? {
        state.withLock { $0.lastSkip }
    }

    // MARK: - Internals: recording

    static func mask(_ categories: [ConsentCategory]) -> UInt8 {
        var m: UInt8 = 0
        for c in categories { m |= c.bit }
        return m
    }

    func allowed(_ requires: UInt8, _ consent: ConsentState) -> Bool {
        let granted = consent.mask
        if requires == 0 { return granted != 0 }
        return requires & ~granted == 0
    }

    func countDropped(_ s: inout ClientState, _ requires: UInt8) {
        s.droppedByConsent += 1
        let granted = s.consent.mask
        for (i, c) in ConsentCategory.allCases.enumerated() where requires & c.bit != 0 && granted & c.bit == 0 {
            s.droppedByCategory[i] += 1
        }
    }

    func countInvalid(_ message: String) {
        state.withLock { $0.invalid += 1 }
        diagnose(Diagnostic(code: "invalid-event", message: message))
    }

    /// `userId` length at most, in Unicode code points (the spec sets none; decided here, see
    /// the CHANGELOG): room for any auth provider's subject (`auth0|…`, e-mail addresses, UUIDs)
    /// while a userId, which every envelope carries, stays under 1.5 KB even fully escaped.
    public static let maxUserIdCodePoints = 256

    static func withinCodePoints(_ text: String, _ limit: Int) -> Bool {
        if text.utf8.count <= limit { return true }
        var n = 0
        for _ in text.unicodeScalars {
            n += 1
            if n > limit { return false }
        }
        return true
    }

    static func validUserId(_ userId: String) -> Bool {
        !userId.isEmpty && withinCodePoints(userId, maxUserIdCodePoints)
    }

    static func validName(_ name: String) -> Bool {
        guard !name.isEmpty else { return false }
        if name.utf8.count <= 128 { return true }
        var n = 0
        for _ in name.unicodeScalars {
            n += 1
            if n > 128 { return false }
        }
        return true
    }

    private func record(type: String, name: String, props: [String: Any], traits: [String: Any]?, requires: UInt8, critical: Bool) {
        guard ScoreClient.validName(name) else {
            countInvalid(name.isEmpty ? "an event name is empty" : "an event name is longer than 128 code points")
            return
        }
        // A first look: consent, and the identity to stamp (pre-encoded).
        let v = view.withLock { $0 }
        if !allowed(requires, v.consent) {
            // A dropped event is only validated, never scrubbed.
            var size = 0
            do { _ = try PiiScrubber.validator.object(props, size: &size) } catch {
                countInvalid("props hold a value that is not JSON")
                return
            }
            let dropped = state.withLock { s in
                // Consent granted meanwhile: record after all.
                if allowed(requires, s.consent) { return false }
                countDropped(&s, requires)
                return true
            }
            if dropped { return }
        }
        let (anonEpoch, hasUserId, identity, generation) = (v.anonymousEpoch, v.hasUserId, v.identity, v.generation)
        // Scrubbed and encoded here, on the caller's thread, straight into wire bytes: the queued
        // event holds its compact envelope only (no value tree), so a burst the writer has not
        // caught up with yet stays small in memory, and the writer only frames and appends.
        // One writer takes the props, then the head (the props are scrubbed before the clock is
        // read and the event id minted, as ever); the envelope is copied out of it once, in order.
        var w = WireWriter(capacity: 512)
        do { try scrubber.write(props, into: &w) } catch {
            countInvalid("props hold a value that is not JSON")
            return
        }
        let propsCount = w.count
        let now = clock.nowMs()
        // The production source's ids go straight to their packed form: no string is built.
        let id: CompactEventId
        if let systemIds {
            let (hi, lo) = systemIds.newEventIdHalves(nowMs: now)
            id = .uuid(hi, lo)
        } else {
            id = CompactEventId(ids.newEventId(nowMs: now))
        }
        EnvelopeWriter.head(type: type, name: name, eventId: id, timestampMs: now, into: &w)
        let headCount = w.count - propsCount
        let bytes = EnvelopeWriter.assemble(w, propsCount: propsCount, identity: identity, tail: envelopeTail)
        if bytes.count + ScoreClient.bodyOverhead > ScoreClient.maxBodyBytes {
            countInvalid("an event is too large for any request")
            return
        }
        var event = QueuedEvent(
            id: id, name: name, timestampMs: now, anonymousEpoch: anonEpoch,
            hasUserId: hasUserId, critical: critical, notice: false, requires: requires,
            fields: nil, encoded: bytes)
        // The hand-over: a lock and an append. What it takes off `dropLater` is freed after it.
        let (starts, taken) = state.withLock { s -> (WriterStarts, DropLaterTaken) in
            guard allowed(requires, s.consent) else {
                countDropped(&s, requires)
                return (WriterStarts(), DropLaterTaken())
            }
            if s.identityGeneration != generation {
                // Identity changed meanwhile (identify, reset, new session): stamp the current one.
                let restamped = EnvelopeWriter.restamp(
                    bytes, headCount: headCount, oldIdentityCount: identity.count, identity: identityBytes(&s))
                event = QueuedEvent(
                    id: id, name: name, timestampMs: now, anonymousEpoch: s.anonymousEpoch,
                    hasUserId: s.userId != nil, critical: critical, notice: false, requires: requires,
                    fields: nil, encoded: restamped)
            }
            enqueue(&s, event)
            let taken = ScoreClient.takeDropLater(&s)
            return (claimWriters(&s), taken)
        }
        withExtendedLifetime(taken) {}
        start(starts)
    }

    /// Logs the removal of persisted events: joined to the removal still waiting to be written,
    /// when there is one (one record and one allocation per write instead of one per event).
    /// Any place in the backlog is safe: the events' add records are already on disk.
    /// While the store fails and stored events are held (see `heldWhileFailing`), a write is
    /// needed to learn that the store works again: when no other operation is queued, an empty
    /// removal record (a dead record of one byte) is.
    static func probeStoreIfHolding(_ s: inout ClientState) {
        guard s.storeFailing, s.writeOps.isEmpty, s.queue.contains(where: { $0.persisted }) else { return }
        s.writeOps.append(.remove([]))
        s.deadRecords += 1
    }

    static func logRemoval(_ s: inout ClientState, _ ids: [CompactEventId]) {
        s.deadRecords += ids.count
        if let i = s.pendingRemoval, i < s.writeOps.count, case .remove(var joined) = s.writeOps[i] {
            s.writeOps[i] = .compact  // placeholder while `joined` is uniquely held
            joined.append(contentsOf: ids)
            s.writeOps[i] = .remove(joined)
        } else {
            s.pendingRemoval = s.writeOps.count
            s.writeOps.append(.remove(ids))
            s.deadRecords += 1
        }
    }

    /// Empties `dropLater` when the writer goes idle, a few events per lock hold, freeing outside
    /// the lock (recording calls may be running).
    private func releaseDropLaterOnExit() {
        while true {
            // What is taken here is freed when `bytes` and `events` go, after the lock.
            var bytes: [[UInt8]] = []
            let events: [QueuedEvent] = state.withLock { s in
                let n = min(16, s.dropLater.count)
                let taken = Array(s.dropLater.suffix(n))
                s.dropLater.removeLast(n)
                for e in taken where e.persisted && e.location != nil {
                    if let b = e.encoded { bytes.append(b) }
                    e.encoded = nil
                }
                return taken
            }
            if events.isEmpty { return }
        }
    }

    /// What a recording call takes off `dropLater` (see ``takeDropLater(_:)``): held until the
    /// lock is released, then freed.
    struct DropLaterTaken {
        var first: (QueuedEvent, [UInt8]?)?
        var second: (QueuedEvent, [UInt8]?)?
    }

    /// Takes up to two events off `dropLater`, dropping the bytes of one still queued and located
    /// on disk. The references (maybe an event's last) and the bytes come back in the result, so
    /// that the caller frees them after the lock: a free is no work to do while holding it.
    static func takeDropLater(_ s: inout ClientState) -> DropLaterTaken {
        var taken = DropLaterTaken()
        func take() -> (QueuedEvent, [UInt8]?)? {
            guard let e = s.dropLater.popLast() else { return nil }
            var bytes: [UInt8]?
            if e.persisted, e.location != nil {
                bytes = e.encoded
                e.encoded = nil
            }
            return (e, bytes)
        }
        taken.first = take()
        if taken.first != nil { taken.second = take() }
        return taken
    }

    /// Publishes the recording view of `s` (call after changing consent or identity).
    func publishView(_ s: inout ClientState) {
        let v = ScoreClient.makeView(&s, siteId: siteId)
        view.withLock { $0 = v }
    }

    static func makeView(_ s: inout ClientState, siteId: String) -> RecordingView {
        RecordingView(
            consent: s.consent, anonymousEpoch: s.anonymousEpoch, hasUserId: s.userId != nil,
            identity: identityBytes(&s, siteId: siteId), generation: s.identityGeneration)
    }

    /// The current identity part of an envelope, encoded once per identity generation.
    func identityBytes(_ s: inout ClientState) -> [UInt8] { ScoreClient.identityBytes(&s, siteId: siteId) }

    static func identityBytes(_ s: inout ClientState, siteId: String) -> [UInt8] {
        if s.identityBytesGeneration != s.identityGeneration {
            var out = [UInt8]()
            EnvelopeWriter.identity(
                anonymousId: s.anonymousId, sessionId: s.sessionId, userId: s.userId, siteId: siteId,
                into: &out)
            s.identityBytes = out
            s.identityBytesGeneration = s.identityGeneration
        }
        return s.identityBytes
    }

    /// Whether the envelope fits a request body on its own.
    func fitsAlone(_ fields: EnvelopeFields, sizeBound: Int) -> Bool {
        if sizeBound < 400_000 { return true }
        return fields.encode().count + ScoreClient.bodyOverhead <= ScoreClient.maxBodyBytes
    }

    /// Bytes of a body around its events: `{"sentAt":"…","events":[` and `]}`.
    static let bodyOverhead = #"{"sentAt":"2026-03-01T12:00:00.000Z","events":[]}"#.utf8.count

    func makeEvent(_ s: inout ClientState, _ f: EnvelopeFields, requires: UInt8, critical: Bool, notice: Bool) -> QueuedEvent {
        let e = QueuedEvent(
            eventId: f.eventId, name: f.name, timestampMs: f.timestampMs,
            anonymousEpoch: s.anonymousEpoch, hasUserId: f.userId != nil, critical: critical, notice: notice,
            requires: requires, fields: f, encoded: nil)
        return e
    }

    /// Adds `e` to the queue under the cap rules of section 7.
    func enqueue(_ s: inout ClientState, _ e: QueuedEvent) {
        if e.notice {
            s.queue.append(e)
            s.noticeCount += 1
            s.writeOps.append(.add(e))
            if s.noticeCount > ScoreClient.maxNotices, let i = s.queue.firstIndex(where: { $0.notice }) {
                let old = s.queue[i]
                removeFromQueue(&s, [old])
            }
            return
        }
        if s.queue.count - s.noticeCount >= maxQueueSize {
            if let i = s.queue.firstIndex(where: { !$0.critical && !$0.notice }) {
                s.shed += 1
                removeFromQueue(&s, [s.queue[i]])
            } else if !e.critical {
                s.shed += 1
                return
            } else if let i = s.queue.firstIndex(where: { $0.critical }) {
                let lost = s.queue[i]
                removeFromQueue(&s, [lost])
                criticalLost(&s, lost, reason: "queue_full", now: clock.nowMs(), pendingAdd: e)
            }
        }
        s.queue.append(e)
        s.writeOps.append(.add(e))
        if s.autoFlushMs != nil && s.autoFlushTimer == nil { armAutoFlushIfIdle(&s) }
    }

    /// Counts a lost critical event and queues its `delivery_failed` notice.
    func criticalLost(_ s: inout ClientState, _ lost: QueuedEvent, reason: String, now: Int64, pendingAdd: QueuedEvent? = nil) {
        s.criticalLost += 1
        let req = ConsentCategory.analytics.bit
        guard allowed(req, s.consent) else {
            countDropped(&s, req)
            return
        }
        var props = JSONObject()
        props.appendUnchecked("originalEventId", .string(lost.eventId))
        props.appendUnchecked("originalEventName", .string(lost.name))
        props.appendUnchecked("reason", .string(reason))
        let fields = EnvelopeFields(
            type: "track", name: "delivery_failed", eventId: ids.newEventId(nowMs: now), timestampMs: now,
            anonymousId: s.anonymousId, sessionId: s.sessionId, userId: s.userId, siteId: siteId, props: props,
            traits: nil, context: context, sdkName: ScoreSDK.name, sdkVersion: ScoreSDK.version)
        enqueue(&s, makeEvent(&s, fields, requires: req, critical: false, notice: true))
    }

    /// Removes `events` from the queue and logs their removal.
    /// How many events leave the front of `queue` when the events just marked as left are all
    /// there (at most `marked`); `nil` when some of them are further back.
    static func leavingFront(_ queue: EventQueue, _ marked: Int) -> Int? {
        var n = 0
        var i = queue.startIndex
        while i < queue.endIndex && n < marked && !queue[i].inQueue {
            n += 1
            i += 1
        }
        // Some marked events further back: the general pass.
        return n == marked ? n : nil
    }

    func removeFromQueue(_ s: inout ClientState, _ events: [QueuedEvent]) {
        guard !events.isEmpty else { return }
        var notices = 0
        var persisted: [CompactEventId] = []
        var marked = 0
        for e in events where e.inQueue {
            e.inQueue = false
            marked += 1
            if e.notice { notices += 1 }
            // The writer skips an unpersisted add: release its fields and bytes now.
            if !e.persisted {
                e.fields = nil
                e.encoded = nil
            }
            // An unpersisted add is skipped by the writer instead (which logs a removal when
            // the event left while its add was being written).
            if e.persisted { persisted.append(e.id) }
        }
        if marked == 0 {
            // None was queued: nothing to take out.
        } else if events.count == 1, let i = s.queue.firstIndex(where: { $0 === events[0] }) {
            s.queue.remove(at: i, releasing: &s.dropLater)
        } else if let removed = ScoreClient.leavingFront(s.queue, marked) {
            // A delivered batch of the oldest events: cut the front, not a pass over the queue.
            s.queue.removeFirst(removed)
        } else {
            s.queue.removeAll { !$0.inQueue }
        }
        s.noticeCount -= notices
        if !persisted.isEmpty { ScoreClient.logRemoval(&s, persisted) }
    }

    /// How long an event may stay queued (the privacy policy's retention), in milliseconds.
    var retentionMs: Int64 { Int64(privacy.retentionHours) * 3_600_000 }

    /// Drops events older than the retention cap (notices silently; critical ones are lost).
    func applyRetention(_ s: inout ClientState, now: Int64) {
        let retentionMs = self.retentionMs
        let expired = s.queue.filter { now - $0.timestampMs > retentionMs }
        guard !expired.isEmpty else { return }
        removeFromQueue(&s, expired)
        for e in expired where !e.notice {
            s.expired += 1
            if e.critical { criticalLost(&s, e, reason: "age_evicted", now: now) }
        }
    }

    // MARK: - Internals: persistence

    /// Starts the background writers when they have work.
    func kickWriters(_ s: inout ClientState) {
        start(claimWriters(&s))
    }

    /// Which background writers a caller claimed (marked running) and must start.
    struct WriterStarts {
        var queue = false
        var identity = false
    }

    /// Marks the writers that have work and are not running as running (under the lock); the
    /// caller starts them with ``start(_:)``, after the lock when it can (starting one wakes a
    /// thread: no lock should be held meanwhile).
    func claimWriters(_ s: inout ClientState) -> WriterStarts {
        var w = WriterStarts()
        // Before the start-up load nothing is written: the log is not read yet, and the events
        // recorded meanwhile still carry the placeholder anonymous id.
        guard s.loaded else { return w }
        w.queue = s.writer.claim(hasWork: !s.writeOps.isEmpty)
        if s.identityDirty && !s.identityWriterRunning {
            s.identityWriterRunning = true
            w.identity = true
        }
        return w
    }

    func start(_ w: WriterStarts) {
        if w.queue { scheduler.spawnIO { [self] in await runQueueWriter() } }
        if w.identity {
            if let file = store as? FileScoreStore, scheduler is SystemScheduler {
                ScoreClient.syncThread.run { [self] in runIdentityWriterBlocking(file) }
            } else {
                scheduler.spawnIO { [self] in await runIdentityWriter() }
            }
        }
    }

    private func runQueueWriter() async {
        // The writer takes the whole backlog of operations at once (a swap under the lock) and
        // writes it `writerBatch` operations per append, so a burst never holds a second copy
        // of the backlog's bytes and the lock is only ever held briefly.
        var pending: [WriteOp] = []
        var at = 0
        while true {
            if at >= pending.count {
                let now = clock.nowMs()
                let next: QueueWriterMachine.IdleStep?
                (pending, next) = state.withLock { s in
                    let ops = s.writeOps
                    s.writeOps = []
                    s.pendingRemoval = nil
                    s.writeOpsTaken = s.writeOpsWritten + ops.count
                    if !ops.isEmpty {
                        s.writer.tookWork()
                        return (ops, nil)
                    }
                    // Idle: appends left unsynced are synced now when due (then look again),
                    // otherwise by a timer.
                    let step = s.writer.backlogEmpty(
                        unsynced: s.sync.unsynced, syncWaitMs: s.sync.waitMs(now: now), syncTimerArmed: s.sync.timerArmed)
                    if case .exit(armSyncTimerMs: _?) = step { s.sync.armTimer() }
                    return (ops, step)
                }
                at = 0
                switch next {
                case nil:
                    break
                case .syncFirst?:
                    startQueueSync(now: now)
                    continue
                case .nap(let us)?:
                    let paused = await scheduler.pauseIO(microseconds: us)
                    state.withLock { $0.writer.napEnded(paused: paused) }
                    continue
                case .exit(let armSyncTimerMs)?:
                    if let wait = armSyncTimerMs {
                        scheduler.schedule(afterMs: wait) { [self] in
                            scheduler.spawnIO { [self] in await queueSyncTimerFired() }
                        }
                    }
                    releaseDropLaterOnExit()
                    return
                }
            }
            let end = min(pending.count, at + ScoreClient.writerBatch)
            let opCount = end - at
            var ops = Array(pending[at..<end])
            // Drop the backlog's hold on this batch (see `ClientState.dropLater`).
            for k in at..<end { pending[k] = .remove([]) }
            at = end
            var toDrop: [QueuedEvent] = []
            var records: [[UInt8]] = []
            // Each added event with its encoding, record index and fields (released after the
            // lock, not inside it).
            var added: [(QueuedEvent, [UInt8], Int, EnvelopeFields?)] = []
            var compact = false
            records.reserveCapacity(ops.count)
            added.reserveCapacity(ops.count)
            // Snapshot the adds' state, 16 at a time under the lock (short holds).
            var snapshot: [(Bool, EnvelopeFields?, [UInt8]?)] = []
            snapshot.reserveCapacity(ops.count)
            var c = 0
            while c < ops.count {
                state.withLock { _ in
                    var taken = 0
                    while c < ops.count && taken < 16 {
                        if case .add(let e) = ops[c] {
                            snapshot.append((e.inQueue, e.fields, e.encoded))
                            if !e.inQueue { toDrop.append(e) }
                            taken += 1
                        }
                        c += 1
                    }
                }
            }
            var nextAdd = 0
            for op in ops {
                switch op {
                case .add(let e):
                    let (live, fields, encoded) = snapshot[nextAdd]
                    nextAdd += 1
                    guard live else { continue }
                    let env = encoded ?? fields?.encode() ?? []
                    added.append((e, env, records.count, fields))
                    records.append(QueueRecord.add(e, envelope: env))
                case .remove(let idList):
                    records.append(QueueRecord.remove(idList))
                case .compact:
                    compact = true
                }
            }
            var locations: [ScoreRecordLocation]?
            var appended = false
            if !records.isEmpty {
                do {
                    locations = try await store.appendQueueRecordsDeferringSync(records)
                    appended = true
                } catch {
                    // Nothing of this append counts as written: its operations and the rest of
                    // the backlog go back to the front of `writeOps`, in order, for a retry.
                    records = []
                    added = []
                    snapshot = []
                    writeFailed(retrying: ops + pending[at...], released: toDrop)
                    return
                }
                if locations?.count != records.count { locations = nil }
            }
            records = []
            var leftMeanwhile: [CompactEventId] = []
            var i = 0
            while i < added.count {
                let j = min(added.count, i + 16)
                state.withLock { _ in
                    for k in i..<j {
                        let (e, env, index, _) = added[k]
                        if let locations {
                            // On disk and readable back: keep only the location in memory (the
                            // bytes are released by a recording call, see `dropLater`).
                            e.location = locations[index]
                            toDrop.append(e)
                        } else {
                            e.encoded = env
                        }
                        e.fields = nil
                        e.persisted = true
                        if !e.inQueue { leftMeanwhile.append(e.id) }
                    }
                }
                i = j
            }
            added = []
            snapshot = []
            ops = []
            let (resume, removalsWritten): ((Int, [FlushMachine.Action])?, [RemovalWait]) = state.withLock { s in
                s.writeOpsWritten += opCount
                let removalsWritten = takeRemovalWaits(&s)
                if appended {
                    let recovered = s.storeFailing
                    s.writer.appended()
                    // The stored events held while writes failed can be sent again.
                    if recovered, s.autoFlushMs != nil, s.autoFlushTimer == nil, hasAutoFlushWork(&s) { armAutoFlushIfIdle(&s) }
                }
                s.dropLater.append(contentsOf: toDrop)
                if !leftMeanwhile.isEmpty { ScoreClient.logRemoval(&s, leftMeanwhile) }
                // Not while a quick load's check runs: it finds damaged events by their location.
                if !compact, !s.checkPending, s.deadRecords > ScoreClient.compactionMinDead,
                    s.deadRecords > ScoreClient.compactionDeadPerLive * s.queue.count
                {
                    compact = true
                }
                // One compaction at a time: a later one is asked for again by the dead records.
                if s.compacting { compact = false }
                if compact { s.deadRecords = 0 }
                // An event that left the queue unwritten is never written: not waited for.
                if let f = s.flight, f.machine.phase == .waitingPersist, f.selected.allSatisfy({ $0.persisted || !$0.inQueue }) {
                    return ((f.id, runLocked(f.machine.handle(.persisted(hasProvider: s.provider != nil)), &s, f)), removalsWritten)
                }
                return (nil, removalsWritten)
            }
            for w in removalsWritten { w.finish() }
            toDrop = []
            // A file store's compaction writes its new file off this path (appends go on); any
            // other store's runs here, between appends.
            var compactedHere = false
            if compact, !compactOffThePath() {
                await compactLog()
                compactedHere = true
            }
            if let (id, after) = resume { runAfterLock(id, after, spawnSend: true) }
            // A compaction's rename is synced with the appends (see `FileScoreStore`).
            if appended || compactedHere {
                let now = clock.nowMs()
                let due = state.withLock { s in
                    s.sync.appended()
                    return s.sync.waitMs(now: now) <= 0
                }
                if due { startQueueSync(now: now) }
            }
        }
    }

    /// First retry of a failed queue-log write, in milliseconds (soon: a full disk often frees
    /// space within moments); each failure in a row doubles it up to ``writeRetryMaxMs``.
    static let writeRetryMs: Int64 = 100
    static let writeRetryMaxMs: Int64 = 30_000

    /// A queue-log append failed (ENOSPC, EROFS, EIO…): `ops` (the failed operations, then the
    /// rest of the writer's backlog) go back to the front of `writeOps` unpersisted, and the
    /// writer stops until a retry timer (100 ms, doubling to 30 s) starts it again. Recording calls
    /// keep queueing meanwhile and a flush sends without waiting for them to be stored (they
    /// cannot be). Diagnosed once per run of failures.
    private func writeFailed(retrying ops: some Collection<WriteOp>, released: [QueuedEvent]) {
        let (first, delay, resume, unwritten): (Bool, Int64, (Int, [FlushMachine.Action])?, [RemovalWait]) = state.withLock { s in
            s.writeOps = Array(ops) + s.writeOps
            s.writeOpsTaken = s.writeOpsWritten
            // The removals cannot be written now: the flushes waiting for them go on.
            let unwritten = takeRemovalWaits(&s, all: true)
            s.pendingRemoval = nil
            s.dropLater.append(contentsOf: released)
            let (first, delay) = s.writer.appendFailed(retryMs: ScoreClient.writeRetryMs, retryMaxMs: ScoreClient.writeRetryMaxMs)
            var resume: (Int, [FlushMachine.Action])?
            if let f = s.flight, f.machine.phase == .waitingPersist {
                // Sent from memory: they cannot be persisted now.
                resume = (f.id, runLocked(f.machine.handle(.persisted(hasProvider: s.provider != nil)), &s, f))
            }
            return (first, delay, resume, unwritten)
        }
        for w in unwritten { w.finish() }
        if first {
            diagnose(Diagnostic(code: "storage", message: "could not persist the queue; events stay in memory and writing is retried"))
        }
        scheduler.schedule(afterMs: delay) { [self] in
            state.withLock { s in
                s.writer.retryTimerFired()
                ScoreClient.probeStoreIfHolding(&s)
                kickWriters(&s)
            }
        }
        if let (id, after) = resume { runAfterLock(id, after, spawnSend: true) }
        releaseDropLaterOnExit()
    }

    /// The thread every client's queue-log `fsync` runs on in production (see
    /// ``startQueueSync(now:)``): one of its own, on every OS version, so that an `fsync` never
    /// blocks the writer's thread (appends go on meanwhile) nor a thread of Swift's shared pool.
    static let syncThread = SerialThread(name: "score.sync")

    /// Syncs the queue log's unsynced appends to the device apart from the writer: the writer
    /// goes on appending while an `fsync` runs, so an event reaches the file (and survives the
    /// app being killed) without waiting for the device. With the system scheduler and a
    /// ``FileScoreStore`` the sync runs on ``syncThread``; otherwise (a custom store, whose
    /// `syncQueue()` is async, or a test's scheduler) on a task of its own.
    private func startQueueSync(now: Int64) {
        let start = state.withLock { $0.sync.claim(now: now) }
        guard start else { return }
        if let file = store as? FileScoreStore, scheduler is SystemScheduler {
            ScoreClient.syncThread.run { [self] in
                while true {
                    var ok = true
                    do { try file.syncNow() } catch { ok = false }
                    if !queueSyncEnded(ok: ok) { return }
                }
            }
        } else {
            scheduler.spawn { [self] in await runQueueSync() }
        }
    }

    private func runQueueSync() async {
        while true {
            var ok = true
            do { try await store.syncQueue() } catch { ok = false }
            if !queueSyncEnded(ok: ok) { return }
        }
    }

    /// A queue-log sync ended: whether to sync again (appends came meanwhile).
    private func queueSyncEnded(ok: Bool) -> Bool {
        // Not retried: after a failed fsync the system may already have dropped the pages.
        // Diagnosed once per run of failures (a sync may run every 50 ms).
        let (first, again) = state.withLock { $0.sync.syncEnded(ok: ok) }
        if first { diagnose(Diagnostic(code: "storage", message: "could not sync the queue log to the device")) }
        return again
    }

    /// The idle writer's sync timer: syncs unless a running writer will (it syncs before it
    /// goes idle again).
    private func queueSyncTimerFired() async {
        let sync = state.withLock { s in s.sync.timerFired(writerRunning: s.writer.running) }
        if sync { startQueueSync(now: clock.nowMs()) }
    }

    /// Starts a ``FileScoreStore``'s compaction by location, when the store is one and every
    /// queued persisted event is located; returns whether it did. Runs on the queue writer,
    /// between appends, so every record written so far is accounted for: the snapshot (the kept
    /// records, read back, and the log's end) is taken here; the new file's write and `fsync`
    /// run on ``syncThread`` (a task of the scheduler's with a test's scheduler), and only the
    /// copy of the records appended meanwhile and the rename hold appends, like an append.
    private func compactOffThePath() -> Bool {
        guard let file = store as? FileScoreStore else { return false }
        let snapshot: [(QueuedEvent, ScoreRecordLocation)]? = state.withLock { s in
            var out: [(QueuedEvent, ScoreRecordLocation)] = []
            out.reserveCapacity(s.queue.count)
            for e in s.queue where e.persisted {
                guard let location = e.location else { return nil }
                out.append((e, location))
            }
            s.compacting = true
            return out
        }
        guard let snapshot else { return false }
        let begun: FileScoreStore.CompactionSnapshot
        do {
            begun = try file.compactionSnapshot(keeping: snapshot.map(\.1))
        } catch {
            compactionEnded(kept: [], moved: nil, failed: true)
            return true
        }
        let finish: @Sendable () -> Void = { [self] in
            do {
                compactionEnded(kept: snapshot.map(\.0), moved: try file.finishCompaction(begun), failed: false)
            } catch {
                compactionEnded(kept: [], moved: nil, failed: true)
            }
        }
        if scheduler is SystemScheduler {
            ScoreClient.syncThread.run(finish)
        } else {
            scheduler.spawnIO { finish() }
        }
        return true
    }

    /// A compaction begun by ``compactOffThePath()`` ended: the kept events' new locations,
    /// then a sync for its rename and the records it carried over, at once (the writer may be
    /// idle by now: no later append would sync them).
    private func compactionEnded(kept: [QueuedEvent], moved: [ScoreRecordLocation?]?, failed: Bool) {
        let renamed: Bool = state.withLock { s in
            s.compacting = false
            if let moved, moved.count == kept.count {
                for (e, loc) in zip(kept, moved) { e.location = loc }
            }
            guard moved != nil else { return false }
            s.sync.appended()
            return true
        }
        if failed { diagnose(Diagnostic(code: "storage", message: "could not compact the queue log")) }
        if renamed { startQueueSync(now: clock.nowMs()) }
    }

    /// Rewrites the queue log with the queued events only.
    ///
    /// When every persisted event is located, the store compacts by location (bytes stay on
    /// disk). When some hold their bytes in memory (their append returned no locations), the
    /// located ones are read back and the whole queue is rewritten from memory: compacting by
    /// location alone would erase the in-memory events' records from the log.
    private func compactLog() async {
        let snapshot: [(QueuedEvent, [UInt8]?, ScoreRecordLocation?)] = state.withLock { s in
            s.queue.compactMap { e in
                guard e.persisted else { return nil }
                // Located first: a located event may still hold bytes `dropLater` will release.
                if let location = e.location { return (e, nil, location) }
                if let bytes = e.encoded { return (e, bytes, nil) }
                return nil
            }
        }
        do {
            if !snapshot.isEmpty, snapshot.allSatisfy({ $0.1 == nil }) {
                let kept = snapshot.map(\.0)
                let locations = snapshot.map { $0.2! }
                guard let moved = try await store.compactQueue(keeping: locations), moved.count == kept.count else {
                    return
                }
                state.withLock { _ in
                    for (e, loc) in zip(kept, moved) { e.location = loc }
                }
                return
            }
            var records: [[UInt8]] = []
            records.reserveCapacity(snapshot.count)
            var readBack: [(QueuedEvent, [UInt8])] = []
            for (e, bytes, location) in snapshot {
                var envelope = bytes
                if envelope == nil, let location {
                    envelope = readEnvelope(location)
                    if envelope == nil, let moved = state.withLock({ _ in e.location }), moved != location {
                        envelope = readEnvelope(moved)
                    }
                }
                // An unreadable record stays as it is (dropped with a diagnostic when sent).
                guard let envelope else { continue }
                if bytes == nil { readBack.append((e, envelope)) }
                records.append(QueueRecord.add(e, envelope: envelope))
            }
            // The read-back bytes are held in memory before the rewrite makes their locations stale.
            state.withLock { _ in for (e, envelope) in readBack { e.encoded = envelope } }
            try await store.rewriteQueue(records)
            state.withLock { _ in for (e, _) in readBack { e.location = nil } }
        } catch {
            diagnose(Diagnostic(code: "storage", message: "could not compact the queue log"))
        }
    }

    private func runIdentityWriter() async {
        while let bytes = nextIdentityBytes() {
            do { try await store.saveIdentity(bytes) } catch { identityWriteFailed() }
        }
    }

    /// ``runIdentityWriter()`` for a ``FileScoreStore`` with the system scheduler, on
    /// ``syncThread``: the identity's atomic write syncs twice (its file, then the directory),
    /// and must not hold the queue writer's thread meanwhile.
    private func runIdentityWriterBlocking(_ file: FileScoreStore) {
        while let bytes = nextIdentityBytes() {
            do { try file.saveIdentityNow(bytes) } catch { identityWriteFailed() }
        }
    }

    /// The identity file's next contents, or `nil` (and the writer marked idle) when it is
    /// written.
    private func nextIdentityBytes() -> [UInt8]? {
        state.withLock { s in
            guard s.identityDirty else {
                s.identityWriterRunning = false
                return nil
            }
            s.identityDirty = false
            var o = JSONObject()
            o.appendUnchecked("anonymousId", .string(s.anonymousId))
            o.appendUnchecked("userId", s.userId.map { .string($0) } ?? .null)
            o.appendUnchecked("linked", .array(s.linked.sorted().map { .string($0) }))
            return WireJSON.encode(.object(o))
        }
    }

    private func identityWriteFailed() {
        diagnose(Diagnostic(code: "storage", message: "could not persist the identity"))
    }

    struct StoredIdentity {
        var anonymousId: String?
        var userId: String?
        var linked: Set<String> = []
        /// What was discarded as invalid (oversized or empty), for one diagnostic.
        var discarded: [String] = []
    }

    /// The stored identity, each value checked: an `anonymousId` that is not a lowercase UUID
    /// (damaged, oversized) and a `userId` that `identify` would reject are discarded (a new
    /// `anonymousId` is minted; the fan is anonymous until the next `identify`), and so is a
    /// linked pair holding one.
    static func parseIdentity(_ bytes: [UInt8]?) -> StoredIdentity {
        guard let bytes, let v = try? WireJSONDecoderShim.decode(bytes) else { return StoredIdentity() }
        var out = StoredIdentity()
        if let anon = v["anonymousId"]?.stringValue {
            // Section 2: a lowercase UUID (a flipped byte may still parse as a string).
            if IDs.isLowercaseUUID(anon) {
                out.anonymousId = anon
            } else {
                out.discarded.append("anonymousId")
            }
        }
        if let user = v["userId"]?.stringValue {
            if validUserId(user) { out.userId = user } else { out.discarded.append("userId") }
        }
        var droppedPairs = 0
        for pair in (v["linked"]?.arrayValue ?? []).compactMap(\.stringValue) {
            let parts = pair.split(separator: "\u{1F}", maxSplits: 1, omittingEmptySubsequences: false)
            if parts.count == 2, IDs.isLowercaseUUID(String(parts[0])), validUserId(String(parts[1])) {
                out.linked.insert(pair)
            } else {
                droppedPairs += 1
            }
        }
        if droppedPairs > 0 { out.discarded.append("\(droppedPairs) linked pair(s)") }
        return out
    }

    /// The loaded locations when `store` can actually read records back at them, else `nil` (the
    /// queued events then keep their envelopes in memory). A store that forwards `load()` to a
    /// ``FileScoreStore`` but not `readQueueRecord(at:)` (a wrapper relying on the protocol's
    /// defaults) hands over locations it cannot serve; trusting them dropped the whole queue
    /// after a relaunch. One record is read back and compared (one `pread`).
    static func verifiedLocations(_ contents: ScoreStoreContents, store: any ScoreStore) -> [ScoreRecordLocation]? {
        guard let locations = contents.queueLocations, locations.count == contents.queueRecords.count,
            let last = locations.last
        else { return nil }
        guard let back = try? store.readQueueRecord(at: last), back == contents.queueRecords[contents.queueRecords.count - 1] else {
            return nil
        }
        return locations
    }

    static func loadQueue(_ records: [[UInt8]], locations: [ScoreRecordLocation]?, into s: inout ClientState) {
        let located = locations?.count == records.count ? locations : nil
        var names = NameInterner()
        // Each add becomes its event at once; a later removal (or a second add of the same id)
        // only clears its slot.
        var events: [QueuedEvent?] = []
        events.reserveCapacity(records.count)
        var slot: [CompactEventId: Int] = [:]
        slot.reserveCapacity(records.count)
        for (i, r) in records.enumerated() {
            switch QueueRecord.scan(r, anonymousId: s.anonymousId) {
            case .add(let id, let name, let timestampMs, let sameAnonymous, let flags, let requires)?:
                let location = located?[i]
                let envelope: [UInt8]? = location == nil ? Array(r[3...]) : nil
                let e = QueuedEvent(
                    id: id, name: names.intern(name), timestampMs: timestampMs,
                    anonymousEpoch: sameAnonymous ? s.anonymousEpoch : QueuedEvent.otherAnonymous,
                    hasUserId: flags & 4 != 0, critical: flags & 1 != 0,
                    notice: flags & 2 != 0, requires: requires, fields: nil, encoded: envelope)
                e.location = location
                e.persisted = true
                if let k = slot[id] {
                    // The first add's place in the order, the last add's contents.
                    events[k] = e
                } else {
                    slot[id] = events.count
                    events.append(e)
                }
            case .remove(let ids)?:
                for id in ids {
                    if let k = slot.removeValue(forKey: id) { events[k] = nil }
                }
            case nil: break
            }
        }
        s.queue.reserveCapacity(slot.count)
        for case let e? in events {
            s.queue.append(e)
            if e.notice { s.noticeCount += 1 }
        }
        s.deadRecords = records.count - s.queue.count
    }
}

/// A thin wrapper so call sites read plainly.
enum WireJSONDecoderShim {
    static func decode(_ bytes: [UInt8]) throws -> JSONValue {
        try WireJSON.decode(bytes)
    }
}
