import CBenchCurl
import Foundation
import ScoreTracker
import Synchronization
import TrackerCore

// Score tracker benchmarks: `track()` caller cost, throughput from 1 and 4 threads, persistence
// to the crash-safe log, CPU per event, peak RSS and cold start. Run alone for a clean RSS
// figure: `swift run -c release --package-path Tools bench --filter score`.

/// Counts what reaches the file store, and notes when the last append holding a removal record
/// (`R`) returned (from then on the delivered events' removal is in the log's file); forwards the
/// read-back and deferred-sync calls so the queue behaves as with the plain file store.
private final class CountingStore: ScoreStore, @unchecked Sendable {
    let inner: FileScoreStore
    let adds = Atomic<Int>(0)
    let removalWrittenNs = Atomic<UInt64>(0)
    init(_ inner: FileScoreStore) { self.inner = inner }
    /// Counts the add records (`A`) among `records`, and notes a removal record.
    private func noteAppended(_ records: [[UInt8]]) {
        var added = 0
        var removal = false
        for r in records {
            if r.first == 65 { added += 1 } else if r.first == 82 { removal = true }
        }
        adds.add(added, ordering: .relaxed)
        if removal { removalWrittenNs.store(MonotonicClock.nowNs(), ordering: .relaxed) }
    }
    func load() throws -> ScoreStoreContents { try inner.load() }
    func appendQueueRecords(_ records: [[UInt8]]) async throws -> [ScoreRecordLocation]? {
        let locations = try await inner.appendQueueRecords(records)
        noteAppended(records)
        return locations
    }
    func syncQueue() async throws { try await inner.syncQueue() }
    func readQueueRecord(at location: ScoreRecordLocation) throws -> [UInt8]? { try inner.readQueueRecord(at: location) }
    func compactQueue(keeping: [ScoreRecordLocation]) async throws -> [ScoreRecordLocation?]? {
        try await inner.compactQueue(keeping: keeping)
    }
    func rewriteQueue(_ records: [[UInt8]]) async throws { try await inner.rewriteQueue(records) }
    func saveIdentity(_ bytes: [UInt8]) async throws { try await inner.saveIdentity(bytes) }
}

/// A transport that answers 200 and records when its first request arrived.
private final class FirstSendTransport: HTTPTransport, Sendable {
    let firstSendNs = Atomic<UInt64>(0)
    /// Signalled at the first request (the case waits on it rather than polling, which would
    /// take a core from the load it measures).
    let firstSend = DispatchSemaphore(value: 0)
    func send(_ request: HTTPRequest) async throws -> HTTPResponse {
        if firstSendNs.compareExchange(expected: 0, desired: MonotonicClock.nowNs(), ordering: .relaxed).exchanged {
            firstSend.signal()
        }
        return HTTPResponse(status: 200)
    }
}

/// A transport that answers 200 and records when it answered.
private final class AnswerClockTransport: HTTPTransport, Sendable {
    let answeredNs = Atomic<UInt64>(0)
    func send(_ request: HTTPRequest) async throws -> HTTPResponse {
        answeredNs.store(MonotonicClock.nowNs(), ordering: .relaxed)
        return HTTPResponse(status: 200)
    }
}

/// Writes the file's pages out and drops them from the page cache (Linux; elsewhere nothing):
/// the next read of the file comes from the disk.
private func evictFromPageCache(_ path: String) {
    #if os(Linux)
        let fd = open(path, O_RDONLY)
        guard fd >= 0 else { return }
        defer { close(fd) }
        _ = fsync(fd)
        _ = posix_fadvise(fd, 0, 0, Int32(POSIX_FADV_DONTNEED))
    #endif
}

/// A transport that is never called in these cases.
private struct NullTransport: HTTPTransport {
    func send(_ request: HTTPRequest) async throws -> HTTPResponse { HTTPResponse(status: 200) }
}

/// The file store of a case. `BENCH_NOSYNC=1` skips `fsync` (a diagnostic: it shows what the
/// device's interrupts cost a recording call; the figures to report are with sync).
private func benchFileStore(_ dir: String) -> FileScoreStore {
    FileScoreStore(directory: dir, sync: ProcessInfo.processInfo.environment["BENCH_NOSYNC"] == nil)
}

