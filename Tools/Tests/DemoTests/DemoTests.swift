// The demo and the sample app run as real processes (built by `swift test` next to this bundle).
//
// Scenarios (new ids, issue 13 items 3 and 4):
//   DM1  the demo against a running collector: the sample app is SIGKILLed after two screens and
//        relaunched on the same data; the collector's stored state has one onboarding run,
//        completed once, no seq with two bodies, the paywall presentation ended, and every Score
//        event stored once; the demo's verdicts come from the collector's /api/requests.
//   DM2  Ctrl-C (SIGINT) or SIGTERM while the sample app is held at the kill point: the demo
//        stops the collector and the sample app and removes its temporary folder.
//   DM3  a failing demo (no collector at the given URL) exits non-zero and removes its folder.
//   DM4  a successful demo leaves no child process and no temporary folder behind.
//   DM5  the demo against a plain ingest that speaks the contracts and has none of the
//        collector's API (every GET 404): the app runs, the demo exits 0 without verdicts, and
//        the ingest received every Score event once.
//   DM6  `collector status` (issue 39): against a running collector, an app that sent nothing
//        (exit 1, said so), the same app after its install and purchase (exit 0, the events
//        listed, onboarding_completed named as missing), and an unreachable URL (exit 3).
//        DM1 also checks that the demo ends with the sample app's status, all three setup
//        events arrived.
// DM1 and DM5 fail on any Score event delivered twice: the app is killed after its flush
// returned, and a flush returns once its delivered events' removal is stored (issue 28).
import CollectorKit
import Foundation
import Testing
import TrackerCore
import TrackerCoreTestKit

#if canImport(Glibc)
    import Glibc
#endif

/// The directory of the built executables (this test bundle sits there).
let binDirectory: String = {
    let exe = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0]
    var url = URL(fileURLWithPath: exe).deletingLastPathComponent()
    // On Linux the bundle is .build/<triple>/debug/ToolsPackageTests.xctest; on macOS a bundle folder.
    while !FileManager.default.fileExists(atPath: url.appendingPathComponent("demo").path), url.path != "/" {
        url.deleteLastPathComponent()
    }
    return url.path
}()

/// A process started by a test, its standard output read line by line.
final class Spawned: @unchecked Sendable {
    let process = Process()
    private let handle: FileHandle
    private var buffer = Data()
    private(set) var lines: [String] = []

    init(_ binary: String, _ arguments: [String], environment: [String: String] = [:]) throws {
        process.executableURL = URL(fileURLWithPath: binary.hasPrefix("/") ? binary : binDirectory + "/" + binary)
        process.arguments = arguments
        var env = ProcessInfo.processInfo.environment
        for (k, v) in environment { env[k] = v }
        process.environment = env
        let pipe = Pipe()
        process.standardOutput = pipe
        handle = pipe.fileHandleForReading
        try process.run()
    }

    /// Reads output until a line contains `text` (nil when the output ends first).
    func readUntil(_ text: String) -> String? {
        while true {
            if let nl = buffer.firstIndex(of: 10) {
                let line = String(decoding: buffer[buffer.startIndex..<nl], as: UTF8.self)
                buffer.removeSubrange(buffer.startIndex...nl)
                lines.append(line)
                if line.contains(text) { return line }
                continue
            }
            let chunk = handle.availableData
            if chunk.isEmpty { return nil }
            buffer.append(chunk)
        }
    }

    /// Reads everything until the process closes its output, then waits for it to exit.
    func finish() -> Int32 {
        _ = readUntil("\u{0}never\u{0}")
        process.waitUntilExit()
        return process.terminationStatus
    }

    var output: String { lines.joined(separator: "\n") }
}

/// Whether `pid` names a live process (a zombie counts as ended).
func isAlive(_ pid: Int32) -> Bool {
    guard kill(pid, 0) == 0 else { return false }
    guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
        let close = stat.lastIndex(of: ")")
    else { return true }
    return stat[stat.index(close, offsetBy: 2)] != "Z"
}

