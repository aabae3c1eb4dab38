import Foundation
import ScoreTracker
import TrackerCore

// `score-rss [--queue N]`: the Score memory case in a process of its own (only the Score tracker
// linked), so the peak RSS figure is the SDK's plus a minimal Swift host's, not the benchmark
// runner's. 100,000 `track()` calls with a 5-key props dictionary and one PII rule, persisting to
// the file store; `--queue` sets `maxQueueSize` (default: the SDK's default, 1,000). Prints JSON.

private struct NoTransport: HTTPTransport {
    func send(_ request: HTTPRequest) async throws -> HTTPResponse { HTTPResponse(status: 200) }
}

private func status(_ key: String) -> Double {
    guard let s = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8) else { return 0 }
    for line in s.split(separator: "\n") where line.hasPrefix(key + ":") {
        return (Double(line.split(separator: " ").dropFirst().first ?? "0") ?? 0) / 1024
    }
    return 0
}

var maxQueue: Int?
var args = CommandLine.arguments.dropFirst()
while let a = args.popFirst() {
    if a == "--queue", let v = args.popFirst().flatMap({ Int($0) }) { maxQueue = v } else {
        FileHandle.standardError.write(Data("usage: score-rss [--queue N]\n".utf8)); exit(2)
    }
}

let dir = NSTemporaryDirectory() + "score-rss-\(getpid())"
defer { try? FileManager.default.removeItem(atPath: dir) }
let rssBefore = status("VmRSS")
let client = ScoreClient(publishableKey: "pk_bench", siteId: "urc-ios", endpoint: "https://score.invalid",
                         appVersion: "4.2.0", os: "iOS 18.1", device: "iPhone", locale: "en-GB",
                         pii: .Classify(rules: [PiiRule(field: "email", action: .hash_)]),
                         maxQueueSize: maxQueue ?? 1_000,
                         store: FileScoreStore(directory: dir), transport: NoTransport(), onDiagnostic: { _ in })
client.grantAllConsent()
let props: [String: Any] = ["pollId": "motm-r12", "choice": "player_7", "round": 12, "email": "fan@example.com", "live": true]
let n = 100_000
for _ in 0..<n { client.track("poll_vote", props: props) }
let rssAfterCalls = status("VmRSS")
// Let the writer catch up: the log holds every queued event once it stops growing.
var last = -1
var stable = 0
while stable < 5 {
    usleep(20_000)
    let size = (try? FileManager.default.attributesOfItem(atPath: dir + "/queue.log")[.size] as? Int) ?? 0
    stable = size == last ? stable + 1 : 0
    last = size
}
let out: [String: Double] = [
    "rss_before_client_mb": rssBefore,
    "rss_after_track_calls_mb": rssAfterCalls,
    "rss_after_persisted_mb": status("VmRSS"),
    "peak_rss_mb": status("VmHWM"),
    "queue_depth": Double(client.inspect().queue.depth),
    "max_queue_size": Double(maxQueue ?? 1_000),
]
let json = try JSONSerialization.data(withJSONObject: out, options: [.sortedKeys])
print(String(decoding: json, as: UTF8.self))
