import CollectorKit
import Foundation
import Synchronization
import TrackerCore

#if canImport(Glibc)
    import Glibc
#endif

let usage = """
    collector: a local ingest for developers integrating the SDKs.

    USAGE
      collector serve [--port N] [--db PATH] [--contracts DIR] [--exit-with-parent]
          Listens on 127.0.0.1:N (default 8787; 0 picks a free port). The first stdout line is
          "listening on http://127.0.0.1:PORT"; then one line per request:
          path=… kind=… id=… seq=… outcome=… status=… [reason="…"] [note="…"]
          --exit-with-parent stops the server when the process that started it ends.
          With TRACKER_CAPTURE_DIR set (the Makefile's test runs), every Rocalytics API request
          is also written to $TRACKER_CAPTURE_DIR/rocalytics-openapi/ for make validate-openapi.
      collector report [--db PATH] [--now TIMESTAMP] [--include-drafts]
          Funnel of each onboarding key and version (contract section 13), as of now (or TIMESTAMP,
          e.g. 2026-01-12T00:00:00.000Z). Version-conflict runs are left out; drafts unless asked.
      collector verdicts [--db PATH] [--log]
          Stored verdict counts per kind and outcome (--log: every verdict line).
      collector status --app BUNDLE_ID [--base-url URL]
          Asks URL (default http://127.0.0.1:8787, this collector; or the Rocalytics API,
          https://rocalytics-api.rocapine.io) for GET /functions/v1/status?app=BUNDLE_ID: the
          events it received from that app, count and latest time per name. Exits 0 when events
          arrived, 1 when the app sent none, 3 when URL is unreachable or is not a status API.

    OPTIONS
      --db PATH         SQLite file (default out/collector.sqlite; ":memory:" keeps nothing)
      --contracts DIR   JSON Schemas (default: Packages/Core/Contracts of the repository)

    ROUTES (POST unless noted; every contract answer is in the body:
            {"outcome":"accepted"|"ignored"} with 200, {"outcome":"rejected","reason":"…"} with 400)
    \(CollectorRouter.routes.map { "  \($0.method.padding(toLength: 5, withPad: " ", startingAt: 0))\($0.path.padding(toLength: 38, withPad: " ", startingAt: 0))\($0.what)" }.joined(separator: "\n"))

    Runs and presentations are keyed by sender: X-Application-ID + X-Roca-ID when sent (Rocalytics),
    otherwise one anonymous sender (generic HTTP sink). Point the generic sinks at
    http://127.0.0.1:PORT/v1/…, the Rocalytics client's baseUrl and attributionBaseUrl at
    http://127.0.0.1:PORT, and Score's endpoint at http://127.0.0.1:PORT.
    """

// A parent may start this process with signals blocked or ignored (Foundation's Process spawns
// from a thread that blocks them; the demo ignores SIGINT and SIGTERM to handle them itself):
// restore the defaults, so that SIGTERM and Ctrl-C stop this process.
var unblocked = sigset_t()
sigemptyset(&unblocked)
sigprocmask(SIG_SETMASK, &unblocked, nil)
signal(SIGTERM, SIG_DFL)
signal(SIGINT, SIG_DFL)

let stdoutLock = Mutex(())
@Sendable func emit(_ line: String) {
    stdoutLock.withLock { _ in
        // Unbuffered write: a reader sees each line as soon as it is printed. A closed pipe is
        // ignored (SIGPIPE is ignored too) so that the server keeps answering.
        let bytes = Array((line + "\n").utf8)
        var offset = 0
        while offset < bytes.count {
            let n = bytes.withUnsafeBytes { write(1, $0.baseAddress! + offset, bytes.count - offset) }
            if n < 0, errno == EINTR { continue }
            if n <= 0 { return }
            offset += n
        }
    }
}

func fail(_ message: String) -> Never {
    FileHandle.standardError.write(Data("collector: \(message)\n".utf8))
    exit(2)
}

struct Options {
    var port: UInt16 = 8787
    var db = "out/collector.sqlite"
    var contracts: String?
    var now: Int64?
    var includeDrafts = false
    var log = false
    var exitWithParent = false
    var app: String?
    var baseURL = "http://127.0.0.1:8787"
}

func parse(_ args: ArraySlice<String>) -> Options {
    var o = Options()
    var it = args.makeIterator()
    while let arg = it.next() {
        func value() -> String {
            guard let v = it.next() else { fail("\(arg) needs a value") }
            return v
        }
        switch arg {
        case "--port":
            guard let p = UInt16(value()) else { fail("--port takes a number 0...65535") }
            o.port = p
        case "--db": o.db = value()
        case "--contracts": o.contracts = value()
        case "--now":
            let text = value()
            guard let ms = Timestamp.parse(text) else { fail("--now takes a timestamp like 2026-01-12T00:00:00.000Z") }
            o.now = ms
        case "--include-drafts": o.includeDrafts = true
        case "--log": o.log = true
        case "--exit-with-parent": o.exitWithParent = true
        case "--app": o.app = value()
        case "--base-url": o.baseURL = value()
        case "-h", "--help":
            print(usage)
            exit(0)
        default: fail("unknown option \(arg)\n\n\(usage)")
        }
    }
    return o
}

