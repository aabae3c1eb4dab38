// Score's event taxonomy generator. SC90 moved here from Score's tests, which compiled a copy of
// the generator's sources (issue 16 item 5): the one copy is Tools/Sources/codegen.
import Foundation
import Testing

@testable import codegen

@Suite struct ScoreEventsGeneratorTests {
    @Test func SC90_driftTest() throws {
        let repo = Repo.root
        let checkedIn = try String(contentsOf: repo.appendingPathComponent(ScoreEventsGenerator.outputPath), encoding: .utf8)
        let g = ScoreEventsGenerator()
        let first = try g.generate(repoRoot: repo)
        let second = try g.generate(repoRoot: repo)
        #expect(first.count == 1 && first[0].contents == checkedIn && second[0].contents == checkedIn)

        func drifted(_ edit: (URL) throws -> Void) throws -> [String] {
            let root = URL(fileURLWithPath: NSTemporaryDirectory() + "score-drift-\(UUID().uuidString)")
            let schemas = root.appendingPathComponent(ScoreEventsGenerator.schemaDir)
            try FileManager.default.createDirectory(at: schemas.deletingLastPathComponent(), withIntermediateDirectories: true)
            try FileManager.default.copyItem(at: repo.appendingPathComponent(ScoreEventsGenerator.schemaDir), to: schemas)
            try edit(schemas)
            defer { try? FileManager.default.removeItem(at: root) }
            return try g.generate(repoRoot: root).filter { $0.contents != checkedIn }.map(\.path)
        }
        let a = try drifted { dir in
            let p = dir.appendingPathComponent("poll_vote.schema.json")
            let text = try String(contentsOf: p, encoding: .utf8)
                .replacingOccurrences(of: #""analytics""#, with: #""personalization""#)
            #expect(text.contains("personalization"))
            try text.write(to: p, atomically: true, encoding: .utf8)
        }
        #expect(a.count == 1 && a[0].hasSuffix("Events.swift"))
        let b = try drifted { dir in
            try #"{"x-score":{"name":"fan_cheer","requires":["analytics"]}}"#.write(
                to: dir.appendingPathComponent("fan_cheer.schema.json"), atomically: true, encoding: .utf8)
        }
        #expect(b.count == 1 && b[0].hasSuffix("Events.swift"))
    }
}
