import Foundation
import TrackerCore

/// Generates the Swift contract types (`Packages/Core/Sources/TrackerCore/Contracts/Generated/`)
/// from the JSON Schemas in `Packages/Core/Contracts/`.
///
/// The schemas give the members, their JSON types, nullability, requiredness and enumeration
/// values; they do not give the wire key order or the absent-versus-null choices of the reference
/// tracker, so those come from the layout tables below (onboarding run contract §3.2/§3.3,
/// paywall.md §3.8 and §4). Generation fails when a table and its schema disagree (a member
/// missing on either side, a type, nullability or requiredness mismatch), so a schema change
/// cannot silently drift from the types.
struct ContractTypesGenerator: Generator {
    let name = "contract-types"

    static let outputDir = "Packages/Core/Sources/TrackerCore/Contracts/Generated"

    func generate(repoRoot: URL) throws -> [GeneratedFile] {
        var files: [GeneratedFile] = []
        for contract in ContractLayouts.all {
            let schemaPath = "Packages/Core/Contracts/" + contract.schemaFile
            let bytes = [UInt8](try Data(contentsOf: repoRoot.appendingPathComponent(schemaPath)))
            let schema = try SchemaReader(root: try WireJSON.decode(bytes), file: contract.schemaFile)
            var r = Renderer(schema: schema, contract: contract, schemaHash: Self.fnv1a64(bytes))
            try r.render()
            files.append(GeneratedFile(path: "\(Self.outputDir)/\(contract.outputFile)", contents: r.out))
        }
        return files
    }

    /// FNV-1a 64-bit hash of the schema bytes, recorded in each generated file so that a Core test
    /// notices a schema edited without regenerating.
    static func fnv1a64(_ bytes: [UInt8]) -> String {
        var h: UInt64 = 0xcbf2_9ce4_8422_2325
        for b in bytes { h = (h ^ UInt64(b)) &* 0x0000_0100_0000_01b3 }
        let hex = String(h, radix: 16)
        return String(repeating: "0", count: 16 - hex.count) + hex
    }
}

// MARK: - Layout model

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
        case let .enumeration(n), let .structure(n), let .answer(n): n
        case let .array(t): "[\(t.swift)]"
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
    /// Paywall v1.1: `1.1` when `paywall.provider` is set, else `1` (paywall.md §4, points 1-2).
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

// MARK: - Layout tables

enum ContractLayouts {
    static let all: [ContractLayout] = [onboarding, paywallV1, paywallV1_1]

