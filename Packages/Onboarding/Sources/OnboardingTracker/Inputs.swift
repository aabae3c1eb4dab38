import TrackerCore

/// A run property value: a scalar.
public enum PropertyValue: Sendable, Equatable {
    /// A string of at most 256 code points.
    case string(String)
    /// A finite number.
    case number(Double)
    /// A Boolean.
    case bool(Bool)
    /// `null`.
    case null

    var json: JSONValue {
        switch self {
        case .string(let s): .string(s)
        case .number(let n): .number(n)
        case .bool(let b): .bool(b)
        case .null: .null
        }
    }
}

extension PropertyValue: ExpressibleByStringLiteral, ExpressibleByIntegerLiteral, ExpressibleByFloatLiteral,
    ExpressibleByBooleanLiteral, ExpressibleByNilLiteral
{
    public init(stringLiteral value: String) { self = .string(value) }
    public init(integerLiteral value: Int) { self = .number(Double(value)) }
    public init(floatLiteral value: Double) { self = .number(value) }
    public init(booleanLiteral value: Bool) { self = .bool(value) }
    public init(nilLiteral: ()) { self = .null }
}

/// Run properties in the order given: the first insertion of a key is its position on the wire.
public struct RunProperties: Sendable, Equatable, ExpressibleByDictionaryLiteral {
    /// The properties, in order (a repeated key is applied in turn, keeping its first position).
    public var entries: [(key: String, value: PropertyValue)]

    /// Creates properties from ordered pairs.
    public init(_ entries: [(String, PropertyValue)] = []) { self.entries = entries.map { (key: $0.0, value: $0.1) } }

    public init(dictionaryLiteral elements: (String, PropertyValue)...) { self.init(elements) }

    public static func == (lhs: RunProperties, rhs: RunProperties) -> Bool {
        lhs.entries.count == rhs.entries.count && zip(lhs.entries, rhs.entries).allSatisfy { $0.key == $1.key && $0.value == $1.value }
    }
}

/// One answer given on a screen. Values are stable option keys, never displayed labels.
public enum AnswerInput: Sendable, Equatable {
    /// One option key.
    case single(questionKey: String, value: String)
    /// A list of option keys (duplicates removed keeping the first; at most 50 distinct).
    case multi(questionKey: String, value: [String])
    /// A finite number with an optional unit key.
    case numeric(questionKey: String, value: Double, unit: String? = nil)
    /// Free text of at most 1,000 code points.
    case text(questionKey: String, value: String)

    /// The question key.
    public var questionKey: String {
        switch self {
        case .single(let k, _), .multi(let k, _), .numeric(let k, _, _), .text(let k, _): k
        }
    }
}

/// A Studio record id: a string, or a number from untyped input (a safe non-negative integer is
/// sent as its decimal string; any other number makes the start invalid).
public enum StudioID: Sendable, Equatable, ExpressibleByStringLiteral, ExpressibleByIntegerLiteral, ExpressibleByFloatLiteral {
    /// A string id (1–128 code points).
    case string(String)
    /// A numeric id.
    case number(Double)

    public init(stringLiteral value: String) { self = .string(value) }
    public init(integerLiteral value: Int) { self = .number(Double(value)) }
    public init(floatLiteral value: Double) { self = .number(value) }
}

/// Studio links of a Studio-served run. `nil` members are absent.
public struct StudioInput: Sendable, Equatable {
    /// Studio onboarding id.
    public var onboardingId: StudioID?
    /// Studio deployment id (absent: a draft/preview).
    public var deploymentId: StudioID?
    /// Studio audience id.
    public var audienceId: StudioID?
    /// The Studio variant served (`"main"` for the parent onboarding), sent as `studio.variant_key`.
    public var variantKey: StudioID?
    /// A draft or preview: the version sent is `"draft"`.
    public var draft: Bool?

    /// Creates Studio links.
    public init(
        onboardingId: StudioID? = nil, deploymentId: StudioID? = nil, audienceId: StudioID? = nil, variantKey: StudioID? = nil,
        draft: Bool? = nil
    ) {
        self.onboardingId = onboardingId
        self.deploymentId = deploymentId
        self.audienceId = audienceId
        self.variantKey = variantKey
        self.draft = draft
    }
}

/// The app's own identity of the flow.
public struct OnboardingInput: Sendable, Equatable {
    /// Stable key of the flow.
    public var key: String
    /// The flow's revision; change it whenever the manifest or a question's keys change.
    public var version: String
    /// The app's own in-flow variant (not sent for a Studio-served run).
    public var variantKey: String?

    /// Creates an identity.
    public init(key: String, version: String, variantKey: String? = nil) {
        self.key = key
        self.version = version
        self.variantKey = variantKey
    }
}

/// One screen the flow can show; alternatives at one position share a `slot`.
public struct ManifestStepInput: Sendable, Equatable {
    /// The step key.
    public var stepKey: String
    /// The slot shared by alternative screens.
    public var slot: String?

    /// Creates a manifest step.
    public init(stepKey: String, slot: String? = nil) {
        self.stepKey = stepKey
        self.slot = slot
    }
}

/// What `start` (and `resume(expected:)`) takes.
public struct StartOptions: Sendable {
    /// The app's identity; optional only for Studio-served flows.
    public var onboarding: OnboardingInput?
    /// Every screen the flow can show, in flow order.
    public var manifest: [ManifestStepInput]
    /// Run properties (at most 20 scalars, no personal data).
    public var properties: RunProperties?
    /// Studio links.
    public var studio: StudioInput?

    /// Creates start options.
    public init(
        onboarding: OnboardingInput? = nil, manifest: [ManifestStepInput], properties: RunProperties? = nil, studio: StudioInput? = nil
    ) {
        self.onboarding = onboarding
        self.manifest = manifest
        self.properties = properties
        self.studio = studio
    }
}
