extension Renderer {
    /// Fails when a struct layout and its schema node disagree: a member missing on either side, or a
    /// type, nullability or requiredness mismatch (so a schema change cannot silently drift from the types).
    func check(_ s: StructLayout) throws {
        let node = try schema.node(s.schemaPath)
        guard let props = node["properties"]?.objectValue else {
            throw GeneratorError(description: "\(schema.file): \(s.name) has no properties in the schema")
        }
        guard node["additionalProperties"] == .bool(false) else {
            throw GeneratorError(description: "\(schema.file): \(s.name) is not a closed object")
        }
        let required = Set((node["required"]?.arrayValue ?? []).compactMap(\.stringValue))
        var layoutKeys = s.fields.map(\.key)
        if s.schemaVersion != nil { layoutKeys.insert("schema_version", at: 0) }
        let missing = Set(props.keys).subtracting(layoutKeys)
        let extra = Set(layoutKeys).subtracting(props.keys)
        guard missing.isEmpty, extra.isEmpty else {
            throw GeneratorError(
                description:
                    "\(schema.file): \(s.name): schema members not laid out \(missing.sorted()), laid out but not in schema \(extra.sorted())"
            )
        }
        if case .constant(let lit)? = s.schemaVersion {
            guard case .number(let c)? = props["schema_version"]?["const"], Double(lit) == c else {
                throw GeneratorError(description: "\(schema.file): schema_version is not const \(lit)")
            }
        }
        for f in s.fields {
            let member = props[f.key]!
            let (types, nullable) = try schema.kinds(member)
            let isRequired = required.contains(f.key)
            switch f.presence {
            case .required, .nullable:
                guard isRequired else { throw GeneratorError(description: "\(schema.file): \(s.name).\(f.key) is optional in the schema") }
            default:
                guard !isRequired else { throw GeneratorError(description: "\(schema.file): \(s.name).\(f.key) is required in the schema") }
            }
            if f.presence == .nullable || f.presence == .optionalNullable {
                guard nullable else {
                    throw GeneratorError(description: "\(schema.file): \(s.name).\(f.key) is not nullable in the schema")
                }
            } else if f.presence == .required, nullable {
                throw GeneratorError(description: "\(schema.file): \(s.name).\(f.key) is nullable in the schema")
            }
            let want: String
            switch f.type {
            case .string, .enumeration: want = "string"
            case .int: want = "integer"
            case .double: want = "number"
            case .bool: want = "boolean"
            case .structure, .scalarMap: want = "object"
            case .array: want = "array"
            case .answer: want = "object"
            }
            guard types == [want] else {
                throw GeneratorError(
                    description: "\(schema.file): \(s.name).\(f.key) is \(types.sorted()) in the schema, laid out as \(want)")
            }
        }
    }
}