/// The pids a demo printed (`(pid N)` and `pid N` after its children's names).
func childPids(_ output: String) -> [Int32] {
    output.split(separator: "\n").compactMap { line -> Int32? in
        guard line.contains("collector at") || line.contains("sample-app pid"),
            let range = line.range(of: "pid ")
        else { return nil }
        return Int32(line[range.upperBound...].prefix { $0.isNumber })
    }
}

func workDirectory(_ output: String) -> String? {
    output.split(separator: "\n").first { $0.hasPrefix("== work directory ") }.map { String($0.dropFirst("== work directory ".count)) }
}

/// The Score events the sample app tracks, each once per launch that tracks it.
let sampleAppScoreEvents = ["app_opened": 2, "onboarding_goal_chosen": 1, "lesson_completed": 1, "subscription_started": 1, "identify": 1]

/// Checks the Score batch bodies an ingest accepted: every event the sample app tracks, no event
/// id twice.
func expectEveryScoreEventOnce(_ bodies: [[UInt8]]) throws {
    var names: [String: Int] = [:]
    var ids: [String: Int] = [:]
    for body in bodies {
        for event in try WireJSON.decode(body)["events"]?.arrayValue ?? [] {
            let id = event["eventId"]?.stringValue ?? ""
            if ids[id] == nil { names[event["name"]?.stringValue ?? "", default: 0] += 1 }
            ids[id, default: 0] += 1
        }
    }
    #expect(names == sampleAppScoreEvents)
    #expect(ids.filter { $0.value > 1 }.isEmpty, "delivered twice: \(ids.filter { $0.value > 1 })")
}

