/// An ordered JSON value: object members keep the order they were written in, which is the
/// order they go on the wire.
public enum JSONValue: Sendable, Equatable {
    /// JSON `null`.
    case null
    /// `true` or `false`.
    case bool(Bool)
    /// Every JSON number is an IEEE-754 double, as in JavaScript.
    case number(Double)
    /// A string, written as raw UTF-8 with `JSON.stringify`'s escapes.
    case string(String)
    /// An array, in order.
    case array([JSONValue])
    /// An object, its members in the order they go on the wire.
    case object(JSONObject)
}

/// An ordered JSON object. Setting an existing key keeps its position; a new key goes last.
/// Equality is order-sensitive (two objects are equal only when they encode to the same bytes);
/// use ``JSONValue/semanticallyEquals(_:)`` to ignore member order.
public struct JSONObject: Sendable, Equatable, ExpressibleByDictionaryLiteral {
    /// The members, in wire order.
    public private(set) var entries: [(key: String, value: JSONValue)]

    /// Creates an empty object.
    public init() { entries = [] }

    /// Creates an object from ordered members; a repeated key keeps its first position and its last value.
    public init(_ members: [(String, JSONValue)]) {
        entries = []
        entries.reserveCapacity(members.count)
        for (k, v) in members { self[k] = v }
    }

    public init(dictionaryLiteral elements: (String, JSONValue)...) { self.init(elements) }

    /// Number of members.
    public var count: Int { entries.count }
    /// Whether the object has no member.
    public var isEmpty: Bool { entries.isEmpty }
    /// Member keys in order.
    public var keys: [String] { entries.map(\.key) }

    /// The value of `key`, or `nil`; setting `nil` removes the member.
    public subscript(key: String) -> JSONValue? {
        get {
            for e in entries where e.key == key { return e.value }
            return nil
        }
        set {
            if let i = entries.firstIndex(where: { $0.key == key }) {
                if let newValue { entries[i].value = newValue } else { entries.remove(at: i) }
            } else if let newValue {
                entries.append((key, newValue))
            }
        }
    }

    /// Appends a member without checking for an existing key (for builders that know keys are distinct).
    public mutating func appendUnchecked(_ key: String, _ value: JSONValue) {
        entries.append((key, value))
    }

    public static func == (lhs: JSONObject, rhs: JSONObject) -> Bool {
        guard lhs.entries.count == rhs.entries.count else { return false }
        for (a, b) in zip(lhs.entries, rhs.entries) where a.key != b.key || a.value != b.value { return false }
        return true
    }
}

extension JSONValue {
    /// Equality that ignores object member order (arrays stay ordered).
    public func semanticallyEquals(_ other: JSONValue) -> Bool {
        switch (self, other) {
        case (.object(let a), .object(let b)):
            guard a.count == b.count else { return false }
            for (k, v) in a.entries {
                guard let w = b[k], v.semanticallyEquals(w) else { return false }
            }
            return true
        case (.array(let a), .array(let b)):
            return a.count == b.count && zip(a, b).allSatisfy { $0.semanticallyEquals($1) }
        default:
            return self == other
        }
    }

    /// The string, when this is a string.
    public var stringValue: String? { if case .string(let s) = self { s } else { nil } }
    /// The number, when this is a number.
    public var numberValue: Double? { if case .number(let n) = self { n } else { nil } }
    /// The Boolean, when this is a Boolean.
    public var boolValue: Bool? { if case .bool(let b) = self { b } else { nil } }
    /// The object, when this is an object.
    public var objectValue: JSONObject? { if case .object(let o) = self { o } else { nil } }
    /// The elements, when this is an array.
    public var arrayValue: [JSONValue]? { if case .array(let a) = self { a } else { nil } }
    /// Whether this is `null`.
    public var isNull: Bool { if case .null = self { true } else { false } }
    /// Member lookup, when this is an object.
    public subscript(key: String) -> JSONValue? { objectValue?[key] }
    /// The number as an exact integer, when it is one (within ±2^53).
    public var intValue: Int? {
        guard case .number(let n) = self, n.rounded(.towardZero) == n, abs(n) <= 9_007_199_254_740_992 else { return nil }
        return Int(n)
    }
}

extension JSONValue: ExpressibleByStringLiteral, ExpressibleByIntegerLiteral, ExpressibleByFloatLiteral,
    ExpressibleByBooleanLiteral, ExpressibleByNilLiteral, ExpressibleByArrayLiteral, ExpressibleByDictionaryLiteral
{
    public init(stringLiteral value: String) { self = .string(value) }
    public init(integerLiteral value: Int) { self = .number(Double(value)) }
    public init(floatLiteral value: Double) { self = .number(value) }
    public init(booleanLiteral value: Bool) { self = .bool(value) }
    public init(nilLiteral: ()) { self = .null }
    public init(arrayLiteral elements: JSONValue...) { self = .array(elements) }
    public init(dictionaryLiteral elements: (String, JSONValue)...) { self = .object(JSONObject(elements)) }
}

/// A value with a wire form. Contract types implement it; sinks encode it with ``WireJSON``.
public protocol WireEncodable: Sendable {
    /// The ordered JSON this value sends.
    func wireJSON() -> JSONValue
    /// Writes the compact wire bytes of this value. The default encodes ``wireJSON()``; contract
    /// types override it with a direct path that produces the same bytes without building a tree.
    func writeWire(to writer: inout WireWriter)
}

extension JSONValue: WireEncodable {
    public func wireJSON() -> JSONValue { self }
    public func writeWire(to writer: inout WireWriter) { writer.write(self) }
}

extension WireEncodable {
    /// Encodes ``wireJSON()`` into `writer`.
    public func writeWire(to writer: inout WireWriter) { writer.write(wireJSON()) }

    /// The compact wire bytes (what `JSON.stringify` would write), UTF-8.
    public func wireBytes() -> [UInt8] {
        var w = WireWriter()
        writeWire(to: &w)
        return w.finish()
    }
}
