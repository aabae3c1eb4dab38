import TrackerCore

extension ScoreClient {
    // MARK: - Public flushing

    /// Sends the queued events whose consent is granted, in batches, then the link-anonymous
    /// request when due. Joins a flush already in flight. Throws ``ScoreError`` with code
    /// `flushFailed` when something could not be delivered (the events stay queued).
    public func flush() async throws {
        let result: Result<Void, ScoreError> = await withCheckedContinuation { c in
            startFlush(waiter: c)
        }
        try result.get()
    }

    /// Starts a flush, or joins the one in flight; returns the flight's id when one is running.
    @discardableResult
    func startFlush(waiter: CheckedContinuation<Result<Void, ScoreError>, Never>? = nil) -> Int? {
        let begin: (Int, [FlushMachine.Action])? = state.withLock { s in
            if let f = s.flight {
                if let waiter { f.waiters.append(waiter) }
                return nil
            }
            guard s.loaded else {
                // Started right after the start-up load (see `loadStored()`).
                s.flushBeforeLoad.requested = true
                if let waiter { s.flushBeforeLoad.waiters.append(waiter) }
                return nil
            }
            let now = clock.nowMs()
            applyRetention(&s, now: now)
            kickWriters(&s)
            // The events consent allows, the critical ones first (each tier in queue order): one
            // pass, and a second only when some event is critical.
            var selected: [QueuedEvent] = []
            selected.reserveCapacity(s.queue.count)
            var critical = 0
            var allPersisted = true
            // While the lazy launch's tail is unloaded, no best-effort event after it goes before
            // it (FIFO): those wait for the splice (its events have no critical one).
            let tail = s.tail
            var afterTail: [QueuedEvent] = []
            for e in s.queue where sendable(e, s) {
                if let tail, !e.critical, !tail.isBefore(e) {
                    if !e.persisted { allPersisted = false }
                    afterTail.append(e)
                    continue
                }
                if e.critical { critical += 1 }
                if !e.persisted { allPersisted = false }
                selected.append(e)
            }
            if critical > 0 && critical < selected.count {
                selected = selected.filter(\.critical) + selected.filter { !$0.critical }
            }
            let pendingLink = s.userId.map { !s.linked.contains(linkKey(s.anonymousId, $0)) } ?? false
            if selected.isEmpty && afterTail.isEmpty && tail == nil && !pendingLink {
                waiter?.resume(returning: .success(()))
                return nil
            }
            // Persisted before sent, unless the store fails: then they cannot be, and are sent
            // from memory rather than held back (they would be lost with the app all the same).
            let (machine, actions) = FlushMachine.start(
                needsPersist: !s.storeFailing && !allPersisted,
                hasProvider: s.tokens.provider != nil, batchLimit: ScoreClient.maxBatchEvents)
            let f = Flight(id: s.nextFlightId, machine: machine)
            s.nextFlightId += 1
            // What the queue writer has done so far (its later progress is fed as it comes).
            _ = f.machine.handle(s.storeFailing ? .stopWaitingForRemoval : .written(through: s.writer.written))
            if let waiter { f.waiters.append(waiter) }
            f.selected = selected
            f.deferredForTail = tail != nil
            f.afterTail = afterTail
            s.flight = f
            return (f.id, runLocked(actions, &s, f))
        }
        guard let (id, after) = begin else { return state.withLock { $0.flight?.id } }
        // On the caller's thread: the first batch is built on the scheduler (it may read back).
        runAfterLock(id, after, spawnSend: true)
        return id
    }

    // MARK: - The flush machine's runtime

    /// Carries out the actions of flight `f`'s machine that run under the lock; returns the
    /// ones that run after it (``runAfterLock(_:_:spawnSend:)``). `answered`: the batch an
    /// answer was for (``FlushMachine/Action/deliverBatch`` and ``FlushMachine/Action/skipRejectedEvent``).
    func runLocked(_ actions: [FlushMachine.Action], _ s: inout ClientState, _ f: Flight) -> [FlushMachine.Action] {
        var droppedRejected = false
        return runLocked(actions, &s, f, answered: nil, droppedRejected: &droppedRejected)
    }

