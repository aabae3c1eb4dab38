import ScoreTracker
import TrackerCore

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// Issue 35: Score events tracked at a steady rate into the plain file store (its own compaction
/// path) while every flush is answered 2xx, so that removals pile up and the log's space is
/// reclaimed again and again; the harness kills the process at random moments. Prints
/// `T <seq> <monotonic ns>` after each `track()` returned (the event's `seq` prop).
enum ScoreReclaimWorker {
    static func run(directory: String, url: String, seed: UInt64, steps count: Int, drain: Bool) async {
        let client = ScoreClient(
            configuration: ScoreConfiguration(
                publishableKey: Secrets.publishableKey, siteId: "crash-site", endpoint: url + "/score",
                appVersion: "1.0.0", os: "Linux", initialConsent: .all,
                store: FileScoreStore(directory: directory),
                onDiagnostic: { d in Out.line("D \(d.code)") }))
        client.setToken(Secrets.token)
        Out.line(WorkerLine.ready)
        // Flushes every 10 ms, on a task of its own.
        Task.detached {
            while true {
                try? await client.flush()
                try? await Task.sleep(for: .milliseconds(10))
            }
        }
        if drain { return }
        // `seed` differs per life: the seqs of one life never repeat another's.
        let base = Int(seed % 1_000) * 1_000_000
        for n in 0..<max(1, count) {
            client.track("reclaim_event", properties: ["seq": base + n])
            Out.line("T \(base + n) \(MonotonicClock.nowNs())")
            usleep(1_000)
        }
    }
}
