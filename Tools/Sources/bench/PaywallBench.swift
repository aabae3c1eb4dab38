import Foundation
import PaywallTracker
import TrackerCore

/// Counts the writes that reach a file storage.
private final class CountingStorage: KeyValueStorage {
    let inner: FileKeyValueStorage
    let writes = Locked(0)
    init(_ inner: FileKeyValueStorage) { self.inner = inner }
    func getItem(_ key: String) async throws -> String? { try await inner.getItem(key) }
    func setItem(_ key: String, _ value: String) async throws {
        writes.withLock { $0 += 1 }
        try await inner.setItem(key, value)
    }
    func removeItem(_ key: String) async throws {
        writes.withLock { $0 += 1 }
        try await inner.removeItem(key)
    }
}

/// Accepts every snapshot; at each receipt, checks whether the storage file already holds it (a
/// process killed at that moment would find it) and notes the time.
private final class ReceiptSink: Sink, @unchecked Sendable {
    typealias Payload = PaywallSnapshot
    let destination: String? = nil
    let storage: FileKeyValueStorage
    let key: String
    let unstored = Locked(0)
    let endReceivedNs = Locked<[String: UInt64]>([:])
    /// Signalled once per presentation, at the first receipt of its ended snapshot.
    let ended = DispatchSemaphore(value: 0)

    init(storage: FileKeyValueStorage, key: String) {
        self.storage = storage
        self.key = key
    }

    func send(_ payload: PaywallSnapshot) async throws -> SinkResult {
        let now = MonotonicClock.nowNs()
        let raw = try? await storage.getItem(key)
        let storedSeq = raw.flatMap { try? WireJSON.decode($0) }?[payload.presentationId]?["seq"]?.intValue ?? 0
        if storedSeq < payload.seq { unstored.withLock { $0 += 1 } }
        if payload.status == .ended {
            let first = endReceivedNs.withLock { m -> Bool in
                guard m[payload.presentationId] == nil else { return false }
                m[payload.presentationId] = now
                return true
            }
            if first { ended.signal() }
        }
        return .accepted
    }
}

/// Paywall tracker with file storage: 300 presentations (start, shown, end: 900 changes) recorded
/// in bursts of 10 back to back (below the 20-entry storage cap), each burst delivered before the
/// next; each snapshot is checked at receipt against the storage file. Figures: the recording
/// call, the writes the changes cost, the snapshots received before they were stored, the
/// `end()`-to-receipt delay, and the time until everything was delivered and removed.
func paywallBenchCases() -> [BenchCase] {
    [
        BenchCase(name: "paywall.persist.file-300") {
            let presentations = 300
            let dir = NSTemporaryDirectory() + "/bench-paywall-\(UUID().uuidString)"
            try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(atPath: dir) }
            let file = FileKeyValueStorage(directory: dir)
            let storage = CountingStorage(file)
            let sink = ReceiptSink(storage: file, key: PaywallPresentationTracker.defaultStorageKey)
            let burst = 10
            let tracker = PaywallPresentationTracker(
                configuration: PaywallTrackerConfiguration(
                    sink: sink,
                    context: .value(
                        RunContextInput(
                            appVersion: "2.4.0", build: "412", platform: .ios, osVersion: "18.1",
                            locale: "en-US", timezone: "America/New_York")),
                    storage: storage, onDiagnostic: { _ in }))
            let info = PaywallPresentationInfo(
                moment: "settings_upgrade", paywallId: "pw-1", audienceId: nil,
                renderMode: .custom, billing: .store, surface: .present)
            var calls: [Double] = []
            var endCalledNs: [String: UInt64] = [:]
            let started = MonotonicClock.nowNs()
            for _ in 0..<(presentations / burst) {
                for _ in 0..<burst {
                    var handle: (any PaywallPresentationHandle)?
                    calls.append(timeNs { handle = tracker.start(info) })
                    guard let p = handle as? PaywallPresentation else { throw PaywallBenchError("start() refused") }
                    calls.append(timeNs { p.shown() })
                    calls.append(timeNs { p.end(.dismissed) })
                    endCalledNs[p.id] = MonotonicClock.nowNs()
                }
                for _ in 0..<burst where sink.ended.wait(timeout: .now() + 60) == .timedOut {
                    throw PaywallBenchError("an end never arrived")
                }
            }
            let idle = DispatchSemaphore(value: 0)
            Task.detached {
                // Settlement writes follow the last answers: wait until the key is removed.
                while true {
                    await tracker.idle()
                    if (try? await file.getItem(PaywallPresentationTracker.defaultStorageKey)) == nil { break }
                    try? await Task.sleep(nanoseconds: 1_000_000)
                }
                idle.signal()
            }
            if idle.wait(timeout: .now() + 120) == .timedOut { throw PaywallBenchError("storage never emptied") }
            let total = MonotonicClock.nowNs() - started
            let received = sink.endReceivedNs.value
            let delays = endCalledNs.compactMap { id, t in received[id].map { Double($0 > t ? $0 - t : 0) / 1e6 } }
            var out: [String: Double] = [:]
            out.merge(Stats.summary(calls, prefix: "call_ns")) { $1 }
            out.merge(Stats.summary(delays, prefix: "end_to_receipt_ms")) { $1 }
            out["changes"] = Double(presentations * 3)
            out["writes"] = Double(storage.writes.value)
            out["received_unstored"] = Double(sink.unstored.value)
            out["all_delivered_and_removed_ms"] = Double(total) / 1e6
            tracker.dispose()
            return out
        }
    ]
}

private struct PaywallBenchError: Error, CustomStringConvertible {
    let description: String
    init(_ d: String) { description = d }
}
