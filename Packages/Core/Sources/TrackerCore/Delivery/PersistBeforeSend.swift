/// How the write that had to record a staged snapshot ended, as reported to its hand-over.
public enum PersistResult: Sendable, Equatable {
    /// The write landed (or had nothing to write: persistence is off, or another store owns the key).
    case landed
    /// The write failed; the store reported it.
    case failed
    /// The write had not finished when the persist timeout passed.
    case timedOut
}

/// Persist-before-send with coalesced writes, for a tracker whose whole stored state is one value
/// built when its write runs.
///
/// - **Latest state wins:** a write requested while another one is still queued (not yet
///   started) joins it; that write builds its value when its turn comes, so it records every
///   change requested before it started. At most one write of this persister runs and at most
///   one waits behind it, however fast changes come.
/// - **Handed over after the write:** the `handOver` given with a request runs exactly once,
///   after the first write that started after the request has finished (``PersistResult/landed``
///   or ``PersistResult/failed``), or when `persistTimeoutMs` passed first
///   (``PersistResult/timedOut``). With `persistTimeoutMs <= 0` it waits for the write however
///   long that takes.
///
/// Nothing here blocks or throws; every write goes through `store` (in call order with the
/// store's other operations) on its scheduler.
public final class CoalescingPersister: Sendable {
    private final class HandOver: Sendable {
        private let state = Locked<(done: Bool, timer: TimerToken?)>((false, nil))
        private let body: @Sendable (PersistResult) -> Void
        private let scheduler: any TrackerScheduler

        init(_ body: @escaping @Sendable (PersistResult) -> Void, scheduler: any TrackerScheduler) {
            self.body = body
            self.scheduler = scheduler
        }

        func arm(afterMs: Int64) {
            let token = scheduler.schedule(afterMs: afterMs) { [self] in fire(.timedOut) }
            let alreadyDone = state.withLock { s -> Bool in
                s.timer = token
                return s.done
            }
            if alreadyDone { scheduler.cancel(token) }
        }

        func fire(_ result: PersistResult) {
            let (first, timer) = state.withLock { s -> (Bool, TimerToken?) in
                defer {
                    s.done = true
                    s.timer = nil
                }
                return (!s.done, s.timer)
            }
            guard first else { return }
            if let timer, result != .timedOut { scheduler.cancel(timer) }
            body(result)
        }
    }

    private struct Queued: Sendable {
        var compose: @Sendable () -> StoreWrite
        var waiters: [HandOver]
    }

    private struct State: Sendable {
        var queued: Queued?
        var requests = 0
        var writes = 0
    }

    /// The store every write goes through.
    public let store: SerialStore
    private let scheduler: any TrackerScheduler
    private let persistTimeoutMs: Int64
    private let state = Locked(State())

    /// Creates a persister writing through `store`; hand-overs wait at most `persistTimeoutMs`
    /// (`<= 0`: no bound).
    public init(store: SerialStore, scheduler: any TrackerScheduler, persistTimeoutMs: Int64) {
        self.store = store
        self.scheduler = scheduler
        self.persistTimeoutMs = persistTimeoutMs
    }

    /// Requests a write of the latest state; `compose` builds it when the write starts (the
    /// latest request's `compose` is the one used). `handOver`, when given, runs once that
    /// write finished or the timeout passed (see the type's rules). Never blocks.
    public func request(
        compose: @escaping @Sendable () -> StoreWrite,
        handOver: (@Sendable (PersistResult) -> Void)? = nil
    ) {
        let waiter = handOver.map { HandOver($0, scheduler: scheduler) }
        if let waiter, persistTimeoutMs > 0 { waiter.arm(afterMs: persistTimeoutMs) }
        let start = state.withLock { s -> Bool in
            s.requests += 1
            if var q = s.queued {
                q.compose = compose
                if let waiter { q.waiters.append(waiter) }
                s.queued = q
                return false
            }
            s.queued = Queued(compose: compose, waiters: waiter.map { [$0] } ?? [])
            return true
        }
        guard start else { return }
        let taken = Locked<[HandOver]>([])
        store.enqueueSaveWith(
            { [self] in
                // From here on a new request queues the next write: this one may already miss it.
                let q = state.withLock { s -> Queued? in
                    defer { s.queued = nil }
                    if s.queued != nil { s.writes += 1 }
                    return s.queued
                }
                taken.withLock { $0 = q?.waiters ?? [] }
                return q?.compose() ?? .skip
            },
            done: { ok in
                for w in taken.value { w.fire(ok ? .landed : .failed) }
            })
    }

    /// Requests so far and the writes they were coalesced into (for tests and benchmarks).
    public var counts: (requests: Int, writes: Int) { state.withLock { ($0.requests, $0.writes) } }
}
