import Foundation
import TrackerCore

/// Wraps a sink to let the sample app wait until a given snapshot was settled (real network, bounded wait).
final class TrackedSink<Inner: Sink>: Sink, @unchecked Sendable {
    typealias Payload = Inner.Payload
    let inner: Inner
    private let results = NSCondition()
    private var answered: [(Payload, SinkResult)] = []
    var destination: String? { inner.destination }

    init(_ inner: Inner) { self.inner = inner }

    func send(_ payload: Payload) async throws -> SinkResult {
        let result: SinkResult
        do { result = try await inner.send(payload) } catch { result = SinkResult(.transient, reason: "\(error)") }
        record(payload, result)
        return result
    }

    private func record(_ payload: Payload, _ result: SinkResult) {
        results.lock()
        answered.append((payload, result))
        results.broadcast()
        results.unlock()
    }

    /// Waits (at most `timeoutSeconds`) until an answered snapshot matches `done`.
    func wait(timeoutSeconds: Double = 20, until done: (Payload, SinkResult) -> Bool) -> Bool {
        let deadline = Date().addingTimeInterval(timeoutSeconds)
        results.lock()
        defer { results.unlock() }
        while !answered.contains(where: done) {
            if !results.wait(until: deadline) { return answered.contains(where: done) }
        }
        return true
    }
}
