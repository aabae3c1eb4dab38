import TrackerCore

/// A snapshot of the tracker's state for bug reports. It never holds the token, only `hasToken`.
public struct InspectSnapshot: Sendable, Equatable {
    /// SDK name and version.
    public struct SDK: Sendable, Equatable {
        /// `sdk.name`.
        public var name: String
        /// `sdk.version`.
        public var version: String
    }
    /// Consent and what the gate dropped.
    public struct Consent: Sendable, Equatable {
        /// Analytics granted.
        public var analytics: Bool
        /// Personalisation granted.
        public var personalization: Bool
        /// Advertising granted.
        public var advertising: Bool
        /// Events the consent gate dropped since launch.
        public var droppedByConsent: Int
        /// Drops per category, keyed `analytics`, `personalization`, `advertising`.
        public var droppedByCategory: [String: Int]
    }
    /// The queue.
    public struct Queue: Sendable, Equatable {
        /// Queued events, notices included.
        public var depth: Int
        /// The queue cap (`maxQueueSize`).
        public var maxSize: Int
        /// The effective retention cap in hours.
        public var retentionHours: Int
        /// Whole seconds since the oldest queued event, `nil` when empty.
        public var oldestAgeSeconds: Int?
        /// Queued critical events.
        public var critical: Int
        /// Critical events lost (`queue_full`, `age_evicted`).
        public var criticalLost: Int
        /// Best-effort events shed by the cap.
        public var shed: Int
        /// Events dropped by retention.
        public var expired: Int
        /// Calls dropped as invalid input.
        public var invalid: Int
    }
    /// The link-anonymous state.
    public struct Link: Sendable, Equatable {
        /// `none`, `pending` or `linked`.
        public var state: String
        /// Why the link has not happened, or `nil`.
        public var lastSkipReason: LinkSkipReason?
    }
    /// The replay buffer.
    public struct ReplayBuffer: Sendable, Equatable {
        /// Buffered events.
        public var count: Int
        /// `identifyReplayBufferSize`.
        public var capacity: Int
    }
    /// Identity.
    public struct Identity: Sendable, Equatable {
        /// The persisted anonymous id.
        public var anonymousId: String
        /// The current session id.
        public var sessionId: String
        /// The fan's user id, when known.
        public var userId: String?
        /// Whether a token is known (the token itself is never shown).
        public var hasToken: Bool
        /// The link-anonymous state.
        public var link: Link
        /// The identify replay buffer.
        public var replayBuffer: ReplayBuffer
    }
    /// The last flush.
    public struct LastFlush: Sendable, Equatable {
        /// When it ended (contract timestamp), `nil` before any flush.
        public var at: String?
        /// Whether it delivered everything, `nil` before any flush.
        public var ok: Bool?
        /// Events a 2xx removed.
        public var sent: Int
        /// Failed flushes in a row.
        public var consecutiveFailures: Int
    }
    /// The privacy policy in force.
    public struct Privacy: Sendable, Equatable {
        /// The mode passed (`off` without the option).
        public var requested: String
        /// The policy in force.
        public var mode: String
        /// The normalised region AUTO used.
        public var region: String?
        /// The effective retention cap in hours.
        public var retentionHours: Int
        /// Whether `device` and `locale` leave the envelope.
        public var dropsDeviceSignals: Bool
        /// Declared only: no session replay.
        public var noSessionReplay: Bool
        /// Declared only: no geo enrichment.
        public var noGeoEnrichment: Bool
    }

    /// SDK name and version.
    public var sdk: SDK
    /// Consent and its drop counters.
    public var consent: Consent
    /// The queue.
    public var queue: Queue
    /// Identity and link state.
    public var identity: Identity
    /// The last flush.
    public var lastFlush: LastFlush
    /// The configured site id.
    public var site: String
    /// The endpoint without its trailing `/`.
    public var endpoint: String
    /// Number of PII rules (or denylist keys).
    public var piiRules: Int
    /// The privacy policy in force.
    public var privacy: Privacy

