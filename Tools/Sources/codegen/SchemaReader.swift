// Schema access: JSON pointer lookup, local `$ref` resolution and the JSON types a member admits.

struct GeneratorError: Error, CustomStringConvertible {
    let description: String
}

struct SchemaReader {
    let root: SchemaJSON
    let file: String

    init(root: SchemaJSON, file: String) throws {
        self.root = root
        self.file = file
    }

    func node(_ path: [String]) throws -> SchemaJSON {
        var v = root
        for token in path {
            if let i = Int(token), case .array(let a) = v, i < a.count {
                v = a[i]
            } else if let next = v[token] {
                v = next
            } else {
                throw GeneratorError(description: "\(file): no node at /\(path.joined(separator: "/"))")
            }
        }
        return try resolve(v)
    }

    func resolve(_ v: SchemaJSON) throws -> SchemaJSON {
        if let ref = v["$ref"]?.stringValue {
            guard ref.hasPrefix("#/") else { throw GeneratorError(description: "\(file): unsupported $ref \(ref)") }
            return try node(ref.dropFirst(2).split(separator: "/").map(String.init))
        }
        return v
    }

    /// The JSON types a member schema admits, and whether it admits null.
    func kinds(_ v: SchemaJSON) throws -> (types: Set<String>, nullable: Bool) {
        let v = try resolve(v)
        var types = Set<String>()
        var nullable = false
        func add(_ t: String) { if t == "null" { nullable = true } else { types.insert(t) } }
        if let t = v["type"] {
            if let s = t.stringValue { add(s) }
            for e in t.arrayValue ?? [] { if let s = e.stringValue { add(s) } }
        }
        if let e = v["enum"]?.arrayValue {
            for x in e {
                switch x {
                case .string: add("string")
                case .null: add("null")
                case .number: add("number")
                default: add("other")
                }
            }
        }
        if let c = v["const"] {
            switch c {
            case .bool: add("boolean")
            case .string: add("string")
            case .number: add("number")
            default: add("other")
            }
        }
        for alt in (v["anyOf"]?.arrayValue ?? []) + (v["oneOf"]?.arrayValue ?? []) {
            let k = try kinds(alt)
            types.formUnion(k.types)
            if k.nullable { nullable = true }
        }
        return (types, nullable)
    }
}
