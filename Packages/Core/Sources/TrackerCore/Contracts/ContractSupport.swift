/// A JSON value that does not fit a contract type, with where and why.
public struct ContractDecodingError: Error, Sendable, Equatable, CustomStringConvertible {
    /// JSON path of the offending value, e.g. `$.steps[3].answers[0].kind`.
    public let path: String
    /// What was wrong.
    public let reason: String

    /// Creates an error at `path`.
    public init(path: String, reason: String) {
        self.path = path
        self.reason = reason
    }

    public var description: String { "\(path): \(reason)" }
}

/// A member that a contract may omit, send as `null`, or send with a value: `nil` of
/// `Nullable<T>?` is "omitted", `.null` is an explicit `null`.
public enum Nullable<Wrapped: Sendable & Equatable>: Sendable, Equatable {
    /// Written as JSON `null`.
    case null
    /// Written as the value.
    case value(Wrapped)

    /// The value, or `nil` for `.null`.
    public var value: Wrapped? { if case .value(let v) = self { v } else { nil } }
}

/// A scalar JSON value: what a free-form property map may hold.
public enum JSONScalar: Sendable, Equatable {
    /// A string.
    case string(String)
    /// A finite number.
    case number(Double)
    /// A Boolean.
    case bool(Bool)
    /// `null`.
    case null

    /// The same value as a ``JSONValue``.
    public var jsonValue: JSONValue {
        switch self {
        case .string(let s): .string(s)
        case .number(let n): .number(n)
        case .bool(let b): .bool(b)
        case .null: .null
        }
    }

    /// Writes the value.
    public func writeWire(to w: inout WireWriter) {
        switch self {
        case .string(let s): w.writeString(s)
        case .number(let n): w.writeNumber(n)
        case .bool(let b): w.writeBool(b)
        case .null: w.writeNull()
        }
    }
}

/// An insertion-ordered map of scalars (a run's `properties`): setting an existing key keeps its
/// position, a new key goes last, setting `nil` removes it. It is written in that order
/// (<doc:WireEncoding#Key-order>; property keys start with a letter, so JavaScript's integer-key
/// reordering never applies).
public struct OrderedScalarMap: Sendable, Equatable, ExpressibleByDictionaryLiteral {
    /// The members in wire order.
    public private(set) var entries: [(key: String, value: JSONScalar)]

    /// An empty map.
    public init() { entries = [] }

    /// A map from ordered members; a repeated key keeps its first position and its last value.
    public init(_ members: [(String, JSONScalar)]) {
        entries = []
        for (k, v) in members { self[k] = v }
    }

    public init(dictionaryLiteral elements: (String, JSONScalar)...) { self.init(elements) }

    /// Number of members.
    public var count: Int { entries.count }
    /// Whether the map has no member.
    public var isEmpty: Bool { entries.isEmpty }

    /// The value of `key`; setting `nil` removes the member.
    public subscript(key: String) -> JSONScalar? {
        get { entries.first { $0.key == key }?.value }
        set {
            if let i = entries.firstIndex(where: { $0.key == key }) {
                if let newValue { entries[i].value = newValue } else { entries.remove(at: i) }
            } else if let newValue {
                entries.append((key, newValue))
            }
        }
    }

    public static func == (lhs: OrderedScalarMap, rhs: OrderedScalarMap) -> Bool {
        lhs.entries.count == rhs.entries.count
            && zip(lhs.entries, rhs.entries).allSatisfy { $0.key == $1.key && $0.value == $1.value }
    }

    /// The map as an ordered JSON object.
    public func wireJSON() -> JSONValue {
        var o = JSONObject()
        for e in entries { o.appendUnchecked(e.key, e.value.jsonValue) }
        return .object(o)
    }

    /// Writes the map as a JSON object.
    public func writeWire(to w: inout WireWriter) {
        w.writeByte(123)
        var first = true
        for e in entries {
            if !first { w.writeByte(44) }
            first = false
            w.writeString(e.key)
            w.writeByte(58)
            e.value.writeWire(to: &w)
        }
        w.writeByte(125)
    }

    /// Decodes an object of scalars.
    public init(json: JSONValue, path: String) throws(ContractDecodingError) {
        guard case .object(let o) = json else { throw ContractDecodingError(path: path, reason: "expected an object") }
        entries = []
        entries.reserveCapacity(o.count)
        for (k, v) in o.entries {
            switch v {
            case .string(let s): entries.append((k, .string(s)))
            case .number(let n): entries.append((k, .number(n)))
            case .bool(let b): entries.append((k, .bool(b)))
            case .null: entries.append((k, .null))
            default: throw ContractDecodingError(path: "\(path).\(k)", reason: "expected a string, number, Boolean or null")
            }
        }
    }
}

