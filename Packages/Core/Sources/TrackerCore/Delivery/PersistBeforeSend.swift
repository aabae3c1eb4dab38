/// Persist-before-send: a built snapshot is handed to delivery only once the write that records
/// it has finished (landed or failed) or `persistTimeoutMs` has passed, whichever comes first,
/// so a resumed run can never reuse a `seq` for a different body. Without a store it is handed
/// over at once.
public enum PersistBeforeSend {
    /// Queues `write` on `store` and calls `handOver` exactly once, when the write finished or
    /// the timeout elapsed. With `store == nil`, calls `handOver` synchronously.
    public static func stage(
        store: SerialStore?, scheduler: any TrackerScheduler, persistTimeoutMs: Int64,
        write: @escaping @Sendable () async -> StoreWrite, handOver: @escaping @Sendable () -> Void
    ) {
        guard let store else {
            handOver()
            return
        }
        let state = Locked<(done: Bool, timer: TimerToken?)>((false, nil))
        let fire: @Sendable () -> Void = {
            let (first, timer) = state.withLock { s -> (Bool, TimerToken?) in
                defer { s.done = true }
                return (!s.done, s.timer)
            }
            guard first else { return }
            if let timer { scheduler.cancel(timer) }
            handOver()
        }
        let token = scheduler.schedule(afterMs: max(0, persistTimeoutMs)) { fire() }
        let alreadyDone = state.withLock { s -> Bool in
            s.timer = token
            return s.done
        }
        if alreadyDone { scheduler.cancel(token) }
        store.enqueueSaveWith(write) { _ in fire() }
    }
}
