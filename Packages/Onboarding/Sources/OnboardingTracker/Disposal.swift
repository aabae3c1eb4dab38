import TrackerCore

/// A tracker's lifetime around `dispose()` (<doc:HandOver>, D6 and D8), as an explicit phase:
/// live; then handing over, while its leftover waits for its last attempts and its drain for the
/// read and queued writes (the ``HandoffRegistry`` keeps the tracker meanwhile, so an app may
/// release it at once); then released, when the registry lets it go. The tracker changes the
/// phase under its lock and completes the leftover, or lets go, after it.
enum DisposalPhase: Sendable {
    case live
    /// Disposed: `leftover` until it is taken to be completed; `drained` once the drain is done
    /// (at once without storage).
    case handingOver(leftover: Deferred<Leftover>?, drained: Bool)
    /// Its hand-over duties are over: the registry no longer keeps it.
    case released

    /// Whether the leftover still waits to be completed.
    var leftoverPending: Bool {
        if case .handingOver(_?, _) = self { return true }
        return false
    }

    var isReleased: Bool {
        if case .released = self { return true }
        return false
    }

    /// Takes the leftover to complete it (once); `nil` when not disposed or already taken.
    mutating func takeLeftover() -> Deferred<Leftover>? {
        guard case .handingOver(let left?, let drained) = self else { return nil }
        self = .handingOver(leftover: nil, drained: drained)
        return left
    }

    /// The drain is done.
    mutating func drained() {
        if case .handingOver(let left, _) = self { self = .handingOver(leftover: left, drained: true) }
    }

    /// Moves to ``released`` when the leftover is taken and the drain done: `true` exactly once,
    /// when the tracker may be let go.
    mutating func release() -> Bool {
        guard case .handingOver(nil, true) = self else { return false }
        self = .released
        return true
    }
}

/// A disposed tracker's drain (<doc:HandOver>, D8): completes `drain` once the stored-state read
/// is done and then the store's queued writes have landed, each wait bounded by `ms` on
/// `scheduler`; a read that runs out of its bound calls `slowRead` and ends the drain.
func drainAfterRead(
    _ drain: Deferred<Void>, read: Deferred<Void>, store: SerialStore, ms: Int64, scheduler: any TrackerScheduler,
    slowRead: @escaping @Sendable () -> Void
) {
    boundedWait(ms: ms, scheduler: scheduler, register: { cb in read.onComplete { _ in cb() } }) { timedOut in
        if timedOut {
            slowRead()
            drain.complete(())
            return
        }
        // The wait for the queued writes starts in a background step after the read wait, as in
        // the reference (where it follows an `await`): its bound then runs from a moment after
        // the caller's own synchronous work (a successor's `resume()` call included), never
        // before it.
        scheduler.spawn {
            boundedWait(
                ms: ms, scheduler: scheduler,
                register: { cb in
                    scheduler.spawn {
                        await store.idle()
                        cb()
                    }
                }
            ) { _ in
                drain.complete(())
            }
        }
    }
}
