import Foundation

/// Generates the Swift contract types (`Packages/Core/Sources/TrackerCore/Contracts/Generated/`)
/// from the JSON Schemas in `Packages/Core/Contracts/`.
///
/// The schemas give the members, their JSON types, nullability, requiredness and enumeration
/// values; they do not give the wire key order or the absent-versus-null choices of the reference
/// tracker, so those come from the layout tables in `ContractLayouts.swift` (TrackerCore's
/// articles <doc:WireEncoding#Key-order>, <doc:WireEncoding#Absent-versus-null>,
/// <doc:PaywallPresentationContract#Emission-order> and <doc:PaywallPresentationContract#Contract-v1.1>). Generation fails when a table and its schema disagree (a member
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
            let schema = try SchemaReader(root: try SchemaJSON.parse(bytes), file: contract.schemaFile)
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
