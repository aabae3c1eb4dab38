/// The server's answer to one paywall presentation snapshot given the one it stores for that
/// presentation (<doc:ContractRules#The-paywall-servers-verdict>), with the step that decided
/// it. `Problem` is what the caller's conformance check reports (the collector's JSON Schema
/// problems, the paywall checker's messages, or Core's ``ContractViolation``s).
public enum PaywallVerdict<Problem: Sendable & Equatable>: Sendable, Equatable {
    /// The stored snapshot has ended: everything later is ignored.
    case ignoredEnded
    /// The snapshot is over ``ContractChecker/paywallMaxBytes`` (its compact byte count given).
    case rejectedTooLarge(bytes: Int)
    /// The snapshot does not conform (the conformance check's problems, never empty).
    case rejectedNonconformant([Problem])
    /// Nothing was stored: the snapshot is taken.
    case acceptedFirst
    /// A member that never changes within a presentation changed (rule P6).
    case rejectedImmutable(ContractViolation)
    /// A higher `seq` than the stored one: the snapshot replaces it.
    case acceptedHigherSeq
    /// The stored `seq` again: a retry.
    case ignoredRetry
    /// A lower `seq` than the stored one.
    case ignoredStale(storedSeq: Int)

    /// The sink outcome the server answers.
    public var outcome: SinkOutcome {
        switch self {
        case .acceptedFirst, .acceptedHigherSeq: .accepted
        case .ignoredEnded, .ignoredRetry, .ignoredStale: .ignored
        case .rejectedTooLarge, .rejectedNonconformant, .rejectedImmutable: .rejected
        }
    }
}

extension ContractChecker {
    /// The server's verdict on `incoming` when it stores `stored` for the presentation
    /// (<doc:ContractRules#The-paywall-servers-verdict>), in the server's order: a stored ended
    /// snapshot → ignored; over ``paywallMaxBytes`` (`size`, by default the compact encoding's)
    /// → rejected; a problem from `conformance` → rejected; nothing stored → accepted; an
    /// immutable member changed → rejected; a higher `seq` → accepted; otherwise ignored.
    public static func paywallVerdict<Problem>(
        incoming: JSONValue, stored: JSONValue?, size: Int? = nil, conformance: (JSONValue) -> [Problem]
    ) -> PaywallVerdict<Problem> {
        if let stored, stored["status"]?.stringValue == "ended" { return .ignoredEnded }
        let bytes = size ?? WireJSON.encode(incoming).count
        if bytes > paywallMaxBytes { return .rejectedTooLarge(bytes: bytes) }
        let problems = conformance(incoming)
        if !problems.isEmpty { return .rejectedNonconformant(problems) }
        guard let stored else { return .acceptedFirst }
        if let changed = paywallImmutability(incoming, previous: stored).first { return .rejectedImmutable(changed) }
        let storedSeq = stored["seq"]?.numberValue ?? 0
        let incomingSeq = incoming["seq"]?.numberValue ?? 0
        if incomingSeq > storedSeq { return .acceptedHigherSeq }
        return incomingSeq == storedSeq ? .ignoredRetry : .ignoredStale(storedSeq: Int(storedSeq))
    }

    /// The verdict with Core's own conformance check (``paywallPresentation(_:previous:)``
    /// without its size rule, which the verdict applies first).
    public static func paywallVerdict(incoming: JSONValue, stored: JSONValue?, size: Int? = nil) -> PaywallVerdict<ContractViolation> {
        paywallVerdict(incoming: incoming, stored: stored, size: size) { value in
            paywallPresentation(value).filter { $0.rule != .paywallMaxSize }
        }
    }

    /// The members of `json` that differ from `previous`, an earlier snapshot of the same
    /// presentation (rule P6: `presentation_id`, `started_at`, `paywall`, `surface`,
    /// `onboarding_run` and `context` never change).
    public static func paywallImmutability(_ json: JSONValue, previous: JSONValue) -> [ContractViolation] {
        var out: [ContractViolation] = []
        for key in paywallImmutableMembers {
            let same: Bool
            switch (previous[key], json[key]) {
            case (nil, nil): same = true
            case (let x?, let y?): same = x.semanticallyEquals(y)
            default: same = false
            }
            if !same {
                out.append(
                    .init(
                        rule: .paywallImmutable, path: "$.\(key)", message: "\(key) differs from the earlier snapshot of this presentation")
                )
            }
        }
        return out
    }

    /// The members rule P6 keeps fixed within a presentation.
    public static let paywallImmutableMembers = ["presentation_id", "started_at", "paywall", "surface", "onboarding_run", "context"]
}
