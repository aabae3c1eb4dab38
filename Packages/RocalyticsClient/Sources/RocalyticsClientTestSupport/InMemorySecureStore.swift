import Foundation
import RocalyticsClient
import TrackerCore

/// A secure store in memory, with injectable read and write failures and an ordered write log.
/// Two clients given the same store simulate two launches on one device.
public final class InMemorySecureStore: Sendable {
    /// The error a failing read or write throws.
    public struct Failure: Error, Sendable, CustomStringConvertible {
        /// What failed, e.g. `read rocalytics-roca-id`.
        public let operation: String
        public var description: String { "secure store failure: \(operation)" }
    }

    private struct State {
        var values: [String: String]
        var failReads: Set<String>
        var failWrites: Set<String>
        var writes: [(key: String, value: String)] = []
    }

    private let state: Locked<LockedState>

    private struct LockedState: @unchecked Sendable { var inner: State }

    /// A store holding `values`; reads of `failReads` and writes of `failWrites` throw.
    public init(_ values: [String: String] = [:], failReads: Set<String> = [], failWrites: Set<String> = []) {
        state = Locked(LockedState(inner: State(values: values, failReads: failReads, failWrites: failWrites)))
    }

    /// The current contents.
    public var values: [String: String] { state.withLock { $0.inner.values } }
    /// Every successful write, in order.
    public var writes: [(key: String, value: String)] { state.withLock { $0.inner.writes } }
    /// The keys written, in order.
    public var writtenKeys: [String] { writes.map(\.key) }

    /// Makes reads of `keys` throw (or succeed again when `failing` is false).
    public func setFailReads(_ keys: Set<String>) { state.withLock { $0.inner.failReads = keys } }
    /// Makes writes of `keys` throw.
    public func setFailWrites(_ keys: Set<String>) { state.withLock { $0.inner.failWrites = keys } }

    /// Reads `key`.
    public func value(forKey key: String) throws -> String? {
        try state.withLock { s in
            if s.inner.failReads.contains(key) { throw Failure(operation: "read \(key)") }
            return s.inner.values[key]
        }
    }

    /// Writes `key`.
    public func setValue(_ value: String, forKey key: String) throws {
        try state.withLock { s in
            if s.inner.failWrites.contains(key) { throw Failure(operation: "write \(key)") }
            s.inner.values[key] = value
            s.inner.writes.append((key, value))
        }
    }
}
