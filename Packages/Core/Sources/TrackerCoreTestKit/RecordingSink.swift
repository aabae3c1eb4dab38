import TrackerCore

/// How a ``RecordingSink`` answers one call.
public enum SinkBehavior: Sendable {
    /// Answer with this result.
    case result(SinkResult)
    /// Throw an error (counts as transient).
    case fail(String)
    /// Hold the call open until ``RecordingSink/releaseHeld(with:)``.
    case hold
    /// Never answer.
    case never
}

/// A test sink that records every payload it is given and answers as scripted.
public final class RecordingSink<Payload: Sendable>: Sink, @unchecked Sendable {
    private struct State {
        var received: [Payload] = []
        var behavior: @Sendable (Int, Payload) -> SinkBehavior
        var held: [CheckedContinuation<SinkBehavior, Never>] = []
        var forever: [CheckedContinuation<Void, Never>] = []
        var waiters: [(Int, OnceContinuation<Bool>)] = []
    }

    private let state: Locked<State>
    public let destination: String?

    /// Creates a sink; `behavior` is given the 1-based call number and the payload.
    public init(destination: String? = nil, behavior: @escaping @Sendable (Int, Payload) -> SinkBehavior = { _, _ in .result(.accepted) }) {
        self.destination = destination
        self.state = Locked(State(behavior: behavior))
    }

    /// Creates a sink that always answers `result`.
    public convenience init(destination: String? = nil, always result: SinkResult) {
        self.init(destination: destination) { _, _ in .result(result) }
    }

    /// Replaces the answering script for later calls.
    public func respond(_ behavior: @escaping @Sendable (Int, Payload) -> SinkBehavior) {
        state.withLock { $0.behavior = behavior }
    }

    /// Answers every later call with `result`.
    public func respond(always result: SinkResult) { respond { _, _ in .result(result) } }

    /// Every payload received, in call order.
    public var received: [Payload] { state.withLock { $0.received } }
    /// Number of calls.
    public var callCount: Int { state.withLock { $0.received.count } }
    /// Number of calls currently held open.
    public var heldCount: Int { state.withLock { $0.held.count } }

    /// Answers every held call with `behavior` (held calls answered `.hold` again stay held).
    public func releaseHeld(with behavior: SinkBehavior) {
        let held = state.withLock { s -> [CheckedContinuation<SinkBehavior, Never>] in
            defer { s.held = [] }
            return s.held
        }
        for c in held { c.resume(returning: behavior) }
    }

    /// Resolves once at least `count` calls were received, or after `timeoutMs` of real time
    /// (a regression then fails the test instead of hanging it). Returns whether they were.
    @discardableResult
    public func waitForCalls(_ count: Int, timeoutMs: Int = defaultWaitBoundMs) async -> Bool {
        await boundedWait(timeoutMs: timeoutMs, what: "RecordingSink.waitForCalls(\(count))", onTimeout: { false }) { once in
            let ready = state.withLock { s -> Bool in
                if s.received.count >= count { return true }
                s.waiters.append((count, once))
                return false
            }
            if ready { once.resume(returning: true) }
        }
    }

    public func send(_ payload: Payload) async throws -> SinkResult {
        let (behavior, ready) = state.withLock { s -> (SinkBehavior, [OnceContinuation<Bool>]) in
            s.received.append(payload)
            let n = s.received.count
            var ready: [OnceContinuation<Bool>] = []
            s.waiters.removeAll { w in
                if w.0 <= n { ready.append(w.1); return true }
                return false
            }
            return (s.behavior(n, payload), ready)
        }
        for c in ready { c.resume(returning: true) }
        var current = behavior
        while true {
            switch current {
            case let .result(r): return r
            case let .fail(message): throw SinkTestError(message: message)
            case .hold:
                current = await withCheckedContinuation { c in state.withLock { $0.held.append(c) } }
            case .never:
                // Kept, never resumed: the call stays unanswered for the sink's lifetime.
                await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in state.withLock { $0.forever.append(c) } }
                return .transient
            }
        }
    }
}

/// The error a ``RecordingSink`` throws for ``SinkBehavior/fail(_:)``.
public struct SinkTestError: Error, Sendable, CustomStringConvertible {
    public let message: String
    public var description: String { message }
}
