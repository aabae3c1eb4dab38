import TrackerCore

/// What a rule knows of an ``OnboardingRun`` handle (read before the tracker's lock: the handle's
/// completion flag has a lock of its own).
struct RunHandle: Sendable, Equatable {
    var runId: String
    var generation: UInt64
    var completed = false

    init(runId: String, generation: UInt64, completed: Bool = false) {
        self.runId = runId
        self.generation = generation
        self.completed = completed
    }

    init(_ run: OnboardingRun) {
        self.init(runId: run.runId, generation: run.generation, completed: run.isCompleted)
    }
}

/// The tracker's decisions on a recorded run: which handle records, building and staging
/// snapshots, the debounce window's actions, what a staged snapshot's write decides, and what is
/// settled (<doc:Delivery>). Mutating functions on the state, run under the tracker's lock, that
/// only return `Effects`: no lock, clock, storage or delivery call of their own (issue 36 item 4).
extension OnboardingRunTracker.State {
    /// While opted out: reports `opted-out` once per opt-out period and says to drop the call.
    mutating func optedOutCheck(_ fx: inout Effects) -> Bool {
        guard optedOut else { return false }
        if !optedOutReported {
            optedOutReported = true
            fx.diag("opted-out", "the app opted out: recording calls are dropped until optIn()")
        }
        return true
    }

    /// A write of the whole state (not once disposed: the successor writes the key then; never
    /// without storage).
    mutating func requestWrite(_ env: RuleEnv, _ fx: inout Effects) {
        if env.hasStore && !run.disposed { fx.run(.write) }
    }

    /// The delivery of run `runId`, created on first use (closed at once when disposed).
    mutating func delivery(_ runId: String, _ env: RuleEnv, _ fx: inout Effects) -> Delivery {
        if let d = deliveries[runId] { return d }
        let d = env.makeDelivery(runId)
        deliveries[runId] = d
        deliveryOrder.append(runId)
        if run.disposed { fx.run(.close(d)) }
        return d
    }

    /// Whether the handle `h` may record; reports why not otherwise.
    mutating func mayRecord(_ h: RunHandle, allowCompleted: Bool = false, _ fx: inout Effects) -> Bool {
        if optedOutCheck(&fx) { return false }
        switch run.verdict(runId: h.runId, generation: h.generation, handleCompleted: h.completed) {
        case .record:
            return true
        case .disposed:
            fx.diag("disposed", "the tracker was disposed; nothing is recorded", h.runId)
        case .inactive:
            fx.diag("run-inactive", "a newer run replaced this one; nothing is recorded", h.runId)
        case .completed(live: true) where allowCompleted:
            return true
        case .completed(live: false) where allowCompleted:
            // `background()` still skips the retry backoff of an unsent completion (<doc:InputValidation#Step-calls>).
            if let d = deliveries[h.runId] { fx.run(.flush(d)) }
        case .completed:
            fx.diag("run-completed", "the run is completed; nothing is recorded", h.runId)
        }
        return false
    }

    /// Applies one recording rule (``RecordingOutcome``) to the live run of `h`: a change is
    /// written now and sent after the debounce window. Returns the step key entered, if any.
    mutating func record(_ h: RunHandle, _ env: RuleEnv, _ fx: inout Effects, _ rule: (inout RunState, Int64) -> RecordingOutcome)
        -> String?
    {
        guard mayRecord(h, &fx), var r = run.current else { return nil }
        run.current = nil  // keep the run's buffers uniquely referenced: recording stays O(1)
        defer { run.current = r }
        let outcome = rule(&r, env.now)
        fx.diagnostics += outcome.diagnostics
        if outcome.changed { recordChange(&r, env, &fx) }
        return outcome.entered
    }

    /// `complete()`: the completion is built and sent at once. Whether it was recorded.
    mutating func complete(_ h: RunHandle, _ env: RuleEnv, _ fx: inout Effects) -> Bool {
        guard mayRecord(h, &fx), var r = run.current else { return false }
        run.current = nil
        defer { run.current = r }
        let outcome = r.complete(nowMs: env.now)
        fx.diagnostics += outcome.diagnostics
        guard outcome.changed else { return false }
        perform(run.handle(.flushed), env, &fx)
        stage(&r, env, &fx, flush: true, at: r.completedAt)
        return true
    }

