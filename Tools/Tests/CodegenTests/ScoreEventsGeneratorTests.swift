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

    /// SC300 — every schema gets a static member (`.pollVote`) and the integration guide's
    /// `Events.shared.PollVote`, deprecated and forwarding to it (issue 37 item 10).
    @Test func SC300_staticMembersAndDeprecatedGuideMembers() throws {
        let text = try ScoreEventsGenerator().generate(repoRoot: Repo.root)[0].contents
        let schemas = try FileManager.default.contentsOfDirectory(
            atPath: Repo.root.appendingPathComponent(ScoreEventsGenerator.schemaDir).path
        ).filter { $0.hasSuffix(".schema.json") }
        #expect(schemas.count >= 12)
        for file in schemas {
            let wire = String(file.dropLast(".schema.json".count))
            let member = ScoreEventsGenerator.memberName(wire)
            let guide = ScoreEventsGenerator.typeName(wire)
            #expect(text.contains("    public static let \(member) = EventDefinition(name: \"\(wire)\""), "\(wire)")
            #expect(
                text.contains(
                    """
                        @available(*, deprecated, message: "use EventDefinition.\(member): score.track(.\(member))")
                        public var \(guide): EventDefinition { .\(member) }
                    """), "\(wire)")
        }
        #expect(ScoreEventsGenerator.memberName("profile_favourite_team") == "profileFavouriteTeam")
        #expect(text.components(separatedBy: "@available(*, deprecated").count - 1 == schemas.count)
        #expect(text.contains("public var all: [EventDefinition] { EventDefinition.all }"))
    }
}
