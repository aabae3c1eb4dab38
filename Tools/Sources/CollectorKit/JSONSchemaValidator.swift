import Foundation
import TrackerCore

/// One reason an instance fails a schema: where (a JSON Pointer into the instance) and why.
public struct SchemaViolation: Sendable, Equatable, CustomStringConvertible {
    /// JSON Pointer of the offending value inside the instance (`""` is the whole instance).
    public let path: String
    /// What is wrong, in plain words.
    public let message: String

    public var description: String { "\(path.isEmpty ? "/" : path): \(message)" }
}

/// A schema could not be loaded: bad JSON, an unresolvable `$ref`, a bad pattern or a keyword
/// outside the supported subset.
public struct SchemaLoadError: Error, Sendable, CustomStringConvertible {
    /// What went wrong.
    public let message: String
    public var description: String { message }
}

/// A validator for the JSON Schema (draft 2020-12) subset the repository's contract schemas use:
/// `type`, `const`, `enum`, `properties`, `required`, `additionalProperties`, `propertyNames`,
/// `minProperties`/`maxProperties`, `pattern`, `minLength`/`maxLength` (in code points),
/// `minimum`/`maximum` and their exclusive forms, `items`, `minItems`/`maxItems`, `uniqueItems`,
/// `$ref` to local `#/...` pointers (`$defs`), `allOf`/`anyOf`/`oneOf`/`not` and
/// `if`/`then`/`else`. Annotations (`title`, `description`, `$id`, `$schema`, `$comment`,
/// `format`, `default`, `examples`) are ignored; any other keyword makes loading fail, so a
/// schema never silently passes a rule this validator does not check.
public final class JSONSchemaValidator: @unchecked Sendable {
    // @unchecked: every stored property is immutable after `init` (the compiled patterns are
    // only read), so sharing one validator between threads is safe.
    private let root: JSONValue
    private let patterns: [String: Regex<AnyRegexOutput>]

    private static let annotations: Set<String> = [
        "$schema", "$id", "$defs", "$comment", "title", "description", "format", "default", "examples",
        "deprecated", "readOnly", "writeOnly",
    ]
    private static let assertions: Set<String> = [
        "type", "const", "enum", "properties", "required", "additionalProperties", "propertyNames",
        "minProperties", "maxProperties", "pattern", "minLength", "maxLength", "minimum", "maximum",
        "exclusiveMinimum", "exclusiveMaximum", "items", "minItems", "maxItems", "uniqueItems", "$ref",
        "allOf", "anyOf", "oneOf", "not", "if", "then", "else",
    ]

    /// Loads a schema from its JSON value; fails on a keyword outside the subset, a `$ref` that
    /// does not resolve, or a `pattern` that does not compile.
    public init(schema: JSONValue) throws(SchemaLoadError) {
        root = schema
        var compiled: [String: Regex<AnyRegexOutput>] = [:]
        try Self.prepare(schema, root: schema, at: "#", patterns: &compiled)
        patterns = compiled
    }

    /// Loads a schema from JSON text bytes.
    public convenience init(schemaBytes: [UInt8]) throws(SchemaLoadError) {
        let value: JSONValue
        do { value = try WireJSON.decode(schemaBytes) } catch { throw SchemaLoadError(message: "schema is not JSON: \(error)") }
        try self.init(schema: value)
    }

    /// Every violation of the schema by `instance` (empty when it is valid).
    public func validate(_ instance: JSONValue) -> [SchemaViolation] {
        var out: [SchemaViolation] = []
        check(instance, against: root, path: "", into: &out)
        return out
    }

    /// Whether `instance` is valid.
    public func isValid(_ instance: JSONValue) -> Bool { validate(instance).isEmpty }

    // MARK: - Loading