private func tempDir(_ tag: String) -> String {
    let d = NSTemporaryDirectory() + "score-bench-\(tag)-\(UUID().uuidString)"
    try? FileManager.default.createDirectory(atPath: d, withIntermediateDirectories: true)
    return d
}

private func makeClient(
    _ store: any ScoreStore, maxQueueSize: Int = 200_000, transport: any HTTPTransport = NullTransport()
) -> ScoreClient {
    let c = ScoreClient(
        configuration: ScoreConfiguration(
            publishableKey: "pk_bench", siteId: "urc-ios", endpoint: "https://score.invalid",
            appVersion: "4.2.0", os: "iOS 18.1", device: "iPhone", locale: "en-GB",
            pii: .classify([PiiRule(field: "email", action: .hash)]), maxQueueSize: maxQueueSize,
            store: store, transport: transport, onDiagnostic: { _ in }))
    c.grantAllConsent()
    return c
}

/// The 5-key props of every case (one key, `email`, hits the PII rule).
private func benchProps() -> [String: Any] {
    ["pollId": "motm-r12", "choice": "player_7", "round": 12, "email": "fan@example.com", "live": true]
}

private func waitForAdds(_ store: CountingStore, _ n: Int) {
    while store.adds.load(ordering: .relaxed) < n { usleep(200) }
}

private func cpuSeconds() -> Double {
    var u = rusage()
    getrusage(RUSAGE_SELF.rawValue, &u)
    return Double(u.ru_utime.tv_sec) + Double(u.ru_utime.tv_usec) / 1e6 + Double(u.ru_stime.tv_sec) + Double(u.ru_stime.tv_usec) / 1e6
}

/// A `/proc/self/status` figure in MB (`VmHWM`: peak RSS, `VmRSS`: current RSS).
private func procStatusMB(_ key: String) -> Double {
    guard let s = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8) else { return 0 }
    for line in s.split(separator: "\n") where line.hasPrefix(key + ":") {
        let kb = Double(line.split(separator: " ").dropFirst().first ?? "0") ?? 0
        return kb / 1024
    }
    return 0
}

/// The calling thread's involuntary context switches and minor page faults so far (Linux:
/// `RUSAGE_THREAD`; the process's figures elsewhere).
private func threadCounters() -> (preempted: Double, minorFaults: Double) {
    var u = rusage()
    #if os(Linux)
        getrusage(__rusage_who_t(1), &u)
    #else
        getrusage(RUSAGE_SELF, &u)
    #endif
    return (Double(u.ru_nivcsw), Double(u.ru_minflt))
}

private func peakRSSMB() -> Double { procStatusMB("VmHWM") }
private func currentRSSMB() -> Double { procStatusMB("VmRSS") }

/// Bytes malloc hands out right now (all arenas and mmapped chunks), in MB.
private func heapInUseMB() -> Double {
    Double(bench_heap_in_use()) / 1_048_576
}

private func fileSize(_ p: String) -> Double {
    Double((try? FileManager.default.attributesOfItem(atPath: p)[.size] as? Int) ?? 0)
}

/// The queue log's files in `dir`: `queue.log` and the later segments `queue.<n>.log`.
private func queueLogFiles(_ dir: String) -> [String] {
    ((try? FileManager.default.contentsOfDirectory(atPath: dir)) ?? []).filter { $0.hasPrefix("queue.") && $0.hasSuffix(".log") }
}

/// Writes the summary cache of the queue in `dir` (a copy): a launch over it, then a wait until
/// the cache file is there (its sync thread writes it after the launch's splice), at most 5 s.
private func writeSummaryCache(_ dir: String, cap: Int) {
    weak var gone: ScoreClient?
    do {
        let c = makeClient(FileScoreStore(directory: dir), maxQueueSize: cap)
        gone = c
        _ = c.inspect()
        var waited = 0
        while !FileManager.default.fileExists(atPath: dir + "/queue.summaries") && waited < 5_000 {
            usleep(1_000)
            waited += 1
        }
    }
    // The client freed (its queue too) before the measured launch, not during it.
    var waited = 0
    while gone != nil && waited < 5_000 {
        usleep(1_000)
        waited += 1
    }
    usleep(20_000)
}

