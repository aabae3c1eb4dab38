import Foundation
import ScoreTracker
import Synchronization
import TrackerCore

// Issue 35 item 2: how long a tracked event waits to reach the queue log's file while the device
// syncs slowly. Run with the shim for the issue's figure (`Tools/slowfsync`):
//
//   LD_PRELOAD=<slowfsync.so> SLOW_FSYNC_MS=150 Tools/.build/release/bench --filter score.fsync_lag
//
// `fsync_probe_ms` shows the delay in force. 500 events/s for 4 s over the default file store,
// flushed every 100 ms, with every delivery succeeding (`ok_`: removals written, space
// reclaimed) and failing (`failing_`); `in_file_ms`: from the `track()` call until a watcher
// thread sees the event's add record in the file (it reads the file every 0.2 ms, so the figures
// are up to 0.2 ms late).

/// Reads a queue log as it grows, segment after segment (`queue.log`, then `queue.<n>.log`), and
/// notes when each add record carrying `"seq":N` first appeared.
private final class LogWatcher: @unchecked Sendable {
    let path: String
    private let lock = NSLock()
    private var firstSeenNs: [UInt64]
    private let stop = Atomic<Bool>(false)
    private let stopped = DispatchSemaphore(value: 0)

    init(path: String, events: Int) {
        self.path = path
        firstSeenNs = [UInt64](repeating: 0, count: events)
    }

    var seen: [UInt64] {
        lock.lock()
        defer { lock.unlock() }
        return firstSeenNs
    }

    func start() {
        let t = Thread { [self] in watch() }
        t.start()
    }

    func finish() {
        stop.store(true, ordering: .relaxed)
        stopped.wait()
    }

    /// Segment `n` of the queue log whose first segment is `path` (`queue.log`, then
    /// `queue.<n>.log` beside it).
    private func segmentPath(_ n: Int) -> String {
        n == 0 ? path : String(path.dropLast(".log".count)) + ".\(n).log"
    }

    private func watch() {
        var fd: Int32 = -1
        var segment = 0
        var pending: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 1 << 16)
        let marker = Array(#""seq":"#.utf8)
        while !stop.load(ordering: .relaxed) {
            if fd < 0 {
                fd = open(segmentPath(segment), O_RDONLY)
                // Deleted before it was read (every event in it delivered): the next one.
                if fd < 0 && access(segmentPath(segment + 1), F_OK) == 0 { segment += 1 }
                pending = []
            }
            // Checked before the read: once the next segment exists, the writer appends no more
            // to this one, so the read below drains it.
            let rolled = access(segmentPath(segment + 1), F_OK) == 0
            if fd >= 0 {
                while true {
                    let n = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress!, $0.count) }
                    if n <= 0 { break }
                    pending.append(contentsOf: chunk[0..<n])
                }
                let now = MonotonicClock.nowNs()
                var at = 0
                while pending.count - at >= 8 {
                    let len =
                        Int(pending[at]) | Int(pending[at + 1]) << 8 | Int(pending[at + 2]) << 16 | Int(pending[at + 3]) << 24
                    guard pending.count - at - 8 >= len else { break }
                    let payload = pending[(at + 8)..<(at + 8 + len)]
                    if payload.first == 65, let seq = Self.seq(in: payload, marker: marker) {
                        lock.lock()
                        if seq < firstSeenNs.count, firstSeenNs[seq] == 0 { firstSeenNs[seq] = now }
                        lock.unlock()
                    }
                    at += 8 + len
                }
                if at > 0 { pending.removeFirst(at) }
                if rolled {
                    close(fd)
                    fd = -1
                    segment += 1
                }
            }
            usleep(200)
        }
        if fd >= 0 { close(fd) }
        stopped.signal()
    }

    private static func seq(in payload: ArraySlice<UInt8>, marker: [UInt8]) -> Int? {
        var i = payload.startIndex
        let end = payload.endIndex - marker.count
        while i < end {
            if payload[i] == marker[0], payload[i..<(i + marker.count)].elementsEqual(marker) {
                var j = i + marker.count
                var v = 0
                while j < payload.endIndex, payload[j] >= 48, payload[j] <= 57 {
                    v = v * 10 + Int(payload[j] - 48)
                    j += 1
                }
                return v
            }
            i += 1
        }
        return nil
    }
}

