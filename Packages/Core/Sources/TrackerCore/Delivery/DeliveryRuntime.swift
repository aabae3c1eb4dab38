/// Runs a ``DeliveryMachine`` for one run: calls the sink, keeps the timers on the injected
/// scheduler, and reports settlements. Nothing here throws into the caller, whatever the sink
/// does; a sink that throws or never answers counts as transient.
public final class DeliveryRuntime<Payload: Sendable>: Sendable {
    /// Called once a snapshot is settled for good (accepted, ignored or rejected).
    public typealias SettledHandler = @Sendable (Outbound<Payload>, SinkResult) -> Void
    /// Called whenever the pending snapshot changes.
    public typealias PendingHandler = @Sendable (Outbound<Payload>?) -> Void
    /// Called after each transient answer.
    public typealias TransientHandler = @Sendable (Outbound<Payload>, SinkResult) -> Void

    private struct State: Sendable {
        var machine: DeliveryMachine<Payload>
        var retryToken: TimerToken?
        var attemptTokens: [UInt64: TimerToken] = [:]
        var idleWaiters: [CheckedContinuation<Void, Never>] = []
        // Actions are carried out one at a time, in order, by whichever caller finds the
        // runner free (callbacks may re-enter without deadlock or reordering).
        var queue: [DeliveryMachine<Payload>.Action] = []
        var draining = false
    }

    private let state: Locked<State>
    private let send: @Sendable (Payload) async throws -> SinkResult
    private let scheduler: any TrackerScheduler
    private let onSettled: SettledHandler?
    private let onPendingChange: PendingHandler?
    private let onTransient: TransientHandler?

    /// Creates a runtime delivering through `sink`.
    public convenience init<S: Sink>(
        sink: S, scheduler: any TrackerScheduler, retry: RetryPolicy = RetryPolicy(), attemptTimeoutMs: Int64 = 30_000,
        onSettled: SettledHandler? = nil, onPendingChange: PendingHandler? = nil, onTransient: TransientHandler? = nil
    ) where S.Payload == Payload {
        self.init(
            send: { try await sink.send($0) }, scheduler: scheduler, retry: retry, attemptTimeoutMs: attemptTimeoutMs,
            onSettled: onSettled, onPendingChange: onPendingChange, onTransient: onTransient)
    }

    /// Creates a runtime delivering through a send function.
    public init(
        send: @escaping @Sendable (Payload) async throws -> SinkResult, scheduler: any TrackerScheduler,
        retry: RetryPolicy = RetryPolicy(), attemptTimeoutMs: Int64 = 30_000,
        onSettled: SettledHandler? = nil, onPendingChange: PendingHandler? = nil, onTransient: TransientHandler? = nil
    ) {
        self.state = Locked(State(machine: DeliveryMachine(retry: retry, attemptTimeoutMs: attemptTimeoutMs)))
        self.send = send
        self.scheduler = scheduler
        self.onSettled = onSettled
        self.onPendingChange = onPendingChange
        self.onTransient = onTransient
    }

    /// Hands over a snapshot (ignored when not newer than the pending or settled one).
    public func enqueue(_ item: Outbound<Payload>) { handle(.enqueue(item)) }
    /// Attempts now, skipping a running backoff.
    public func flush() { handle(.flush) }
    /// Winds down: one last attempt per pending snapshot, no retry timer ever again.
    public func close() { handle(.close) }
    /// Winds down without a final attempt of what was tried already: a pending snapshot that never
    /// had an attempt gets one, no retry timer ever again (see ``DeliveryMachine``).
    public func closeUnattempted() { handle(.closeUnattempted) }
    /// Stops every timer and attempt for good; the pending snapshot is kept.
    public func stop() { handle(.stop) }

    /// The newest snapshot not yet settled.
    public var pending: Outbound<Payload>? { state.withLock { $0.machine.pending } }
    /// Highest seq settled.
    public var settledSeq: Int { state.withLock { $0.machine.settledSeq } }
    /// Whether an attempt is in flight.
    public var isBusy: Bool { state.withLock { $0.machine.isBusy } }

    /// Resolves once no attempt is in flight.
    public func idle() async {
        await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
            let ready = state.withLock { s -> Bool in
                if s.machine.isBusy {
                    s.idleWaiters.append(c)
                    return false
                }
                return true
            }
            if ready { c.resume() }
        }
    }

    private func handle(_ event: DeliveryMachine<Payload>.Event) {
        let drain = state.withLock { s -> Bool in
            s.queue.append(contentsOf: s.machine.handle(event))
            if s.draining { return false }
            s.draining = true
            return true
        }
        if drain { runActions() }
    }

    private func runActions() {
        while true {
            let next: DeliveryMachine<Payload>.Action? = state.withLock { s in
                if s.queue.isEmpty {
                    s.draining = false
                    return nil
                }
                return s.queue.removeFirst()
            }
            guard let action = next else { return }
            perform(action)
        }
    }

    private func perform(_ action: DeliveryMachine<Payload>.Action) {
        switch action {
        case .send(let attempt, let item):
            let send = self.send
            scheduler.spawn { [self] in
                let result: SinkResult
                do {
                    result = try await send(item.payload)
                } catch {
                    result = SinkResult(.transient, reason: String(describing: error))
                }
                handle(.answered(attempt: attempt, result))
            }
        case .startAttemptTimer(let attempt, let afterMs):
            let token = scheduler.schedule(afterMs: afterMs) { [self] in
                _ = state.withLock { $0.attemptTokens.removeValue(forKey: attempt) }
                handle(.attemptTimedOut(attempt: attempt))
            }
            state.withLock { $0.attemptTokens[attempt] = token }
        case .cancelAttemptTimer(let attempt):
            if let token = state.withLock({ $0.attemptTokens.removeValue(forKey: attempt) }) { scheduler.cancel(token) }
        case .scheduleRetry(let afterMs):
            let token = scheduler.schedule(afterMs: afterMs) { [self] in handle(.retryTimerFired) }
            state.withLock { $0.retryToken = token }
        case .cancelRetry:
            if let token = state.withLock({ s -> TimerToken? in
                defer { s.retryToken = nil }
                return s.retryToken
            }) {
                scheduler.cancel(token)
            }
        case .settled(let item, let result):
            onSettled?(item, result)
        case .transient(let item, let result):
            onTransient?(item, result)
        case .pendingChanged(let item):
            onPendingChange?(item)
        case .idle:
            let waiters = state.withLock { s -> [CheckedContinuation<Void, Never>] in
                guard !s.machine.isBusy else { return [] }
                defer { s.idleWaiters = [] }
                return s.idleWaiters
            }
            for w in waiters { w.resume() }
        }
    }
}