    static let onboarding = ContractLayout(
        schemaFile: "onboarding-run.schema.json",
        outputFile: "OnboardingRunSnapshot.swift",
        rootName: "OnboardingRunSnapshot",
        rootDoc: "One send of an onboarding run, contract schema_version 1 (onboarding-run-contract.md §4).",
        structs: [
            StructLayout(
                name: "OnboardingRunSnapshot",
                doc: "One send of an onboarding run, contract schema_version 1 (onboarding-run-contract.md §4).",
                schemaPath: [],
                fields: [
                    Field("run_id", .string, .required, "Client-minted lowercase UUID, one per run."),
                    Field("seq", .int, .required, "Send counter: 1 first, strictly greater on every later send."),
                    Field("status", .enumeration("OnboardingRunSnapshot.Status"), .required, "Run status."),
                    Field("started_at", .string, .required, "Timestamp of the first entry."),
                    Field("completed_at", .string, .nullable, "Completion timestamp; `null` while in progress."),
                    Field("sent_at", .string, .required, "Client clock when the snapshot was sent."),
                    Field("onboarding", .structure("OnboardingRunSnapshot.Onboarding"), .required, "Flow identity."),
                    Field("studio", .structure("OnboardingRunSnapshot.Studio"), .optional, "Studio links; omitted when none is set."),
                    Field("context", .structure("OnboardingRunSnapshot.Context"), .required, "Device and app context, fixed at run start."),
                    Field("manifest", .structure("OnboardingRunSnapshot.Manifest"), .required, "Every step the flow can show."),
                    Field("properties", .scalarMap, .nonEmptyOrAbsent, "Run properties in insertion order; omitted when empty."),
                    Field("truncated", .bool, .trueOrAbsent, "Whether recording stopped at a limit; written only when `true`."),
                    Field("steps", .array(.structure("OnboardingRunSnapshot.Entry")), .required, "Screens shown, in display order."),
                ],
                schemaVersion: .constant("1")
            ),
            StructLayout(
                name: "OnboardingRunSnapshot.Onboarding", doc: "The flow's identity (§4.3).",
                schemaPath: ["properties", "onboarding"],
                fields: [
                    Field("key", .string, .required, "Stable key of the flow."),
                    Field("version", .string, .required, "The flow's revision."),
                    Field("variant_key", .string, .optional, "In-flow variant; omitted when not in such a test."),
                ]),
            StructLayout(
                name: "OnboardingRunSnapshot.Studio", doc: "Links to Studio records (§4.4); only links with a value are written.",
                schemaPath: ["properties", "studio"],
                fields: [
                    Field("onboarding_id", .string, .optional, "Studio onboarding record."),
                    Field("deployment_id", .string, .optional, "Studio deployment record."),
                    Field("audience_id", .string, .optional, "Studio audience record."),
                    Field("variant_key", .string, .optional, "The Studio variant served (`main` or a variant key)."),
                ]),
            StructLayout(
                name: "OnboardingRunSnapshot.Context", doc: "Device and app context (§4.5); `build` and `os_version` are always written.",
                schemaPath: ["properties", "context"],
                fields: [
                    Field("app_version", .string, .required, "Marketing version."),
                    Field("build", .string, .nullable, "Build number, `null` when unknown."),
                    Field("platform", .enumeration("OnboardingRunSnapshot.Platform"), .required, "Platform."),
                    Field("os_version", .string, .nullable, "OS version, `null` when unknown."),
                    Field("locale", .string, .required, "BCP 47 language tag."),
                    Field("timezone", .string, .required, "IANA time zone name."),
                    Field("library_version", .string, .optional, "Version of the tracker library."),
                ]),
            StructLayout(
                name: "OnboardingRunSnapshot.Manifest", doc: "Every step the flow can show, in flow order (§4.6).",
                schemaPath: ["properties", "manifest"],
                fields: [
                    Field("steps", .array(.structure("OnboardingRunSnapshot.ManifestStep")), .required, "The steps.")
                ]),
            StructLayout(
                name: "OnboardingRunSnapshot.ManifestStep", doc: "One manifest step; steps sharing a `slot` are alternatives.",
                schemaPath: ["properties", "manifest", "properties", "steps", "items"],
                fields: [
                    Field("step_key", .string, .required, "Step key, unique in the manifest."),
                    Field("slot", .string, .optional, "Slot shared by alternative steps."),
                ]),
            StructLayout(
                name: "OnboardingRunSnapshot.Entry", doc: "One display of a step (§4.8).",
                schemaPath: ["$defs", "entry"],
                fields: [
                    Field("step_key", .string, .required, "The step shown."),
                    Field("entered_at", .string, .required, "When it was shown."),
                    Field("exited_at", .string, .nullable, "When the user left it; `null` while open."),
                    Field("answers", .array(.answer("OnboardingRunSnapshot.Answer")), .required, "Answers given on this visit."),
                ]),
        ],
        enums: [
            EnumLayout(name: "OnboardingRunSnapshot.Status", doc: "Run status.", schemaPath: ["properties", "status"]),
            EnumLayout(name: "OnboardingRunSnapshot.Platform", doc: "Platform of the device.", schemaPath: ["properties", "context", "properties", "platform"]),
        ],
        answer: AnswerLayout(name: "OnboardingRunSnapshot.Answer", schemaPath: ["$defs", "answer"])
    )

