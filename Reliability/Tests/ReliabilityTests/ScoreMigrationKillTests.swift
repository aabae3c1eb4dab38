import Foundation
import ScoreTracker
import Testing
import TrackerCore
import TrackerCoreTestKit

/// R41 (issue 35, migration): a device updated with events queued in the single `queue.log` of
/// earlier versions (larger than a segment) starts sending them, and the process is killed with
/// SIGKILL at seeded moments while the log rolls past `queue.log` and deletes it. A last launch
/// then delivers the rest: every event is delivered, and one is delivered twice only in a later
/// life than its first delivery (a kill after the 2xx, before its removal was written), never
/// twice in one life. Once everything is sent, `queue.log` is gone.
@Suite(.serialized) struct ScoreMigrationKillTests {
    /// The default queue cap's worth (the worker keeps the default), padded to about 800 bytes
    /// each: larger than one 512 KiB segment.
    static let events = 1_000

    /// A legacy log of `events` events (seq props 0 to events - 1): the records a client writes,
    /// concatenated in order into one `queue.log`, which is what the single-file store wrote.
    static func legacyLog(into dir: String) async throws {
        let made = TempDir("score-migration-made")
        defer { made.remove() }
        // Now: the worker's real clock must not find the events past retention.
        let clock = ManualClock(startMs: Int64(Date().timeIntervalSince1970 * 1_000))
        let client = ScoreClient(
            configuration: ScoreConfiguration(
                publishableKey: "pk_test_migration", siteId: "crash-site", endpoint: "https://score.example/", appVersion: "1.0",
                os: "Linux", initialConsent: .all, store: FileScoreStore(directory: made.path, sync: false),
                transport: RecordingTransport(statuses: { _ in 500 }), clock: clock, scheduler: clock, onDiagnostic: { _ in }))
        let pad = String(repeating: "p", count: 300)
        for n in 0..<events { client.track("reclaim_event", properties: ["seq": n, "pad": pad]) }
        await clock.settle()
        await clock.advance(byMs: 100)
        await clock.settle()
        #expect(client.inspect().queue.depth == events)
        let names = try FileManager.default.contentsOfDirectory(atPath: made.path)
        func number(_ name: String) -> Int? {
            if name == "queue.log" { return 0 }
            guard name.hasPrefix("queue."), name.hasSuffix(".log") else { return nil }
            return Int(name.dropFirst(6).dropLast(4))
        }
        let segments = names.compactMap { name in number(name).map { ($0, name) } }.sorted { $0.0 < $1.0 }
        #expect(segments.count >= 2, "the legacy log should be larger than one segment")
        var bytes: [UInt8] = []
        for (_, name) in segments { bytes += try Array(Data(contentsOf: URL(fileURLWithPath: made.path + "/" + name))) }
        try Data(bytes).write(to: URL(fileURLWithPath: dir + "/queue.log"))
        try FileManager.default.copyItem(atPath: made.path + "/identity.json", toPath: dir + "/identity.json")
    }

    @Test func R41_aKillDuringTheMigrationOfALegacyLogLosesNothing() async throws {
        let seed = Soak.seed("score-migration")
        var rng = SplitMix64(seed: seed)
        let dir = TempDir("score-migration")
        let logs = TempDir("score-migration-logs")
        defer {
            dir.remove()
            logs.remove()
        }
        try await Self.legacyLog(into: dir.path)
        let received = Received()
        let server = try LoopbackHTTPServer(recordRequests: false) { req in
            // Recorded as it arrives (under the life that sent it), answered a few milliseconds
            // later: the kills land while the batches go, some between a 2xx and its removal.
            received.add(path: req.path, body: req.body, status: 200)
            usleep(3_000)
            return .respond(status: 200, body: "{}")
        }
        defer { server.stop() }
        func seqs(_ e: Received.Entry) -> [Int] {
            guard e.path.hasSuffix("/api/events") else { return [] }
            return ((try? WireJSON.decode(e.body))?["events"]?.arrayValue ?? []).compactMap { $0["props"]?["seq"]?.numberValue }
                .map { Int($0) }
        }
        var problems: [String] = []
        let kills = Soak.scale(8, soak: 80)
        for life in 0..<kills {
            received.setGeneration(life)
            let child = try Child(
                WorkerBinary.path, ["score-reclaim", dir.path, server.baseURL, String(life + 1), "1", "drain"],
                stderrPath: logs.path + "/stderr.log")
            while let line = child.readLine(), line != "READY" {
                if line.hasPrefix("D ") { problems.append("life \(life): diagnostic \(line.dropFirst(2))") }
            }
            // Killed 5 to 120 ms after it is ready: while it sends, writes removals, rolls and
            // deletes segments.
            usleep(UInt32(5_000 + rng.below(115_000)))
            for line in child.kill() where line.hasPrefix("D ") { problems.append("life \(life): diagnostic \(line.dropFirst(2))") }
        }
        received.setGeneration(kills)
        let last = try Child(
            WorkerBinary.path, ["score-reclaim", dir.path, server.baseURL, "999", "1", "drain"], stderrPath: logs.path + "/stderr.log")
        while let line = last.readLine(), line != "READY" {}
        var seen = Set<Int>()
        var checked = 0
        let settled = received.wait(until: Date().addingTimeInterval(60)) { entries in
            for e in entries[checked...] { seen.formUnion(seqs(e)) }
            checked = entries.count
            return seen.count >= Self.events
        }
        // The deletion of `queue.log` follows the last removals (on the sync thread).
        var gone = false
        for _ in 0..<500 where !gone {
            gone = !FileManager.default.fileExists(atPath: dir.path + "/queue.log")
            if !gone { usleep(10_000) }
        }
        _ = last.kill()
        let all = received.all
        let delivered = all.flatMap(seqs)
        let missing = Set(0..<Self.events).subtracting(delivered)
        if !settled || !missing.isEmpty {
            problems.append("\(missing.count) of \(Self.events) legacy events never delivered, e.g. \(missing.sorted().prefix(5))")
        }
        // A second delivery is allowed only in a later life than the first, after a kill: the
        // first was answered 2xx but its removal not written yet (a flush's removals follow its
        // batches by up to the append window). Never twice within one life.
        var firstLife: [Int: Int] = [:]
        var unexplained = Set<Int>()
        for e in all {
            for s in seqs(e) {
                if let g = firstLife[s] {
                    if g >= kills || g == e.generation { unexplained.insert(s) }
                } else {
                    firstLife[s] = e.generation
                }
            }
        }
        if !unexplained.isEmpty {
            problems.append(
                "\(unexplained.count) events delivered twice without a kill after their delivery, e.g. \(unexplained.sorted().prefix(5))")
        }
        if !gone { problems.append("queue.log was not deleted once every event in it was sent") }
        for p in problems.prefix(20) { Issue.record("score-migration seed=\(seed): \(p)") }
        let unique = Set(delivered).count
        print(
            "[reliability] R41: \(kills) SIGKILLs while migrating, \(unique) of \(Self.events) delivered, \(delivered.count - unique) resent"
        )
    }
}
