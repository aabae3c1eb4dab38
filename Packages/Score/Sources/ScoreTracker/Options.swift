import TrackerCore

/// A consent category of the fan's CMP choice.
public enum ConsentCategory: String, Sendable, Hashable, CaseIterable {
    /// Analytics (every typed event but `ad_impression`, named events by default, screens, identify).
    case analytics
    /// Personalisation.
    case personalization
    /// Advertising (`ad_impression`, `trackAdvertising`).
    case advertising

    var bit: UInt8 {
        switch self {
        case .analytics: 1
        case .personalization: 2
        case .advertising: 4
        }
    }
}

/// Which consent categories are granted.
public struct ConsentState: Sendable, Equatable {
    /// Analytics granted.
    public var analytics: Bool
    /// Personalisation granted.
    public var personalization: Bool
    /// Advertising granted.
    public var advertising: Bool

    /// Creates a consent state.
    public init(analytics: Bool, personalization: Bool, advertising: Bool) {
        self.analytics = analytics
        self.personalization = personalization
        self.advertising = advertising
    }

    /// Every category granted.
    public static let all = ConsentState(analytics: true, personalization: true, advertising: true)
    /// Nothing granted.
    public static let none = ConsentState(analytics: false, personalization: false, advertising: false)

    var mask: UInt8 {
        (analytics ? 1 : 0) | (personalization ? 2 : 0) | (advertising ? 4 : 0)
    }
}

/// How hard the tracker tries to deliver an event. The tier is local: it never goes on the wire.
public enum DeliveryMode: Sendable, Equatable {
    /// The default: shed first when the queue is full.
    case bestEffort
    /// Sent first in every flush, kept across restarts as critical, shed last; a loss is reported
    /// with a `delivery_failed` event.
    case critical
}

/// A regional privacy policy.
public enum PrivacyMode: String, Sendable, Equatable {
    /// EU, EEA, UK, CH: opt-in, 24 h retention, no locale/device.
    case gdpr
    /// Quebec Law 25: opt-in, 24 h retention, no locale/device.
    case quebec
    /// Brazil: opt-in, 48 h retention, no locale/device.
    case lgpd
    /// US: analytics and personalisation granted at start, 72 h retention.
    case cpra
    /// No policy: as without the option.
    case off
    /// Picks the policy from `region` or `regionProvider`; GDPR without either.
    case auto
}

/// Tunes the resolved policy without forking the table. A `nil` field keeps the policy's value.
public struct PrivacyOverrides: Sendable, Equatable {
    /// Replaces the policy's starting consent.
    public var startingConsent: ConsentState?
    /// Replaces the policy's retention cap (still capped at 72 h).
    public var retentionMaxHours: Int?
    /// Replaces whether `locale` and `device` leave the envelope.
    public var dropDeviceSignals: Bool?

    /// Creates overrides.
    public init(startingConsent: ConsentState? = nil, retentionMaxHours: Int? = nil, dropDeviceSignals: Bool? = nil) {
        self.startingConsent = startingConsent
        self.retentionMaxHours = retentionMaxHours
        self.dropDeviceSignals = dropDeviceSignals
    }
}

/// The privacy option: a regional policy, fixed for the tracker's lifetime.
public struct PrivacyOptions: Sendable {
    /// The requested policy.
    public var mode: PrivacyMode
    /// For `.auto`: ISO country, optionally with a subdivision (`GB`, `US-CA`, `CA-QC`).
    public var region: String?
    /// For `.auto` without `region`: called once, at construction.
    public var regionProvider: (@Sendable () -> String?)?
    /// Per-setting overrides of the resolved policy.
    public var overrides: PrivacyOverrides?

    /// Creates the option.
    public init(mode: PrivacyMode, region: String? = nil, regionProvider: (@Sendable () -> String?)? = nil,
                overrides: PrivacyOverrides? = nil) {
        self.mode = mode
        self.region = region
        self.regionProvider = regionProvider
        self.overrides = overrides
    }
}

/// What a PII rule does with a matching key's value.
public enum PiiAction: Sendable, Equatable {
    /// Removes the key.
    case drop
    /// Replaces the value with `"<redacted>"`.
    case redact
    /// Replaces the value with `t:1`, `t:2`, …, stable for the client's lifetime.
    case tokenize
    /// Replaces the value with `h:` + FNV-1a 32-bit of its JSON encoding (not cryptographic).
    /// Spelled `hash_` because `hash` is NSObject's.
    case hash_
}

/// One classify rule: an exact, case-sensitive key and its action.
public struct PiiRule: Sendable, Equatable {
    /// The key, matched exactly at any depth.
    public var field: String
    /// The action.
    public var action: PiiAction

    /// Creates a rule.
    public init(field: String, action: PiiAction) {
        self.field = field
        self.action = action
    }
}

/// PII scrubbing, applied to `props` and `traits` before an event is queued.
public enum PiiOptions: Sendable, Equatable {
    /// Per-key actions; the first rule for a key wins.
    case classify([PiiRule])
    /// Keys removed wherever they appear.
    case denylist([String])

    /// Per-key actions; the first rule for a key wins.
    public static func Classify(rules: [PiiRule]) -> PiiOptions { .classify(rules) }
    /// Keys removed wherever they appear.
    public static func Denylist(keys: [String]) -> PiiOptions { .denylist(keys) }

    var ruleCount: Int {
        switch self {
        case let .classify(r): r.count
        case let .denylist(k): k.count
        }
    }
}

/// A typed event of the taxonomy: the wire name and the consent categories it requires.
public struct EventDefinition: Sendable, Equatable, Hashable {
    /// The wire name.
    public let name: String
    /// The consent categories that must all be granted for the event to be queued.
    public let requires: [ConsentCategory]

    /// Creates a definition.
    public init(name: String, requires: [ConsentCategory]) {
        self.name = name
        self.requires = requires
    }
}

/// Why the link-anonymous request has not been sent.
public enum LinkSkipReason: String, Sendable, Equatable {
    /// This (anonymousId, userId) pair is already linked.
    case alreadyLinked = "already_linked"
    /// Analytics consent is not granted.
    case consent
    /// No token is known.
    case noToken = "no_token"
    /// The last link request failed; it is retried at the next flush.
    case error
}

/// An error of the Score tracker, with a stable code.
public struct ScoreError: Error, Sendable, Equatable, CustomStringConvertible {
    /// Stable code: `flushFailed`.
    public let code: String
    /// Human-readable detail (never a token or personal data).
    public let message: String

    /// Creates an error.
    public init(code: String, message: String) {
        self.code = code
        self.message = message
    }

    /// A flush that failed to deliver everything it took.
    public static func flushFailed(_ message: String) -> ScoreError { ScoreError(code: "flushFailed", message: message) }

    public var description: String { "\(code): \(message)" }
}

/// Supplies the ids a client mints. Injected so tests get fixed ids.
public protocol ScoreIdSource: Sendable {
    /// A new event id (lowercase UUIDv7 in production).
    func newEventId(nowMs: Int64) -> String
    /// A new anonymous id (lowercase UUID).
    func newAnonymousId() -> String
    /// A new session id (lowercase UUID).
    func newSessionId() -> String
}

/// The production id source: UUIDv7 event ids, random UUIDv4 anonymous and session ids.
public struct SystemScoreIdSource: ScoreIdSource {
    /// Creates the id source.
    public init() {}
    public func newEventId(nowMs: Int64) -> String { IDs.uuidV7(nowMs: nowMs) }
    public func newAnonymousId() -> String { IDs.uuidV4() }
    public func newSessionId() -> String { IDs.uuidV4() }
}