    /// ``runLocked(_:_:_:)`` for the answer to `answered`; sets `droppedRejected` when the
    /// rejected event was dropped (the caller diagnoses it after the lock).
    func runLocked(
        _ actions: [FlushMachine.Action], _ s: inout ClientState, _ f: Flight,
        answered: (batch: [QueuedEvent], encoded: [[UInt8]])?,
        droppedRejected: inout Bool
    ) -> [FlushMachine.Action] {
        var after: [FlushMachine.Action] = []
        for action in actions {
            switch action {
            case .consultToken:
                consultToken(&s, f)
            case .cancelTokenTimer:
                if let t = f.tokenTimer { scheduler.cancel(t) }
                f.tokenTimer = nil
            case .deliverBatch:
                guard let (batch, encoded) = answered else { continue }
                let left = delivered(&s, batch, encoded)
                f.sent += left
                // Their removal is queued: the writer's ticket for it (done once written).
                let ticket = s.writer.ticket(backlog: s.writer.backlog.count)
                if left > 0, ticket > s.writer.written { _ = f.machine.handle(.removalQueued(ticket: ticket)) }
                // Cursor: skip past the batch's events in selection order.
                var remaining = batch.count
                while remaining > 0, f.cursor < f.selected.count {
                    if batch.contains(where: { $0 === f.selected[f.cursor] }) { remaining -= 1 }
                    f.cursor += 1
                }
                kickWriters(&s)
            case .skipRejectedEvent:
                guard let e = answered?.batch.first else { continue }
                while f.cursor < f.selected.count {
                    let hit = f.selected[f.cursor] === e
                    f.cursor += 1
                    if hit { break }
                }
                e.rejectedAlone += 1
                if e.rejectedAlone >= ScoreClient.maxRejectedAlone, e.inQueue {
                    s.counts.invalid += 1
                    removeFromQueue(&s, [e])
                    kickWriters(&s)
                    droppedRejected = true
                }
            case .complete(let ok):
                recordOutcome(&s, f, ok: ok)
                f.takeAnswer(ok: ok).deliver()
            case .awaitRemoval(let ok):
                recordOutcome(&s, f, ok: ok)
                // The callers go on once the removal is written; kept even with nobody waiting
                // yet: a background task attached now waits for the write too (see
                // `attachBackground`). Not for longer than `removalWaitMs` (a hung disk).
                s.finishing.append(f)
                let id = f.id
                f.removalTimer = scheduler.schedule(afterMs: ScoreClient.removalWaitMs) { [self] in removalWaitTimedOut(id) }
            case .answer(let ok):
                if let t = f.removalTimer { scheduler.cancel(t) }
                f.removalTimer = nil
                s.finishing.removeAll { $0 === f }
                f.takeAnswer(ok: ok).deliver()
            case .sendNextBatch, .link:
                after.append(action)
            }
        }
        return after
    }

    /// Carries out the actions that run after the lock. `spawnSend`: build the next batch on the
    /// scheduler rather than on this thread (the caller's own thread).
    func runAfterLock(_ flightId: Int, _ actions: [FlushMachine.Action], spawnSend: Bool = false) {
        for action in actions {
            switch action {
            case .sendNextBatch:
                if spawnSend { scheduler.spawn { [self] in sendNextBatch(flightId) } } else { sendNextBatch(flightId) }
            case .link:
                linkStep(flightId)
            default:
                break
            }
        }
    }

    /// Feeds `event` to flight `flightId`'s machine (when it is the one in flight) and carries
    /// out its actions.
    func flightEvent(_ flightId: Int, _ event: FlushMachine.Event, spawnSend: Bool = false) {
        let after: [FlushMachine.Action] = state.withLock { s in
            guard let f = s.flight, f.id == flightId else { return [] }
            return runLocked(f.machine.handle(event), &s, f)
        }
        runAfterLock(flightId, after, spawnSend: spawnSend)
    }

