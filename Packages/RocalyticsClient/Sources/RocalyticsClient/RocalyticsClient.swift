import Foundation
import TrackerCore

/// The Rocalytics client: reports installs, purchases, identifiers and onboarding progress to
/// Rocalytics, with the exact requests of the reference TypeScript client.
///
/// Create one per app, at launch. It starts itself: it reads (or mints) the device's roca id,
/// identifies the device (unless ``RocalyticsConfiguration/identifyOnStart`` is false), sends `install` once per
/// device and then the install ping. Every method waits for that start-up first.
///
/// Nothing throws at launch. Without platform services, or when the stored id cannot be read,
/// the client is **inert**: ``ready()`` returns, ``rocaId`` stays `nil`, every method returns
/// without sending (``getDemandScore(_:)`` throws, having no value to return), and the cause goes
/// to ``RocalyticsConfiguration/onDiagnostic``. A method whose request gets a non-2xx answer throws
/// ``RocalyticsError`` (`[ROCALYTICS] <endpoint> failed: <status>`). The client never logs a
/// request, a response or purchase properties.
///
/// Beside those awaited calls, the recording forms (``recordPurchase(_:)-(TrackPurchaseParams)``, ``recordIdentify(_:)``,
/// ``record(_:properties:)``) never throw and never wait: they store the same request and send it
/// in the background, retried until the server answers, across launches. ``optOut()`` (persisted)
/// stops every request.
public final class RocalyticsClient: Sendable {
    /// The former name of ``RocalyticsConfiguration``.
    @available(*, deprecated, renamed: "RocalyticsConfiguration")
    public typealias Options = RocalyticsConfiguration

    struct Session: Sendable {
        let platform: any RocalyticsPlatform
        let context: RocalyticsRequestContext
    }

    struct PreV1Response: Sendable {
        var stepId: String
        var enteredAt: String
        var exitedAt: String?
        var answers: JSONObject
    }

    struct State: Sendable {
        var session: Session?
        var isReady = false
        var waiters: [CheckedContinuation<Void, Never>] = []
        var deviceContext: DeviceContext?
        var onboardingMetadata: JSONObject?
        var responses: [PreV1Response] = []
        var completedRuns: Set<String> = []
    }

    private let options: RocalyticsConfiguration
    private let transport: any HTTPTransport
    private let state = Locked(State())
    let recorded: RecordedRequests

    /// Where ``sendOnboardingRun(_:)`` delivers: `<baseURL>/functions/v1/onboarding-response`,
    /// with ` (custom fetch)` appended when a transport was injected, so that a test double
    /// never counts as the real endpoint. Headers are never part of it.
    public let onboardingRunDestination: String
    /// Where ``sendPaywallPresentation(_:)`` delivers: `<baseURL>/functions/v1/paywall-presentations`,
    /// with the same ` (custom fetch)` marker.
    public let paywallPresentationDestination: String

    /// The reference client's spelling (`new RocalyticsClient(options)`) of ``init(configuration:)``.
    @available(*, deprecated, renamed: "init(configuration:)")
    public convenience init(options: RocalyticsConfiguration) {
        self.init(configuration: options)
    }

    /// Creates the client and starts its start-up in the background.
    public init(configuration: RocalyticsConfiguration = RocalyticsConfiguration()) {
        let options = Self.previewSafe(configuration, inPreviews: RuntimeEnvironment.isXcodePreview)
        self.options = options
        transport = options.transport ?? CurlTransport.shared
        let marker = options.transport == nil ? "" : " (custom fetch)"
        onboardingRunDestination = "\(options.baseURL)/functions/v1/onboarding-response\(marker)"
        paywallPresentationDestination = "\(options.baseURL)/functions/v1/paywall-presentations\(marker)"
        let onDiagnostic = options.onDiagnostic
        recorded = RecordedRequests(
            storage: options.storage ?? StandardFileStorage(name: "rocalytics-client"),
            scheduler: options.scheduler
        ) { code, message in onDiagnostic(Diagnostic(code: code, message: message, surface: .rocalyticsClient)) }
        options.scheduler.spawn { [recorded] in await recorded.load() }
        options.scheduler.spawn { [self] in
            await self.start()
        }
    }

