import Foundation
import Testing
import TrackerCore
import TrackerCoreTestKit

/// Issue 36's measurement, opt-in (it takes minutes, so it is not part of `make test-all`): a
/// campaign of SIGKILLs against one app process that runs Score, the onboarding tracker and the
/// paywall tracker at once (`crashworker mixed`), with every `fsync`/`fdatasync` of the child
/// slowed down by the `Tools/slowfsync` shim (150 ms by default). Each life is killed after a
/// seeded number of actions; a last launch delivers what was stored. It prints how many ended
/// paywall presentations and completed onboarding runs never reached the collector in that state.
///
///     SLOW_FSYNC_CAMPAIGN=150 swift test --package-path Reliability --filter SlowFsyncCampaign
///
/// `SLOW_FSYNC_CAMPAIGN` is the number of kills; `SLOW_FSYNC_MS` the delay (150). Targets (issue
/// 36): at most 10 % of ended presentations lost. The issue measured 279 of 285 lost, and 25 of 28
/// completed runs not received as completed, before the paywall sent at once.
@Suite(.serialized) struct SlowFsyncCampaignTests {
    static let kills = ProcessInfo.processInfo.environment["SLOW_FSYNC_CAMPAIGN"].flatMap { Int($0) }

    @Test(.enabled(if: kills != nil, "set SLOW_FSYNC_CAMPAIGN=<kills> to run it"))
    func slowFsyncKillCampaign() throws {
        let kills = Self.kills ?? 0
        let fsyncMs = ProcessInfo.processInfo.environment["SLOW_FSYNC_MS"] ?? "150"
        let seed = Soak.seed("slow-fsync-campaign")
        var rng = SplitMix64(seed: seed)
        let dir = TempDir("slow-fsync-campaign")
        let logs = TempDir("slow-fsync-campaign-logs")
        defer {
            dir.remove()
            logs.remove()
        }
        let shim = try #require(ScoreReclaimKillTests.buildShim(into: logs.path), "no C compiler: the campaign needs the shim")
        let environment = ["LD_PRELOAD": shim, "SLOW_FSYNC_MS": fsyncMs]
        let received = Received()
        let server = try LoopbackHTTPServer(recordRequests: false) { req in
            received.add(path: req.path, body: req.body, status: 200)
            return .respond(status: 200, body: req.path.hasSuffix("/score") ? "{}" : #"{"outcome":"accepted"}"#)
        }
        defer { server.stop() }

        var ended: [String] = []
        var completed: [String] = []
        var diagnostics: [String: Int] = [:]
        func handle(_ line: String) {
            if line.hasPrefix("PE ") { ended.append(String(line.dropFirst(3))) }
            if line.hasPrefix("OC ") { completed.append(String(line.dropFirst(3))) }
            if line.hasPrefix("D ") { diagnostics[String(line.dropFirst(2)), default: 0] += 1 }
        }
        func delivered() -> (ended: Set<String>, completed: Set<String>) {
            var e = Set<String>()
            var c = Set<String>()
            for entry in received.all {
                guard let j = try? WireJSON.decode(entry.body) else { continue }
                if entry.path.hasSuffix("/paywall"), j["status"]?.stringValue == "ended", let id = j["presentation_id"]?.stringValue {
                    e.insert(id)
                }
                if entry.path.hasSuffix("/onboarding"), j["status"]?.stringValue == "completed", let id = j["run_id"]?.stringValue {
                    c.insert(id)
                }
            }
            return (e, c)
        }
        let started = Date()
        for life in 0..<kills {
            received.setGeneration(life)
            let child = try Child(
                WorkerBinary.path, ["mixed", dir.path, server.baseURL, String(seed &+ UInt64(life)), "400"],
                stderrPath: logs.path + "/stderr.log", environment: environment)
            let target = 5 + rng.below(60)
            var seen = 0
            while seen < target, let line = child.readLine() {
                handle(line)
                if line.hasPrefix("P ") { seen += 1 }
                if line == "END" { break }
            }
            for line in child.kill() { handle(line) }
        }
        let atLastKill = delivered()
        // The last launch delivers what was stored; wait (bounded) until nothing new arrives.
        received.setGeneration(kills)
        let last = try Child(
            WorkerBinary.path, ["mixed", dir.path, server.baseURL, String(seed), "1", "drain"], stderrPath: logs.path + "/stderr.log",
            environment: environment)
        var quietSince = (Date(), received.count)
        let deadline = Date().addingTimeInterval(60)
        while Date() < deadline {
            _ = received.wait(until: Date().addingTimeInterval(0.5)) { _ in false }
            let n = received.count
            if n != quietSince.1 {
                quietSince = (Date(), n)
            } else if Date().timeIntervalSince(quietSince.0) > 5 {
                break
            }
        }
        for line in last.kill() { handle(line) }
        let final = delivered()
        let lostEnded = Set(ended).subtracting(final.ended).count
        let lostCompleted = Set(completed).subtracting(final.completed).count
        let lostEndedAtKill = Set(ended).subtracting(atLastKill.ended).count
        print(
            """
            [reliability] slow-fsync campaign (\(kills) kills, fsync +\(fsyncMs) ms, \(Int(Date().timeIntervalSince(started))) s): \
            ended presentations lost \(lostEnded) of \(ended.count) (\(lostEndedAtKill) not received before the last launch); \
            completed onboarding runs not received as completed \(lostCompleted) of \(completed.count); \
            diagnostics \(diagnostics.sorted { $0.key < $1.key })
            """)
        #expect(lostEnded * 10 <= ended.count, "more than 10 % of ended presentations lost: \(lostEnded) of \(ended.count)")
    }
}