    func linkKey(_ anon: String, _ user: String) -> String { anon + "\u{1F}" + user }

    /// Step 4: consult the token provider (single-flight, bounded by the token timeout).
    private func consultToken(_ s: inout ClientState, _ f: Flight) {
        guard let provider = s.tokens.provider else { return }
        let flightId = f.id
        f.tokenTimer = scheduler.schedule(afterMs: tokenTimeoutMs) { [self] in tokenTimedOut(flightId) }
        if let generation = s.tokens.claim() {
            scheduler.spawn { [self] in
                let token: String?
                do { token = try await provider() } catch { token = nil }
                providerFinished(generation, token)
            }
        }
    }

    private func tokenTimedOut(_ flightId: Int) {
        let after: [FlushMachine.Action] = state.withLock { s in
            guard let f = s.flight, f.id == flightId else { return [] }
            f.tokenTimer = nil
            return runLocked(f.machine.handle(.tokenTimedOut), &s, f)
        }
        runAfterLock(flightId, after)
    }

    private func providerFinished(_ generation: Int, _ token: String?) {
        let resume: (Int, [FlushMachine.Action])? = state.withLock { s in
            s.tokens.finished(generation: generation, token: token)
            guard let f = s.flight else { return nil }
            return (f.id, runLocked(f.machine.handle(.tokenSettled), &s, f))
        }
        if let (id, after) = resume { runAfterLock(id, after) }
    }

    func headers(_ token: String?) -> [HTTPHeader] {
        var h = [HTTPHeader("Content-Type", "application/json"), HTTPHeader("X-Publishable-Key", publishableKey)]
        if let token { h.append(HTTPHeader("Authorization", "Bearer \(token)")) }
        return h
    }

