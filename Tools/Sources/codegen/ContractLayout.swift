// The layout model: how each contract member is typed and written on the wire. The schemas give
// members and types; the layouts add the wire key order and the absent-versus-null choices.

/// How a member appears on the wire when it has no value.
enum Presence: Sendable {
    /// Always present, never null.
    case required
    /// Always present; `null` when the Swift value is `nil`.
    case nullable
    /// Omitted when `nil` (an incoming `null` also reads as `nil`).
    case optional
    /// Omitted when `nil`, `null` for `.null` (`Nullable<T>?`).
    case optionalNullable
    /// `Bool` written only when `true` (schema `const: true`).
    case trueOrAbsent
    /// A map written only when non-empty.
    case nonEmptyOrAbsent
}

indirect enum SwiftType: Sendable {
    case string, int, double, bool
    /// A generated enum (values from the schema) or struct, by Swift name.
    case enumeration(String)
    case structure(String)
    case array(SwiftType)
    /// The ordered scalar map (`OrderedScalarMap`).
    case scalarMap
    /// The answer `oneOf` of the onboarding contract.
    case answer(String)

    var swift: String {
        switch self {
        case .string: "String"
        case .int: "Int"
        case .double: "Double"
        case .bool: "Bool"
        case .enumeration(let n), .structure(let n), .answer(let n): n
        case .array(let t): "[\(t.swift)]"
        case .scalarMap: "OrderedScalarMap"
        }
    }
}

struct Field: Sendable {
    let key: String
    let swiftName: String
    let type: SwiftType
    let presence: Presence
    let doc: String

    init(_ key: String, _ type: SwiftType, _ presence: Presence = .required, _ doc: String) {
        self.key = key
        self.type = type
        self.presence = presence
        self.doc = doc
        swiftName = Field.camel(key)
    }

    static func camel(_ s: String) -> String {
        let parts = s.split(separator: "_")
        return parts.enumerated().map { i, p in i == 0 ? String(p) : p.prefix(1).uppercased() + p.dropFirst() }.joined()
    }
}

/// How `schema_version` is written.
enum SchemaVersionRule: Sendable {
    /// Always this literal (checked against the schema's `const`).
    case constant(String)
    /// Paywall v1.1: `1.1` when `paywall.provider` is set, else `1` (<doc:PaywallPresentationContract#Contract-v1.1>, points 1-2).
    case paywallProvider
}

struct StructLayout: Sendable {
    /// Swift name, qualified for nested types (`OnboardingRunSnapshot.Context`).
    let name: String
    let doc: String
    /// JSON pointer tokens to the object's schema node.
    let schemaPath: [String]
    let fields: [Field]
    var schemaVersion: SchemaVersionRule? = nil
}

struct EnumLayout: Sendable {
    let name: String
    let doc: String
    /// JSON pointer tokens to the node holding `enum`.
    let schemaPath: [String]
}

struct AnswerLayout: Sendable {
    let name: String
    let schemaPath: [String]
}

struct ContractLayout: Sendable {
    let schemaFile: String
    let outputFile: String
    let rootName: String
    let rootDoc: String
    let structs: [StructLayout]
    let enums: [EnumLayout]
    var answer: AnswerLayout? = nil
    /// Types reused from another generated file instead of generated here.
    var reused: [String] = []
}
