import TrackerCore

/// How a ``RecordingSink`` answers one call.
public indirect enum SinkBehavior: Sendable {
    /// Answer with this result.
    case result(SinkResult)
    /// Throw an error (counts as transient).
    case fail(String)
    /// Hold the call open until ``RecordingSink/releaseHeld(with:)``.
    case hold
    /// Never answer.
    case never
    /// Answer as `behavior` once `ms` of the sink's clock have passed (the sink needs a clock).
    case after(Int64, SinkBehavior)
}

/// A test sink that records every payload it is given and answers as scripted.
///
/// With a clock, it also records when each call arrived (``callTimes``) and can answer after a
/// delay (``SinkBehavior/after(_:_:)``). ``kill()`` stands for the app process dying: later calls
/// are neither recorded nor answered.
public final class RecordingSink<Payload: Sendable>: Sink, @unchecked Sendable {
    private struct State {
        var received: [Payload] = []
        var callTimes: [Int64] = []
        var killed = false
        var behavior: @Sendable (Int, Payload) -> SinkBehavior
        var held: [CheckedContinuation<SinkBehavior, Never>] = []
        var forever: [CheckedContinuation<Void, Never>] = []
        var waiters: [(Int, OnceContinuation<Bool>)] = []
    }

    private let state: Locked<State>
    private let clock: ManualClock?
    private let onSend: (@Sendable (Payload) -> Void)?
    public let destination: String?

    /// Creates a sink; `behavior` is given the 1-based call number and the payload. `onSend`
    /// sees every payload recorded, before it is answered (a conformance check, say).
    public init(
        destination: String? = nil, clock: ManualClock? = nil,
        behavior: @escaping @Sendable (Int, Payload) -> SinkBehavior = { _, _ in .result(.accepted) },
        onSend: (@Sendable (Payload) -> Void)? = nil
    ) {
        self.destination = destination
        self.clock = clock
        self.onSend = onSend
        self.state = Locked(State(behavior: behavior))
    }

    /// Creates a sink that always answers `result`.
    public convenience init(destination: String? = nil, clock: ManualClock? = nil, always result: SinkResult) {
        self.init(destination: destination, clock: clock) { _, _ in .result(result) }
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
    /// The clock's reading at each recorded call (empty without a clock).
    public var callTimes: [Int64] { state.withLock { $0.callTimes } }
    /// Whether ``kill()`` was called.
    public var isKilled: Bool { state.withLock { $0.killed } }

    /// From now on every call is neither recorded nor answered (the process died); calls
    /// already held stay held.
    public func kill() { state.withLock { $0.killed = true } }

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
        let now = clock?.nowMs()
        let answer = state.withLock { s -> (SinkBehavior, [OnceContinuation<Bool>])? in
            if s.killed { return nil }
            s.received.append(payload)
            if let now { s.callTimes.append(now) }
            let n = s.received.count
            var ready: [OnceContinuation<Bool>] = []
            s.waiters.removeAll { w in
                if w.0 <= n {
                    ready.append(w.1)
                    return true
                }
                return false
            }
            return (s.behavior(n, payload), ready)
        }
        guard case (let behavior, let ready)? = answer else {
            await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in state.withLock { $0.forever.append(c) } }
            return .transient
        }
        for c in ready { c.resume(returning: true) }
        onSend?(payload)
        var current = behavior
        while true {
            switch current {
            case .result(let r): return r
            case .fail(let message): throw SinkTestError(message: message)
            case .hold:
                current = await withCheckedContinuation { c in state.withLock { $0.held.append(c) } }
            case .never:
                // Kept, never resumed: the call stays unanswered for the sink's lifetime.
                await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in state.withLock { $0.forever.append(c) } }
                return .transient
            case .after(let ms, let next):
                guard let clock else { throw SinkTestError(message: "RecordingSink: a delayed answer needs a clock") }
                await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in clock.schedule(afterMs: ms) { c.resume() } }
                current = next
            }
        }
    }
}

/// The error a ``RecordingSink`` throws for ``SinkBehavior/fail(_:)``.
public struct SinkTestError: Error, Sendable, CustomStringConvertible {
    public let message: String
    public var description: String { message }
}