    static let paywallV1 = ContractLayout(
        schemaFile: "paywall-presentation.schema.json",
        outputFile: "PaywallPresentationSnapshot.swift",
        rootName: "PaywallPresentationSnapshot",
        rootDoc: "",
        structs: paywallCommonStructs(prefix: "PaywallPresentationSnapshot", schemaVersion: .constant("1")) + [
            StructLayout(
                name: "PaywallPresentationSnapshot.Paywall", doc: "The paywall shown (paywall.md §3.2).",
                schemaPath: ["properties", "paywall"],
                fields: [
                    Field("moment_key", .string, .required, "The moment that resolved to the paywall."),
                    Field("paywall_id", .string, .required, "Paywall id."),
                    Field("audience_id", .string, .nullable, "Audience id; `null` when the catalog carried none."),
                    Field("render_mode", .enumeration("PaywallPresentationSnapshot.RenderMode"), .required, "How the paywall is rendered."),
                    Field("billing", .enumeration("PaywallPresentationSnapshot.Billing"), .required, "Billing channel."),
                    Field("variant_key", .string, .optional, "Variant key, when the input has one."),
                    Field("deployment_id", .string, .optional, "Deployment id, when the input has one."),
                ]),
        ],
        enums: paywallCommonEnums(prefix: "PaywallPresentationSnapshot") + [
            EnumLayout(name: "PaywallPresentationSnapshot.RenderMode", doc: "How the paywall is rendered.",
                       schemaPath: ["properties", "paywall", "properties", "render_mode"]),
            EnumLayout(name: "PaywallPresentationSnapshot.Billing", doc: "Billing channel.",
                       schemaPath: ["properties", "paywall", "properties", "billing"]),
        ]
    )

    static let paywallV1_1 = ContractLayout(
        schemaFile: "paywall-presentation.v1_1.schema.json",
        outputFile: "PaywallPresentationSnapshotV1_1.swift",
        rootName: "PaywallPresentationSnapshotV1_1",
        rootDoc: "",
        structs: [
            paywallRoot(prefix: "PaywallPresentationSnapshotV1_1", nested: "PaywallPresentationSnapshot", schemaVersion: .paywallProvider,
                        doc: "One send of a paywall presentation, contract v1.1 (paywall.md §4): `schema_version` is `1.1` when `paywall.provider` is set and `1` otherwise, and a snapshot without a provider is byte for byte the v1 snapshot."),
            StructLayout(
                name: "PaywallPresentationSnapshotV1_1.Paywall",
                doc: "The paywall shown, v1.1 (paywall.md §4): with a provider the v1 members are optional.",
                schemaPath: ["properties", "paywall"],
                fields: [
                    Field("provider", .enumeration("PaywallPresentationSnapshotV1_1.Provider"), .optional, "Who serves the paywall; omitted for a Studio paywall (v1)."),
                    Field("provider_name", .string, .optional, "Free text naming the third-party service."),
                    Field("placement", .string, .optional, "Placement of an external paywall."),
                    Field("external_paywall_id", .string, .optional, "The provider's paywall id."),
                    Field("moment_key", .string, .optional, "The moment that resolved to the paywall."),
                    Field("paywall_id", .string, .optional, "Paywall id."),
                    Field("audience_id", .string, .optionalNullable, "Audience id: omitted, `null` (no audience) or a value."),
                    Field("render_mode", .enumeration("PaywallPresentationSnapshot.RenderMode"), .optional, "How the paywall is rendered."),
                    Field("billing", .enumeration("PaywallPresentationSnapshot.Billing"), .optional, "Billing channel."),
                    Field("variant_key", .string, .optional, "Variant key, when the input has one."),
                    Field("deployment_id", .string, .optional, "Deployment id, when the input has one."),
                ]),
        ],
        enums: [
            EnumLayout(name: "PaywallPresentationSnapshotV1_1.Provider", doc: "Who serves a v1.1 paywall.",
                       schemaPath: ["properties", "paywall", "properties", "provider"]),
        ],
        reused: [
            "PaywallPresentationSnapshot.Status", "PaywallPresentationSnapshot.Surface", "PaywallPresentationSnapshot.OnboardingRun",
            "PaywallPresentationSnapshot.Outcome", "PaywallPresentationSnapshot.Context", "PaywallPresentationSnapshot.RenderMode",
            "PaywallPresentationSnapshot.Billing",
        ]
    )

