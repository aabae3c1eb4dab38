// The README's main job: the sample app (all four SDK surfaces, file storage in a data folder)
// run as a real process against the local collector, SIGKILLed mid-onboarding, relaunched on the
// same data folder to resume and finish; then the collector's verdicts, the Score events it
// received again after acknowledging them, and the onboarding funnel, read back through the
// collector's HTTP API (`GET /api/requests`, `GET /api/score`, `GET /api/report`); last, the
// Rocalytics ingestion status of the sample app (`GET /functions/v1/status?app=…`, what
// `collector status` prints), which must list install, onboarding_completed and purchase.
//
//   demo [--collector URL]
//
// Without --collector the demo starts `collector serve --port 0` (the binary next to this one)
// on a fresh SQLite file in a temporary folder. A given collector only has to speak the
// contracts: when it has no `/api/requests` (any ingest but this repository's collector), the
// app runs all the same and the verdicts are not shown. Child processes are stopped and the
// temporary folder removed on success, on failure and on Ctrl-C/SIGTERM. Exits non-zero when a
// payload was rejected, a Score event was delivered twice, or the sample app did not finish.
// The app is killed only after its flush returned, and `flush()` returns once the delivered
// events' removal is in the queue log: a duplicate is a defect, never the kill's timing.
// DEMO_PAUSE_AT_KILL=1 makes it wait at the kill point (a test interrupts it there).
import CollectorKit
import Foundation
import TrackerCore

/// The sample app's bundle id (its `X-Application-ID`, `Tools/Sources/sample-app/SamplePlatform.swift`).
let sampleAppBundleId = "com.example.sampleapp"

/// Writes to stdout at once (no buffering): a reader sees each line as it is printed, and a
/// signal's exit loses nothing.
func out(_ text: String = "", terminator: String = "\n") {
    FileHandle.standardOutput.write(Data((text + terminator).utf8))
}

func usage() -> Never {
    FileHandle.standardError.write(Data("usage: demo [--collector URL]\n".utf8))
    exit(2)
}

var givenCollector: String?
var args = CommandLine.arguments.dropFirst()
while let a = args.popFirst() {
    switch a {
    case "--collector":
        guard let url = args.popFirst() else { usage() }
        givenCollector = url
    case "-h", "--help":
        out("usage: demo [--collector URL]")
        exit(0)
    default: usage()
    }
}

let binDirectory = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath().deletingLastPathComponent().path
let transport = CurlTransport()

/// GET `url` from the collector's API.
func get(_ url: String) async throws -> [UInt8] {
    let response = try await transport.send(HTTPRequest(url: url, method: "GET", timeoutMs: 10_000, maxResponseBytes: 64 << 20))
    guard response.status == 200 else { throw DemoError("GET \(url) answered \(response.status)") }
    return response.body
}

/// Whether the collector at `base` has this repository's request log: nil when it has (a 200
/// with a `requests` array), else why not. A collector that is not reachable at all throws.
func missingRequestLog(_ base: String) async throws -> String? {
    let url = base + "/api/requests?limit=1"
    let response = try await transport.send(HTTPRequest(url: url, method: "GET", timeoutMs: 10_000, maxResponseBytes: 1 << 20))
    guard response.status == 200 else { return "GET /api/requests answered \(response.status)" }
    guard (try? WireJSON.decode(response.body))?["requests"]?.arrayValue != nil else {
        return "GET /api/requests did not answer a request log"
    }
    return nil
}

/// The collector's request log, newest first (at most 5,000 entries after `afterId`).
func requestLog(_ base: String, after afterId: Int64) async throws -> [JSONValue] {
    let value = try WireJSON.decode(try await get(base + "/api/requests?limit=5000&after=\(afterId)"))
    return value["requests"]?.arrayValue ?? []
}

func verdictLine(_ r: JSONValue) -> String {
    func s(_ key: String) -> String { r[key]?.stringValue ?? r[key]?.intValue.map(String.init) ?? "-" }
    var line =
        "\(s("time")) \(s("route")) kind=\(s("kind")) id=\(s("subject")) seq=\(s("seq")) outcome=\(s("outcome")) status=\(s("status"))"
    if let reason = r["reason"]?.stringValue { line += " reason=\"\(reason)\"" }
    if let note = r["note"]?.stringValue { line += " note=\"\(note)\"" }
    for v in r["violations"]?.arrayValue ?? [] {
        line += "\n      violates \(v["rule"]?.stringValue ?? "?") at \(v["path"]?.stringValue ?? "") : \(v["message"]?.stringValue ?? "")"
    }
    return line
}

