import Synchronization

/// A reference-typed, lock-protected value: a `Mutex` that can be shared by closures.
public final class Locked<Value: Sendable>: Sendable {
    private let mutex: Mutex<Value>

    /// Creates the box holding `value`.
    public init(_ value: Value) { mutex = Mutex(value) }

    /// Runs `body` with exclusive access to the value.
    @discardableResult
    public func withLock<R>(_ body: (inout Value) throws -> R) rethrows -> R {
        try mutex.withLock { try body(&$0) }
    }

    /// A copy of the current value.
    public var value: Value { mutex.withLock { $0 } }
}