/// Finds Packages/Core/Contracts above the working directory or the executable.
func contractsDirectory(_ given: String?) -> String {
    if let given { return given }
    if let env = ProcessInfo.processInfo.environment["COLLECTOR_CONTRACTS"] { return env }
    let fm = FileManager.default
    let starts = [fm.currentDirectoryPath, URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().path]
    for start in starts {
        var url = URL(fileURLWithPath: start)
        while url.path != "/" {
            let candidate = url.appendingPathComponent("Packages/Core/Contracts")
            if fm.fileExists(atPath: candidate.appendingPathComponent("onboarding-run.schema.json").path) { return candidate.path }
            url.deleteLastPathComponent()
        }
    }
    fail("cannot find Packages/Core/Contracts; pass --contracts DIR")
}

func open(_ o: Options) -> Collector {
    do { return try Collector(databasePath: o.db, contractsDirectory: contractsDirectory(o.contracts)) } catch {
        fail("cannot open the collector: \(error)")
    }
}

let arguments = CommandLine.arguments.dropFirst()
guard let command = arguments.first else {
    print(usage)
    exit(2)
}
switch command {
case "-h", "--help", "help":
    print(usage)
case "serve":
    let o = parse(arguments.dropFirst())
    // The database keeps every body as received (payload data): owner-only files (0600 in 0700).
    umask(0o077)
    let collector = open(o)
    // TRACKER_CAPTURE_DIR (set by the Makefile during tests): the Rocalytics API requests are
    // also written there, for `make validate-openapi`.
    let router = CollectorRouter(collector: collector, capture: RequestCapture.fromEnvironment(), log: emit)
    signal(SIGPIPE, SIG_IGN)
    let server = LoopbackServer(port: o.port, onRefusal: router.refused) { router.handle($0) }
    let port: UInt16
    do { port = try server.start() } catch { fail("\(error)") }
    emit("listening on http://127.0.0.1:\(port)")
    emit("web debugger: http://127.0.0.1:\(port)/ (live requests, payloads, funnels, paywalls, Score, Rocalytics)")
    if o.exitWithParent {
        let parent = getppid()
        Thread.detachNewThread {
            while getppid() == parent { usleep(200_000) }
            exit(0)  // the parent ended (even by SIGKILL): do not outlive it
        }
    }
    while true { pause() }
case "report":
    let o = parse(arguments.dropFirst())
    let collector = open(o)
    do {
        let funnels = try collector.funnels(nowMs: o.now, includeDrafts: o.includeDrafts)
        if funnels.isEmpty { print("no onboarding runs stored") }
        print(funnels.map { $0.rendered() }.joined(separator: "\n\n"))
    } catch { fail("\(error)") }
case "verdicts":
    let o = parse(arguments.dropFirst())
    let collector = open(o)
    do {
        if o.log {
            for v in try collector.verdicts() {
                print(
                    "\(Timestamp.format(ms: v.receivedAtMs)) path=\(v.path) kind=\(v.kind) id=\(v.subject ?? "-") seq=\(v.seq.map(String.init) ?? "-") outcome=\(v.outcome)\(v.reason.map { " reason=\"\($0)\"" } ?? "")"
                )
            }
        } else {
            let counts = try collector.verdictCounts()
            if counts.isEmpty { print("no verdicts stored") }
            for c in counts { print("\(c.kind) \(c.outcome) \(c.count)") }
        }
    } catch { fail("\(error)") }
case "status":
    let o = parse(arguments.dropFirst())
    guard let app = o.app, !app.isEmpty else { fail("status needs --app BUNDLE_ID") }
    let base = o.baseURL
    let answer = Mutex<(text: String, exitCode: Int32)?>(nil)
    let done = DispatchSemaphore(value: 0)
    // Detached: top-level code runs on the main actor, and the main thread waits below.
    Task.detached {
        let status = await IngestionStatus.fetch(base: base, app: app, transport: CurlTransport())
        answer.withLock { $0 = IngestionStatus.report(status, base: base, app: app) }
        done.signal()
    }
    done.wait()
    let (text, code) = answer.withLock { $0 } ?? ("no answer", 3)
    print(text)
    exit(code)
default:
    fail("unknown command \(command)\n\n\(usage)")
}
