/// One flush's lifecycle as a pure state machine, in the style of Core's `DeliveryMachine`: the
/// client feeds it events and carries out the actions it answers (see `Flush.swift`, the thin
/// runtime). It holds no queue, no I/O and no time; which events a batch holds, and what
/// delivering or skipping them does to the queue, stay with the runtime.
///
/// The rules:
/// - a flush with work first waits until the events it selected are persisted (persist before
///   send), unless writing fails (then they are sent from memory);
/// - then, when a token provider is set, it consults the provider, bounded by the token
///   timeout: the first of the provider's answer and the timeout moves on;
/// - then it sends batches one at a time: a 2xx delivers the batch and sends the next; a 413 for
///   several events halves the batch size and sends again; a 413 for one event alone fails the
///   flush, skips that event and goes on; any other answer (or no answer) fails the flush and
///   stops sending;
/// - when no event is left to send (or sending stopped), the link-anonymous step runs; when it
///   ends the flush completes, successfully unless something failed;
/// - an abandoned flush (its background budget ran out, or the OS took the background time back)
///   completes at once as failed; the events stay queued;
/// - a flush that delivered events answers its callers only once their removal is written (the
///   queue writer's operations through the removal's ticket): a kill after `flush()` returns
///   never sends them again. It records its outcome at once (a next flush may start), and stops
///   waiting when the writer fails, when the wait times out or when the OS takes the background
///   time back. Events after completion are ignored.
struct FlushMachine: Sendable, Equatable {
    /// Where the flush is.
    enum Phase: Sendable, Equatable {
        /// The selected events are being written (persist before send).
        case waitingPersist
        /// The token provider runs, bounded by the token timeout.
        case waitingToken
        /// Batches go out, one request at a time.
        case sending
        /// The link-anonymous step runs.
        case linking
        /// Done sending (`ok`: everything delivered); the callers wait until the queue writer has
        /// written its operations through `ticket` (the delivered events' removal).
        case awaitingRemoval(ticket: Int, ok: Bool)
        /// Completed (`ok`: everything delivered).
        case completed(ok: Bool)
    }

    /// Inputs.
    enum Event: Sendable, Equatable {
        /// The selected events are persisted, or writing failed (they go from memory);
        /// `hasProvider`: whether a token provider is set now.
        case persisted(hasProvider: Bool)
        /// The token provider answered (with a token or not).
        case tokenSettled
        /// The token timeout ran out before the provider answered.
        case tokenTimedOut
        /// The request for a batch of `events` events was answered `status` (-1: no answer).
        case batchAnswered(status: Int, events: Int)
        /// No event is left to send (the batch found none).
        case batchesExhausted
        /// The link-anonymous step ended (sent, skipped or failed: its outcome is its own).
        case linkFinished
        /// Give up now (background budget, background time expired).
        case abandon
        /// A delivered batch's removal was queued: the queue writer is done with it once it has
        /// written its operations through `ticket` (see `QueueWriterMachine.ticket(backlog:)`).
        case removalQueued(ticket: Int)
        /// The queue writer has written its operations through `through`.
        case written(through: Int)
        /// Stop waiting for the removal: the writer failed (it cannot be written now), the wait
        /// timed out, or the OS took the background time back. It is written when it can be.
        case stopWaitingForRemoval
    }

    /// Outputs, carried out in order.
    enum Action: Sendable, Equatable {
        /// Start (or join) the token provider and arm the token timeout.
        case consultToken
        /// Cancel the token timeout.
        case cancelTokenTimer
        /// Build and send the next batch, at most ``FlushMachine/batchLimit`` events.
        case sendNextBatch
        /// The answered batch was delivered: its events leave the queue; move past them.
        case deliverBatch
        /// The answered batch's one event was rejected as too large: move past it (and drop it
        /// once enough flushes rejected it).
        case skipRejectedEvent
        /// Run the link-anonymous step.
        case link
        /// Record the outcome, end the background tasks and timers, answer every waiter.
        case complete(ok: Bool)
        /// Record the outcome and end the token and budget timers (another flush may start);
        /// the callers and the background tasks wait for the removal: arm its timeout.
        case awaitRemoval(ok: Bool)
        /// The removal is written (or no longer waited for): cancel its timeout, end the
        /// background tasks, answer every waiter.
        case answer(ok: Bool)
    }