    /// `background()`: the run's state is built and sent at once (a completed one's delivery is
    /// flushed).
    mutating func background(_ h: RunHandle, _ env: RuleEnv, _ fx: inout Effects) {
        guard mayRecord(h, allowCompleted: true, &fx), var r = run.current else { return }
        run.current = nil
        defer { run.current = r }
        guard r.hasEntries else {
            fx.diag("no-steps", "background() before any entry: nothing is sent", r.runId)
            return
        }
        if r.completed {
            if let d = deliveries[r.runId] { fx.run(.flush(d)) }
            return
        }
        perform(run.handle(.flushed), env, &fx)
        stage(&r, env, &fx, flush: true)
    }

    /// A recorded change: written now, sent after the debounce window.
    mutating func recordChange(_ r: inout RunState, _ env: RuleEnv, _ fx: inout Effects) {
        r.dirty = true
        for action in run.handle(.changed(debounceMs: env.debounceMs, hasEntries: r.hasEntries)) {
            if case .stage = action { stage(&r, env, &fx, flush: false) } else { perform(action, env, &fx) }
        }
    }

    /// Turns what ``RunMachine`` decided into effects (`.stage` on the run in `run.current`).
    mutating func perform(_ actions: [RunMachine.Action], _ env: RuleEnv, _ fx: inout Effects) {
        for action in actions { perform(action, env, &fx) }
    }

    private mutating func perform(_ action: RunMachine.Action, _ env: RuleEnv, _ fx: inout Effects) {
        switch action {
        case .stage:
            guard var r = run.current else { return }
            run.current = nil  // keep the run's buffers uniquely referenced
            stage(&r, env, &fx, flush: false)
            run.current = r
        case .reportReplaced(let runId):
            fx.diag("run-replaced", "a new run was started; this run records nothing more", runId)
        case .write:
            requestWrite(env, &fx)
        case .scheduleTimer(let ms, let gen):
            fx.run(.scheduleTimer(afterMs: ms, generation: gen))
        case .cancelTimer(let token):
            fx.run(.cancelTimer(token))
        }
    }

    /// Builds the next snapshot of `r` (seq + 1), makes it the run's outbox item and stages it:
    /// written first, handed to delivery once the write finished or `persistTimeoutMs` passed.
    mutating func stage(_ r: inout RunState, _ env: RuleEnv, _ fx: inout Effects, flush: Bool, at: Int64? = nil) {
        guard r.hasEntries else { return }
        let t = at ?? r.time(env.now)
        let seq = r.lastSeq + 1
        let payload = r.snapshot(seq: seq, sentAt: t)
        r.lastSeq = seq
        if !r.completed { r.lastActiveAt = t }
        r.dirty = false
        let item = Item(seq: seq, payload: payload)
        outboxes[r.runId] = item
        held.remove(r.runId)
        let d = delivery(r.runId, env, &fx)
        staging += 1
        fx.run(.stage(item, d, flush: flush))
    }

    /// A resumable run is abandoned by a start (<doc:Storage#Abandoned-run>): its unsent change
    /// is still sent.
    mutating func abandonResumable(_ env: RuleEnv, _ fx: inout Effects) {
        guard var r = resumable else { return }
        session = .awaiting(resumable: nil)
        if r.dirty && r.hasEntries && !r.completed { stage(&r, env, &fx, flush: false) }
    }

    /// Staged snapshot `item`'s write finished (`result`), or `persistTimeoutMs` passed;
    /// `covered`: the outbox's ledger covers its seq (<doc:Delivery#Persist-before-send>). The
    /// first hold of this tracker is reported.
    mutating func handedOver(_ item: Item, result: PersistResult, covered: Bool, _ fx: inout Effects) -> StagedVerdict {
        staging -= 1
        if optedOut { return .dropped }
        // A snapshot whose seq storage has not reserved is held until a write lands: sent now, a
        // resumed run could send that seq again with another body. Only a write that finished
        // can hold it: one still under way after `persistTimeoutMs` lets it go, as in the
        // reference (a kill before that write lands is the cost); holding it behind a write that
        // never completes would hold every later snapshot, the completion included (issue 29).
        guard result != .timedOut, !covered else { return .send }
        if !heldForStorageReported {
            heldForStorageReported = true
            fx.diag(
                "storage",
                "snapshot seq \(item.seq) is held until storage takes a write: storage has not recorded that its seq is used, so sending it could let a resumed run reuse the seq",
                item.payload.runId)
        }
        return .hold
    }

