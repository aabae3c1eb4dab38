import TrackerCore

/// A snapshot of the tracker's state for bug reports. It never holds the token, only `hasToken`.
public struct InspectSnapshot: Sendable, Equatable {
    /// SDK name and version.
    public struct SDK: Sendable, Equatable { public var name: String; public var version: String }
    /// Consent and what the gate dropped.
    public struct Consent: Sendable, Equatable {
        public var analytics: Bool
        public var personalization: Bool
        public var advertising: Bool
        public var droppedByConsent: Int
        /// Drops per category, keyed `analytics`, `personalization`, `advertising`.
        public var droppedByCategory: [String: Int]
    }
    /// The queue.
    public struct Queue: Sendable, Equatable {
        public var depth: Int
        public var maxSize: Int
        public var retentionHours: Int
        public var oldestAgeSeconds: Int?
        public var critical: Int
        public var criticalLost: Int
        public var shed: Int
        public var expired: Int
        public var invalid: Int
    }
    /// The link-anonymous state.
    public struct Link: Sendable, Equatable {
        /// `none`, `pending` or `linked`.
        public var state: String
        public var lastSkipReason: LinkSkipReason?
    }
    /// The replay buffer.
    public struct ReplayBuffer: Sendable, Equatable { public var count: Int; public var capacity: Int }
    /// Identity.
    public struct Identity: Sendable, Equatable {
        public var anonymousId: String
        public var sessionId: String
        public var userId: String?
        public var hasToken: Bool
        public var link: Link
        public var replayBuffer: ReplayBuffer
    }
    /// The last flush.
    public struct LastFlush: Sendable, Equatable {
        /// When it ended (contract timestamp), `nil` before any flush.
        public var at: String?
        public var ok: Bool?
        public var sent: Int
        public var consecutiveFailures: Int
    }
    /// The privacy policy in force.
    public struct Privacy: Sendable, Equatable {
        public var requested: String
        public var mode: String
        public var region: String?
        public var retentionHours: Int
        public var dropsDeviceSignals: Bool
        public var noSessionReplay: Bool
        public var noGeoEnrichment: Bool
    }

    public var sdk: SDK
    public var consent: Consent
    public var queue: Queue
    public var identity: Identity
    public var lastFlush: LastFlush
    public var site: String
    public var endpoint: String
    public var piiRules: Int
    public var privacy: Privacy

    /// The snapshot as JSON (section 9 key order), written with the project's encoder.
    public func json() -> JSONValue {
        func opt(_ s: String?) -> JSONValue { s.map { .string($0) } ?? .null }
        func num(_ i: Int) -> JSONValue { .number(Double(i)) }
        return .object(JSONObject([
            ("sdk", .object(JSONObject([("name", .string(sdk.name)), ("version", .string(sdk.version))]))),
            ("consent", .object(JSONObject([
                ("analytics", .bool(consent.analytics)), ("personalization", .bool(consent.personalization)),
                ("advertising", .bool(consent.advertising)), ("droppedByConsent", num(consent.droppedByConsent)),
                ("droppedByCategory", .object(JSONObject(ConsentCategory.allCases.map { ($0.rawValue, num(consent.droppedByCategory[$0.rawValue] ?? 0)) }))),
            ]))),
            ("queue", .object(JSONObject([
                ("depth", num(queue.depth)), ("maxSize", num(queue.maxSize)), ("retentionHours", num(queue.retentionHours)),
                ("oldestAgeSeconds", queue.oldestAgeSeconds.map(num) ?? .null), ("critical", num(queue.critical)),
                ("criticalLost", num(queue.criticalLost)), ("shed", num(queue.shed)), ("expired", num(queue.expired)),
                ("invalid", num(queue.invalid)),
            ]))),
            ("identity", .object(JSONObject([
                ("anonymousId", .string(identity.anonymousId)), ("sessionId", .string(identity.sessionId)),
                ("userId", opt(identity.userId)), ("hasToken", .bool(identity.hasToken)),
                ("link", .object(JSONObject([("state", .string(identity.link.state)), ("lastSkipReason", opt(identity.link.lastSkipReason?.rawValue))]))),
                ("replayBuffer", .object(JSONObject([("count", num(identity.replayBuffer.count)), ("capacity", num(identity.replayBuffer.capacity))]))),
            ]))),
            ("lastFlush", .object(JSONObject([
                ("at", opt(lastFlush.at)), ("ok", lastFlush.ok.map { .bool($0) } ?? .null), ("sent", num(lastFlush.sent)),
                ("consecutiveFailures", num(lastFlush.consecutiveFailures)),
            ]))),
            ("site", .string(site)), ("endpoint", .string(endpoint)), ("piiRules", num(piiRules)),
            ("privacy", .object(JSONObject([
                ("requested", .string(privacy.requested)), ("mode", .string(privacy.mode)), ("region", opt(privacy.region)),
                ("retentionHours", num(privacy.retentionHours)), ("dropsDeviceSignals", .bool(privacy.dropsDeviceSignals)),
                ("noSessionReplay", .bool(privacy.noSessionReplay)), ("noGeoEnrichment", .bool(privacy.noGeoEnrichment)),
            ]))),
        ]))
    }
}

extension ScoreClient {
    /// A typed snapshot of the tracker (safe to log: no token, no event contents).
    public func inspect() -> InspectSnapshot {
        let now = clock.nowMs()
        return state.withLock { s in
            let oldest = s.queue.map(\.timestampMs).min()
            let linkState: String
            if let uid = s.userId {
                linkState = s.linked.contains(linkKey(s.anonymousId, uid)) ? "linked" : "pending"
            } else {
                linkState = "none"
            }
            return InspectSnapshot(
                sdk: .init(name: ScoreSDK.name, version: ScoreSDK.version),
                consent: .init(analytics: s.consent.analytics, personalization: s.consent.personalization,
                               advertising: s.consent.advertising, droppedByConsent: s.droppedByConsent,
                               droppedByCategory: ["analytics": s.droppedByCategory[0], "personalization": s.droppedByCategory[1],
                                                   "advertising": s.droppedByCategory[2]]),
                queue: .init(depth: s.queue.count, maxSize: maxQueueSize, retentionHours: privacy.retentionHours,
                             oldestAgeSeconds: oldest.map { Int(max(0, now - $0) / 1000) },
                             critical: s.queue.reduce(0) { $0 + ($1.critical ? 1 : 0) }, criticalLost: s.criticalLost,
                             shed: s.shed, expired: s.expired, invalid: s.invalid),
                identity: .init(anonymousId: s.anonymousId, sessionId: s.sessionId, userId: s.userId, hasToken: s.token != nil,
                                link: .init(state: linkState, lastSkipReason: s.lastSkip),
                                replayBuffer: .init(count: s.replay.count, capacity: replayCapacity)),
                lastFlush: .init(at: s.lastFlushAt.map { Timestamp.format(ms: $0) }, ok: s.lastFlushOk, sent: s.lastFlushSent,
                                 consecutiveFailures: s.consecutiveFailures),
                site: siteId, endpoint: endpoint, piiRules: scrubber.ruleCount,
                privacy: .init(requested: privacy.requested, mode: privacy.mode.rawValue, region: privacy.region,
                               retentionHours: privacy.retentionHours, dropsDeviceSignals: privacy.dropsDeviceSignals,
                               noSessionReplay: privacy.declared, noGeoEnrichment: privacy.declared))
        }
    }

    /// ``inspect()`` as compact JSON, for bug reports. Never contains the token.
    public func inspectJson() -> String {
        WireJSON.encodeString(inspect().json())
    }
}
