// Renders one struct layout: members, memberwise init, decoder, `wireJSON()` and the direct writer.

extension Renderer {
    func split(_ qualified: String) -> (parent: String?, name: String) {
        if let dot = qualified.lastIndex(of: ".") {
            return (String(qualified[..<dot]), String(qualified[qualified.index(after: dot)...]))
        }
        return (nil, qualified)
    }

    func decl(_ f: Field) -> String {
        let t = f.type.swift
        switch f.presence {
        case .required, .trueOrAbsent, .nonEmptyOrAbsent: return t
        case .nullable, .optional: return t + "?"
        case .optionalNullable: return "Nullable<\(t)>?"
        }
    }

    func defaultValue(_ f: Field) -> String {
        switch f.presence {
        case .required: ""
        case .nullable: ""  // always on the wire: the caller says so explicitly
        case .optional, .optionalNullable: " = nil"
        case .trueOrAbsent: " = false"
        case .nonEmptyOrAbsent: " = [:]"
        }
    }

    func decoder(_ t: SwiftType) -> String {
        switch t {
        case .string: "ContractDecoding.string"
        case .int: "ContractDecoding.int"
        case .double: "ContractDecoding.double"
        case .bool: "ContractDecoding.bool"
        case .enumeration(let n): "{ (v, p) throws(ContractDecodingError) -> \(n) in try ContractDecoding.enumeration(v, p) }"
        case .structure(let n), .answer(let n): "{ (v, p) throws(ContractDecodingError) in try \(n)(json: v, path: p) }"
        case .scalarMap: "{ (v, p) throws(ContractDecodingError) in try OrderedScalarMap(json: v, path: p) }"
        case .array(let e): "{ (v, p) throws(ContractDecodingError) in try ContractDecoding.array(v, p, \(decoder(e))) }"
        }
    }

    func jsonExpr(_ t: SwiftType, _ x: String) -> String {
        switch t {
        case .string: ".string(\(x))"
        case .int: ".number(Double(\(x)))"
        case .double: ".number(\(x))"
        case .bool: ".bool(\(x))"
        case .enumeration: ".string(\(x).rawValue)"
        case .structure, .answer, .scalarMap: "\(x).wireJSON()"
        case .array(let e): ".array(\(x).map { \(jsonExpr(e, "$0")) })"
        }
    }

    func writeStmts(_ t: SwiftType, _ x: String, indent: String) -> [String] {
        switch t {
        case .string: ["\(indent)w.writeString(\(x))"]
        case .int: ["\(indent)w.writeInt(\(x))"]
        case .double: ["\(indent)w.writeNumber(\(x))"]
        case .bool: ["\(indent)w.writeBool(\(x))"]
        case .enumeration: ["\(indent)w.writeString(\(x).rawValue)"]
        case .structure, .answer, .scalarMap: ["\(indent)\(x).writeWire(to: &w)"]
        case .array(let e):
            [
                "\(indent)w.writeByte(91)",
                "\(indent)for (i, e) in \(x).enumerated() {",
                "\(indent)    if i > 0 { w.writeByte(44) }",
            ] + writeStmts(e, "e", indent: indent + "    ") + [
                "\(indent)}",
                "\(indent)w.writeByte(93)",
            ]
        }
    }

