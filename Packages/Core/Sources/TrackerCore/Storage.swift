/// A durable string key-value store (the shape of AsyncStorage / `localStorage`).
///
/// Every operation may fail; trackers report failures as diagnostics and never let them reach
/// the host app.
public protocol KeyValueStorage: Sendable {
    /// The stored value, or `nil` when the key is absent.
    func getItem(_ key: String) async throws -> String?
    /// Stores `value` under `key`, replacing any previous value.
    func setItem(_ key: String, _ value: String) async throws
    /// Removes `key`; removing an absent key succeeds.
    func removeItem(_ key: String) async throws
}