/// Runs the demo against the server `start` launches in a fresh folder (it prints
/// `listening on http://…`), stopped with `stop` afterwards; `check` gets the folder, the demo's
/// exit status and its output before the folder is removed.
func demo(
    against start: (_ folder: String) throws -> Spawned, stop: Int32,
    _ check: (_ folder: String, _ status: Int32, _ output: String) throws -> Void
) throws {
    let folder = NSTemporaryDirectory() + "demo-test-\(IDs.uuidV4())"
    try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(atPath: folder) }
    let server = try start(folder)
    defer {
        kill(server.process.processIdentifier, stop)
        server.process.waitUntilExit()
    }
    let listening = try #require(server.readUntil("listening on"))
    let url = String(listening[try #require(listening.range(of: "http://")).lowerBound...])
    let demo = try Spawned("demo", ["--collector", url])
    let status = demo.finish()
    #expect(status == 0, "demo output:\n\(demo.output)")
    try check(folder, status, demo.output)
}

@Suite(.serialized) struct DemoTests {
    @Test func DM1_killAndRelaunchAgainstCollector_storedStateHasOneCompletedRunAndEveryEventOnce() throws {
        try demo(
            against: { try Spawned("collector", ["serve", "--port", "0", "--db", $0 + "/collector.sqlite", "--exit-with-parent"]) },
            stop: SIGTERM
        ) {
            folder, _, output in try checkDM1(db: folder + "/collector.sqlite", output)
        }
    }

    func checkDM1(db: String, _ output: String) throws {
        #expect(output.contains("SIGKILL"))
        #expect(output.contains("resumed run="))
        // The verdicts were read back from the collector, not from its output.
        #expect(output.contains("/functions/v1/onboarding-response kind=onboarding-run"))
        #expect(output.contains("Totals: Started 1 · Completed 1"))
        let pids = childPids(output)
        #expect(pids.count == 2)  // the two launches of the sample app (the collector is ours)
        for pid in pids { #expect(!isAlive(pid), "pid \(pid) outlived the demo") }

        let store = try Collector(databasePath: db, contractsDirectory: ContractExamples.contractsDirectory)
        // One onboarding run, completed.
        let runs = try store.storedRuns()
        #expect(runs.count == 1)
        #expect(runs.first?.status == "completed")
        // Completed once: one accepted completed snapshot, one onboarding_completed event.
        let onboardingRequests = try store.requests(kind: "onboarding-run")
        let completedAccepted = onboardingRequests.filter {
            $0.outcome == "accepted" && (try? WireJSON.decode($0.body))?["status"]?.stringValue == "completed"
        }
        #expect(completedAccepted.count == 1)
        let completionEvents = try store.requests(kind: "rocalytics-track").filter {
            $0.subject == "onboarding_completed" && $0.outcome == "accepted"
        }
        #expect(completionEvents.count == 1)
        // No seq with two different bodies (the Rocalytics body's own keys left aside).
        var bodiesBySeq: [Int: Set<String>] = [:]
        for r in onboardingRequests {
            guard let seq = r.seq, case .object(var o) = try WireJSON.decode(r.body) else { continue }
            o["responses"] = nil
            o["onboarding_metadata"] = nil
            bodiesBySeq[seq, default: []].insert(WireJSON.encodeString(.object(o)))
        }
        #expect(!bodiesBySeq.isEmpty)
        for (seq, bodies) in bodiesBySeq { #expect(bodies.count == 1, "seq \(seq) has \(bodies.count) bodies") }
        // The paywall presentation ended.
        let paywall = try store.requests(kind: "paywall-presentation").filter { $0.outcome == "accepted" }
        #expect(paywall.last.flatMap { try? WireJSON.decode($0.body) }?["status"]?.stringValue == "ended")
        // Every Score event stored once, and no event id twice.
        try expectEveryScoreEventOnce(try store.requests(kind: "score-batch").filter { $0.outcome == "accepted" }.map(\.body))
        #expect(try store.scoreEventCount() == 6)
        #expect(try store.requests().allSatisfy { $0.outcome != "rejected" })
        #expect(output.contains("no Score event delivered twice"))
        // The demo ends with the sample app's ingestion status, read from the status route.
        let status = try #require(output.range(of: "== ingestion status"))
        let tail = output[status.lowerBound...]
        #expect(tail.contains("events received for com.example.sampleapp at"))
        for name in ["install", "onboarding_completed", "purchase", "tutorial_finished"] {
            #expect(tail.contains("\n     \(name) "), "the status lists \(name):\n\(tail)")
        }
        #expect(tail.contains("install, onboarding_completed and purchase are all arriving."))
    }

    @Test func DM6_collectorStatusCommand_noEventsThenEventsThenUnreachable() async throws {
        let folder = NSTemporaryDirectory() + "status-test-\(IDs.uuidV4())"
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let server = try Spawned("collector", ["serve", "--port", "0", "--db", folder + "/collector.sqlite", "--exit-with-parent"])
        defer {
            kill(server.process.processIdentifier, SIGTERM)
            server.process.waitUntilExit()
        }
        let listening = try #require(server.readUntil("listening on"))
        let base = String(listening[try #require(listening.range(of: "http://")).lowerBound...])

        // Each `collector status` run is bounded (timeout exits 124): a hung command fails here.
        func status(_ arguments: [String]) throws -> Spawned {
            try Spawned("/usr/bin/timeout", ["60", binDirectory + "/collector", "status"] + arguments)
        }
        var run = try status(["--app", "com.example.app", "--base-url", base])
        #expect(run.finish() == 1)
        #expect(run.output.hasPrefix("no events received for com.example.app at \(base)"), "\(run.output)")

        let transport = CurlTransport()
        let roca = "6f1c2a4e-8b3d-4c5e-9f70-1a2b3c4d5e6f"
        // Valid requests of the published description (make validate-openapi checks the captured ones).
        let events = [
            ("install", "install", #"{"install_time":"2026-01-10T07:59:00.000Z"}"#),
            (
                "purchase", "purchase-2000000841136630",
                #"{"is_trial":false,"original_transaction_identifier":"2000000841136630","price":9.99,"currency_code":"EUR"}"#
            ),
        ]
        for (name, dedup, properties) in events {
            let body = #"{"name":"\#(name)","deduplication_id":"\#(roca)-\#(dedup)","properties":\#(properties)}"#
            let response = try await transport.send(
                HTTPRequest(
                    url: base + "/functions/v1/track", method: "POST",
                    headers: [
                        HTTPHeader("Content-Type", "application/json"), HTTPHeader("X-Roca-ID", roca),
                        HTTPHeader("X-Application-ID", "com.example.app"), HTTPHeader("X-Platform", "ios"),
                    ],
                    body: Array(body.utf8), timeoutMs: 10_000))
            #expect(response.status == 200)
        }
        run = try status(["--app", "com.example.app", "--base-url", base + "/"])
        #expect(run.finish() == 0)
        let lines = run.output.split(separator: "\n").map(String.init)
        #expect(lines.first == "events received for com.example.app at \(base)/:")
        #expect(lines.dropFirst().first?.hasPrefix("  install        1  latest 20") == true, "\(run.output)")
        #expect(lines.dropFirst(2).first?.hasPrefix("  purchase       1  latest 20") == true, "\(run.output)")
        #expect(lines.last == "not received yet: onboarding_completed")

        run = try status(["--app", "com.example.app", "--base-url", "http://127.0.0.1:9"])
        #expect(run.finish() == 3)
        #expect(run.output.hasPrefix("cannot reach http://127.0.0.1:9/functions/v1/status?app=com.example.app"), "\(run.output)")

        run = try status(["--base-url", base])
        #expect(run.finish() == 2)
    }

    @Test func DM5_plainIngestWithoutTheCollectorAPI_appRunsAndEveryEventArrivesOnce() throws {
        let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Fixtures/plain_ingest.py").path
        // SIGKILL: a child of Foundation's Process starts with SIGTERM blocked, and Python keeps
        // that mask.
        try demo(against: { try Spawned("/usr/bin/env", ["python3", script, $0 + "/received.jsonl"]) }, stop: SIGKILL) {
            folder, _, output in
            #expect(output.contains("the collector has no request log (GET /api/requests answered 404)"))
            #expect(output.contains("resumed run="))
            #expect(!output.contains("== verdicts"))
            #expect(!output.contains("client call failed"))
            // Every Score event the app tracks arrived, each once.
            let lines = try String(contentsOfFile: folder + "/received.jsonl", encoding: .utf8).split(separator: "\n")
            let requests = try lines.map { try WireJSON.decode(Array($0.utf8)) }
            try expectEveryScoreEventOnce(
                requests.filter { $0["path"]?.stringValue == "/api/events" }.compactMap { $0["body"]?.stringValue }.map { Array($0.utf8) })
            #expect(requests.contains { $0["path"]?.stringValue == "/functions/v1/onboarding-response" })
        }
    }

    @Test(arguments: [SIGINT, SIGTERM])
    func DM2_signalAtTheKillPoint_stopsEveryChildAndRemovesTheFolder(sig: Int32) throws {
        let demo = try Spawned("demo", [], environment: ["DEMO_PAUSE_AT_KILL": "1"])
        #expect(demo.readUntil("paused at the kill point") != nil, "demo output:\n\(demo.output)")
        let pids = childPids(demo.output)
        #expect(pids.count == 2)  // the collector and the held sample app
        for pid in pids { #expect(isAlive(pid)) }
        let folder = try #require(workDirectory(demo.output))
        #expect(FileManager.default.fileExists(atPath: folder))

        kill(demo.process.processIdentifier, sig)
        let status = demo.finish()
        #expect(demo.process.terminationReason == .exit)
        #expect(status == 128 + sig)
        for pid in pids { #expect(!isAlive(pid), "pid \(pid) outlived the demo") }
        #expect(!FileManager.default.fileExists(atPath: folder))
    }

    @Test func DM3_failingDemo_exitsNonZeroAndRemovesTheFolder() throws {
        let demo = try Spawned("demo", ["--collector", "http://127.0.0.1:9"])  // nothing listens on the discard port
        let status = demo.finish()
        #expect(status == 1)
        #expect(demo.output.contains("demo: FAILED"))
        let folder = try #require(workDirectory(demo.output))
        #expect(!FileManager.default.fileExists(atPath: folder))
    }

    @Test func DM4_successfulDemo_leavesNoChildAndNoFolder() throws {
        let demo = try Spawned("demo", [])
        let status = demo.finish()
        #expect(status == 0, "demo output:\n\(demo.output)")
        let pids = childPids(demo.output)
        #expect(pids.count == 3)  // collector, first and second launch
        for pid in pids { #expect(!isAlive(pid), "pid \(pid) outlived the demo") }
        let folder = try #require(workDirectory(demo.output))
        #expect(!FileManager.default.fileExists(atPath: folder))
    }
}