    mutating func renderStruct(_ s: StructLayout) throws {
        let (parent, name) = split(s.name)
        var ind = ""
        if let parent {
            line("extension \(parent) {")
            ind = "    "
        }
        line("\(ind)/// \(s.doc)")
        line("\(ind)public struct \(name): Sendable, Equatable, WireEncodable {")
        let i2 = ind + "    "
        if case .paywallProvider? = s.schemaVersion {
            line("\(i2)/// The `schema_version` this snapshot is written with: `1.1` with a provider, else `1`.")
            line("\(i2)public var schemaVersion: Double { paywall.provider == nil ? 1 : 1.1 }")
            line()
        } else if case .constant(let v)? = s.schemaVersion {
            line("\(i2)/// The `schema_version` this type writes.")
            line("\(i2)public static let schemaVersion = \(v)")
            line()
        }
        for f in s.fields {
            line("\(i2)/// \(f.doc) (`\(f.key)`)")
            line("\(i2)public var \(f.swiftName): \(decl(f))")
        }
        line()
        // Memberwise init.
        line("\(i2)/// Creates a value from its members.")
        line("\(i2)public init(")
        for (k, f) in s.fields.enumerated() {
            line("\(i2)    \(f.swiftName): \(decl(f))\(defaultValue(f))\(k == s.fields.count - 1 ? "" : ",")")
        }
        line("\(i2)) {")
        for f in s.fields { line("\(i2)    self.\(f.swiftName) = \(f.swiftName)") }
        line("\(i2)}")
        line()
        // Decoding.
        let allowed = (s.schemaVersion != nil ? ["schema_version"] : []) + s.fields.map(\.key)
        line("\(i2)/// Decodes a value, rejecting unknown members (the schema is closed) and values of the wrong type.")
        line("\(i2)public init(json: JSONValue) throws(ContractDecodingError) {")
        line("\(i2)    try self.init(json: json, path: \"$\")")
        line("\(i2)}")
        line()
        line("\(i2)/// Decodes a value found at `path`.")
        line("\(i2)public init(json: JSONValue, path: String) throws(ContractDecodingError) {")
        line(
            "\(i2)    let r = try ContractObjectReader(json, path: path, allowed: [\(allowed.map { "\"\($0)\"" }.joined(separator: ", "))])"
        )
        for f in s.fields {
            let call: String
            switch f.presence {
            case .required: call = "try r.required(\"\(f.key)\", \(decoder(f.type)))"
            case .nullable: call = "try r.nullable(\"\(f.key)\", \(decoder(f.type)))"
            case .optional: call = "try r.optional(\"\(f.key)\", \(decoder(f.type)))"
            case .optionalNullable: call = "try r.optionalNullable(\"\(f.key)\", \(decoder(f.type)))"
            case .trueOrAbsent: call = "try r.optional(\"\(f.key)\", \(decoder(f.type))) ?? false"
            case .nonEmptyOrAbsent: call = "try r.optional(\"\(f.key)\", \(decoder(f.type))) ?? [:]"
            }
            line("\(i2)    \(f.swiftName) = \(call)")
        }
        switch s.schemaVersion {
        case .constant(let v)?:
            line("\(i2)    guard r.object[\"schema_version\"] == .number(\(v)) else {")
            line("\(i2)        throw ContractDecodingError(path: path + \".schema_version\", reason: \"expected \(v)\")")
            line("\(i2)    }")
        case .paywallProvider?:
            line("\(i2)    guard let version = r.object[\"schema_version\"], version == .number(schemaVersion) else {")
            line(
                "\(i2)        throw ContractDecodingError(path: path + \".schema_version\", reason: \"expected \\(WireJSON.formatNumber(schemaVersion)) (1.1 exactly when paywall.provider is set)\")"
            )
            line("\(i2)    }")
        case nil: break
        }
        line("\(i2)}")
        line()
        // wireJSON.
        line("\(i2)/// The ordered JSON of this value, keys in wire order.")
        line("\(i2)public func wireJSON() -> JSONValue {")
        line("\(i2)    var o = JSONObject()")
        switch s.schemaVersion {
        case .constant(let v)?: line("\(i2)    o.appendUnchecked(\"schema_version\", .number(\(v)))")
        case .paywallProvider?: line("\(i2)    o.appendUnchecked(\"schema_version\", .number(schemaVersion))")
        case nil: break
        }
        for f in s.fields {
            let k = "\"\(f.key)\""
            switch f.presence {
            case .required:
                line("\(i2)    o.appendUnchecked(\(k), \(jsonExpr(f.type, f.swiftName)))")
            case .nullable:
                line("\(i2)    o.appendUnchecked(\(k), \(f.swiftName).map { \(jsonExpr(f.type, "$0")) } ?? .null)")
            case .optional:
                line("\(i2)    if let v = \(f.swiftName) { o.appendUnchecked(\(k), \(jsonExpr(f.type, "v"))) }")
            case .optionalNullable:
                line("\(i2)    switch \(f.swiftName) {")
                line("\(i2)    case nil: break")
                line("\(i2)    case .null?: o.appendUnchecked(\(k), .null)")
                line("\(i2)    case let .value(v)?: o.appendUnchecked(\(k), \(jsonExpr(f.type, "v")))")
                line("\(i2)    }")
            case .trueOrAbsent:
                line("\(i2)    if \(f.swiftName) { o.appendUnchecked(\(k), .bool(true)) }")
            case .nonEmptyOrAbsent:
                line("\(i2)    if !\(f.swiftName).isEmpty { o.appendUnchecked(\(k), \(jsonExpr(f.type, f.swiftName))) }")
            }
        }
        line("\(i2)    return .object(o)")
        line("\(i2)}")
        line()
        // Direct bytes.
        line("\(i2)/// Writes the compact wire bytes directly (the same bytes as encoding ``wireJSON()``).")
        line("\(i2)public func writeWire(to w: inout WireWriter) {")
        line("\(i2)    w.writeByte(123)")
        enum FirstState { case first, notFirst, runtime }
        var state = FirstState.first
        var declaredRuntime = false
        func keyCall(_ key: String, _ state: FirstState) -> String {
            switch state {
            case .first: "w.writeKey(\"\(key)\", first: true)"
            case .notFirst: "w.writeKey(\"\(key)\")"
            case .runtime: "w.writeKey(\"\(key)\", first: first); first = false"
            }
        }
        switch s.schemaVersion {
        case .constant(let v)?:
            line("\(i2)    w.writeRaw(\"\\\"schema_version\\\":\(v)\")")
            state = .notFirst
        case .paywallProvider?:
            line(
                "\(i2)    if paywall.provider == nil { w.writeRaw(\"\\\"schema_version\\\":1\") } else { w.writeRaw(\"\\\"schema_version\\\":1.1\") }"
            )
            state = .notFirst
        case nil: break
        }
        for f in s.fields {
            let isConditional: Bool
            switch f.presence {
            case .required, .nullable: isConditional = false
            default: isConditional = true
            }
            if isConditional && state == .first {
                state = .runtime
            }
            if state == .runtime && !declaredRuntime {
                line("\(i2)    var first = true")
                declaredRuntime = true
            }
            let kc = keyCall(f.key, state)
            let b = i2 + "    "
            switch f.presence {
            case .required:
                line("\(b)\(kc)")
                for l in writeStmts(f.type, f.swiftName, indent: b) { line(l) }
            case .nullable:
                line("\(b)\(kc)")
                line("\(b)if let v = \(f.swiftName) {")
                for l in writeStmts(f.type, "v", indent: b + "    ") { line(l) }
                line("\(b)} else {")
                line("\(b)    w.writeNull()")
                line("\(b)}")
            case .optional:
                line("\(b)if let v = \(f.swiftName) {")
                line("\(b)    \(kc)")
                for l in writeStmts(f.type, "v", indent: b + "    ") { line(l) }
                line("\(b)}")
            case .optionalNullable:
                line("\(b)switch \(f.swiftName) {")
                line("\(b)case nil: break")
                line("\(b)case .null?:")
                line("\(b)    \(kc)")
                line("\(b)    w.writeNull()")
                line("\(b)case let .value(v)?:")
                line("\(b)    \(kc)")
                for l in writeStmts(f.type, "v", indent: b + "    ") { line(l) }
                line("\(b)}")
            case .trueOrAbsent:
                line("\(b)if \(f.swiftName) {")
                line("\(b)    \(kc)")
                line("\(b)    w.writeBool(true)")
                line("\(b)}")
            case .nonEmptyOrAbsent:
                line("\(b)if !\(f.swiftName).isEmpty {")
                line("\(b)    \(kc)")
                for l in writeStmts(f.type, f.swiftName, indent: b + "    ") { line(l) }
                line("\(b)}")
            }
            if !isConditional && state != .runtime { state = .notFirst }
        }
        line("\(i2)    w.writeByte(125)")
        line("\(i2)}")
        line("\(ind)}")
        if parent != nil { line("}") }
        line()
    }
}
