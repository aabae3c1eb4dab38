import TrackerCore

/// Encodes an `Encodable` property value to the JSON value it stands for, without Foundation
/// (the Linux build links none): a small `Encoder` that builds a ``JSONValue`` tree. A nested
/// ``ScorePropertyConvertible`` value is converted, not encoded (so a `Date` inside a struct is a
/// timestamp on Apple platforms); a non-finite number, or a value that encodes nothing, makes the
/// whole value unsupported.
enum PropertyEncoding {
    struct Unsupported: Error {}

    static func encode(_ value: any Encodable) throws(InvalidInput) -> JSONValue {
        do {
            let node = Node()
            try node.set(value, codingPath: [])
            guard let v = try node.resolve() else { throw Unsupported() }
            return v
        } catch {
            throw .unsupported
        }
    }

    #if !canImport(Darwin)
        /// Whether `type` is Foundation's `Date`, `URL`, `UUID` or `Decimal` (known by name: the
        /// Linux build links no Foundation).
        static func isFoundationValue(_ type: Any.Type) -> Bool {
            let name = _typeName(type, qualified: true)
            guard name.hasPrefix("Foundation") else { return false }
            switch name.split(separator: ".").last {
            case "Date", "URL", "UUID", "Decimal": return true
            default: return false
            }
        }
    #endif

    /// One value being built: a scalar, or a container filled by its children.
    final class Node {
        enum Kind {
            case unset
            case value(JSONValue)
            case object([(String, Node)])
            case array([Node])
        }
        var kind = Kind.unset

        /// The value; `nil` when nothing was encoded.
        func resolve() throws -> JSONValue? {
            switch kind {
            case .unset: return nil
            case .value(let v): return v
            case .object(let members):
                var o = JSONObject()
                for (k, n) in members { o[k] = try n.resolve() ?? .object(JSONObject()) }
                return .object(o)
            case .array(let items):
                return .array(try items.map { try $0.resolve() ?? .object(JSONObject()) })
            }
        }

        func child(forKey key: String) -> Node {
            let n = Node()
            if case .object(var members) = kind {
                kind = .unset
                members.append((key, n))
                kind = .object(members)
            } else {
                kind = .object([(key, n)])
            }
            return n
        }

        func appendChild() -> Node {
            let n = Node()
            if case .array(var items) = kind {
                kind = .unset
                items.append(n)
                kind = .array(items)
            } else {
                kind = .array([n])
            }
            return n
        }

        /// Encodes `value` into this node.
        func set<T: Encodable>(_ value: T, codingPath: [any CodingKey]) throws {
            if let scalar = try Node.scalar(value) {
                kind = .value(scalar)
            } else {
                try value.encode(to: PropertyEncoder(node: self, codingPath: codingPath))
            }
        }

        /// The JSON value of a scalar or convertible `value`; `nil` for a value to encode.
        static func scalar<T>(_ value: T) throws -> JSONValue? {
            #if !canImport(Darwin)
                // Foundation's values would encode to their raw parts (a `Date` to seconds since
                // 2001): without Foundation, refused rather than sent in a form nobody expects.
                if PropertyEncoding.isFoundationValue(T.self) { throw Unsupported() }
            #endif
            switch value {
            case let v as any ScorePropertyConvertible:
                // First: on Apple platforms a `Decimal` also casts to `Bool` (through `NSDecimalNumber`).
                guard let converted = v.scorePropertyValue else { throw Unsupported() }
                return converted
            case let v as String: return .string(v)
            case let v as Bool: return .bool(v)
            case let v as Double: return try number(v)
            case let v as Float: return try number(Double(v))
            case let v as any BinaryInteger: return .number(Double(v))
            default: return nil
            }
        }

        static func number(_ d: Double) throws -> JSONValue {
            guard d.isFinite else { throw Unsupported() }
            return .number(d)
        }
    }
}

private struct PropertyEncoder: Encoder {
    let node: PropertyEncoding.Node
    let codingPath: [any CodingKey]
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    func container<Key: CodingKey>(keyedBy type: Key.Type) -> KeyedEncodingContainer<Key> {
        if case .object = node.kind {} else { node.kind = .object([]) }
        return KeyedEncodingContainer(KeyedContainer<Key>(node: node, codingPath: codingPath))
    }

    func unkeyedContainer() -> any UnkeyedEncodingContainer {
        if case .array = node.kind {} else { node.kind = .array([]) }
        return UnkeyedContainer(node: node, codingPath: codingPath)
    }

    func singleValueContainer() -> any SingleValueEncodingContainer {
        SingleContainer(node: node, codingPath: codingPath)
    }
}

private struct KeyedContainer<Key: CodingKey>: KeyedEncodingContainerProtocol {
    let node: PropertyEncoding.Node
    let codingPath: [any CodingKey]

    mutating func encodeNil(forKey key: Key) throws { node.child(forKey: key.stringValue).kind = .value(.null) }
    mutating func encode<T: Encodable>(_ value: T, forKey key: Key) throws {
        try node.child(forKey: key.stringValue).set(value, codingPath: codingPath + [key])
    }
    mutating func nestedContainer<NestedKey: CodingKey>(
        keyedBy keyType: NestedKey.Type, forKey key: Key
    ) -> KeyedEncodingContainer<NestedKey> {
        PropertyEncoder(node: node.child(forKey: key.stringValue), codingPath: codingPath + [key]).container(keyedBy: keyType)
    }
    mutating func nestedUnkeyedContainer(forKey key: Key) -> any UnkeyedEncodingContainer {
        PropertyEncoder(node: node.child(forKey: key.stringValue), codingPath: codingPath + [key]).unkeyedContainer()
    }
    mutating func superEncoder() -> any Encoder {
        PropertyEncoder(node: node.child(forKey: "super"), codingPath: codingPath)
    }
    mutating func superEncoder(forKey key: Key) -> any Encoder {
        PropertyEncoder(node: node.child(forKey: key.stringValue), codingPath: codingPath + [key])
    }
}

private struct UnkeyedContainer: UnkeyedEncodingContainer {
    let node: PropertyEncoding.Node
    let codingPath: [any CodingKey]
    var count: Int {
        if case .array(let items) = node.kind { return items.count }
        return 0
    }

    mutating func encodeNil() throws { node.appendChild().kind = .value(.null) }
    mutating func encode<T: Encodable>(_ value: T) throws {
        try node.appendChild().set(value, codingPath: codingPath)
    }
    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type) -> KeyedEncodingContainer<NestedKey> {
        PropertyEncoder(node: node.appendChild(), codingPath: codingPath).container(keyedBy: keyType)
    }
    mutating func nestedUnkeyedContainer() -> any UnkeyedEncodingContainer {
        PropertyEncoder(node: node.appendChild(), codingPath: codingPath).unkeyedContainer()
    }
    mutating func superEncoder() -> any Encoder {
        PropertyEncoder(node: node.appendChild(), codingPath: codingPath)
    }
}

private struct SingleContainer: SingleValueEncodingContainer {
    let node: PropertyEncoding.Node
    let codingPath: [any CodingKey]

    mutating func encodeNil() throws { node.kind = .value(.null) }
    mutating func encode<T: Encodable>(_ value: T) throws { try node.set(value, codingPath: codingPath) }
}