/// The queue log's size in bytes: all its segments.
private func queueLogSize(_ dir: String) -> Double {
    queueLogFiles(dir).reduce(0) { $0 + fileSize(dir + "/" + $1) }
}

private struct ScoreRSSFailure: Error, CustomStringConvertible { var description: String }

/// Runs `score-rss --queue N` (next to this executable) and returns its figures.
private func runScoreRSS(queue: Int) throws -> [String: Double] {
    let exe = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath()
        .deletingLastPathComponent().appendingPathComponent("score-rss").path
    guard FileManager.default.isExecutableFile(atPath: exe) else {
        throw ScoreRSSFailure(description: "\(exe) is missing: swift build --package-path Tools -c release --product score-rss")
    }
    let p = Process()
    p.executableURL = URL(fileURLWithPath: exe)
    p.arguments = ["--queue", String(queue)]
    let pipe = Pipe()
    p.standardOutput = pipe
    try p.run()
    let data = pipe.fileHandleForReading.readDataToEndOfFile()
    p.waitUntilExit()
    guard p.terminationStatus == 0,
        let figures = try JSONSerialization.jsonObject(with: data) as? [String: Double]
    else {
        throw ScoreRSSFailure(description: "score-rss failed (status \(p.terminationStatus))")
    }
    return figures
}

/// Runs `perThread` calls of `body` on `threads` threads released together; returns wall seconds.
private func parallel(threads: Int, perThread: Int, _ body: @escaping @Sendable () -> Void) -> Double {
    let start = DispatchSemaphore(value: 0)
    let done = DispatchGroup()
    for _ in 0..<threads {
        done.enter()
        let t = Thread {
            start.wait()
            for _ in 0..<perThread { body() }
            done.leave()
        }
        t.start()
    }
    usleep(20_000)
    let t0 = MonotonicClock.nowNs()
    for _ in 0..<threads { start.signal() }
    done.wait()
    return Double(MonotonicClock.nowNs() - t0) / 1e9
}