/// A transport answering every request with `status`.
private struct StatusTransport: HTTPTransport {
    let status: Int
    func send(_ request: HTTPRequest) async throws -> HTTPResponse { HTTPResponse(status: status) }
}

/// How long one `fsync` of a small file takes here, in ms (shows whether the shim is loaded).
private func fsyncProbeMs() -> Double {
    let path = NSTemporaryDirectory() + "score-bench-fsync-\(UUID().uuidString)"
    let fd = open(path, O_RDWR | O_CREAT, 0o600)
    defer {
        close(fd)
        unlink(path)
    }
    _ = write(fd, "x", 1)
    let t0 = MonotonicClock.nowNs()
    _ = fsync(fd)
    return Double(MonotonicClock.nowNs() - t0) / 1e6
}

func scoreFsyncLagCase() -> BenchCase {
    BenchCase(name: "score.fsync_lag") {
        var out: [String: Double] = ["fsync_probe_ms": fsyncProbeMs()]
        for (tag, status) in [("ok", 200), ("failing", 500)] {
            let dir = NSTemporaryDirectory() + "score-bench-fsync-\(tag)-\(UUID().uuidString)"
            try? FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(atPath: dir) }
            let store = FileScoreStore(directory: dir)
            let c = ScoreClient(
                configuration: ScoreConfiguration(
                    publishableKey: "pk_bench", siteId: "urc-ios", endpoint: "https://score.invalid", appVersion: "4.2.0",
                    os: "iOS 18.1", device: "iPhone", locale: "en-GB", store: store,
                    transport: StatusTransport(status: status), onDiagnostic: { _ in }))
            c.grantAllConsent()
            _ = c.inspect()  // loaded: the log file exists
            let n = 2_000
            let watcher = LogWatcher(path: store.queuePath, events: n)
            watcher.start()
            let stop = Atomic<Bool>(false)
            let flusherDone = DispatchSemaphore(value: 0)
            let flusher = Thread {
                while !stop.load(ordering: .relaxed) {
                    usleep(100_000)
                    let done = DispatchSemaphore(value: 0)
                    Task {
                        try? await c.flush()
                        done.signal()
                    }
                    done.wait()
                }
                flusherDone.signal()
            }
            flusher.start()
            var called = [UInt64](repeating: 0, count: n)
            let start = MonotonicClock.nowNs()
            for i in 0..<n {
                // One every 2 ms, on a schedule (a late call does not shift the rest).
                let due = start + UInt64(i) * 2_000_000
                let now = MonotonicClock.nowNs()
                if due > now { usleep(UInt32((due - now) / 1_000)) }
                called[i] = MonotonicClock.nowNs()
                c.track("poll_vote", properties: ["pollId": "motm-r12", "choice": "player_7", "seq": i])
            }
            // Until every event was seen in the file, or 10 s.
            var waited = 0
            while watcher.seen.contains(0) && waited < 10_000 {
                usleep(1_000)
                waited += 1
            }
            stop.store(true, ordering: .relaxed)
            flusherDone.wait()
            watcher.finish()
            let seen = watcher.seen
            var lag = [Double]()
            for i in 0..<n where seen[i] != 0 { lag.append(Double(Int64(seen[i]) - Int64(called[i])) / 1e6) }
            out.merge(Stats.summary(lag, prefix: "\(tag)_in_file_ms")) { $1 }
            out["\(tag)_in_file_ms_max"] = lag.max() ?? 0
            out["\(tag)_events_never_seen_in_file"] = Double(n - lag.count)
            out["\(tag)_queue_depth"] = Double(c.inspect().queue.depth)
        }
        return out
    }
}
