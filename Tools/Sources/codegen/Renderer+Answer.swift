// Renders the onboarding answer `oneOf` from a fixed template, after checking the schema's kinds.

extension Renderer {
    mutating func renderAnswer(_ a: AnswerLayout) throws {
        let node = try schema.node(a.schemaPath)
        guard let alts = node["oneOf"]?.arrayValue else { throw GeneratorError(description: "\(schema.file): answer is not a oneOf") }
        var kinds: [String] = []
        for alt in alts {
            let o = try schema.resolve(alt)
            guard let k = o["properties"]?["kind"]?["const"]?.stringValue else {
                throw GeneratorError(description: "\(schema.file): answer alternative without a kind const")
            }
            kinds.append(k)
            let keys = Set(o["properties"]?.objectValue.map { Array($0.keys) } ?? [])
            let expected: Set<String> = k == "numeric" ? ["question_key", "kind", "value", "unit"] : ["question_key", "kind", "value"]
            guard keys == expected else {
                throw GeneratorError(description: "\(schema.file): answer kind \(k) has members \(keys.sorted())")
            }
        }
        guard kinds == ["single", "multi", "numeric", "text"] else {
            throw GeneratorError(description: "\(schema.file): answer kinds are \(kinds), the template knows single, multi, numeric, text")
        }
        let (parent, name) = split(a.name)
        precondition(parent != nil)
        out += """
            extension \(parent!) {
                /// One answer given on a visit (<doc:OnboardingRunContract#Answers>): keys `question_key`, `kind`, `value`, then `unit` (numeric only).
                public struct \(name): Sendable, Equatable, WireEncodable {
                    /// The answer's value, one case per `kind`.
                    public enum Value: Sendable, Equatable {
                        /// `kind: "single"`: one option key.
                        case single(String)
                        /// `kind: "multi"`: distinct option keys (may be empty).
                        case multi([String])
                        /// `kind: "numeric"`: a finite number and an optional unit key.
                        case numeric(Double, unit: String? = nil)
                        /// `kind: "text"`: free text, never aggregated.
                        case text(String)

                        /// The wire `kind`.
                        public var kind: String {
                            switch self {
                            case .single: "single"
                            case .multi: "multi"
                            case .numeric: "numeric"
                            case .text: "text"
                            }
                        }
                    }

                    /// The question answered, unique within one entry. (`question_key`)
                    public var questionKey: String
                    /// The answer. (`kind`, `value`, `unit`)
                    public var value: Value

                    /// Creates an answer.
                    public init(questionKey: String, value: Value) {
                        self.questionKey = questionKey
                        self.value = value
                    }

                    /// Decodes an answer, rejecting unknown members and a `unit` on a non-numeric answer.
                    public init(json: JSONValue) throws(ContractDecodingError) {
                        try self.init(json: json, path: "$")
                    }

                    /// Decodes an answer found at `path`.
                    public init(json: JSONValue, path: String) throws(ContractDecodingError) {
                        let r = try ContractObjectReader(json, path: path, allowed: ["question_key", "kind", "value", "unit"])
                        questionKey = try r.required("question_key", ContractDecoding.string)
                        let kind = try r.required("kind", ContractDecoding.string)
                        if kind != "numeric", r.has("unit") {
                            throw ContractDecodingError(path: path + ".unit", reason: "only a numeric answer has a unit")
                        }
                        switch kind {
                        case "single": value = .single(try r.required("value", ContractDecoding.string))
                        case "multi":
                            value = .multi(try r.required("value") { (v, p) throws(ContractDecodingError) in
                                try ContractDecoding.array(v, p, ContractDecoding.string)
                            })
                        case "numeric":
                            value = .numeric(try r.required("value", ContractDecoding.double), unit: try r.optional("unit", ContractDecoding.string))
                        case "text": value = .text(try r.required("value", ContractDecoding.string))
                        default: throw ContractDecodingError(path: path + ".kind", reason: "unexpected value \\"\\(kind)\\"")
                        }
                    }

                    /// The ordered JSON of this answer.
                    public func wireJSON() -> JSONValue {
                        var o = JSONObject()
                        o.appendUnchecked("question_key", .string(questionKey))
                        o.appendUnchecked("kind", .string(value.kind))
                        switch value {
                        case let .single(s): o.appendUnchecked("value", .string(s))
                        case let .multi(a): o.appendUnchecked("value", .array(a.map { .string($0) }))
                        case let .numeric(n, unit):
                            o.appendUnchecked("value", .number(n))
                            if let unit { o.appendUnchecked("unit", .string(unit)) }
                        case let .text(s): o.appendUnchecked("value", .string(s))
                        }
                        return .object(o)
                    }

                    /// Writes the compact wire bytes directly.
                    public func writeWire(to w: inout WireWriter) {
                        w.writeByte(123)
                        w.writeKey("question_key", first: true)
                        w.writeString(questionKey)
                        switch value {
                        case let .single(s):
                            w.writeRaw(",\\"kind\\":\\"single\\",\\"value\\":")
                            w.writeString(s)
                        case let .multi(a):
                            w.writeRaw(",\\"kind\\":\\"multi\\",\\"value\\":[")
                            for (i, s) in a.enumerated() {
                                if i > 0 { w.writeByte(44) }
                                w.writeString(s)
                            }
                            w.writeByte(93)
                        case let .numeric(n, unit):
                            w.writeRaw(",\\"kind\\":\\"numeric\\",\\"value\\":")
                            w.writeNumber(n)
                            if let unit {
                                w.writeKey("unit")
                                w.writeString(unit)
                            }
                        case let .text(s):
                            w.writeRaw(",\\"kind\\":\\"text\\",\\"value\\":")
                            w.writeString(s)
                        }
                        w.writeByte(125)
                    }
                }
            }

            """
    }
}
