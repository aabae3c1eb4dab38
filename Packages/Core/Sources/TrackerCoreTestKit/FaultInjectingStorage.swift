import TrackerCore

/// A storage for tests, over a shared backing store, whose operations can fail, hang, be held
/// or be delayed on a ``ManualClock``. Two instances over one backing act like two app
/// launches over the same disk.
public final class FaultInjectingStorage: KeyValueStorage {
    /// Per-operation script.
    public struct Faults: Sendable {
        /// Fail this many of the next `getItem` calls.
        public var failNextGets = 0
        /// `getItem` never answers.
        public var getsNeverAnswer = false
        /// `getItem` answers after this long on the clock.
        public var getDelayMs: Int64 = 0
        /// Every `setItem`/`removeItem` fails.
        public var writesAlwaysFail = false
        /// Fail this many of the next writes.
        public var failNextWrites = 0
        /// Writes never finish (and never land).
        public var writesNeverFinish = false
        /// Writes wait until ``FaultInjectingStorage/releaseWrites()``.
        public var holdWrites = false
        /// Writes land after this long on the clock.
        public var writeDelayMs: Int64 = 0
        /// Creates an empty script.
        public init() {}
    }

    private struct State: Sendable {
        var faults = Faults()
        var held: [CheckedContinuation<Void, Never>] = []
        var forever: [CheckedContinuation<Void, Never>] = []
        var gets = 0
        var writes = 0
    }

    /// The shared backing store.
    public let backing: InMemoryKeyValueStorage
    private let clock: ManualClock?
    private let state = Locked(State())
    /// Called after each write landed in the backing store (key, value or nil for a removal).
    public let onWriteLanded = Locked<(@Sendable (String, String?) -> Void)?>(nil)

    /// Creates a storage over `backing` (a fresh one by default); delays run on `clock`.
    public init(backing: InMemoryKeyValueStorage = InMemoryKeyValueStorage(), clock: ManualClock? = nil, faults: Faults = Faults()) {
        self.backing = backing
        self.clock = clock
        state.withLock { $0.faults = faults }
    }

    /// Changes the script.
    public func update(_ change: (inout Faults) -> Void) {
        state.withLock { change(&$0.faults) }
    }

    /// Lets held writes go on (and stops holding new ones).
    public func releaseWrites() {
        let held = state.withLock { b -> [CheckedContinuation<Void, Never>] in
            b.faults.holdWrites = false
            defer { b.held = [] }
            return b.held
        }
        for c in held { c.resume() }
    }

    /// Number of `getItem` calls so far.
    public var getCount: Int { state.withLock { $0.gets } }
    /// Number of `setItem`/`removeItem` calls so far.
    public var writeCount: Int { state.withLock { $0.writes } }

    /// The stored text under `key` in the backing store.
    public func stored(_ key: String) -> String? { backing.snapshot[key] }

    public func getItem(_ key: String) async throws -> String? {
        let (faults, fail) = state.withLock { b -> (Faults, Bool) in
            b.gets += 1
            if b.faults.failNextGets > 0 {
                b.faults.failNextGets -= 1
                return (b.faults, true)
            }
            return (b.faults, false)
        }
        if fail { throw StorageTestError(message: "injected read failure") }
        if faults.getsNeverAnswer { await never() }
        if faults.getDelayMs > 0 { await delay(faults.getDelayMs) }
        return try await backing.getItem(key)
    }

    public func setItem(_ key: String, _ value: String) async throws {
        try await write(key, value)
    }

    public func removeItem(_ key: String) async throws {
        try await write(key, nil)
    }

    private func write(_ key: String, _ value: String?) async throws {
        let (faults, fail) = state.withLock { b -> (Faults, Bool) in
            b.writes += 1
            if b.faults.writesAlwaysFail { return (b.faults, true) }
            if b.faults.failNextWrites > 0 {
                b.faults.failNextWrites -= 1
                return (b.faults, true)
            }
            return (b.faults, false)
        }
        if fail { throw StorageTestError(message: "injected write failure") }
        if faults.writesNeverFinish { await never() }
        if faults.holdWrites {
            await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
                let stillHolding = state.withLock { b -> Bool in
                    if b.faults.holdWrites {
                        b.held.append(c)
                        return true
                    }
                    return false
                }
                if !stillHolding { c.resume() }
            }
        }
        if faults.writeDelayMs > 0 { await delay(faults.writeDelayMs) }
        if let value { try await backing.setItem(key, value) } else { try await backing.removeItem(key) }
        onWriteLanded.value?(key, value)
    }

    private func never() async {
        await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
            state.withLock { $0.forever.append(c) }
        }
    }

    private func delay(_ ms: Int64) async {
        guard let clock else { return }
        await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
            clock.schedule(afterMs: ms) { c.resume() }
        }
    }
}

/// The error a ``FaultInjectingStorage`` throws.
public struct StorageTestError: Error, Sendable, CustomStringConvertible {
    public let message: String
    public var description: String { message }
}
