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
    public init(
        mode: PrivacyMode, region: String? = nil, regionProvider: (@Sendable () -> String?)? = nil,
        overrides: PrivacyOverrides? = nil
    ) {
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
    /// Replaces the value with `h:` + FNV-1a 32-bit of its JSON encoding (not cryptographic),
    /// identical to the web tracker's.
    case hash

    /// The integration guide's spelling of ``hash`` (its Kotlin core, seen from Objective-C, could
    /// not use `hash`, NSObject's name); the same action.
    @available(*, deprecated, renamed: "hash")
    public static var hash_: PiiAction { .hash }
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

/// PII scrubbing, applied to `props` and `traits` before an event is queued:
/// `.classify([PiiRule(field: "email", action: .hash)])` or `.denylist(["email", "phone"])`.
public enum PiiOptions: Sendable, Equatable {
    /// Per-key actions; the first rule for a key wins.
    case classify([PiiRule])
    /// Keys removed wherever they appear.
    case denylist([String])

    /// The integration guide's spelling of ``classify(_:)``.
    @available(*, deprecated, renamed: "classify(_:)")
    public static func Classify(rules: [PiiRule]) -> PiiOptions { .classify(rules) }
    /// The integration guide's spelling of ``denylist(_:)``.
    @available(*, deprecated, renamed: "denylist(_:)")
    public static func Denylist(keys: [String]) -> PiiOptions { .denylist(keys) }

    var ruleCount: Int {
        switch self {
        case .classify(let r): r.count
        case .denylist(let k): k.count
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
public struct ScoreError: Error, Sendable, Hashable, CustomStringConvertible {
    /// A stable error code. New codes may be added: a `switch` over codes needs a `default`.
    public struct Code: RawRepresentable, Hashable, Sendable, CustomStringConvertible, ExpressibleByStringLiteral {
        /// The code as text (`flushFailed`).
        public let rawValue: String
        /// A code from its text.
        public init(rawValue: String) { self.rawValue = rawValue }
        /// A code from a literal (so `error.code == "flushFailed"` keeps compiling).
        public init(stringLiteral value: String) { self.rawValue = value }
        public var description: String { rawValue }

        /// A flush that failed to deliver everything it took.
        public static let flushFailed = Code(rawValue: "flushFailed")
    }

    /// Stable code: ``Code/flushFailed``.
    public let code: Code
    /// Human-readable detail (never a token or personal data).
    public let message: String

    /// Creates an error.
    public init(code: Code, message: String) {
        self.code = code
        self.message = message
    }

    /// A flush that failed to deliver everything it took.
    public static func flushFailed(_ message: String) -> ScoreError { ScoreError(code: .flushFailed, message: message) }

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
///
/// Event ids take their random bits from a SplitMix64 stream seeded from the system's
/// cryptographic source (unique and unpredictable enough for ids, and lock-free, so `track`
/// never makes a system call for them). Anonymous and session ids use the system source.
public struct SystemScoreIdSource: ScoreIdSource {
    private final class Stream: Sendable {
        // TrackerCore's AtomicCell, not `Synchronization.Atomic` (macOS 15 / iOS 18 only).
        let state: AtomicCell
        init() {
            var seed: UInt64 = 0
            withUnsafeMutableBytes(of: &seed) { SystemRandomSource().fill($0) }
            state = AtomicCell(seed)
        }
        func next() -> UInt64 {
            var z = state.wrappingAddRelaxed(0x9E37_79B9_7F4A_7C15)
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            return z ^ (z >> 31)
        }
    }
    private let stream = Stream()

    /// Creates the id source.
    public init() {}

    public func newEventId(nowMs: Int64) -> String { SystemScoreIdSource.format(newEventIdHalves(nowMs: nowMs)) }

    /// A new event id as its two 64-bit halves (the first and last 16 hex digits, what
    /// `CompactEventId.uuid` holds): the recording path takes this form, building no string.
    func newEventIdHalves(nowMs: Int64) -> (UInt64, UInt64) {
        let a = stream.next()
        let b = stream.next()
        let t = UInt64(max(0, nowMs)) & 0xFFFF_FFFF_FFFF
        // bytes: 6 time, then version 7 + 12 bits, variant 10 + 62 bits.
        return (t << 16 | 0x7000 | (a & 0x0FFF), (b & 0x3FFF_FFFF_FFFF_FFFF) | 0x8000_0000_0000_0000)
    }

    /// The canonical lowercase text of the UUID whose halves are `bytes`.
    static func format(_ bytes: (UInt64, UInt64)) -> String {
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 36) { out -> String in
            let hex: StaticString = "0123456789abcdef"
            var j = 0
            hex.withUTF8Buffer { h in
                for i in 0..<16 {
                    let word = i < 8 ? bytes.0 : bytes.1
                    let byte = UInt8(truncatingIfNeeded: word >> UInt64(8 * (7 - (i & 7))))
                    if i == 4 || i == 6 || i == 8 || i == 10 {
                        out[j] = 45
                        j += 1
                    }
                    out[j] = h[Int(byte >> 4)]
                    out[j + 1] = h[Int(byte & 0x0F)]
                    j += 2
                }
            }
            return String(decoding: UnsafeBufferPointer(rebasing: out[0..<36]), as: UTF8.self)
        }
    }
    public func newAnonymousId() -> String { IDs.uuidV4() }
    public func newSessionId() -> String { IDs.uuidV4() }
}
