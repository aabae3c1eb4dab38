import BenchSupport
import Foundation
import ScoreTracker
import TrackerCore
import TrackerCoreTestKit

// Idle wake-ups (issue 19): how often the SDK's threads wake while nothing happens.
//
// `idle.wakeups.after_flush`: a Score client over libcurl and a loopback collector tracks 10
// events and flushes them (2xx); then the process idles. `idle.wakeups.after_failed_flush`: the
// same, the collector answering 503, with an auto flush every 10 s (the retry that is
// scheduled: only it may wake the SDK). `idle.wakeups.after_flush.autoflush`: the first case with
// an auto flush every 10 s: the flush empties the queue, so its timer is not armed again and
// nothing wakes. Each reports the voluntary context switches made over the idle window, counted
// per thread id and summed by thread name (`tracker.curl`, `tracker.io`, ...), with
// `other_threads` for every other thread of the process but the bench's own (Dispatch workers
// firing timers), and `threads_ended`, the threads that ended inside the window. Linux only
// (`/proc/self/task`). Opt-in (it idles for real): `bench --filter idle`; `IDLE_BENCH_SECONDS`
// shortens the window (default 20).

func idleBenchCases() -> [BenchCase] {
    [
        BenchCase(name: "idle.wakeups.after_flush", run: { try runIdle(failing: false) }),
        BenchCase(name: "idle.wakeups.after_failed_flush", run: { try runIdle(failing: true) }),
        BenchCase(name: "idle.wakeups.after_flush.autoflush", run: { try runIdle(failing: false, autoFlush: true) }),
    ]
}

private struct IdleBenchFailure: Error, CustomStringConvertible {
    var description: String
}

/// Every thread of the process but the calling one, keyed by thread id (`switchesBetween` says
/// why never by name): its name (`tracker.*`, or `other_threads` for every other one) and its
/// voluntary context switches so far.
private func voluntarySwitchesByThreadId() -> [Int: (name: String, switches: Int)] {
    // `/proc/thread-self` links to `<pid>/task/<tid>` of the calling thread.
    let me =
        ((try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/thread-self")) ?? "")
        .split(separator: "/").last.map(String.init) ?? ""
    let process =
        (try? String(contentsOfFile: "/proc/self/comm", encoding: .utf8))?
        .trimmingCharacters(in: .whitespacesAndNewlines) ?? ""
    var out: [Int: (name: String, switches: Int)] = [:]
    let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/task")) ?? []
    for tid in tasks where tid != me {
        let base = "/proc/self/task/\(tid)/"
        guard let id = Int(tid), let comm = try? String(contentsOfFile: base + "comm", encoding: .utf8),
            let status = try? String(contentsOfFile: base + "status", encoding: .utf8)
        else { continue }
        var name = comm.trimmingCharacters(in: .whitespacesAndNewlines)
        if name == process || !name.hasPrefix("tracker.") { name = "other_threads" }
        var switches = 0
        for line in status.split(separator: "\n") where line.hasPrefix("voluntary_ctxt_switches:") {
            switches = Int(line.split(separator: "\t").last.map { $0.trimmingCharacters(in: .whitespaces) } ?? "0") ?? 0
        }
        out[id] = (name, switches)
    }
    return out
}

/// Runs `body` on a task and waits for it (the bench's cases are synchronous).
private func blocking(_ body: @escaping @Sendable () async -> Void) {
    let done = DispatchSemaphore(value: 0)
    Task.detached {
        await body()
        done.signal()
    }
    done.wait()
}

private func runIdle(failing: Bool, autoFlush: Bool = false) throws -> [String: Double] {
    #if os(Linux)
        let seconds = Double(ProcessInfo.processInfo.environment["IDLE_BENCH_SECONDS"] ?? "") ?? 20
        let status = failing ? 503 : 200
        let server = try LoopbackHTTPServer(recordRequests: false) { _ in .respond(status: status, body: "{}") }
        defer { server.stop() }
        let dir = NSTemporaryDirectory() + "idle-bench-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let client = ScoreClient(
            configuration: ScoreConfiguration(
                publishableKey: "pk_bench", siteId: "urc-ios", endpoint: server.baseURL,
                appVersion: "4.2.0", os: "iOS 18.1", device: "iPhone", locale: "en-GB",
                store: FileScoreStore(directory: dir, sync: true), transport: CurlTransport(), onDiagnostic: { _ in }))
        client.grantAllConsent()
        for i in 0..<10 { client.track("poll_vote", properties: ["round": i]) }
        if failing || autoFlush { client.startAutoFlush(everySeconds: 10) }
        blocking { try? await client.flush() }
        let requests = Double(server.requestCount)
        // Let the flush's tail (writes, the queue's sync) finish before the window opens.
        Thread.sleep(forTimeInterval: 1)
        let before = voluntarySwitchesByThreadId()
        Thread.sleep(forTimeInterval: seconds)
        let after = voluntarySwitchesByThreadId()
        var figures: [String: Double] = [
            "idle_seconds": seconds, "requests_before_idle": requests,
            "requests_during_idle": Double(server.requestCount) - requests,
        ]
        let delta = switchesBetween(before.mapValues(\.switches), after)
        for (name, count) in delta.byName {
            figures["voluntary_switches.\(name)"] = Double(count)
        }
        figures["threads_ended"] = Double(delta.ended)
        client.stopAutoFlush()
        withExtendedLifetime(client) {}
        return figures
    #else
        throw IdleBenchFailure(description: "idle.wakeups reads /proc/self/task: Linux only")
    #endif
}