    /// The top level, in the tracker's emission order (paywall.md §3.8).
    static func paywallRoot(prefix: String, nested: String, schemaVersion: SchemaVersionRule, doc: String) -> StructLayout {
        StructLayout(
            name: prefix, doc: doc, schemaPath: [],
            fields: [
                Field("presentation_id", .string, .required, "Lowercase UUIDv7 minted at start."),
                Field("seq", .int, .required, "1 for the first send, then +1 per send."),
                Field("started_at", .string, .required, "When the paywall was resolved for display."),
                Field("shown_at", .string, .nullable, "When the host confirmed it on screen; `null` until then."),
                Field("sent_at", .string, .required, "Device clock when the snapshot was built (clamped)."),
                Field("paywall", .structure("\(prefix).Paywall"), .required, "The paywall."),
                Field("surface", .enumeration("\(nested).Surface"), .required, "Where it was presented."),
                Field("onboarding_run", .structure("\(nested).OnboardingRun"), .optional, "The onboarding step, only with surface `paywall_step`."),
                Field("context", .structure("\(nested).Context"), .required, "Device and app context, fixed at start."),
                Field("status", .enumeration("\(nested).Status"), .required, "Presentation status."),
                Field("ended_at", .string, .nullable, "End time; `null` until ended."),
                Field("outcome", .structure("\(nested).Outcome"), .nullable, "The outcome; `null` until ended."),
            ],
            schemaVersion: schemaVersion)
    }

    static func paywallCommonStructs(prefix p: String, schemaVersion: SchemaVersionRule) -> [StructLayout] {
        [
            paywallRoot(prefix: p, nested: p, schemaVersion: schemaVersion,
                        doc: "One send of a paywall presentation, contract v1 (paywall.md §3), keys in the tracker's order (§3.8)."),
            StructLayout(
                name: "\(p).OnboardingRun", doc: "The onboarding run and step that showed the paywall (§3.3).",
                schemaPath: ["properties", "onboarding_run"],
                fields: [
                    Field("run_id", .string, .required, "The run's id."),
                    Field("step_key", .string, .required, "The paywall step's key."),
                ]),
            StructLayout(
                name: "\(p).Outcome", doc: "How the presentation ended (§3.4).",
                schemaPath: ["properties", "outcome", "anyOf", "1"],
                fields: [
                    Field("status", .enumeration("\(p).OutcomeStatus"), .required, "The outcome."),
                    Field("reason", .string, .optional, "Host error reason, only with `error`."),
                    Field("transaction", .structure("\(p).Transaction"), .optional, "Store transaction, only with `purchased`."),
                ]),
            StructLayout(
                name: "\(p).Transaction", doc: "Store transaction keys of a purchase (§3.4); never empty.",
                schemaPath: ["properties", "outcome", "anyOf", "1", "properties", "transaction"],
                fields: [
                    Field("original_transaction_identifier", .string, .optional, "StoreKit original transaction id, or the Play order id."),
                    Field("purchase_token", .string, .optional, "Play purchase token."),
                    Field("product_id", .string, .optional, "Store product id."),
                    Field("restored", .bool, .optional, "`true` for a restore; the tracker never writes `false`."),
                ]),
            StructLayout(
                name: "\(p).Context", doc: "Device and app context (§3.5); `build` and `os_version` are always written.",
                schemaPath: ["properties", "context"],
                fields: [
                    Field("app_version", .string, .required, "Marketing version."),
                    Field("build", .string, .nullable, "Build number, `null` when unknown."),
                    Field("platform", .enumeration("\(p).Platform"), .required, "Platform."),
                    Field("os_version", .string, .nullable, "OS version, `null` when unknown."),
                    Field("locale", .string, .required, "BCP 47 language tag."),
                    Field("timezone", .string, .required, "IANA time zone name."),
                    Field("library_version", .string, .optional, "Version of the tracker library."),
                ]),
        ]
    }