    /// Where the flush is.
    private(set) var phase: Phase
    /// Events per request at most (halved by a 413).
    private(set) var batchLimit: Int
    /// Whether something could not be delivered.
    private(set) var failed = false
    /// The queue writer's ticket the delivered events' removal needs written, if any.
    private(set) var removalTicket: Int?
    /// How far the queue writer has written (its tickets), as last heard.
    private(set) var writtenThrough = 0
    /// Whether the removal is not waited for (the writer failed since it last wrote).
    private(set) var removalReleased = false

    /// A flush that has work. `needsPersist`: some selected event is not persisted yet (and
    /// writing works); `hasProvider`: a token provider is set. Returns the machine and its
    /// first actions.
    static func start(needsPersist: Bool, hasProvider: Bool, batchLimit: Int) -> (FlushMachine, [Action]) {
        var m = FlushMachine(phase: .waitingPersist, batchLimit: max(1, batchLimit))
        if needsPersist { return (m, []) }
        let actions = m.proceedToToken(hasProvider: hasProvider)
        return (m, actions)
    }

    private init(phase: Phase, batchLimit: Int) {
        self.phase = phase
        self.batchLimit = batchLimit
    }

    /// Whether the flush has completed (its callers answered).
    var isCompleted: Bool {
        if case .completed = phase { return true }
        return false
    }

    /// Whether the flush is done sending and only waits for its removal to be written.
    var isAwaitingRemoval: Bool {
        if case .awaitingRemoval = phase { return true }
        return false
    }

    /// Feeds one event; returns the actions to carry out.
    mutating func handle(_ event: Event) -> [Action] {
        if isCompleted { return [] }
        switch event {
        case .removalQueued(let ticket):
            guard !isAwaitingRemoval else { return [] }
            removalTicket = max(removalTicket ?? ticket, ticket)
            return []
        case .written(let through):
            // The writer writes again: a removal it failed to write is waited for again.
            removalReleased = false
            writtenThrough = max(writtenThrough, through)
            guard case .awaitingRemoval(let ticket, let ok) = phase, writtenThrough >= ticket else { return [] }
            phase = .completed(ok: ok)
            return [.answer(ok: ok)]
        case .stopWaitingForRemoval:
            removalReleased = true
            guard case .awaitingRemoval(_, let ok) = phase else { return [] }
            phase = .completed(ok: ok)
            return [.answer(ok: ok)]
        default:
            break
        }
        if isAwaitingRemoval { return [] }
        switch event {
        case .persisted(let hasProvider):
            guard phase == .waitingPersist else { return [] }
            return proceedToToken(hasProvider: hasProvider)
        case .tokenSettled:
            guard phase == .waitingToken else { return [] }
            phase = .sending
            return [.cancelTokenTimer, .sendNextBatch]
        case .tokenTimedOut:
            guard phase == .waitingToken else { return [] }
            phase = .sending
            return [.sendNextBatch]
        case .batchAnswered(let status, let events):
            guard phase == .sending else { return [] }
            if (200..<300).contains(status) { return [.deliverBatch, .sendNextBatch] }
            if status == 413 {
                if events > 1 {
                    batchLimit = max(1, events / 2)
                    return [.sendNextBatch]
                }
                failed = true
                return [.skipRejectedEvent, .sendNextBatch]
            }
            failed = true
            phase = .linking
            return [.link]
        case .batchesExhausted:
            guard phase == .sending else { return [] }
            phase = .linking
            return [.link]
        case .linkFinished:
            guard phase == .linking else { return [] }
            return complete(ok: !failed)
        case .abandon:
            return complete(ok: false)
        case .removalQueued, .written, .stopWaitingForRemoval:
            return []
        }
    }

    private mutating func proceedToToken(hasProvider: Bool) -> [Action] {
        if hasProvider {
            phase = .waitingToken
            return [.consultToken]
        }
        phase = .sending
        return [.sendNextBatch]
    }

    /// Done sending: complete now, or once the delivered events' removal is written.
    private mutating func complete(ok: Bool) -> [Action] {
        if let ticket = removalTicket, ticket > writtenThrough, !removalReleased {
            phase = .awaitingRemoval(ticket: ticket, ok: ok)
            return [.awaitRemoval(ok: ok)]
        }
        phase = .completed(ok: ok)
        return [.complete(ok: ok)]
    }
}
