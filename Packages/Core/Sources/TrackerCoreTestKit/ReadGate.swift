import Foundation
import TrackerCore

/// A gate a storage read passes through: closed, it blocks the reading thread until the test
/// opens it. Used to show that a constructor returns while its storage's first read is held (a
/// constructor that read on the caller's thread would never return before ``open()``).
public final class ReadGate: @unchecked Sendable {
    private let condition = NSCondition()
    // Guarded by `condition`.
    private var isOpen: Bool
    private var entries = 0
    private var waiters: [OnceContinuation<Bool>] = []

    /// A gate, closed unless `open`.
    public init(open: Bool = false) { isOpen = open }

    /// How many reads reached the gate so far (held or not).
    public var entered: Int {
        condition.lock()
        defer { condition.unlock() }
        return entries
    }

    /// Counts a read and blocks the calling thread while the gate is closed.
    public func pass() {
        condition.lock()
        entries += 1
        let ready = waiters
        waiters = []
        condition.unlock()
        // Tell the waiters first: this thread may stay blocked below until they open the gate.
        for w in ready { w.resume(returning: true) }
        condition.lock()
        while !isOpen { condition.wait() }
        condition.unlock()
    }

    /// Opens the gate: held reads go on, later ones pass at once.
    public func open() {
        condition.lock()
        isOpen = true
        condition.broadcast()
        condition.unlock()
    }

    /// Waits (bounded by ``defaultWaitBoundMs``) until a read reached the gate; `false` when
    /// none came.
    public func waitUntilEntered() async -> Bool {
        await boundedWait(what: "a read reaching the gate", onTimeout: { false }) { once in
            condition.lock()
            if entries > 0 {
                condition.unlock()
                once.resume(returning: true)
                return
            }
            waiters.append(once)
            condition.unlock()
        }
    }
}

/// A storage whose reads pass through a ``ReadGate`` first (writes and removals go straight to
/// `backing`).
public final class GatedReadStorage: KeyValueStorage {
    /// The gate every `getItem` passes.
    public let gate: ReadGate
    /// Where the values live.
    public let backing: any KeyValueStorage

    /// Gated reads of `backing`, the gate closed unless `gate` is given open.
    public init(backing: any KeyValueStorage = InMemoryKeyValueStorage(), gate: ReadGate = ReadGate()) {
        self.backing = backing
        self.gate = gate
    }

    public func getItem(_ key: String) async throws -> String? {
        gate.pass()
        return try await backing.getItem(key)
    }

    public func setItem(_ key: String, _ value: String) async throws { try await backing.setItem(key, value) }
    public func removeItem(_ key: String) async throws { try await backing.removeItem(key) }
}