    private static func prepare(
        _ schema: JSONValue, root: JSONValue, at location: String, patterns: inout [String: Regex<AnyRegexOutput>]
    ) throws(SchemaLoadError) {
        if case .bool = schema { return }
        guard let object = schema.objectValue else {
            throw SchemaLoadError(message: "\(location): a schema must be an object or a Boolean")
        }
        for (key, value) in object.entries {
            if annotations.contains(key) {
                if key == "$defs", let defs = value.objectValue {
                    for (name, sub) in defs.entries { try prepare(sub, root: root, at: "\(location)/$defs/\(name)", patterns: &patterns) }
                }
                continue
            }
            guard assertions.contains(key) else { throw SchemaLoadError(message: "\(location): unsupported keyword \(key)") }
            switch key {
            case "properties":
                guard let props = value.objectValue else { throw SchemaLoadError(message: "\(location)/properties: not an object") }
                for (name, sub) in props.entries { try prepare(sub, root: root, at: "\(location)/properties/\(name)", patterns: &patterns) }
            case "additionalProperties", "propertyNames", "items", "not", "if", "then", "else":
                try prepare(value, root: root, at: "\(location)/\(key)", patterns: &patterns)
            case "allOf", "anyOf", "oneOf":
                guard let list = value.arrayValue, !list.isEmpty else {
                    throw SchemaLoadError(message: "\(location)/\(key): not a non-empty array")
                }
                for (i, sub) in list.enumerated() { try prepare(sub, root: root, at: "\(location)/\(key)/\(i)", patterns: &patterns) }
            case "pattern":
                guard let text = value.stringValue else { throw SchemaLoadError(message: "\(location)/pattern: not a string") }
                if patterns[text] == nil {
                    do { patterns[text] = try Regex(text).matchingSemantics(.unicodeScalar) } catch {
                        throw SchemaLoadError(message: "\(location)/pattern: cannot compile \(text)")
                    }
                }
            case "$ref":
                guard let ref = value.stringValue, resolve(ref, in: root) != nil else {
                    throw SchemaLoadError(message: "\(location)/$ref: cannot resolve \(value)")
                }
            default:
                break
            }
        }
    }

    /// Resolves a local reference (`#`, `#/$defs/name`, any `#/...` JSON Pointer).
    private static func resolve(_ ref: String, in root: JSONValue) -> JSONValue? {
        guard ref.hasPrefix("#") else { return nil }
        let pointer = ref.dropFirst()
        if pointer.isEmpty { return root }
        guard pointer.hasPrefix("/") else { return nil }
        var current = root
        for raw in pointer.dropFirst().split(separator: "/", omittingEmptySubsequences: false) {
            let token = raw.replacingOccurrences(of: "~1", with: "/").replacingOccurrences(of: "~0", with: "~")
            if let object = current.objectValue, let next = object[token] {
                current = next
            } else if let array = current.arrayValue, let i = Int(token), array.indices.contains(i) {
                current = array[i]
            } else {
                return nil
            }
        }
        return current
    }

    // MARK: - Checking

    /// The violations of the branch that comes closest (for readable reasons): branches failing
    /// at `path` itself (wrong type, wrong const) are passed over when another fails deeper.
    private func closestBranchErrors(_ v: JSONValue, _ branches: [JSONValue], _ path: String) -> [SchemaViolation] {
        var best: [SchemaViolation]?
        var bestScore = Int.max
        for branch in branches {
            var errors: [SchemaViolation] = []
            check(v, against: branch, path: path, into: &errors)
            let shallow = errors.contains { $0.path == path }
            let score = (shallow ? 1000 : 0) + errors.count
            if score < bestScore {
                best = errors
                bestScore = score
            }
        }
        return best ?? []
    }

    private func valid(_ instance: JSONValue, _ schema: JSONValue, _ path: String) -> Bool {
        var errors: [SchemaViolation] = []
        check(instance, against: schema, path: path, into: &errors)
        return errors.isEmpty
    }