    /// In Xcode Previews nothing is written or sent (issue 37 item 7): no platform services (so no
    /// Keychain item is read or minted, and no request is made) and requests recorded in memory.
    static func previewSafe(_ options: RocalyticsConfiguration, inPreviews: Bool) -> RocalyticsConfiguration {
        guard inPreviews else { return options }
        var safe = options
        safe.platform = .none
        safe.storage = InMemoryKeyValueStorage()
        return safe
    }

    // MARK: - Ready and identity

    /// Returns once the client has started, or has gone inert. Never throws.
    public func ready() async {
        await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
            let done = state.withLock { s -> Bool in
                if s.isReady { return true }
                s.waiters.append(c)
                return false
            }
            if done { c.resume() }
        }
    }

    /// The device's roca id: `nil` until ``ready()`` has returned, and `nil` while inert.
    public var rocaId: String? {
        state.withLock { $0.isReady ? $0.session?.context.rocaId : nil }
    }

    /// Whether start-up has ended without a roca id (no requests are ever sent).
    public var isInert: Bool {
        state.withLock { $0.isReady && $0.session == nil }
    }

    private func session() async -> Session? {
        await ready()
        return state.withLock { $0.session }
    }

    /// The session, unless opted out (then nothing is sent).
    private func sendingSession() async -> Session? {
        guard let session = await session(), !recorded.isOptedOut else { return nil }
        return session
    }

    private func report(_ code: String, _ message: String) {
        options.onDiagnostic(Diagnostic(code: code, message: message, surface: .rocalyticsClient))
    }

    // MARK: - Start-up

    private func start() async {
        var reportedLocked = false
        while case .locked(let platform) = await startUp() {
            // A background launch before the first unlock: the Keychain is unreadable. Wait for
            // protected data (or the foreground) and start again; nothing is minted meanwhile.
            if !reportedLocked {
                reportedLocked = true
                report(
                    "identity-locked",
                    "the device is locked, so the stored roca id cannot be read yet; start-up waits for the device to be unlocked and mints nothing meanwhile"
                )
            }
            guard await platform.waitForProtectedData() else {
                report(
                    "identity-unavailable",
                    "the stored roca id could not be read, so none was minted; Rocalytics is disabled for this session: \(RocalyticsSecureStoreError.locked)"
                )
                break
            }
        }
        let waiters = state.withLock { s -> [CheckedContinuation<Void, Never>] in
            s.isReady = true
            defer { s.waiters = [] }
            return s.waiters
        }
        for w in waiters { w.resume() }
        if state.withLock({ $0.session != nil }) {
            recorded.enableSending { [weak self] entry in
                guard let self else { return SinkResult(.transient, reason: "the Rocalytics client is gone") }
                return await self.deliverRecorded(entry)
            }
        }
    }

    private enum StartUpOutcome {
        case finished
        /// The secure store is locked: start again once protected data is available.
        case locked(any RocalyticsPlatform)
    }

    @discardableResult
    private func startUp() async -> StartUpOutcome {
        let platform: any RocalyticsPlatform
        switch await options.platform.resolve(keychainAccessGroup: options.keychainAccessGroup) {
        case .success(let p): platform = p
        case .failure(let unavailable):
            report("native-modules-unavailable", "Rocalytics is disabled for this session: \(unavailable.reason)")
            return .finished
        }
        let identity = await readOrMintRocaId(platform)
        if identity.locked { return .locked(platform) }
        guard let rocaId = identity.id else { return .finished }
        let session = Session(
            platform: platform,
            context: RocalyticsRequestContext(
                rocaId: rocaId, applicationId: platform.applicationId, platform: platform.platformName,
                baseURL: options.baseURL))
        state.withLock { $0.session = session }
        // Opted out: no start-up request (identify, install, install ping); the install is sent
        // at the first start-up after opting in again. The device context is still read (no
        // request), so that what is sent after an opt-in this session carries it.
        if await recorded.loadOptOut() {
            let deviceContext = await DeviceContext.read(from: platform)
            state.withLock { $0.deviceContext = deviceContext }
            return .finished
        }

        do {
            if options.identifyOnStart {
                var ids = JSONObject()
                if platform.platformName == "ios", let idfv = await platform.identifierForVendor() {
                    ids.appendUnchecked("idfv", .string(idfv))
                }
                if platform.platformName == "android", let androidId = platform.androidId() {
                    ids.appendUnchecked("android_id", .string(androidId))
                }
                ids.appendUnchecked("locale", .string(platform.localeIdentifier))
                _ = try await send(buildIdentifyRequest(session.context, ids), endpoint: "identify")
            }
            let deviceContext = await DeviceContext.read(from: platform)
            state.withLock { $0.deviceContext = deviceContext }

            var installed = nonEmpty(try await platform.secureValue(forKey: INSTALL_TRACKED_KEY)) != nil
            if !installed {
                for key in LEGACY_INSTALL_TRACKED_KEYS where !installed {
                    installed = nonEmpty(try await platform.secureValue(forKey: key)) != nil
                }
            }
            guard !installed, !recorded.isOptedOut else { return .finished }
            let installTime = try await platform.installationTime()
            let installMs = Int64((installTime.timeIntervalSince1970 * 1000).rounded())
            try await sendTrack(
                session, name: TrackEventName.install.rawValue,
                properties: ["install_time": .string(Timestamp.format(ms: installMs))])
            try await platform.setSecureValue("true", forKey: INSTALL_TRACKED_KEY)
        } catch {
            report("init-failed", errorText(error))
            return .finished
        }
        if options.installPing, !recorded.isOptedOut { await sendInstallPing(session) }
        return .finished
    }

    private func nonEmpty(_ s: String?) -> String? {
        guard let s, !s.isEmpty else { return nil }
        return s
    }

    /// Reads the roca id (current key, then the legacy key, copied forward), or mints one and
    /// writes it under both keys. No id (inert) when a read fails or the new id cannot be stored:
    /// a failed read never leads to minting. `locked` when the secure store is locked (the
    /// caller starts again later; nothing was minted or kept).
    private func readOrMintRocaId(_ platform: any RocalyticsPlatform) async -> (id: String?, locked: Bool) {
        func isLocked(_ error: any Error) -> Bool { (error as? RocalyticsSecureStoreError)?.code == .locked }
        do {
            if let current = nonEmpty(try await platform.secureValue(forKey: ROCA_ID_KEY)) { return (current, false) }
            if let legacy = nonEmpty(try await platform.secureValue(forKey: LEGACY_ROCA_ID_KEY)) {
                do {
                    try await platform.setSecureValue(legacy, forKey: ROCA_ID_KEY)
                } catch {
                    report(
                        "identity-migration-failed",
                        "could not copy the roca id to \(ROCA_ID_KEY); it is still read from \(LEGACY_ROCA_ID_KEY): \(errorText(error))")
                }
                return (legacy, false)
            }
        } catch {
            if isLocked(error) { return (nil, true) }
            report(
                "identity-unavailable",
                "the stored roca id could not be read, so none was minted; Rocalytics is disabled for this session: \(errorText(error))")
            return (nil, false)
        }
        // Added only if absent: a process sharing the store (an extension of the same app, with a
        // shared keychain access group) may have written its id since the read; then it is ours.
        let minted: String
        do {
            minted = try await platform.addSecureValueIfAbsent(platform.makeUUID(), forKey: ROCA_ID_KEY)
        } catch {
            if isLocked(error) { return (nil, true) }
            report(
                "identity-unavailable",
                "a new roca id could not be stored under \(ROCA_ID_KEY), so none is used; Rocalytics is disabled for this session: \(errorText(error))"
            )
            return (nil, false)
        }
        do {
            try await platform.setSecureValue(minted, forKey: LEGACY_ROCA_ID_KEY)
        } catch {
            report(
                "identity-legacy-write-failed",
                "the new roca id could not be written to \(LEGACY_ROCA_ID_KEY) (a rolled-back copied client would not see it): \(errorText(error))"
            )
        }
        return (minted, false)
    }

    private func sendInstallPing(_ session: Session) async {
        var base = options.attributionBaseURL
        while base.hasSuffix("/") { base.removeLast() }
        let request = HTTPRequest(
            url: "\(base)/install", method: "POST", headers: rocalyticsHeaders(session.context), body: nil,
            timeoutMs: rocalyticsRequestTimeoutMs)
        do {
            let response = try await transport.send(request)
            if !(200...299).contains(response.status) {
                report("install-ping-failed", "the install ping was answered \(response.status); it is not retried")
            }
        } catch {
            report("install-ping-failed", "the install ping failed (\(errorText(error))); it is not retried")
        }
    }

    // MARK: - Requests

    private func send(_ request: HTTPRequest, endpoint: String, detail: String? = nil) async throws -> HTTPResponse {
        let response = try await transport.send(request)
        guard (200...299).contains(response.status) else {
            throw RocalyticsError.requestFailed(endpoint: endpoint, status: response.status, detail: detail)
        }
        return response
    }

    private func sendTrack(
        _ session: Session, name: String, properties: JSONObject, deduplicationId: String? = nil, customEvent: Bool = false
    ) async throws {
        let deviceContext = state.withLock { $0.deviceContext }
        let input = TrackRequestInput(
            name: name, properties: properties, deviceContext: deviceContext, deduplicationId: deduplicationId,
            customEvent: customEvent)
        _ = try await send(buildTrackRequest(session.context, input), endpoint: "track", detail: name)
    }

    // MARK: - Events

    /// Sends an analytics event with the default deduplication id `<rocaId>-<name>`. The same
    /// name sent twice goes out twice; the server deduplicates. Returns without sending when inert.
    /// - Throws: ``RocalyticsError`` on a non-2xx answer; transport errors unchanged.
    public func track(_ name: TrackEventName, properties: JSONObject = [:]) async throws {
        guard let session = await sendingSession() else { return }
        try await sendTrack(session, name: name.rawValue, properties: properties.javaScriptOrdered())
    }

    /// Alias of ``track(_:properties:)`` (the TypeScript README's `trackEvent(...)`).
    @available(*, deprecated, renamed: "track(_:properties:)")
    public func trackEvent(_ name: TrackEventName, properties: JSONObject = [:]) async throws {
        try await track(name, properties: properties)
    }

    /// Sends a `purchase`, deduplicated per original transaction (`<rocaId>-purchase-<id>`). The
    /// product, transaction and redemption objects are forwarded whole under `experimental`.
    /// An unknown ``PurchaseType`` is not sent (`unknown-purchase-type`); the purchase still is.
    /// Returns without sending when inert.
    /// - Throws: ``RocalyticsError`` on a non-2xx answer; transport errors unchanged.
    @available(
        *, deprecated,
        message: "use trackPurchase(originalTransactionIdentifier:productId:price:currency:isTrial:...), the same request"
    )
    public func trackPurchase(_ params: TrackPurchaseParams) async throws {
        try await sendPurchase(params)
    }

    /// The request of ``trackPurchase(originalTransactionIdentifier:productId:price:currency:isTrial:purchaseType:product:transaction:redemptionResult:)``.
    func sendPurchase(_ params: TrackPurchaseParams) async throws {
        guard let session = await sendingSession() else { return }
        try await sendTrack(
            session, name: TrackEventName.purchase.rawValue, properties: purchaseProperties(params),
            deduplicationId: purchaseDeduplicationId(session, params.originalTransactionIdentifier))
    }

    private func purchaseDeduplicationId(_ session: Session, _ transaction: String) -> String {
        "\(session.context.rocaId)-purchase-\(transaction)"
    }

    /// The `purchase` event's properties (reports an unknown ``PurchaseType``).
    private func purchaseProperties(_ params: TrackPurchaseParams) -> JSONObject {
        var p = JSONObject()
        p.appendUnchecked("is_trial", .bool(params.isTrial))
        p.appendUnchecked("original_transaction_identifier", .string(params.originalTransactionIdentifier))
        if let productId = params.productId ?? params.product?["productIdentifier"]?.stringValue {
            p.appendUnchecked("product_id", .string(productId))
        }
        p.appendUnchecked("price", .number(params.value))
        p.appendUnchecked("currency_code", .string(params.currency))
        var experimental = JSONObject()
        if let product = params.product { experimental.appendUnchecked("product", product) }
        if let transaction = params.transaction { experimental.appendUnchecked("transaction", transaction) }
        if let redemption = params.redemptionResult { experimental.appendUnchecked("redemption_result", redemption) }
        if !experimental.isEmpty { p.appendUnchecked("experimental", .object(experimental)) }
        if let type = params.purchaseType {
            if PurchaseType.known.contains(type.rawValue) {
                p.appendUnchecked("purchase_type", .string(type.rawValue))
            } else {
                report(
                    "unknown-purchase-type",
                    "trackPurchase got a purchaseType this version does not know; the purchase is sent without purchase_type")
            }
        }
        return p.javaScriptOrdered()
    }

    /// Sends an event with any name, which the API passes on to automations (`custom_event: true`).
    /// Deduplicated on `<rocaId>-<name>`, plus `-<dedupSuffix>` when a non-empty suffix is given
    /// (a date makes a good suffix for a recurring event). Returns without sending when inert.
    /// - Throws: ``RocalyticsError`` on a non-2xx answer; transport errors unchanged.
    public func trackCustomEvent(_ name: String, properties: JSONObject = [:], dedupSuffix: String? = nil) async throws {
        guard let session = await sendingSession() else { return }
        var dedup = "\(session.context.rocaId)-\(name)"
        if let dedupSuffix, !dedupSuffix.isEmpty { dedup += "-\(dedupSuffix)" }
        try await sendTrack(session, name: name, properties: properties.javaScriptOrdered(), deduplicationId: dedup, customEvent: true)
    }

    /// Attaches identifiers to the device's identity. Top-level `nil`/`null` values are dropped
    /// (an all-null map still sends `{}`); nested values are sent as given. Returns without
    /// sending when inert.
    /// - Throws: ``RocalyticsError`` on a non-2xx answer; transport errors unchanged.
    public func identify(_ identifiers: IdentifyParams) async throws {
        guard let session = await sendingSession() else { return }
        _ = try await send(buildIdentifyRequest(session.context, identifyBody(identifiers)), endpoint: "identify")
    }

    /// The identify body: top-level nulls dropped, JavaScript key order.
    private func identifyBody(_ identifiers: IdentifyParams) -> JSONObject {
        var body = JSONObject()
        for (k, v) in identifiers.values.entries where !v.isNull { body.appendUnchecked(k, v) }
        return body.javaScriptOrdered()
    }

    /// The pre-v1 progressive onboarding call, unchanged: records `stepId` (merging `answers`
    /// into the current step when it is the same step, otherwise closing the current step and
    /// appending a new one), merges `metadata`, and resends every step seen so far to
    /// `/onboarding-response`. The local state changes even when the request fails. Returns
    /// without sending when inert. Report a flow through this **or** the onboarding sink, not both.
    /// - Throws: ``RocalyticsError`` on a non-2xx answer; transport errors unchanged.
    public func trackOnboarding(stepId: String, answers: OnboardingStepAnswers? = nil, metadata: OnboardingMetadata? = nil) async throws {
        guard let session = await sendingSession() else { return }
        let body: JSONValue = state.withLock { s in
            if let metadata {
                var merged = s.onboardingMetadata ?? JSONObject()
                for (k, v) in metadata.entries { merged[k] = v }
                s.onboardingMetadata = merged
            }
            let now = Timestamp.format(ms: options.clock.nowMs())
            if let last = s.responses.indices.last, s.responses[last].stepId == stepId {
                for (k, v) in (answers ?? JSONObject()).entries { s.responses[last].answers[k] = v }
            } else {
                if let last = s.responses.indices.last, s.responses[last].exitedAt == nil { s.responses[last].exitedAt = now }
                s.responses.append(PreV1Response(stepId: stepId, enteredAt: now, exitedAt: nil, answers: answers ?? JSONObject()))
            }
            var o = JSONObject()
            if let m = s.onboardingMetadata { o.appendUnchecked("onboarding_metadata", .object(m.javaScriptOrdered())) }
            o.appendUnchecked("sent_at", .string(now))
            o.appendUnchecked(
                "responses",
                .array(
                    s.responses.map { r in
                        [
                            "step_id": .string(r.stepId), "entered_at": .string(r.enteredAt),
                            "exited_at": r.exitedAt.map(JSONValue.string) ?? .null, "answers": .object(r.answers.javaScriptOrdered()),
                        ]
                    }))
            return .object(o)
        }
        _ = try await send(buildOnboardingResponseRequest(session.context, body), endpoint: "onboarding-response")
    }

    /// The server's 1-to-100 demand score for this install. Waits for start-up: the server has
    /// no score until an identify has succeeded (it answers 404 before that).
    /// - Throws: ``RocalyticsError/demandScoreUnavailable`` when inert (nothing is sent),
    ///   ``RocalyticsError`` on a non-2xx answer or an unreadable body, transport errors unchanged.
    public func getDemandScore(_ signals: DemandScoreSignals? = nil) async throws -> DemandScoreResult {
        guard let session = await sendingSession() else { throw RocalyticsError.demandScoreUnavailable }
        let response = try await send(buildDemandScoreRequest(session.context, signals), endpoint: "demand-score")
        guard let json = try? WireJSON.decode(response.body), let result = DemandScoreResult(json: json) else {
            throw RocalyticsError.invalidResponse(endpoint: "demand-score")
        }
        return result
    }

    // MARK: - Recording (durable, never throws)

    /// Records a `purchase`: the same request as ``trackPurchase(_:)`` (same bytes, same
    /// deduplication id `<rocaId>-purchase-<originalTransactionIdentifier>`), but it never throws
    /// and never waits. The request is stored on this device and sent in the background, once the
    /// client has started with a roca id, retried with a backoff (1 s doubling to 60 s) until the
    /// server answers: after a network failure, after the app is killed (at its next launch) and,
    /// when the client is inert in this session, at the next launch that is not. Use it from
    /// synchronous code (a purchase callback) or wherever a lost purchase would matter; use
    /// ``trackPurchase(_:)`` when you want to await the answer.
    ///
    /// A retry after an unanswered attempt may reach the server twice: it deduplicates on the
    /// deduplication id. An answer of 4xx (other than 408 and 429) drops the request with a
    /// `recorded-request-rejected` diagnostic. Storage failures (a full or read-only disk) are
    /// reported as `storage` diagnostics: the request is still sent while the app runs. Nothing is
    /// recorded while opted out (``optOut()``).
    @available(
        *, deprecated,
        message: "use recordPurchase(originalTransactionIdentifier:productId:price:currency:isTrial:...), the same request"
    )
    public func recordPurchase(_ params: TrackPurchaseParams) {
        record(purchase: params)
    }

    /// The recording of ``recordPurchase(originalTransactionIdentifier:productId:price:currency:isTrial:purchaseType:product:transaction:redemptionResult:)``.
    func record(purchase params: TrackPurchaseParams) {
        recorded.record(.purchase(transaction: params.originalTransactionIdentifier), body: purchaseProperties(params))
    }

    /// Records an identify: the same request as ``identify(_:)`` (top-level `nil` values dropped),
    /// stored and retried like ``recordPurchase(_:)-(TrackPurchaseParams)``. Never throws, never waits: call it from
    /// synchronous sign-in code.
    public func recordIdentify(_ identifiers: IdentifyParams) {
        recorded.record(.identify, body: identifyBody(identifiers))
    }

    /// Records an analytics event: the same request as ``track(_:properties:)`` (deduplicated on
    /// `<rocaId>-<name>`), stored and retried like ``recordPurchase(_:)-(TrackPurchaseParams)``. Never throws, never waits.
    public func record(_ name: TrackEventName, properties: JSONObject = [:]) {
        recorded.record(.track(name: name.rawValue), body: properties.javaScriptOrdered())
    }

    /// Sends one recorded request (the delivery's send).
    private func deliverRecorded(_ entry: RecordedEntry) async -> SinkResult {
        guard let session = await session() else { return SinkResult(.transient, reason: "the Rocalytics client is inert") }
        if recorded.isOptedOut { return SinkResult(.ignored, reason: "opted out of Rocalytics") }
        let request: HTTPRequest
        switch entry.kind {
        case .purchase(let transaction):
            let input = TrackRequestInput(
                name: TrackEventName.purchase.rawValue, properties: entry.body,
                deviceContext: state.withLock { $0.deviceContext },
                deduplicationId: purchaseDeduplicationId(session, transaction), customEvent: false)
            request = buildTrackRequest(session.context, input)
        case .track(let name):
            let input = TrackRequestInput(
                name: name, properties: entry.body, deviceContext: state.withLock { $0.deviceContext }, deduplicationId: nil,
                customEvent: false)
            request = buildTrackRequest(session.context, input)
        case .identify:
            request = buildIdentifyRequest(session.context, entry.body)
        }
        do {
            return recordedOutcome(status: try await transport.send(request).status)
        } catch {
            return SinkResult(.transient, reason: errorText(error))
        }
    }

    // MARK: - Sinks

    /// Delivers one onboarding-run snapshot to `/onboarding-response` as ``toOnboardingRunBody(_:)``
    /// and maps the answer with ``rocalyticsOutcome(status:body:)``. After an accepted completed
    /// snapshot it sends `onboarding_completed` once per run (dedup
    /// `<rocaId>-onboarding_completed-<run_id>`); if that event fails the result is transient,
    /// so the tracker's retry sends both again. Never throws: an inert client or a transport
    /// error gives `transient`.
    public func sendOnboardingRun(_ snapshot: some WireEncodable) async -> SinkResult {
        guard let session = await session() else { return SinkResult(.transient, reason: "the Rocalytics client is inert") }
        if recorded.isOptedOut { return SinkResult(.ignored, reason: "opted out of Rocalytics") }
        let object = snapshot.wireJSON().objectValue ?? JSONObject()
        let body = toOnboardingRunBody(snapshotObject: object)
        let result: SinkResult
        do {
            let response = try await transport.send(buildOnboardingResponseRequest(session.context, .object(body)))
            if (200...299).contains(response.status) {
                result = .accepted
            } else {
                result = rocalyticsOutcome(status: response.status, body: try? WireJSON.decode(response.body))
            }
        } catch {
            return SinkResult(.transient, reason: errorText(error))
        }
        guard result.outcome == .accepted, object["status"]?.stringValue == "completed",
            let runId = object["run_id"]?.stringValue
        else { return result }
        if state.withLock({ $0.completedRuns.contains(runId) }) { return result }
        do {
            try await sendTrack(
                session, name: TrackEventName.onboardingCompleted.rawValue, properties: [:],
                deduplicationId: "\(session.context.rocaId)-onboarding_completed-\(runId)")
        } catch {
            return SinkResult(.transient, reason: errorText(error))
        }
        state.withLock { _ = $0.completedRuns.insert(runId) }
        return result
    }

    /// Delivers one paywall-presentation snapshot (v1 or v1.1) to `/paywall-presentations`: the
    /// bare snapshot, same headers. The outcome is read with ``paywallIngestOutcome(status:body:)``.
    /// Never throws: an inert client or a transport error gives `transient`.
    public func sendPaywallPresentation(_ snapshot: some WireEncodable) async -> SinkResult {
        guard let session = await session() else { return SinkResult(.transient, reason: "the Rocalytics client is inert") }
        if recorded.isOptedOut { return SinkResult(.ignored, reason: "opted out of Rocalytics") }
        do {
            let response = try await transport.send(buildPaywallPresentationRequest(session.context, snapshot))
            return paywallIngestOutcome(status: response.status, body: try? WireJSON.decode(response.body))
        } catch {
            return SinkResult(.transient, reason: errorText(error))
        }
    }
}