    /// Sends the next batch of the flight, or moves on to the link step. Runs on the scheduler
    /// (it may read queued events back from the store).
    func sendNextBatch(_ flightId: Int) {
        // 1. Under the lock: the candidates, with their bytes or their location.
        enum Step {
            case none, link
            case candidates([(QueuedEvent, [UInt8]?, ScoreRecordLocation?)])
        }
        let step: Step = state.withLock { s in
            guard let f = s.flight, f.id == flightId else { return .none }
            // An event still in a request of an abandoned flush is settled by that request's
            // answer: this flush leaves it alone (sending it again would deliver it twice).
            while f.cursor < f.selected.count, !f.selected[f.cursor].inQueue || f.selected[f.cursor].sending { f.cursor += 1 }
            guard f.cursor < f.selected.count else {
                // The tail's events come next: this flush goes on once it is spliced.
                if f.deferredForTail {
                    f.parkedForTail = true
                    return .none
                }
                return .link
            }
            var out: [(QueuedEvent, [UInt8]?, ScoreRecordLocation?)] = []
            var i = f.cursor
            while i < f.selected.count, out.count < f.machine.batchLimit {
                let e = f.selected[i]
                i += 1
                guard e.inQueue, !e.sending, !heldWhileFailing(e, s) else { continue }
                let bytes = e.encoded
                out.append((e, bytes, bytes == nil ? e.location : nil))
            }
            return .candidates(out)
        }
        let candidates: [(QueuedEvent, [UInt8]?, ScoreRecordLocation?)]
        switch step {
        case .none: return
        case .link:
            flightEvent(flightId, .batchesExhausted)
            return
        case .candidates(let c): candidates = c
        }
        // 2. Without the lock: read back what is only on disk.
        var read: [ObjectIdentifier: [UInt8]] = [:]
        var unreadable: [QueuedEvent] = []
        for (e, bytes, location) in candidates where bytes == nil {
            var got = location.flatMap(readEnvelope)
            if got == nil {
                // Compacted meanwhile: moved in the log, or read back into memory.
                let (moved, held) = state.withLock { _ in (e.location, e.encoded) }
                if let held {
                    got = held
                } else if let moved, moved != location {
                    got = readEnvelope(moved)
                }
            }
            if let got { read[ObjectIdentifier(e)] = got } else { unreadable.append(e) }
        }
        // 3. Under the lock: the batch and its body.
        var droppedTooLarge = 0
        let request: (HTTPRequest, [QueuedEvent], [[UInt8]])? = state.withLock { s in
            guard let f = s.flight, f.id == flightId else { return nil }
            if !unreadable.isEmpty {
                removeFromQueue(&s, unreadable.filter(\.inQueue))
                kickWriters(&s)
            }
            let now = clock.nowMs()
            var batch: [QueuedEvent] = []
            var encoded: [[UInt8]] = []
            var size = ScoreClient.bodyOverhead
            var tooLarge: [QueuedEvent] = []
            for (e, known, _) in candidates where e.inQueue && !e.sending {
                guard var bytes = known ?? read[ObjectIdentifier(e)] else { continue }
                if !e.hasUserId, e.anonymousEpoch == s.anonymousEpoch, let uid = s.userId,
                    let layout = EnvelopeLayout.of(bytes, known: e.layout)
                {
                    bytes = EnvelopeBytes.withUserId(bytes, layout, uid)
                }
                if bytes.count + ScoreClient.bodyOverhead > ScoreClient.maxBodyBytes {
                    // No request can carry it (a stored event from an older build, say): sending it
                    // alone would be answered 413 on every flush.
                    tooLarge.append(e)
                    continue
                }
                let add = bytes.count + (batch.isEmpty ? 0 : 1)
                if !batch.isEmpty && size + add > ScoreClient.maxBodyBytes { break }
                size += add
                batch.append(e)
                encoded.append(bytes)
            }
            if !tooLarge.isEmpty {
                s.counts.invalid += tooLarge.count
                removeFromQueue(&s, tooLarge)
                kickWriters(&s)
                droppedTooLarge = tooLarge.count
            }
            guard !batch.isEmpty else { return nil }
            for e in batch { e.sending = true }
            var body = [UInt8]()
            body.reserveCapacity(size)
            body.append(contentsOf: #"{"sentAt":""#.utf8)
            body.append(contentsOf: Timestamp.format(ms: now).utf8)
            body.append(contentsOf: #"","events":["#.utf8)
            for (k, b) in encoded.enumerated() {
                if k > 0 { body.append(44) }
                body.append(contentsOf: b)
            }
            body.append(contentsOf: "]}".utf8)
            let req = HTTPRequest(url: endpoint + "/api/events", method: "POST", headers: headers(s.tokens.token), body: body)
            return (req, batch, encoded)
        }
        if !unreadable.isEmpty {
            diagnose(Diagnostic(code: "storage", message: "\(unreadable.count) queued event(s) could not be read back and were dropped"))
        }
        if droppedTooLarge > 0 {
            diagnose(
                Diagnostic(code: "invalid-event", message: "\(droppedTooLarge) queued event(s) too large for any request were dropped"))
        }
        guard let (req, batch, encoded) = request else {
            // Everything was dropped or left meanwhile: move on.
            let alive = state.withLock { $0.flight?.id == flightId }
            if alive { scheduler.spawn { [self] in sendNextBatch(flightId) } }
            return
        }
        scheduler.spawn { [self] in
            var status = 0
            do { status = try await transport.send(req).status } catch { status = -1 }
            batchAnswered(flightId, batch, encoded, status)
        }
    }

    /// The envelope of the add record at `location`.
    func readEnvelope(_ location: ScoreRecordLocation) -> [UInt8]? {
        guard let r = try? store.readQueueRecord(at: location), r.count > 3, r[0] == 65 else { return nil }
        return Array(r[3...])
    }

    /// How many flushes may answer 413 to a request holding one event alone before that event is
    /// dropped (each such flush keeps it queued and skips it, section 2's rule; without a bound an
    /// event the server never accepts would be uploaded on every flush, forever).
    static let maxRejectedAlone = 3

    /// A 2xx for `batch`: its events leave the queue (once: those already gone are skipped).
    /// Returns how many left.
    private func delivered(_ s: inout ClientState, _ batch: [QueuedEvent], _ encoded: [[UInt8]]) -> Int {
        let present = batch.filter(\.inQueue)
        removeFromQueue(&s, present)
        for (e, bytes) in zip(batch, encoded) where !e.hasUserId && !bytes.isEmpty {
            guard replayCapacity > 0 else { break }
            // Sent anonymously (no userId was added at send time).
            guard let layout = EnvelopeLayout.of(bytes, known: e.layout), !layout.hasUserId(bytes) else { continue }
            s.replay.append(
                ReplayEntry(eventId: e.eventId, timestampMs: e.timestampMs, requires: e.requires, bytes: bytes, layout: layout))
            if s.replay.count > replayCapacity { s.replay.removeFirst(s.replay.count - replayCapacity) }
        }
        return present.count
    }

    private func batchAnswered(_ flightId: Int, _ batch: [QueuedEvent], _ encoded: [[UInt8]], _ status: Int) {
        var droppedRejected = false
        let after: [FlushMachine.Action] = state.withLock { s in
            for e in batch { e.sending = false }
            guard let f = s.flight, f.id == flightId else {
                // The answer of an abandoned flush: it no longer changes that flush's outcome, but
                // a 2xx still delivered the events (they leave the queue, and are not sent again).
                if (200..<300).contains(status) {
                    _ = delivered(&s, batch, encoded)
                    kickWriters(&s)
                }
                return []
            }
            let actions = f.machine.handle(.batchAnswered(status: status, events: batch.count))
            return runLocked(actions, &s, f, answered: (batch, encoded), droppedRejected: &droppedRejected)
        }
        if droppedRejected {
            diagnose(
                Diagnostic(
                    code: "invalid-event",
                    message: "an event answered 413 (too large) by \(ScoreClient.maxRejectedAlone) flushes was dropped"))
        }
        runAfterLock(flightId, after)
    }

    /// Step 5: the link-anonymous request, when due.
    private func linkStep(_ flightId: Int) {
        let request: (HTTPRequest, String)? = state.withLock { s in
            guard let f = s.flight, f.id == flightId, let uid = s.userId else { return nil }
            let key = linkKey(s.anonymousId, uid)
            if s.linked.contains(key) {
                s.lastSkip = .alreadyLinked
                return nil
            }
            if !s.consent.analytics {
                s.lastSkip = .consent
                return nil
            }
            guard let token = s.tokens.token else {
                s.lastSkip = .noToken
                return nil
            }
            var o = JSONObject()
            o.appendUnchecked("anonymousId", .string(s.anonymousId))
            o.appendUnchecked("userId", .string(uid))
            let req = HTTPRequest(
                url: endpoint + "/api/identity/link-anonymous", method: "POST",
                headers: headers(token), body: WireJSON.encode(.object(o)))
            return (req, key)
        }
        guard let (req, key) = request else {
            flightEvent(flightId, .linkFinished)
            return
        }
        scheduler.spawn { [self] in
            var ok = false
            do { ok = (200..<300).contains(try await transport.send(req).status) } catch { ok = false }
            state.withLock { s in
                if ok {
                    s.linked.insert(key)
                    s.identityWriter.changed()
                    if let uid = s.userId, linkKey(s.anonymousId, uid) == key { s.lastSkip = nil }
                    kickWriters(&s)
                } else {
                    s.lastSkip = .error
                }
            }
            flightEvent(flightId, .linkFinished)
        }
    }

    /// Step 6 (the machine's ``FlushMachine/Action/complete(ok:)`` and
    /// ``FlushMachine/Action/awaitRemoval(ok:)``): record the outcome and end the flush's
    /// timers; another flush may start. Its callers are answered by the action that follows.
    func recordOutcome(_ s: inout ClientState, _ f: Flight, ok: Bool) {
        if s.flight === f { s.flight = nil }
        s.lastFlush.record(ok: ok, sent: f.sent, at: clock.nowMs())
        if let t = f.tokenTimer { scheduler.cancel(t) }
        if let t = f.budgetTimer { scheduler.cancel(t) }
        f.tokenTimer = nil
        f.budgetTimer = nil
        // Nothing left to do: no periodic wake-up until work arrives (see `armAutoFlushIfIdle`).
        if let t = s.periodic.timer, !hasAutoFlushWork(&s) {
            scheduler.cancel(t)
            s.periodic.timer = nil
        }
    }

    /// How long a finished flush waits at most for its delivered events' removal to be written
    /// (a hung disk): then its callers go on, and the removal is written when the disk answers.
    static let removalWaitMs: Int64 = 1_000

    private func removalWaitTimedOut(_ id: Int) {
        let answers: [FlightAnswer] = state.withLock { s in
            guard let f = s.finishing.first(where: { $0.id == id }) else { return [] }
            f.removalTimer = nil
            return answerFinishing(&s, [f], .stopWaitingForRemoval)
        }
        for a in answers { a.deliver() }
    }

    /// Feeds `event` to the finishing flushes `flights` (see ``ClientState/finishing``); the
    /// ones it answers leave the list, their timers cancelled. The caller delivers the answers
    /// after the lock.
    func answerFinishing(_ s: inout ClientState, _ flights: [Flight], _ event: FlushMachine.Event) -> [FlightAnswer] {
        var answers: [FlightAnswer] = []
        for f in flights {
            for case .answer(let ok) in f.machine.handle(event) {
                if let t = f.removalTimer { scheduler.cancel(t) }
                f.removalTimer = nil
                s.finishing.removeAll { $0 === f }
                answers.append(f.takeAnswer(ok: ok))
            }
        }
        return answers
    }

    /// What the queue writer's progress wakes (see ``writerProgressed(_:)``): the flush waiting
    /// for its events to be persisted, and the answers of the flushes whose removal is written.
    struct FlushWakeups {
        var resume: (Int, [FlushMachine.Action])?
        var answers: [FlightAnswer] = []

        /// Answers the callers (after the client's lock).
        func answer() {
            for a in answers { a.deliver() }
        }

        /// Resumes the flush waiting for persistence (after the lock; it builds the next batch
        /// on the scheduler).
        func resume(_ client: ScoreClient) {
            if let (id, after) = resume { client.runAfterLock(id, after, spawnSend: true) }
        }
    }

    /// The queue writer wrote operations (or failed, ``ClientState/storeFailing``): its
    /// progress as the flushes' events. A flush waiting for its selected events to be persisted
    /// moves on once they are (or left the queue unwritten, or writing fails: then they go
    /// from memory); one waiting for its removal is answered once the writer is through its
    /// ticket, or at once when writing fails (the removal is written when it can be).
    func writerProgressed(_ s: inout ClientState) -> FlushWakeups {
        var w = FlushWakeups()
        let event: FlushMachine.Event = s.storeFailing ? .stopWaitingForRemoval : .written(through: s.writer.written)
        if let f = s.flight {
            _ = f.machine.handle(event)
            if f.machine.phase == .waitingPersist,
                s.storeFailing || f.selected.allSatisfy({ $0.persisted || !$0.inQueue })
            {
                w.resume = (f.id, runLocked(f.machine.handle(.persisted(hasProvider: s.tokens.provider != nil)), &s, f))
            }
        }
        if !s.finishing.isEmpty { w.answers = answerFinishing(&s, s.finishing, event) }
        return w
    }

    /// The bounded background flush ran out of time: abandon it; nothing is lost.
    func abandon(_ flightId: Int) {
        flightEvent(flightId, .abandon)
    }
}