    /// The snapshot as JSON (<doc:Inspect> key order), written with the project's encoder.
    public func json() -> JSONValue {
        func opt(_ s: String?) -> JSONValue { s.map { .string($0) } ?? .null }
        func num(_ i: Int) -> JSONValue { .number(Double(i)) }
        return .object(
            JSONObject([
                ("sdk", .object(JSONObject([("name", .string(sdk.name)), ("version", .string(sdk.version))]))),
                (
                    "consent",
                    .object(
                        JSONObject([
                            ("analytics", .bool(consent.analytics)), ("personalization", .bool(consent.personalization)),
                            ("advertising", .bool(consent.advertising)), ("droppedByConsent", num(consent.droppedByConsent)),
                            (
                                "droppedByCategory",
                                .object(
                                    JSONObject(
                                        ConsentCategory.allCases.map { ($0.rawValue, num(consent.droppedByCategory[$0.rawValue] ?? 0)) }))
                            ),
                        ]))
                ),
                (
                    "queue",
                    .object(
                        JSONObject([
                            ("depth", num(queue.depth)), ("maxSize", num(queue.maxSize)), ("retentionHours", num(queue.retentionHours)),
                            ("oldestAgeSeconds", queue.oldestAgeSeconds.map(num) ?? .null), ("critical", num(queue.critical)),
                            ("criticalLost", num(queue.criticalLost)), ("shed", num(queue.shed)), ("expired", num(queue.expired)),
                            ("invalid", num(queue.invalid)),
                        ]))
                ),
                (
                    "identity",
                    .object(
                        JSONObject([
                            ("anonymousId", .string(identity.anonymousId)), ("sessionId", .string(identity.sessionId)),
                            ("userId", opt(identity.userId)), ("hasToken", .bool(identity.hasToken)),
                            (
                                "link",
                                .object(
                                    JSONObject([
                                        ("state", .string(identity.link.state)),
                                        ("lastSkipReason", opt(identity.link.lastSkipReason?.rawValue)),
                                    ]))
                            ),
                            (
                                "replayBuffer",
                                .object(
                                    JSONObject([
                                        ("count", num(identity.replayBuffer.count)), ("capacity", num(identity.replayBuffer.capacity)),
                                    ]))
                            ),
                        ]))
                ),
                (
                    "lastFlush",
                    .object(
                        JSONObject([
                            ("at", opt(lastFlush.at)), ("ok", lastFlush.ok.map { .bool($0) } ?? .null), ("sent", num(lastFlush.sent)),
                            ("consecutiveFailures", num(lastFlush.consecutiveFailures)),
                        ]))
                ),
                ("site", .string(site)), ("endpoint", .string(endpoint)), ("piiRules", num(piiRules)),
                (
                    "privacy",
                    .object(
                        JSONObject([
                            ("requested", .string(privacy.requested)), ("mode", .string(privacy.mode)), ("region", opt(privacy.region)),
                            ("retentionHours", num(privacy.retentionHours)), ("dropsDeviceSignals", .bool(privacy.dropsDeviceSignals)),
                            ("noSessionReplay", .bool(privacy.noSessionReplay)), ("noGeoEnrichment", .bool(privacy.noGeoEnrichment)),
                        ]))
                ),
            ]))
    }
}

extension ScoreClient {
    /// A typed snapshot of the tracker (safe to log: no token, no event contents).
    ///
    /// Called before the stored queue is loaded (a background step the constructor starts), it
    /// waits for the load, so that it shows the stored events and identity.
    public func inspect() -> InspectSnapshot {
        waitUntilLoaded()
        while true {
            waitForTailUnlessCounted()
            if let snapshot = snapshot() { return snapshot }
        }
    }

    /// The snapshot, or `nil` when a tail left unloaded at launch can no longer be counted (see
    /// `LaunchSplice.swift`): its splice is waited for first.
    private func snapshot() -> InspectSnapshot? {
        let now = clock.nowMs()
        return state.withLock { s -> InspectSnapshot? in
            // The tail's events, counted from its seals (none critical, none a notice).
            let tail = s.tail?.counted
            if let t = s.tail, !t.countHolds { return nil }
            let oldest = [s.queue.map(\.timestampMs).min(), tail?.oldestMs].compactMap { $0 }.min()
            let linkState: String
            if let uid = s.userId {
                linkState = s.linked.contains(linkKey(s.anonymousId, uid)) ? "linked" : "pending"
            } else {
                linkState = "none"
            }
            return InspectSnapshot(
                sdk: .init(name: ScoreSDK.name, version: ScoreSDK.version),
                consent: .init(
                    analytics: s.consent.analytics, personalization: s.consent.personalization,
                    advertising: s.consent.advertising, droppedByConsent: s.counts.droppedByConsent,
                    droppedByCategory: [
                        "analytics": s.counts.droppedByCategory[0], "personalization": s.counts.droppedByCategory[1],
                        "advertising": s.counts.droppedByCategory[2],
                    ]),
                queue: .init(
                    depth: s.queue.count + (tail?.live ?? 0), maxSize: maxQueueSize, retentionHours: privacy.retentionHours,
                    oldestAgeSeconds: oldest.map { Int(max(0, now - $0) / 1000) },
                    critical: s.queue.reduce(0) { $0 + ($1.critical ? 1 : 0) }, criticalLost: s.counts.criticalLost,
                    shed: s.counts.shed, expired: s.counts.expired, invalid: s.counts.invalid),
                identity: .init(
                    anonymousId: s.anonymousId, sessionId: s.sessionId, userId: s.userId, hasToken: s.tokens.token != nil,
                    link: .init(state: linkState, lastSkipReason: s.lastSkip),
                    replayBuffer: .init(count: s.replay.count, capacity: replayCapacity)),
                lastFlush: .init(
                    at: s.lastFlush.at.map { Timestamp.format(ms: $0) }, ok: s.lastFlush.ok, sent: s.lastFlush.sent,
                    consecutiveFailures: s.lastFlush.consecutiveFailures),
                site: siteId, endpoint: endpoint, piiRules: scrubber.ruleCount,
                privacy: .init(
                    requested: privacy.requested, mode: privacy.mode.rawValue, region: privacy.region,
                    retentionHours: privacy.retentionHours, dropsDeviceSignals: privacy.dropsDeviceSignals,
                    noSessionReplay: privacy.declared, noGeoEnrichment: privacy.declared))
        }
    }

    /// ``inspect()`` as compact JSON, for bug reports. Never contains the token.
    public func inspectJSON() -> String {
        WireJSON.encodeString(inspect().json())
    }

    /// The integration guide's spelling of ``inspectJSON()``.
    @available(*, deprecated, renamed: "inspectJSON()")
    public func inspectJson() -> String { inspectJSON() }
}