func scoreBenchCases() -> [BenchCase] {
    [
        BenchCase(name: "score.track.100k") {
            let baseline = currentRSSMB()
            let dir = tempDir("track")
            defer { try? FileManager.default.removeItem(atPath: dir) }
            let store = CountingStore(benchFileStore(dir))
            let c = makeClient(store)
            let n = 100_000
            let props = benchProps()
            var samples = [Double]()
            samples.reserveCapacity(n)
            let cpu0 = cpuSeconds()
            let counters0 = threadCounters()
            let wall0 = MonotonicClock.nowNs()
            for _ in 0..<n {
                let t = MonotonicClock.nowNs()
                c.track("poll_vote", properties: props)
                samples.append(Double(MonotonicClock.nowNs() - t))
            }
            let counters1 = threadCounters()
            let trackWall = Double(MonotonicClock.nowNs() - wall0) / 1e9
            let rssAfterTrack = currentRSSMB()
            waitForAdds(store, n)
            let persistWall = Double(MonotonicClock.nowNs() - wall0) / 1e9
            let cpu = cpuSeconds() - cpu0
            var out = Stats.summary(samples, prefix: "track_caller_ns")
            out["caller_preempted"] = counters1.preempted - counters0.preempted
            out["caller_minor_faults"] = counters1.minorFaults - counters0.minorFaults
            out["track_calls_per_s_1_thread"] = Double(n) / trackWall
            out["persisted_events_per_s"] = Double(n) / persistWall
            out["disk_bytes_per_event"] = queueLogSize(store.inner.directory) / Double(n)
            out["cpu_us_per_event"] = cpu / Double(n) * 1e6
            out["peak_rss_mb"] = peakRSSMB()
            out["rss_after_track_calls_mb"] = rssAfterTrack
            out["rss_before_client_mb"] = baseline
            out["rss_after_persisted_mb"] = currentRSSMB()
            out["queue_depth"] = Double(c.inspect().queue.depth)
            return out
        },
        BenchCase(name: "score.track.100k.defaultcap") {
            // The SDK's default maxQueueSize (1,000): 99,000 events are shed on the way.
            let baseline = currentRSSMB()
            let heapBefore = heapInUseMB()
            let dir = tempDir("cap")
            defer { try? FileManager.default.removeItem(atPath: dir) }
            let store = CountingStore(benchFileStore(dir))
            let c = makeClient(store, maxQueueSize: 1_000)
            let n = 100_000
            let props = benchProps()
            var samples = [Double]()
            samples.reserveCapacity(n)
            let cpu0 = cpuSeconds()
            let counters0 = threadCounters()
            for _ in 0..<n {
                let t = MonotonicClock.nowNs()
                c.track("poll_vote", properties: props)
                samples.append(Double(MonotonicClock.nowNs() - t))
            }
            let counters1 = threadCounters()
            let rssAfterTrack = currentRSSMB()
            let heapAfterTrack = heapInUseMB()
            var out = Stats.summary(samples, prefix: "track_caller_ns")
            out["caller_preempted"] = counters1.preempted - counters0.preempted
            out["caller_minor_faults"] = counters1.minorFaults - counters0.minorFaults
            out["rss_after_track_calls_mb"] = rssAfterTrack
            out["heap_in_use_after_track_calls_mb"] = heapAfterTrack
            out["queue_depth"] = Double(c.inspect().queue.depth)
            out["shed"] = Double(c.inspect().queue.shed)
            usleep(300_000)
            out["cpu_us_per_event"] = (cpuSeconds() - cpu0) / Double(n) * 1e6
            out["disk_bytes"] = queueLogSize(store.inner.directory)
            out["heap_in_use_after_persisted_mb"] = heapInUseMB()
            out["peak_rss_mb"] = peakRSSMB()
            out["rss_before_client_mb"] = baseline
            out["heap_in_use_before_client_mb"] = heapBefore
            return out
        },
        BenchCase(name: "score.track.100k.cap20k") {
            // A larger cap, full after 20,000 calls: a shed must not cost in proportion to the cap.
            let dir = tempDir("cap20k")
            defer { try? FileManager.default.removeItem(atPath: dir) }
            let c = makeClient(CountingStore(benchFileStore(dir)), maxQueueSize: 20_000)
            let props = benchProps()
            var samples = [Double]()
            samples.reserveCapacity(100_000)
            for _ in 0..<100_000 {
                let t = MonotonicClock.nowNs()
                c.track("poll_vote", properties: props)
                samples.append(Double(MonotonicClock.nowNs() - t))
            }
            var out = Stats.summary(Array(samples[20_000...]), prefix: "track_caller_ns_when_full")
            out["shed"] = Double(c.inspect().queue.shed)
            return out
        },
        BenchCase(name: "score.rss.process") {
            // The memory figure in a process of its own (Tools' `score-rss`, built next to this
            // binary): the SDK's default cap, then a cap that keeps all 100,000 events queued.
            var out: [String: Double] = [:]
            for (tag, queue) in [("defaultcap", 1_000), ("all_queued", 200_000)] {
                for (k, v) in try runScoreRSS(queue: queue) { out["\(tag)_\(k)"] = v }
            }
            return out
        },
        BenchCase(name: "score.track.threads") {
            var out: [String: Double] = [:]
            for threads in [1, 4] {
                let dir = tempDir("threads")
                defer { try? FileManager.default.removeItem(atPath: dir) }
                let store = CountingStore(benchFileStore(dir))
                let c = makeClient(store)
                let perThread = 100_000 / threads
                let wall = parallel(threads: threads, perThread: perThread) { c.track("poll_vote", properties: benchProps()) }
                out["accepted_events_per_s_\(threads)_threads"] = Double(perThread * threads) / wall
                waitForAdds(store, perThread * threads)
            }
            return out
        },
        BenchCase(name: "score.launch") {
            // Issue 19's launch figures. `construct_*`: the constructor alone, on the caller's
            // thread; `ready_*`: constructed and loaded (the first `inspect()` returns once the
            // queue is loaded and checked, so it shows the loaded depth); `send_*`: constructed
            // and sending (below).
            var out: [String: Double] = [:]
            func fill(_ dir: String, _ n: Int) {
                let store = CountingStore(benchFileStore(dir))
                let c = makeClient(store, maxQueueSize: 200_000)
                let props = benchProps()
                for _ in 0..<n { c.track("poll_vote", properties: props) }
                waitForAdds(store, n)
                usleep(100_000)
            }
            // `1k_defaultcap`: a queue at the SDK's default cap (1,000, a store full after a long
            // time offline; the merge would shed, so every record is checked before it), and
            // `999_defaultcap` just under it (checked while the first batch goes).
            let cases: [(tag: String, n: Int, rounds: Int, cap: Int)] = [
                ("empty", 0, 15, 200_000), ("999_defaultcap", 999, 15, 1_000), ("1k_defaultcap", 1_000, 15, 1_000),
                ("10k", 10_000, 15, 200_000), ("100k", 100_000, 5, 200_000),
            ]
            for (tag, n, rounds, cap) in cases {
                let dir = tempDir("launch-\(tag)")
                defer { try? FileManager.default.removeItem(atPath: dir) }
                if n > 0 { fill(dir, n) }
                var construct = [Double]()
                var ready = [Double]()
                var depth = 0
                for _ in 0..<rounds {
                    let t0 = MonotonicClock.nowNs()
                    let c = makeClient(FileScoreStore(directory: dir), maxQueueSize: cap)
                    let t1 = MonotonicClock.nowNs()
                    depth = c.inspect().queue.depth
                    let t2 = MonotonicClock.nowNs()
                    construct.append(Double(t1 - t0) / 1e6)
                    ready.append(Double(t2 - t0) / 1e6)
                    usleep(20_000)
                }
                // `send_*`: constructed, `flush()` called at once, until its first request
                // reaches the transport (each round on its own copy of the stored files: the
                // flush removes what it sends). `send_*_cold` (Linux): the copy's pages are
                // evicted from the page cache first, so the load reads them from the disk, as a
                // launch after a reboot or after the system reclaimed the memory does.
                //
                // A copy keeps none of its files' identities, so the summary cache the filling run
                // wrote (`queue.summaries`, checked against each segment file's inode, size and
                // times) describes no file of the copy: before each round at 100,000 events, one
                // launch over the copy writes it again, as the run that wrote the files did.
                // `send_100k_uncached_*`, in the rounds between, deletes it again after that
                // launch (the first launch after an update from a version without the cache): the
                // same extra launch before each (it was seen to slow the next launch's first
                // request by about 0.3 ms, cache or not), so the difference is the cache's. At
                // 10,000 events (9 segments) reading the cache costs what reading the summaries
                // does: those rounds have no extra launch and no cache.
                var send = [Double]()
                var sendCold = [Double]()
                var sendUncached = [Double]()
                #if os(Linux)
                    let coldRounds = n > 0 && n <= 10_000 ? 5 : 0
                #else
                    let coldRounds = 0
                #endif
                let uncachedRounds = n >= 100_000 ? rounds : 0
                for round in 0..<(rounds + coldRounds + uncachedRounds) {
                    let cold = uncachedRounds == 0 && round >= rounds
                    let uncached = uncachedRounds > 0 && round % 2 == 1
                    let copy = tempDir("launch-\(tag)-copy")
                    defer { try? FileManager.default.removeItem(atPath: copy) }
                    for f in queueLogFiles(dir) + ["identity.json"] {
                        try? FileManager.default.copyItem(atPath: dir + "/" + f, toPath: copy + "/" + f)
                    }
                    if n >= 100_000 {
                        writeSummaryCache(copy, cap: cap)
                        if uncached { try? FileManager.default.removeItem(atPath: copy + "/queue.summaries") }
                    }
                    if cold {
                        for f in queueLogFiles(copy) + ["identity.json", "queue.summaries"] { evictFromPageCache(copy + "/" + f) }
                    }
                    let transport = FirstSendTransport()
                    let t0 = MonotonicClock.nowNs()
                    let c = makeClient(FileScoreStore(directory: copy), maxQueueSize: cap, transport: transport)
                    let flushed = Atomic<Bool>(false)
                    Task {
                        try? await c.flush()
                        flushed.store(true, ordering: .relaxed)
                    }
                    if n > 0 {
                        transport.firstSend.wait()
                        let ms = Double(transport.firstSendNs.load(ordering: .relaxed) - t0) / 1e6
                        if cold { sendCold.append(ms) } else if uncached { sendUncached.append(ms) } else { send.append(ms) }
                    }
                    while !flushed.load(ordering: .relaxed) { usleep(200) }
                    _ = c.inspect()
                    // The removals and compaction that follow the flush, done before the next round.
                    usleep(n >= 100_000 ? 1_000_000 : 200_000)
                }
                if !send.isEmpty {
                    out.merge(Stats.summary(send, prefix: "send_\(tag)_ms")) { $1 }
                    out["send_\(tag)_first_ms"] = send.first ?? 0
                }
                if !sendCold.isEmpty { out.merge(Stats.summary(sendCold, prefix: "send_\(tag)_cold_ms")) { $1 } }
                if !sendUncached.isEmpty { out.merge(Stats.summary(sendUncached, prefix: "send_\(tag)_uncached_ms")) { $1 } }
                out.merge(Stats.summary(construct, prefix: "construct_\(tag)_ms")) { $1 }
                out.merge(Stats.summary(ready, prefix: "ready_\(tag)_ms")) { $1 }
                // The first round is the cold one (a real launch has one): no warm allocator.
                out["construct_\(tag)_first_ms"] = construct.first ?? 0
                out["ready_\(tag)_first_ms"] = ready.first ?? 0
                out["queued_events_loaded_\(tag)"] = Double(depth)
            }
            return out
        },
        // The duplicate window (issue 28): a kill between a batch's 2xx and its removal reaching
        // the queue log's file sends the batch again at the next launch. Per flush of 10 events
        // over a file store: from the answer to the removal's append returning
        // (`removal_written_us`), and to `flush()` returning (`flush_returned_us`; since the
        // fix it returns after the removal is written, so a kill after it sends nothing twice).
        BenchCase(name: "score.flush.removal_window") {
            let dir = tempDir("window")
            defer { try? FileManager.default.removeItem(atPath: dir) }
            let store = CountingStore(benchFileStore(dir))
            let transport = AnswerClockTransport()
            let c = makeClient(store, maxQueueSize: 1_000, transport: transport)
            let props = benchProps()
            var written = [Double]()
            var returned = [Double]()
            var late = 0
            for _ in 0..<300 {
                for _ in 0..<10 { c.track("poll_vote", properties: props) }
                let before = store.removalWrittenNs.load(ordering: .relaxed)
                let done = DispatchSemaphore(value: 0)
                let returnedNs = Atomic<UInt64>(0)
                Task {
                    try? await c.flush()
                    returnedNs.store(MonotonicClock.nowNs(), ordering: .relaxed)
                    done.signal()
                }
                done.wait()
                let back = returnedNs.load(ordering: .relaxed)
                let answered = transport.answeredNs.load(ordering: .relaxed)
                returned.append(Double(back - answered) / 1e3)
                // Before the fix the removal may still be on its way: wait for it (bounded).
                var removal = store.removalWrittenNs.load(ordering: .relaxed)
                var spins = 0
                while removal == before && spins < 200_000 {
                    usleep(5)
                    spins += 1
                    removal = store.removalWrittenNs.load(ordering: .relaxed)
                }
                if removal > back { late += 1 }
                written.append(Double(removal &- answered) / 1e3)
            }
            var out = Stats.summary(written, prefix: "removal_written_us")
            for (k, v) in Stats.summary(returned, prefix: "flush_returned_us") { out[k] = v }
            out["flushes_returned_before_removal_written"] = Double(late)
            return out
        },
        scoreFsyncLagCase(),
        BenchCase(name: "score.coldstart.10k") {
            let dir = tempDir("cold")
            defer { try? FileManager.default.removeItem(atPath: dir) }
            do {
                let store = CountingStore(benchFileStore(dir))
                let c = makeClient(store, maxQueueSize: 20_000)
                let props = benchProps()
                for _ in 0..<10_000 { c.track("poll_vote", properties: props) }
                waitForAdds(store, 10_000)
            }
            usleep(100_000)
            var samples = [Double]()
            var depth = 0
            for _ in 0..<7 {
                let t = MonotonicClock.nowNs()
                let c = makeClient(FileScoreStore(directory: dir), maxQueueSize: 20_000)
                samples.append(Double(MonotonicClock.nowNs() - t) / 1e6)
                depth = c.inspect().queue.depth
            }
            var out = Stats.summary(samples, prefix: "cold_start_ms")
            out["queued_events_loaded"] = Double(depth)
            return out
        },
    ]
}
