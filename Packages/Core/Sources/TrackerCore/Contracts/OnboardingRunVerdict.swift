/// The server's answer to one onboarding run snapshot given the one it stores for that run
/// (the onboarding-run contract's acceptance rules, first match wins), with the step that
/// decided it. `Problem` is what the caller's conformance check reports (the collector's JSON
/// Schema problems, or Core's ``ContractViolation``s).
public enum OnboardingRunVerdict<Problem: Sendable & Equatable>: Sendable, Equatable {
    /// Rule 1: the stored snapshot is completed, everything later is ignored.
    case ignoredCompleted
    /// Rule 2: the snapshot is over ``ContractChecker/onboardingRunMaxBytes`` (its compact byte count given).
    case rejectedTooLarge(bytes: Int)
    /// Rule 2: the snapshot does not conform (the conformance check's problems, never empty).
    case rejectedNonconformant([Problem])
    /// Rule 3: nothing was stored for the run, the snapshot is taken.
    case acceptedFirst
    /// Rule 4: `onboarding` differs from the stored snapshot's (key, version or variant).
    case rejectedOnboardingChanged
    /// Rule 4: `manifest` differs from the stored snapshot's.
    case rejectedManifestChanged
    /// Rule 5: a higher `seq` than the stored one, the snapshot replaces it.
    case acceptedHigherSeq
    /// Rule 6: the stored `seq` again with the same body (canonically): a retry.
    case ignoredRetry
    /// Rule 6: the stored `seq` again with a different body; the stored one stays.
    case ignoredRetryBodyMismatch
    /// Rule 7: a lower `seq` than the stored one.
    case ignoredStale(storedSeq: Int)

    /// The sink outcome the server answers.
    public var outcome: SinkOutcome {
        switch self {
        case .acceptedFirst, .acceptedHigherSeq: .accepted
        case .ignoredCompleted, .ignoredRetry, .ignoredRetryBodyMismatch, .ignoredStale: .ignored
        case .rejectedTooLarge, .rejectedNonconformant, .rejectedOnboardingChanged, .rejectedManifestChanged: .rejected
        }
    }
}

extension ContractChecker {
    /// The maximum compact size of an onboarding run snapshot, in bytes (256 KiB, contract D8):
    /// the one declaration of the limit, which the collector uses.
    public static let onboardingRunMaxBytes = 262_144

    /// The server's verdict on `incoming` when it stores `stored` for the run, in the server's
    /// order: a stored completed snapshot → ignored; over ``onboardingRunMaxBytes`` (`size`, by
    /// default the compact encoding's) → rejected; a problem from `conformance` → rejected;
    /// nothing stored → accepted; `onboarding` or `manifest` changed → rejected; a higher `seq`
    /// → accepted; the same `seq` → ignored (a retry, or a retry whose body differs); a lower
    /// one → ignored. Sameness is ``canonicallySame(_:_:)``'s.
    public static func onboardingRunVerdict<Problem>(
        incoming: JSONValue, stored: JSONValue?, size: Int? = nil, conformance: (JSONValue) -> [Problem]
    ) -> OnboardingRunVerdict<Problem> {
        if let stored, stored["status"]?.stringValue == "completed" { return .ignoredCompleted }
        let bytes = size ?? WireJSON.encode(incoming).count
        if bytes > onboardingRunMaxBytes { return .rejectedTooLarge(bytes: bytes) }
        let problems = conformance(incoming)
        if !problems.isEmpty { return .rejectedNonconformant(problems) }
        guard let stored else { return .acceptedFirst }
        if !canonicallySame(stored["onboarding"], incoming["onboarding"]) { return .rejectedOnboardingChanged }
        if !canonicallySame(stored["manifest"], incoming["manifest"]) { return .rejectedManifestChanged }
        let storedSeq = stored["seq"]?.numberValue ?? 0
        let incomingSeq = incoming["seq"]?.numberValue ?? 0
        if incomingSeq > storedSeq { return .acceptedHigherSeq }
        if incomingSeq < storedSeq { return .ignoredStale(storedSeq: Int(storedSeq)) }
        return canonicallySame(stored, incoming) ? .ignoredRetry : .ignoredRetryBodyMismatch
    }

    /// The verdict with Core's own conformance check (``onboardingRun(_:)``: the typed shape
    /// and rules 1-8).
    public static func onboardingRunVerdict(incoming: JSONValue, stored: JSONValue?, size: Int? = nil) -> OnboardingRunVerdict<
        ContractViolation
    > {
        onboardingRunVerdict(incoming: incoming, stored: stored, size: size) { onboardingRun($0) }
    }

    /// The canonical text of `value` (onboarding-run contract section 12.3): members whose value
    /// is `null` dropped (recursively), object keys sorted by code point, arrays kept in order,
    /// compact. Two values are the same for the server when their canonical texts are equal.
    public static func canonicalText(_ value: JSONValue) -> String {
        WireJSON.encodeString(canonicalForm(value))
    }

    /// Whether `a` and `b` are the same for the server (section 12.3): member order ignored, an
    /// absent member equal to a `null` one (an absent value equal to `null`), arrays compared in
    /// order. Unlike ``JSONValue/semanticallyEquals(_:)``, which tells `{"a":null}` from `{}`.
    public static func canonicallySame(_ a: JSONValue?, _ b: JSONValue?) -> Bool {
        canonicalText(a ?? .null) == canonicalText(b ?? .null)
    }

    static func canonicalForm(_ value: JSONValue) -> JSONValue {
        switch value {
        case .object(let object):
            let members = object.entries
                .filter { !$0.value.isNull }
                .sorted { $0.key.unicodeScalars.map(\.value).lexicographicallyPrecedes($1.key.unicodeScalars.map(\.value)) }
                .map { ($0.key, canonicalForm($0.value)) }
            return .object(JSONObject(members))
        case .array(let items):
            return .array(items.map(canonicalForm))
        default:
            return value
        }
    }
}
