import TrackerCore

/// Sameness of contract values (TrackerCore's ContractRules article, the onboarding server's
/// verdict): object member order is ignored, an absent member equals a `null` one, arrays compare
/// element by element in order.
public enum Canonical {
    /// The canonical text of `value`: members whose value is `null` dropped (recursively), object
    /// keys sorted by code point, arrays kept in order, compact.
    public static func text(_ value: JSONValue) -> String {
        WireJSON.encodeString(form(value))
    }

    /// Whether `a` and `b` are the same under section 12.3.
    public static func same(_ a: JSONValue?, _ b: JSONValue?) -> Bool {
        text(a ?? .null) == text(b ?? .null)
    }

    static func form(_ value: JSONValue) -> JSONValue {
        switch value {
        case let .object(object):
            let members = object.entries
                .filter { !$0.value.isNull }
                .sorted { Array($0.key.unicodeScalars.map(\.value)).lexicographicallyPrecedes($1.key.unicodeScalars.map(\.value)) }
                .map { ($0.key, form($0.value)) }
            return .object(JSONObject(members))
        case let .array(items):
            return .array(items.map(form))
        default:
            return value
        }
    }
}
