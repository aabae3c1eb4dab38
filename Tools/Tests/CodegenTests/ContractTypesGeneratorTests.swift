// The contract types generator against Core's checked-in files and against edited schemas.
//
// Scenarios (new ids):
//   CG4  a fresh generation from Packages/Core/Contracts equals the checked-in generated files, and
//        each records the FNV-1a 64 hash of its schema's bytes.
//   CG5  a layout table and its schema that disagree stop generation with a message naming the
//        member: a member missing from the table, a required member made optional, a type changed.
import Foundation
import Testing

@testable import codegen

@Suite struct ContractTypesGeneratorTests {
    @Test func CG4_freshGenerationEqualsCheckedInFiles() throws {
        let files = try ContractTypesGenerator().generate(repoRoot: Repo.root)
        #expect(files.map(\.path) == ContractLayouts.all.map { ContractTypesGenerator.outputDir + "/" + $0.outputFile })
        for (file, layout) in zip(files, ContractLayouts.all) {
            #expect(file.contents == (try Repo.text(Repo.root.appendingPathComponent(file.path))), "\(file.path)")
            let schema = [UInt8](try Data(contentsOf: Repo.root.appendingPathComponent("Packages/Core/Contracts/" + layout.schemaFile)))
            #expect(file.contents.contains("// schema-fnv1a64: \(ContractTypesGenerator.fnv1a64(schema))\n"))
        }
        #expect(ContractTypesGenerator.fnv1a64(Array("a".utf8)) == "af63dc4c8601ec8c")
    }

    /// Generates from a copy of the contracts whose onboarding schema went through `edit`; returns
    /// the generator's message, or `nil` when generation succeeded.
    func failure(editingOnboardingSchema edit: (String) -> String) throws -> String? {
        let root = try Repo.scratchCopy(of: ["Packages/Core/Contracts"])
        defer { try? FileManager.default.removeItem(at: root) }
        let url = root.appendingPathComponent("Packages/Core/Contracts/onboarding-run.schema.json")
        let original = try Repo.text(url)
        let edited = edit(original)
        #expect(edited != original, "the edit changed nothing")
        try edited.write(to: url, atomically: true, encoding: .utf8)
        do {
            _ = try ContractTypesGenerator().generate(repoRoot: root)
            return nil
        } catch let e as GeneratorError {
            return e.description
        }
    }

    @Test func CG5_layoutAndSchemaDisagreeing() throws {
        let added = try failure {
            $0.replacingOccurrences(of: #""library_version": {"#, with: #""carrier": { "type": "string" }, "library_version": {"#)
        }
        #expect(
            added?.contains(#"OnboardingRunSnapshot.Context: schema members not laid out ["carrier"]"#) == true, "\(added ?? "no error")")

        let optional = try failure {
            $0.replacingOccurrences(of: #""locale", "timezone"]"#, with: #""locale"]"#)
        }
        #expect(optional?.contains("OnboardingRunSnapshot.Context.timezone is optional in the schema") == true, "\(optional ?? "no error")")

        let retyped = try failure {
            $0.replacingOccurrences(of: #""type": "integer""#, with: #""type": "string""#)
        }
        #expect(
            retyped?.contains(#"OnboardingRunSnapshot.seq is ["string"] in the schema, laid out as integer"#) == true,
            "\(retyped ?? "no error")")
    }
}
