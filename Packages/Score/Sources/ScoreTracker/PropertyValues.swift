import TrackerCore

/// A value that `props` and `traits` accept by converting it to a JSON value (issue 37 item 9).
///
/// On Apple platforms Foundation's `Date` (an ISO 8601 timestamp in UTC with milliseconds, the
/// form of the envelope's `timestamp`), `URL` (its `absoluteString`), `UUID` (its `uuidString`
/// in lowercase, the form of the envelope's ids) and `Decimal` (a JSON number) conform. Conform
/// an app type to send it in its own form:
///
/// ```swift
/// extension Team: ScorePropertyConvertible {
///     var scorePropertyValue: JSONValue? { .string(slug) }
/// }
/// score.track("team_followed", properties: ["team": team])
/// ```
///
/// An `Encodable` value that does not conform is sent as the JSON value it encodes to. A value
/// of neither kind, a non-finite number, or a conforming value whose ``scorePropertyValue`` is
/// `nil` drops only its key; each recording call reports the keys it dropped in one
/// `invalid-property` diagnostic.
///
/// The Linux build of the tracker links no Foundation: there `Date`, `URL`, `UUID` and `Decimal`
/// do not conform, and are dropped like any other value of an unknown type.
public protocol ScorePropertyConvertible {
    /// The JSON value sent in place of this value; `nil` drops its key. PII rules apply to it
    /// like to any other value (keys of an object it returns included).
    var scorePropertyValue: JSONValue? { get }
}

/// The conversions behind the Foundation conformances, portable so that Linux tests check them.
enum ScorePropertyValues {
    /// The envelope's timestamp form (`2026-03-01T12:00:01.234Z`: UTC, milliseconds truncated, as
    /// JavaScript's `toISOString`) of a time given in seconds since 1970; `nil` when not finite or
    /// outside the years 0000–9999 that the form can write.
    static func timestamp(secondsSince1970 seconds: Double) -> JSONValue? {
        guard seconds.isFinite else { return nil }
        // Rounded to the microsecond first, so that 1.234 s (1233.9999… ms in binary) is 1,234 ms.
        let micros = (seconds * 1_000_000).rounded()
        let minMs = -62_167_219_200_000.0  // 0000-01-01T00:00:00.000Z
        let maxMs = 253_402_300_799_999.0  // 9999-12-31T23:59:59.999Z
        let ms = (micros / 1000).rounded(.down)
        guard ms >= minMs && ms <= maxMs else { return nil }
        return .string(Timestamp.format(ms: Int64(ms)))
    }

    /// A UUID's text in lowercase: the form of the envelope's own ids (`eventId`, `anonymousId`)
    /// and of the web tracker's `crypto.randomUUID()`, so the same id is the same string (and the
    /// same PII hash) on every platform; Foundation's `uuidString` is uppercase.
    static func uuid(_ text: String) -> JSONValue {
        .string(text.lowercased())
    }

    /// A decimal number's text (`Decimal.description`: `12.34`, `-0.001`, `NaN`) as a JSON
    /// number; `nil` for `NaN`. Up to 15 significant digits the number is written with exactly
    /// its digits (every such decimal survives the round trip through a double, and the wire's
    /// JavaScript number formatting writes the shortest digits that do); beyond, it is the
    /// nearest double, as `JSON.parse` reads it on the receiving side anyway.
    static func decimal(_ text: String) -> JSONValue? {
        guard let d = Double(text), d.isFinite else { return nil }
        return .number(d)
    }
}

/// The keys one recording call dropped because their values convert to no JSON value: the call
/// reports them in one diagnostic, naming the first ``namedAtMost`` (the project's rule, as
/// Onboarding's `invalid-property`).
struct DroppedKeys {
    /// How many dropped keys one diagnostic names; the rest are counted ("and 3 more").
    static let namedAtMost = 10
    private(set) var count = 0
    private(set) var names: [String] = []

    /// Adds a dropped key. A key that does not look like an identifier (1 to 64 ASCII letters,
    /// digits, `_`, `-` or `.`) is named `?`: keys of app maps may hold personal data.
    mutating func add(_ key: String) {
        count += 1
        if names.count < Self.namedAtMost { names.append(Self.nameable(key) ? key : "?") }
    }

    /// Adds the keys `other` dropped.
    mutating func merge(_ other: DroppedKeys) {
        for n in other.names where names.count < Self.namedAtMost { names.append(n) }
        count += other.count
    }

    static func nameable(_ key: String) -> Bool {
        let u = key.utf8
        guard !u.isEmpty && u.count <= 64 else { return false }
        for b in u {
            switch b {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
                UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "_"), UInt8(ascii: "-"), UInt8(ascii: "."):
                continue
            default: return false
            }
        }
        return true
    }

    /// `property "x" invalid and dropped`, or `12 properties ("a", "b", … and 2 more) invalid
    /// and dropped` (`one`/`many`: `property`/`properties`, `trait`/`traits`); `nil` when empty.
    func message(one: String, many: String) -> String? {
        guard count > 0 else { return nil }
        let quoted = names.map { "\"\($0)\"" }
        if count == 1 { return "\(one) \(quoted[0]) invalid and dropped" }
        let rest = count - names.count
        let list = quoted.joined(separator: ", ") + (rest > 0 ? " and \(rest) more" : "")
        return "\(count) \(many) (\(list)) invalid and dropped"
    }
}

extension ScoreClient {
    /// Reports the keys a recording call dropped, once for the call.
    func reportDropped(_ dropped: DroppedKeys, traits: Bool) {
        guard let message = dropped.message(one: traits ? "trait" : "property", many: traits ? "traits" : "properties")
        else { return }
        diagnose(Diagnostic(code: .invalidProperty, message: message))
    }
}
