/// A durable string key-value store (the shape of AsyncStorage / `localStorage`).
///
/// Every operation may fail; trackers report failures as diagnostics and never let them reach
/// the host app. Class-bound: a store has identity (operations on one store and key are
/// serialised per instance).
public protocol KeyValueStorage: AnyObject, Sendable {
    /// The stored value, or `nil` when the key is absent.
    func getItem(_ key: String) async throws -> String?
    /// Stores `value` under `key`, replacing any previous value.
    func setItem(_ key: String, _ value: String) async throws
    /// Removes `key`; removing an absent key succeeds.
    func removeItem(_ key: String) async throws
}

/// A store kept in memory: survives nothing. Useful for opting out of persistence and in tests.
public final class InMemoryKeyValueStorage: KeyValueStorage {
    private let values = Locked<[String: String]>([:])

    /// Creates an empty store, or one holding `initial`.
    public init(_ initial: [String: String] = [:]) { values.withLock { $0 = initial } }

    public func getItem(_ key: String) async throws -> String? { values.withLock { $0[key] } }
    public func setItem(_ key: String, _ value: String) async throws { values.withLock { $0[key] = value } }
    public func removeItem(_ key: String) async throws { _ = values.withLock { $0.removeValue(forKey: key) } }

    /// Everything stored, for inspection.
    public var snapshot: [String: String] { values.value }
}
