// codegen depends on nothing it generates (issue 16 item 5): a generator bug that leaves one of
// Core's generated files as broken Swift cannot stop codegen from building and writing the fix.
//
// Scenarios (new ids):
//   CG1  the manifest's `codegen` target has no dependency, and `CodegenTests` depends only on it
//        (read from `swift package dump-package`, not from the manifest's text).
//   CG2  codegen's sources import Foundation only (no TrackerCore, no ScoreTracker).
//   CG3  with a generated Core file replaced by garbage (and the others missing), `--check` lists
//        every one of them, a run rewrites them to the checked-in bytes, and a second check is clean.
import Foundation
import Testing

@testable import codegen

@Suite struct IndependenceTests {
    @Test func CG1_codegenTargetHasNoDependency() throws {
        let scratch = URL(fileURLWithPath: NSTemporaryDirectory()).appendingPathComponent("codegen-dump-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: scratch) }
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        // A scratch path of its own: the running `swift test` holds the lock of Tools/.build.
        p.arguments = [
            "swift", "package", "--package-path", Repo.root.appendingPathComponent("Tools").path,
            "--scratch-path", scratch.path, "dump-package",
        ]
        let out = Pipe()
        p.standardOutput = out
        p.standardError = FileHandle.nullDevice
        try p.run()
        let data = out.fileHandleForReading.readDataToEndOfFile()
        p.waitUntilExit()
        #expect(p.terminationStatus == 0)
        let manifest = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
        let targets = try #require(manifest["targets"] as? [[String: Any]])
        func target(_ name: String) throws -> [String: Any] {
            try #require(targets.first { $0["name"] as? String == name }, "no target \(name)")
        }
        let codegen = try target("codegen")
        #expect(codegen["type"] as? String == "executable")
        #expect((codegen["dependencies"] as? [Any])?.isEmpty == true, "codegen depends on \(codegen["dependencies"] ?? "?")")
        // The one dependency of the tests is the generator itself, by name (no product of Core or Score).
        let tests = try target("CodegenTests")
        let deps = try #require(tests["dependencies"] as? [[String: Any]])
        #expect(deps.count == 1)
        let byName = try #require(deps.first?["byName"] as? [Any])
        #expect(byName.first as? String == "codegen")
    }

    @Test func CG2_sourcesImportFoundationOnly() throws {
        let dir = Repo.root.appendingPathComponent("Tools/Sources/codegen")
        let files = try FileManager.default.contentsOfDirectory(atPath: dir.path).filter { $0.hasSuffix(".swift") }
        #expect(files.count >= 10)
        var imported: Set<String> = []
        for f in files {
            for line in try Repo.text(dir.appendingPathComponent(f)).split(separator: "\n") {
                let words = line.split(separator: " ").filter { !$0.hasPrefix("@") }
                if words.first == "import", words.count >= 2 { imported.insert(String(words[words.count - 1])) }
            }
        }
        #expect(imported == ["Foundation"])
    }

    @Test func CG3_regeneratesOverABrokenGeneratedFile() throws {
        let root = try Repo.scratchCopy(of: ["Packages/Core/Contracts", "Packages/Score/schemas/events"])
        defer { try? FileManager.default.removeItem(at: root) }
        let generated = ContractTypesGenerator.outputDir + "/OnboardingRunSnapshot.swift"
        let broken = root.appendingPathComponent(generated)
        try FileManager.default.createDirectory(at: broken.deletingLastPathComponent(), withIntermediateDirectories: true)
        try "public struct OnboardingRunSnapshot { this is not Swift".write(to: broken, atomically: true, encoding: .utf8)

        let expected = [
            generated,
            ContractTypesGenerator.outputDir + "/PaywallPresentationSnapshot.swift",
            ContractTypesGenerator.outputDir + "/PaywallPresentationSnapshotV1_1.swift",
            ScoreEventsGenerator.outputPath,
        ]
        #expect(try Codegen.run(allGenerators(), root: root, check: true) == expected)
        #expect(try Repo.text(broken).hasSuffix("not Swift"), "--check writes nothing")

        var wrote: [String] = []
        #expect(try Codegen.run(allGenerators(), root: root, check: false) { _, path in wrote.append(path) } == expected)
        #expect(wrote == expected)
        for path in expected {
            #expect(try Repo.text(root.appendingPathComponent(path)) == Repo.text(Repo.root.appendingPathComponent(path)), "\(path)")
        }
        #expect(try Codegen.run(allGenerators(), root: root, check: true).isEmpty)
    }
}
