import ScoreTracker
import TrackerCore
import TrackerCoreTestKit  // SplitMix64

/// Records Score events into the Score file store (its append-only queue log) and flushes to
/// the loopback server. The store is wrapped so that each durable append or compaction is
/// announced with the event ids it made durable.
enum ScoreWorker {
    static func run(directory: String, url: String, seed: UInt64, steps count: Int, drain: Bool) async {
        var rng = SplitMix64(seed: seed)
        let printer = Diagnostics.consolePrinter(prefix: "score-tracker")
        let client = ScoreClient(
            configuration: ScoreConfiguration(
                publishableKey: Secrets.publishableKey, siteId: "crash-site", endpoint: url + "/score",
                appVersion: "1.0.0", os: "Linux",
                pii: .classify([PiiRule(field: "email", action: .hash)]), initialConsent: .all,
                store: AnnouncingStore(FileScoreStore(directory: directory)),
                onDiagnostic: { d in
                    Out.line("D \(d.code)")
                    printer(d)
                }))
        client.setToken(Secrets.token)
        Out.line(WorkerLine.ready)
        if drain {
            while true {
                try? await client.flush()
                try? await Task.sleep(for: .milliseconds(50))
            }
        }
        for n in 1...max(1, count) {
            for _ in 0...rng.below(3) {
                client.track("crash_event", properties: ["n": n, "email": Secrets.email, "note": "é😀\u{0}"])
            }
            if rng.below(3) == 0 {
                try? await client.flush()
            }
            Out.line("P \(n)")
        }
        while true {
            try? await client.flush()
            try? await Task.sleep(for: .milliseconds(50))
        }
    }
}

/// A `ScoreStore` that forwards to another one and prints, after each write returned, which
/// event ids it made durable (`SP`), which removals (`SX`) and what a compaction kept (`SC`).
final class AnnouncingStore: ScoreStore {
    let base: any ScoreStore

    init(_ base: any ScoreStore) { self.base = base }

    func load() throws -> ScoreStoreContents { try base.load() }

    /// Durable at once (appended, then synced) and with no location, so that the client keeps
    /// every event's bytes and rewrites the whole queue (the `SC` line) to compact it.
    func appendQueueRecords(_ records: [[UInt8]]) async throws -> [ScoreRecordLocation]? {
        _ = try await base.appendQueueRecords(records)
        try await base.syncQueue()
        var added: [String] = []
        var removed: [String] = []
        for r in records {
            let (a, x) = Self.parse(r)
            added += a
            removed += x
        }
        if !added.isEmpty { Out.line("SP " + added.joined(separator: ",")) }
        if !removed.isEmpty { Out.line("SX " + removed.joined(separator: ",")) }
        return nil
    }

    /// Nothing to sync: each append was synced before it returned.
    func syncQueue() async throws {}

    /// No record is read back (the appends return no location).
    func readQueueRecord(at location: ScoreRecordLocation) throws -> [UInt8]? { nil }

    /// No compaction by location: the client rewrites the queue (`rewriteQueue`).
    func compactQueue(keeping: [ScoreRecordLocation]) async throws -> [ScoreRecordLocation?]? { nil }

    func rewriteQueue(_ records: [[UInt8]]) async throws {
        try await base.rewriteQueue(records)
        Out.line("SC " + records.flatMap { Self.parse($0).added }.joined(separator: ","))
    }

    func saveIdentity(_ bytes: [UInt8]) async throws { try await base.saveIdentity(bytes) }

    /// The event ids an add record (`A`, flags, requires, envelope) or a removal record (`R`,
    /// length-prefixed ids) names.
    static func parse(_ r: [UInt8]) -> (added: [String], removed: [String]) {
        guard let kind = r.first else { return ([], []) }
        if kind == UInt8(ascii: "A") {
            let marker = Array(#""eventId":""#.utf8)
            guard r.count > marker.count else { return ([], []) }
            var i = 3
            while i + marker.count <= r.count {
                if Array(r[i..<(i + marker.count)]) == marker {
                    let start = i + marker.count
                    var end = start
                    while end < r.count && r[end] != UInt8(ascii: "\"") { end += 1 }
                    return ([String(decoding: r[start..<end], as: UTF8.self)], [])
                }
                i += 1
            }
            return ([], [])
        }
        if kind == UInt8(ascii: "R") {
            var out: [String] = []
            var i = 1
            while i < r.count {
                let n = Int(r[i])
                guard i + 1 + n <= r.count else { break }
                out.append(String(decoding: r[(i + 1)..<(i + 1 + n)], as: UTF8.self))
                i += 1 + n
            }
            return ([], out)
        }
        return ([], [])
    }
}
