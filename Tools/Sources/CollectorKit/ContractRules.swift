import TrackerCore

/// The rules beyond the schema that the ingest checks on every single snapshot (TrackerCore's
/// ContractRules article: the onboarding run rules, the paywall rules and P6), through Core's
/// ``ContractChecker``. The collector's own JSON Schema validator runs first, so the checker's
/// coarse shape rules are left out here, and so is the paywall size rule (the acceptance step
/// measures size before the schema).
public enum ContractRules {
    /// Rules that belong to the schema or to the size step, not to this one.
    static let skipped: Set<ContractRule> = [.onboardingSchemaShape, .paywallSchemaShape, .paywallMaxSize]

    /// The first onboarding-run rule (1–8) `snapshot` breaks, as a reason text
    /// (`onboarding.<n>.<rule> at <path>: <message>`), or `nil`.
    public static func onboardingRunViolation(_ snapshot: JSONValue) -> String? {
        ContractChecker.onboardingRun(snapshot).first { !skipped.contains($0.rule) }?.description
    }

    /// Every onboarding-run rule (1–8) `snapshot` breaks.
    public static func onboardingRunViolations(_ snapshot: JSONValue) -> [ContractViolation] {
        ContractChecker.onboardingRun(snapshot).filter { !skipped.contains($0.rule) }
    }

    /// Every paywall rule (paywall rules 1–8) `snapshot` breaks.
    public static func paywallViolations(_ snapshot: JSONValue) -> [ContractViolation] {
        ContractChecker.paywallPresentation(snapshot, previous: nil).filter { !skipped.contains($0.rule) }
    }

    /// The first paywall rule (paywall rules 1–8, and P6 immutability against `previous`
    /// when given) `snapshot` breaks, or `nil`.
    public static func paywallViolation(_ snapshot: JSONValue, previous: JSONValue? = nil) -> String? {
        ContractChecker.paywallPresentation(snapshot, previous: previous).first { !skipped.contains($0.rule) }?.description
    }
}
