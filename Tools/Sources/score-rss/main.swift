import CBenchCurl
import ScoreTracker
import TrackerCore

#if canImport(Darwin)
    import Foundation
#elseif canImport(Glibc)
    import Glibc
#endif

// `score-rss [--queue N]`: the Score memory case in a process of its own (only the Score tracker
// linked), so the peak RSS figure is the SDK's plus a minimal Swift host's, not the benchmark
// runner's. 100,000 `track()` calls with a 5-key props dictionary and one PII rule, persisting to
// the file store; `--queue` sets `maxQueueSize` (default: the SDK's default, 1,000). Prints JSON.

private struct NoTransport: HTTPTransport {
    func send(_ request: HTTPRequest) async throws -> HTTPResponse { HTTPResponse(status: 200) }
}

private func status(_ key: String) -> Double {
    guard let bytes = try? FileIO.readBytes("/proc/self/status") else { return 0 }
    let s = String(decoding: bytes, as: UTF8.self)
    for line in s.split(separator: "\n") where line.hasPrefix(key + ":") {
        return (Double(line.split(separator: " ").dropFirst().first ?? "0") ?? 0) / 1024
    }
    return 0
}

var maxQueue: Int?
var args = CommandLine.arguments.dropFirst()
while let a = args.popFirst() {
    if a == "--queue", let v = args.popFirst().flatMap({ Int($0) }) {
        maxQueue = v
    } else {
        print("usage: score-rss [--queue N]")
        exit(2)
    }
}

// Like the SDK, this host links no Foundation on Linux: its own footprint stays that of a
// minimal Swift program linking libcurl.
let dir = (getenv("TMPDIR").map { String(cString: $0) } ?? "/tmp") + "/score-rss-\(getpid())"
defer {
    for f in ["queue.log", "queue.log.tmp", "identity.json", "identity.json.tmp"] { unlink(dir + "/" + f) }
    // The queue log's later segments (`queue.<n>.log`).
    for n in 1..<2_000 { unlink(dir + "/queue.\(n).log") }
    rmdir(dir)
}
let rssBefore = status("VmRSS")
let anonBefore = status("RssAnon")
let client = ScoreClient(
    configuration: ScoreConfiguration(
        publishableKey: "pk_bench", siteId: "urc-ios", endpoint: "https://score.invalid",
        appVersion: "4.2.0", os: "iOS 18.1", device: "iPhone", locale: "en-GB",
        pii: .classify([PiiRule(field: "email", action: .hash)]),
        maxQueueSize: maxQueue ?? 1_000,
        store: FileScoreStore(directory: dir), transport: NoTransport(), onDiagnostic: { _ in }))
client.grantAllConsent()
let props: [String: Any] = ["pollId": "motm-r12", "choice": "player_7", "round": 12, "email": "fan@example.com", "live": true]
let n = 100_000
for _ in 0..<n { client.track("poll_vote", properties: props) }
let rssAfterCalls = status("VmRSS")
let heapAfterCalls = Double(bench_heap_in_use()) / 1_048_576
// Let the writer catch up: the log holds every queued event once it stops growing.
var last = -1
var stable = 0
while stable < 5 {
    usleep(20_000)
    // The queue log's size: its segments, `queue.log` then `queue.<n>.log` (the oldest may be
    // deleted already).
    var size = 0
    for n in 0..<2_000 {
        var st = stat()
        if stat(n == 0 ? dir + "/queue.log" : dir + "/queue.\(n).log", &st) == 0 { size += Int(st.st_size) }
    }
    stable = size == last ? stable + 1 : 0
    last = size
}
let out: [String: Double] = [
    "rss_before_client_mb": rssBefore,
    "rss_anon_before_client_mb": anonBefore,
    "rss_anon_after_persisted_mb": status("RssAnon"),
    "rss_after_track_calls_mb": rssAfterCalls,
    "rss_after_persisted_mb": status("VmRSS"),
    "peak_rss_mb": status("VmHWM"),
    "queue_depth": Double(client.inspect().queue.depth),
    "heap_in_use_after_track_calls_mb": heapAfterCalls,
    "heap_in_use_after_persisted_mb": Double(bench_heap_in_use()) / 1_048_576,
    "max_queue_size": Double(maxQueue ?? 1_000),
]
print("{" + out.keys.sorted().map { "\"\($0)\":\(out[$0]!)" }.joined(separator: ",") + "}")