func runDemo(givenCollector: String?) async throws -> Int32 {
    let work = NSTemporaryDirectory() + "rocalytics-demo-\(IDs.uuidV4())"
    try FileManager.default.createDirectory(atPath: work, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
    Cleanup.shared.remove(atExit: work)
    out("== work directory \(work)")

    // The collector: given, or a child on a free port.
    var base: String
    if let givenCollector {
        base = givenCollector
        if base.hasSuffix("/") { base.removeLast() }
        out("== collector at \(base) (already running)")
    } else {
        let collector = try Child(
            name: "collector", binary: binDirectory + "/collector",
            arguments: ["serve", "--port", "0", "--db", work + "/collector.sqlite", "--exit-with-parent"])
        guard let first = collector.waitForLine(containing: "http://", timeoutSeconds: 30),
            let range = first.range(of: "http://")
        else { throw DemoError("the collector did not start") }
        base = String(first[range.lowerBound...]).trimmingCharacters(in: .whitespaces)
        out("== collector at \(base) (pid \(collector.pid)); its web debugger is at \(base)/ while the demo runs")
    }
    // Only what this demo sends: the log's newest id before it starts (when there is a log).
    let noRequestLog = try await missingRequestLog(base)
    if let noRequestLog {
        out("== the collector has no request log (\(noRequestLog)): the app runs, its verdicts are not shown")
    }
    let startId = noRequestLog != nil ? 0 : try await requestLog(base, after: 0).first?["id"]?.intValue.map(Int64.init) ?? 0

    let appData = work + "/sample-app"
    let echo: @Sendable (String) -> Void = { out("   \($0)") }
    let appArguments = ["--data", appData, "--collector", base, "--exit-with-parent"]

    out("\n== 1. the sample app starts: Rocalytics client, onboarding, paywall and Score trackers, files in \(appData)")
    let first = try Child(
        name: "sample-app", binary: binDirectory + "/sample-app", arguments: appArguments + ["--hold-after-screens"], echo: echo)
    out("   sample-app pid \(first.pid)")
    guard first.waitForLine(containing: "ready-to-kill", timeoutSeconds: 60) != nil else {
        throw DemoError("the sample app did not record its two screens")
    }
    if ProcessInfo.processInfo.environment["DEMO_PAUSE_AT_KILL"] == "1" {
        out("demo: paused at the kill point")
        while true { pause() }
    }
    kill(first.pid, SIGKILL)
    _ = first.waitForExit(timeoutSeconds: 10)
    out("   SIGKILL: the app is killed after two screens (terminated by signal \(first.process.terminationStatus))")

    out("\n== 2. the sample app is launched again on the same data: it resumes the run and finishes")
    let second = try Child(name: "sample-app", binary: binDirectory + "/sample-app", arguments: appArguments, echo: echo)
    out("   sample-app pid \(second.pid)")
    let status = second.waitForExit(timeoutSeconds: 120)
    var failures: [String] = []
    if status != 0 { failures.append("the relaunched sample app \(status.map { "exited with \($0)" } ?? "did not finish")") }

    if noRequestLog != nil {
        await printStatus(base)
        out("")
        for f in failures { out("demo: FAILED: \(f)") }
        guard failures.isEmpty else { return 1 }
        out("demo: the sample app finished; no verdicts (the collector has no request log)")
        return 0
    }

    // The verdicts, read back from the collector (oldest first here).
    let records = try await requestLog(base, after: startId).reversed()
    out("\n== verdicts (one per request the collector received, read from \(base)/api/requests)")
    for r in records { out("   \(verdictLine(r))") }
    let rejected = records.filter { $0["outcome"]?.stringValue == "rejected" }

    // Score events received again after a 2xx (where the collector reports them).
    if let score = try? WireJSON.decode(try await get(base + "/api/score")), var again = score["duplicates_after_ack"]?.arrayValue {
        again = again.filter { Int64($0["again_request_id"]?.intValue ?? 0) > startId }  // this run's own
        out("\n== Score events received again after acknowledgement (\(base)/api/score): \(again.count)")
        for d in again {
            out(
                "   \(d["name"]?.stringValue ?? "?") event=\(d["event_id"]?.stringValue ?? "?") first in request \(d["first_request_id"]?.intValue ?? 0), again in \(d["again_request_id"]?.intValue ?? 0)"
            )
        }
        if !again.isEmpty { failures.append("\(again.count) Score event(s) delivered again after a 2xx") }
    }

    out("\n== onboarding funnel (\(base)/api/report, the same as `collector report`)")
    out(String(decoding: try await get(base + "/api/report"), as: UTF8.self), terminator: "")

    let ingestion = await printStatus(base)
    if case .events(let events) = ingestion {
        let missing = IngestionStatus.setupEvents.filter { name in !events.contains { $0.name == name } }
        if !missing.isEmpty { failures.append("the status lists no \(missing.joined(separator: ", "))") }
    } else {
        failures.append("the collector's status of \(sampleAppBundleId) lists no event")
    }

    out("")
    for f in failures { out("demo: FAILED: \(f)") }
    if rejected.isEmpty && failures.isEmpty {
        out("demo: \(records.count) requests, none rejected, no Score event delivered twice")
        return 0
    }
    if !rejected.isEmpty { out("demo: \(rejected.count) of \(records.count) requests rejected") }
    return 1
}

/// Prints the Rocalytics ingestion status of the sample app at `base`, as `collector status` does.
@discardableResult
func printStatus(_ base: String) async -> IngestionStatus.Answer {
    out("\n== ingestion status (\(IngestionStatus.url(base: base, app: sampleAppBundleId)), as `collector status` prints it)")
    let answer = await IngestionStatus.fetch(base: base, app: sampleAppBundleId, transport: transport)
    for line in IngestionStatus.report(answer, base: base, app: sampleAppBundleId).text.split(separator: "\n") { out("   \(line)") }
    return answer
}

Cleanup.shared.installSignalHandlers()
let code: Int32
do {
    code = try await runDemo(givenCollector: givenCollector)
} catch {
    out("demo: FAILED: \(error)")
    code = 1
}
Cleanup.shared.run()
exit(code)