    /// Delivery settled snapshot `item` (`rejected`: the reason the ingest gave, when it refused it).
    mutating func settled(_ item: Item, rejected: String??, _ env: RuleEnv, _ fx: inout Effects) {
        let id = item.payload.runId
        settled[id] = max(settled[id] ?? 0, item.seq)
        if let o = outboxes[id], o.seq <= item.seq { outboxes[id] = nil }
        if let rejected {
            fx.diag("rejected", "snapshot seq \(item.seq) was rejected: \(rejected ?? "no reason")", id)
        }
        requestWrite(env, &fx)
    }

    /// What ``StoredReadMachine`` needs to know of this state.
    func readContext(destination: String?) -> StoredReadMachine.Context {
        var handedNothing = false
        if case .nothing = handover.handedRun { handedNothing = true }
        return StoredReadMachine.Context(
            destination: destination, handoffRefused: handover.isRefused, destinationChangedReported: destinationChangedReported,
            settled: settled, outboxSeqs: outboxes.mapValues(\.seq), handedNothing: handedNothing, sessionStarted: sessionStarted,
            hasCurrent: run.current != nil, predecessorDone: handover.predecessorDone, disposed: run.disposed)
    }

    /// Applies what ``StoredReadMachine`` decided on the stored-state read (<doc:Storage#Reading-at-creation>).
    mutating func applyRead(_ actions: [StoredReadMachine.Action], _ env: RuleEnv, _ fx: inout Effects) {
        for action in actions {
            switch action {
            case .diagnose(let code, let message): fx.diag(code, message)
            case .persistenceOff: persistenceOff = true
            case .storedRun(let mark): if env.hasStore { fx.run(.setStored(mark.records)) }
            case .destinationChangedReported: destinationChangedReported = true
            case .adoptOutbox(let id, let item, let deliver):
                outboxes[id] = item
                if deliver {
                    fx.run(.enqueue(delivery(id, env, &fx), item))
                } else {
                    held.insert(id)
                }
            case .keepResumable(let r): session = .awaiting(resumable: r)
            case .stage(var r): stage(&r, env, &fx, flush: false)
            case .write: requestWrite(env, &fx)
            }
        }
    }

    /// A write of a disposed predecessor landed after this tracker's read: write this state
    /// again when it has anything of its own to store.
    mutating func lateWriteLanded(_ env: RuleEnv, _ fx: inout Effects) {
        let hasRun: Bool
        if case .nothing = handover.handedRun { hasRun = false } else { hasRun = true }
        guard !run.disposed, sessionStarted || hasRun || handover.isRefused else { return }
        requestWrite(env, &fx)
    }

    /// The predecessor's last attempts are answered (<doc:HandOver>, S3 and X3): applies what
    /// ``HandoverMachine`` decided. `stored` and `writing` are the outbox's ledger.
    mutating func adoptLeftover(
        _ left: Leftover, accepted: Bool, stored: StoredRunMark?, writing: StoredRunMark?, _ env: RuleEnv, _ fx: inout Effects
    ) {
        handover = handover.leftoverAdopted
        let ctx = HandoverMachine.Context(
            destinationChangedReported: destinationChangedReported, settled: settled, outboxes: outboxes, held: held,
            disposed: run.disposed, hasStore: env.hasStore, writeFailed: writeFailed, storedRun: stored, writing: writing)
        for action in HandoverMachine.leftoverAnswered(left, accepted: accepted, ctx) {
            if optedOut {
                // Opted out: the predecessor's unsent snapshots are dropped, never sent.
                switch action {
                case .take, .deliver, .holdForStorage, .write: continue
                default: break
                }
            }
            switch action {
            case .diagnose(let code, let message): fx.diag(code, message)
            case .destinationChangedReported: destinationChangedReported = true
            case .settled(let id, let seq): settled[id] = seq
            case .take(let id, let item):
                outboxes[id] = item
                held.insert(id)
            case .drop(let id): outboxes[id] = nil
            case .deliver(let id, let item): fx.run(.enqueue(delivery(id, env, &fx), item))
            case .holdForStorage(let id, let item):
                // A snapshot the predecessor held for storage stays held here (issue 14 item 5).
                _ = delivery(id, env, &fx)
                fx.run(.holdForStorage(item))
            case .clearHeld: held = []
            case .write: requestWrite(env, &fx)
            }
        }
    }
}