/// Decoding helpers used by the generated contract types.
public enum ContractDecoding {
    /// A string.
    public static func string(_ v: JSONValue, _ path: String) throws(ContractDecodingError) -> String {
        guard case .string(let s) = v else { throw ContractDecodingError(path: path, reason: "expected a string") }
        return s
    }

    /// An integer (a JSON number with no fraction, within ±2^53).
    public static func int(_ v: JSONValue, _ path: String) throws(ContractDecodingError) -> Int {
        guard let i = v.intValue else { throw ContractDecodingError(path: path, reason: "expected an integer") }
        return i
    }

    /// A finite number.
    public static func double(_ v: JSONValue, _ path: String) throws(ContractDecodingError) -> Double {
        guard case .number(let n) = v, n.isFinite else { throw ContractDecodingError(path: path, reason: "expected a number") }
        return n
    }

    /// A Boolean.
    public static func bool(_ v: JSONValue, _ path: String) throws(ContractDecodingError) -> Bool {
        guard case .bool(let b) = v else { throw ContractDecodingError(path: path, reason: "expected a Boolean") }
        return b
    }

    /// A string enumeration.
    public static func enumeration<E: RawRepresentable>(_ v: JSONValue, _ path: String) throws(ContractDecodingError) -> E
    where E.RawValue == String {
        guard case .string(let s) = v else { throw ContractDecodingError(path: path, reason: "expected a string") }
        guard let e = E(rawValue: s) else { throw ContractDecodingError(path: path, reason: "unexpected value \"\(s)\"") }
        return e
    }

    /// An array, each element decoded by `element`.
    public static func array<T>(
        _ v: JSONValue, _ path: String, _ element: (JSONValue, String) throws(ContractDecodingError) -> T
    ) throws(ContractDecodingError) -> [T] {
        guard case .array(let a) = v else { throw ContractDecodingError(path: path, reason: "expected an array") }
        var out: [T] = []
        out.reserveCapacity(a.count)
        for (i, e) in a.enumerated() { out.append(try element(e, "\(path)[\(i)]")) }
        return out
    }
}

/// Reads the members of a closed contract object.
public struct ContractObjectReader {
    /// The object read.
    public let object: JSONObject
    /// Its JSON path.
    public let path: String

    /// Checks that `json` is an object whose keys are all in `allowed` (closed schema).
    public init(_ json: JSONValue, path: String, allowed: Set<String>) throws(ContractDecodingError) {
        guard case .object(let o) = json else { throw ContractDecodingError(path: path, reason: "expected an object") }
        for k in o.keys where !allowed.contains(k) {
            throw ContractDecodingError(path: "\(path).\(k)", reason: "unknown member")
        }
        object = o
        self.path = path
    }

    /// A member that must be present and not null.
    public func required<T>(_ key: String, _ decode: (JSONValue, String) throws(ContractDecodingError) -> T) throws(ContractDecodingError)
        -> T
    {
        guard let v = object[key] else { throw ContractDecodingError(path: "\(path).\(key)", reason: "missing member") }
        if v.isNull { throw ContractDecodingError(path: "\(path).\(key)", reason: "must not be null") }
        return try decode(v, "\(path).\(key)")
    }

    /// A member that must be present and may be null.
    public func nullable<T>(_ key: String, _ decode: (JSONValue, String) throws(ContractDecodingError) -> T) throws(ContractDecodingError)
        -> T?
    {
        guard let v = object[key] else { throw ContractDecodingError(path: "\(path).\(key)", reason: "missing member") }
        if v.isNull { return nil }
        return try decode(v, "\(path).\(key)")
    }

    /// A member that may be absent; an explicit `null` reads as absent too.
    public func optional<T>(_ key: String, _ decode: (JSONValue, String) throws(ContractDecodingError) -> T) throws(ContractDecodingError)
        -> T?
    {
        guard let v = object[key], !v.isNull else { return nil }
        return try decode(v, "\(path).\(key)")
    }

    /// A member that may be absent (`nil`), `null` (`.null`) or a value.
    public func optionalNullable<T>(
        _ key: String, _ decode: (JSONValue, String) throws(ContractDecodingError) -> T
    ) throws(ContractDecodingError) -> Nullable<T>? {
        guard let v = object[key] else { return nil }
        if v.isNull { return .null }
        return .value(try decode(v, "\(path).\(key)"))
    }

    /// Whether the member is present.
    public func has(_ key: String) -> Bool { object[key] != nil }
}