    static func paywallCommonEnums(prefix p: String) -> [EnumLayout] {
        [
            EnumLayout(name: "\(p).Status", doc: "Presentation status.", schemaPath: ["properties", "status"]),
            EnumLayout(name: "\(p).Surface", doc: "Where the paywall was presented.", schemaPath: ["properties", "surface"]),
            EnumLayout(name: "\(p).OutcomeStatus", doc: "How a presentation ended.",
                       schemaPath: ["properties", "outcome", "anyOf", "1", "properties", "status"]),
            EnumLayout(name: "\(p).Platform", doc: "Platform of the device.", schemaPath: ["properties", "context", "properties", "platform"]),
        ]
    }
}

// MARK: - Schema access

struct GeneratorError: Error, CustomStringConvertible {
    let description: String
}

struct SchemaReader {
    let root: JSONValue
    let file: String

    init(root: JSONValue, file: String) throws {
        self.root = root
        self.file = file
    }

    func node(_ path: [String]) throws -> JSONValue {
        var v = root
        for token in path {
            if let i = Int(token), case let .array(a) = v, i < a.count {
                v = a[i]
            } else if let next = v[token] {
                v = next
            } else {
                throw GeneratorError(description: "\(file): no node at /\(path.joined(separator: "/"))")
            }
        }
        return try resolve(v)
    }

    func resolve(_ v: JSONValue) throws -> JSONValue {
        if let ref = v["$ref"]?.stringValue {
            guard ref.hasPrefix("#/") else { throw GeneratorError(description: "\(file): unsupported $ref \(ref)") }
            return try node(ref.dropFirst(2).split(separator: "/").map(String.init))
        }
        return v
    }

    /// The JSON types a member schema admits, and whether it admits null.
    func kinds(_ v: JSONValue) throws -> (types: Set<String>, nullable: Bool) {
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

// MARK: - Rendering

struct Renderer {
    let schema: SchemaReader
    let contract: ContractLayout
    let schemaHash: String
    var out = ""

    init(schema: SchemaReader, contract: ContractLayout, schemaHash: String) {
        self.schema = schema
        self.contract = contract
        self.schemaHash = schemaHash
    }

    mutating func line(_ s: String = "") { out += s.isEmpty ? "\n" : s + "\n" }

    mutating func render() throws {
        line("// GENERATED FILE, DO NOT EDIT. Generated by `swift run --package-path Tools codegen`")
        line("// (Tools/Sources/codegen/ContractTypesGenerator.swift) from Packages/Core/Contracts/\(contract.schemaFile).")
        line("// Key order and absent-versus-null rules: onboarding-run-contract.md §3.2-3.3, paywall.md §3.8 and §4.")
        line("// schema-fnv1a64: \(schemaHash)")
        line()
        for s in contract.structs { try check(s) }
        for s in contract.structs { try renderStruct(s) }
        for e in contract.enums { try renderEnum(e) }
        if let a = contract.answer { try renderAnswer(a) }
    }

    // MARK: Checks against the schema

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
            throw GeneratorError(description: "\(schema.file): \(s.name): schema members not laid out \(missing.sorted()), laid out but not in schema \(extra.sorted())")
        }
        if case let .constant(lit)? = s.schemaVersion {
            guard let c = props["schema_version"]?["const"], WireJSON.encodeString(c) == lit else {
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
                guard nullable else { throw GeneratorError(description: "\(schema.file): \(s.name).\(f.key) is not nullable in the schema") }
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
                throw GeneratorError(description: "\(schema.file): \(s.name).\(f.key) is \(types.sorted()) in the schema, laid out as \(want)")
            }
        }
    }