    private func check(_ v: JSONValue, against schema: JSONValue, path: String, into out: inout [SchemaViolation]) {
        if case .bool(let allowed) = schema {
            if !allowed { out.append(SchemaViolation(path: path, message: "no value is allowed here")) }
            return
        }
        guard let s = schema.objectValue else { return }
        func fail(_ message: String) { out.append(SchemaViolation(path: path, message: message)) }

        if let ref = s["$ref"]?.stringValue, let target = Self.resolve(ref, in: root) {
            check(v, against: target, path: path, into: &out)
        }
        if let type = s["type"] {
            let names = type.arrayValue?.compactMap(\.stringValue) ?? [type.stringValue].compactMap { $0 }
            if !names.contains(where: { Self.hasType(v, $0) }) {
                fail("expected \(names.joined(separator: " or ")), found \(Self.typeName(v))")
            }
        }
        if let constant = s["const"], !Self.jsonEqual(v, constant) {
            fail("must be \(WireJSON.encodeString(constant))")
        }
        if let options = s["enum"]?.arrayValue, !options.contains(where: { Self.jsonEqual(v, $0) }) {
            fail("must be one of \(options.map { WireJSON.encodeString($0) }.joined(separator: ", "))")
        }

        switch v {
        case .string(let text):
            let length = text.unicodeScalars.count
            if let min = s["minLength"]?.numberValue, Double(length) < min { fail("shorter than \(Int(min)) characters") }
            if let max = s["maxLength"]?.numberValue, Double(length) > max { fail("longer than \(Int(max)) characters") }
            if let pattern = s["pattern"]?.stringValue, let regex = patterns[pattern], (try? regex.firstMatch(in: text)) == nil {
                fail("does not match \(pattern)")
            }
        case .number(let n):
            if let min = s["minimum"]?.numberValue, n < min { fail("less than \(WireJSON.formatNumber(min))") }
            if let max = s["maximum"]?.numberValue, n > max { fail("greater than \(WireJSON.formatNumber(max))") }
            if let min = s["exclusiveMinimum"]?.numberValue, n <= min { fail("not greater than \(WireJSON.formatNumber(min))") }
            if let max = s["exclusiveMaximum"]?.numberValue, n >= max { fail("not less than \(WireJSON.formatNumber(max))") }
        case .array(let items):
            if let min = s["minItems"]?.numberValue, Double(items.count) < min { fail("fewer than \(Int(min)) items") }
            if let max = s["maxItems"]?.numberValue, Double(items.count) > max { fail("more than \(Int(max)) items") }
            if s["uniqueItems"]?.boolValue == true {
                outer: for i in items.indices {
                    for j in items.indices where j > i && Self.jsonEqual(items[i], items[j]) {
                        fail("items \(i) and \(j) are equal")
                        break outer
                    }
                }
            }
            if let itemSchema = s["items"] {
                for (i, item) in items.enumerated() { check(item, against: itemSchema, path: "\(path)/\(i)", into: &out) }
            }
        case .object(let object):
            if let min = s["minProperties"]?.numberValue, Double(object.count) < min { fail("fewer than \(Int(min)) members") }
            if let max = s["maxProperties"]?.numberValue, Double(object.count) > max { fail("more than \(Int(max)) members") }
            if let required = s["required"]?.arrayValue {
                for name in required.compactMap(\.stringValue) where object[name] == nil { fail("missing required member \(name)") }
            }
            let properties = s["properties"]?.objectValue
            for (key, value) in object.entries {
                let childPath = "\(path)/\(Self.escape(key))"
                if let names = s["propertyNames"] {
                    var nameErrors: [SchemaViolation] = []
                    check(.string(key), against: names, path: childPath, into: &nameErrors)
                    if !nameErrors.isEmpty { out.append(SchemaViolation(path: childPath, message: "member name not allowed")) }
                }
                if let sub = properties?[key] {
                    check(value, against: sub, path: childPath, into: &out)
                } else if let additional = s["additionalProperties"] {
                    if case .bool(false) = additional {
                        out.append(SchemaViolation(path: childPath, message: "unknown member \(key)"))
                    } else {
                        check(value, against: additional, path: childPath, into: &out)
                    }
                }
            }
        default:
            break
        }

        if let all = s["allOf"]?.arrayValue {
            for sub in all { check(v, against: sub, path: path, into: &out) }
        }
        if let any = s["anyOf"]?.arrayValue, !any.contains(where: { valid(v, $0, path) }) {
            out.append(contentsOf: closestBranchErrors(v, any, path))
            fail("matches none of anyOf")
        }
        if let one = s["oneOf"]?.arrayValue {
            let matches = one.filter { valid(v, $0, path) }.count
            if matches == 0 { out.append(contentsOf: closestBranchErrors(v, one, path)) }
            if matches != 1 { fail("matches \(matches) of oneOf, expected exactly 1") }
        }
        if let not = s["not"], valid(v, not, path) { fail("matches a schema it must not match") }
        if let condition = s["if"] {
            if valid(v, condition, path) {
                if let then = s["then"] { check(v, against: then, path: path, into: &out) }
            } else if let otherwise = s["else"] {
                check(v, against: otherwise, path: path, into: &out)
            }
        }
    }

    private static func escape(_ key: String) -> String {
        key.replacingOccurrences(of: "~", with: "~0").replacingOccurrences(of: "/", with: "~1")
    }

    private static func hasType(_ v: JSONValue, _ name: String) -> Bool {
        switch (v, name) {
        case (.null, "null"), (.bool, "boolean"), (.string, "string"), (.array, "array"), (.object, "object"), (.number, "number"):
            return true
        case (.number(let n), "integer"):
            return n.isFinite && n.rounded(.towardZero) == n
        default:
            return false
        }
    }

    private static func typeName(_ v: JSONValue) -> String {
        switch v {
        case .null: "null"
        case .bool: "boolean"
        case .number(let n): n.rounded(.towardZero) == n ? "integer" : "number"
        case .string: "string"
        case .array: "array"
        case .object: "object"
        }
    }

    /// JSON Schema equality: numbers by value, objects regardless of member order.
    static func jsonEqual(_ a: JSONValue, _ b: JSONValue) -> Bool { a.semanticallyEquals(b) }
}
