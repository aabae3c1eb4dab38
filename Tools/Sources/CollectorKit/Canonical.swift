import TrackerCore

/// Sameness of contract values (TrackerCore's ContractRules article, the onboarding server's
/// verdict): object member order is ignored, an absent member equals a `null` one, arrays compare
/// element by element in order. Core's ``TrackerCore/ContractChecker/canonicalText(_:)`` is the
/// one definition (the server's onboarding verdict uses it); this is the collector's name for it.
public enum Canonical {
    /// The canonical text of `value`: members whose value is `null` dropped (recursively), object
    /// keys sorted by code point, arrays kept in order, compact.
    public static func text(_ value: JSONValue) -> String {
        ContractChecker.canonicalText(value)
    }

    /// Whether `a` and `b` are the same under section 12.3.
    public static func same(_ a: JSONValue?, _ b: JSONValue?) -> Bool {
        ContractChecker.canonicallySame(a, b)
    }
}