    // MARK: Structs

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
        case let .enumeration(n): "{ (v, p) throws(ContractDecodingError) -> \(n) in try ContractDecoding.enumeration(v, p) }"
        case let .structure(n), let .answer(n): "{ (v, p) throws(ContractDecodingError) in try \(n)(json: v, path: p) }"
        case .scalarMap: "{ (v, p) throws(ContractDecodingError) in try OrderedScalarMap(json: v, path: p) }"
        case let .array(e): "{ (v, p) throws(ContractDecodingError) in try ContractDecoding.array(v, p, \(decoder(e))) }"
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
        case let .array(e): ".array(\(x).map { \(jsonExpr(e, "$0")) })"
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
        case let .array(e):
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
        } else if case let .constant(v)? = s.schemaVersion {
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
        line("\(i2)    let r = try ContractObjectReader(json, path: path, allowed: [\(allowed.map { "\"\($0)\"" }.joined(separator: ", "))])")
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
        case let .constant(v)?:
            line("\(i2)    guard r.object[\"schema_version\"] == .number(\(v)) else {")
            line("\(i2)        throw ContractDecodingError(path: path + \".schema_version\", reason: \"expected \(v)\")")
            line("\(i2)    }")
        case .paywallProvider?:
            line("\(i2)    guard let version = r.object[\"schema_version\"], version == .number(schemaVersion) else {")
            line("\(i2)        throw ContractDecodingError(path: path + \".schema_version\", reason: \"expected \\(WireJSON.formatNumber(schemaVersion)) (1.1 exactly when paywall.provider is set)\")")
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
        case let .constant(v)?: line("\(i2)    o.appendUnchecked(\"schema_version\", .number(\(v)))")
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
        case let .constant(v)?:
            line("\(i2)    w.writeRaw(\"\\\"schema_version\\\":\(v)\")")
            state = .notFirst
        case .paywallProvider?:
            line("\(i2)    if paywall.provider == nil { w.writeRaw(\"\\\"schema_version\\\":1\") } else { w.writeRaw(\"\\\"schema_version\\\":1.1\") }")
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

    // MARK: Enums

    mutating func renderEnum(_ e: EnumLayout) throws {
        let node = try schema.node(e.schemaPath)
        guard let values = node["enum"]?.arrayValue?.compactMap(\.stringValue), !values.isEmpty else {
            throw GeneratorError(description: "\(schema.file): \(e.name): no string enum at /\(e.schemaPath.joined(separator: "/"))")
        }
        let (parent, name) = split(e.name)
        var ind = ""
        if let parent {
            line("extension \(parent) {")
            ind = "    "
        }
        line("\(ind)/// \(e.doc)")
        line("\(ind)public enum \(name): String, Sendable, Equatable, CaseIterable {")
        for v in values {
            line("\(ind)    /// `\"\(v)\"`")
            line("\(ind)    case \(Field.camel(v)) = \"\(v)\"")
        }
        line("\(ind)}")
        if parent != nil { line("}") }
        line()
    }

    // MARK: Answers

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
            let keys = Set(o["properties"]?.objectValue?.keys ?? [])
            let expected: Set<String> = k == "numeric" ? ["question_key", "kind", "value", "unit"] : ["question_key", "kind", "value"]
            guard keys == expected else { throw GeneratorError(description: "\(schema.file): answer kind \(k) has members \(keys.sorted())") }
        }
        guard kinds == ["single", "multi", "numeric", "text"] else {
            throw GeneratorError(description: "\(schema.file): answer kinds are \(kinds), the template knows single, multi, numeric, text")
        }
        let (parent, name) = split(a.name)
        precondition(parent != nil)
        out += """
            extension \(parent!) {
                /// One answer given on a visit (§4.9): keys `question_key`, `kind`, `value`, then `unit` (numeric only).
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
