import TrackerCore

typealias Item = Outbound<OnboardingRunSnapshot>

/// An onboarding run tracker (see <doc:GettingStarted>). Independent instances are for tests or two
/// flows at once; trackers live at the same time must use distinct storage keys.
///
/// No method throws; recording methods never wait for storage or the network.
public final class OnboardingRunTracker: Sendable {
    struct State: Sendable {
        /// The run in session, its generation, the debounce window and disposal (``RunMachine``).
        var run = RunMachine()
        /// The run in session (for tests; the tracker uses `run.current`).
        var current: RunState? {
            get { run.current }
            _modify { yield &run.current }
        }
        /// Where this tracker's session stands: before its first `start()`/`resume()`, with the
        /// run a `resume()` would continue, or in session (the run is `current`).
        var session: SessionPhase = .awaiting(resumable: nil)
        var sessionStarted: Bool { session.started }
        var resumable: RunState? { session.resumable }
        /// The hand-over from the predecessor on the storage key (``HandoverMachine``).
        var handover: HandoverMachine.Phase = .none
        var outboxes: [String: Item] = [:]
        var held: Set<String> = []
        var settled: [String: Int] = [:]
        var deliveries: [String: DeliveryRuntime<OnboardingRunSnapshot>] = [:]
        /// Run ids of `deliveries` in creation order (dispose closes them in this order).
        var deliveryOrder: [String] = []
        var persistenceOff = false
        var destinationChangedReported = false
        var staging = 0
        var slowReadStarted = false
        var slowReadReported = false
        /// The last write that finished failed (a full disk, a read-only directory): storage did
        /// not take what it had to reserve. A write that has merely not finished never sets it.
        /// Inherited from the predecessor at creation.
        var writeFailed = false
        /// The drain published at `dispose()` (with storage).
        var drain: Deferred<Void>?
        var heldForStorageReported = false
        /// Each outbox body's JSON for the stored state, built once per snapshot.
        var storedBodies: [String: (seq: Int, json: JSONValue)] = [:]
        var leftover: Deferred<Leftover>?
    }

    struct Effects {
        var diagnostics: [Diagnostic] = []
        var actions: [() -> Void] = []
        mutating func diag(_ code: String, _ message: String, _ runId: String? = nil) {
            diagnostics.append(Diagnostic(code: code, message: message, runId: runId))
        }
        mutating func run(_ a: @escaping () -> Void) { actions.append(a) }
    }

    let config: OnboardingRunConfiguration
    let clock: any TrackerClock
    let scheduler: any TrackerScheduler
    let onDiagnostic: DiagnosticHandler
    let sinkObject: AnyObject & Sendable
    let destination: String?
    let store: SerialStore?
    /// Core's snapshot outbox, write then send: every write of the whole state goes through it,
    /// requests made while a write waits join it, and a staged snapshot is handed over once the
    /// write after it finished, or `persistTimeoutMs` passed.
    let persister: SnapshotOutbox?
    let readDeferred = Deferred<Void>()
    let state = Locked(State())
    private let selfId = Locked<ObjectIdentifier?>(nil)
    /// Set by `dispose()`: the tracker keeps itself until its hand-over duties are over (its
    /// leftover completed, its drain done), so that a tracker the app releases at once, as
    /// `configure()` does, still adopts its predecessor's leftover, completes its own, lands its
    /// queued writes and runs its read. Both are bounded (<doc:HandOver>, D6 and D8).
    private let keepAlive = Locked<OnboardingRunTracker?>(nil)

    /// Creates an independent tracker. It claims the hand-over of the tracker disposed last on
    /// its storage key (in this process) and reads the stored state in the background.
    public init(configuration: OnboardingRunConfiguration) {
        config = configuration
        clock = configuration.clock ?? SystemClock()
        scheduler = configuration.scheduler ?? SystemScheduler.shared
        onDiagnostic = Diagnostics.stamped(
            .onboarding, configuration.onDiagnostic ?? Diagnostics.systemLog(subsystem: LogSubsystem.onboarding, prefix: "rocalytics-sdk"))
        sinkObject = configuration.sink as AnyObject & Sendable
        destination = configuration.sink.destination
        let handlerBox = Locked<(@Sendable (String) -> Void)?>(nil)
        let landedBox = Locked<(@Sendable (Bool) -> Void)?>(nil)
        // A timeout of 0 hands a snapshot over at once (the outbox reads `<= 0` as "no bound").
        let timeoutMs = max(1, configuration.persistTimeoutMs)
        if let storage = configuration.storage {
            let observed = LandingObserverStorage(storage) { landedBox.value?($0) }
            persister = SnapshotOutbox(
                storage: observed, key: configuration.storageKey, scheduler: scheduler,
                policy: .writeThenSend(timeoutMs: timeoutMs), reportsEveryFailure: true
            ) { handlerBox.value?($0) }
        } else {
            persister = nil
        }
        store = persister?.store
        let me = ObjectIdentifier(self)
        selfId.withLock { $0 = me }
        handlerBox.withLock { $0 = { [weak self] message in self?.emit([Diagnostic(code: "storage", message: message)]) } }
        let registry = configuration.registry
        let key = configuration.storageKey
        landedBox.withLock {
            $0 = { [weak self] landed in
                guard let self, landed, self.state.withLock({ $0.run.disposed }) else { return }
                registry.lateWriteLanded(key: key, from: me)
            }
        }
        // What the stored state holds as resumable (the outbox's ledger: from the read, the
        // predecessor, or the last write that landed) is updated before this runs.
        persister?.observeWrites { [weak self] landed in self?.writeFinished(landed: landed) }

        let (handoff, drain, conflict) = registry.register(key: key, tracker: me, hasStorage: store != nil)
        var fx = Effects()
        if conflict {
            fx.diag("storage", "another live tracker with storage already uses storageKey \"\(key)\"; use one key per tracker")
        }
        // 1. Take in the hand-over (state only: nothing can run yet).
        var same = false
        if let handoff {
            same = sameDestination(handoff.sink, handoff.destination, sinkObject, destination)
            state.withLock { s in
                s.handover = same ? .accepted(handoff.run, leftoverPending: true) : .refused(leftoverPending: true)
                if same {
                    if let mark = handoff.storedRun { persister?.setStored(mark.records) }
                    s.writeFailed = handoff.writeFailed
                    if case .run(let r) = handoff.run { s.session = .awaiting(resumable: r) }
                    for (id, item) in handoff.outboxes {
                        s.outboxes[id] = item
                        s.held.insert(id)
                    }
                } else {
                    if case .run = handoff.run {
                        s.destinationChangedReported = true
                        fx.diag(
                            "destination-changed", "the previous tracker's run in progress was for another destination and is discarded")
                    }
                }
            }
        }
        // 2. Queue the one read first: every write of this tracker is queued behind it (<doc:Storage#When-it-is-written>),
        //    even one caused by a delivery that starts from step 3 on another thread.
        if let store {
            let me2 = me
            let readDeferred = self.readDeferred
            store.enqueueSaveWith({ [weak self] in
                if let drain { _ = await awaitCancellable { cb in drain.onComplete { _ in cb() } } }
                // A tracker released before its read ran still completes the read, so that a
                // disposed one's drain (which waits on it) ends now, not after the bound.
                guard let self else {
                    readDeferred.complete(())
                    return .skip
                }
                registry.armLateWrites(key: key, tracker: me2) { [weak self] in self?.lateWriteLanded() }
                let raw = await self.readStored()
                self.processRead(raw)
                return .skip
            })
        } else {
            readDeferred.complete(())
        }
        // 3. Adopt the predecessor's leftover once its last attempts are answered (possibly now).
        if let handoff {
            let accepted = same
            handoff.leftover.onComplete { [weak self] left in self?.adoptLeftover(left, accepted: accepted) }
        }
        finish(fx)
    }

    // MARK: Effects

    func emit(_ diagnostics: [Diagnostic]) {
        for d in diagnostics { onDiagnostic(d) }
    }

    func finish(_ fx: Effects) {
        for a in fx.actions { a() }
        emit(fx.diagnostics)
    }

    var nowRaw: Int64 { clock.nowMs() }

    // MARK: start

    /// Starts a new run (never waits for storage). An invalid start returns a run that records
    /// nothing and reports `invalid-start`.
    public func start(_ options: StartOptions) -> OnboardingRun {
        var fx = Effects()
        if state.withLock({ $0.run.disposed }) {
            fx.diag("disposed", "start called on a disposed tracker")
            finish(fx)
            return OnboardingRun(runId: IDs.uuidV7(nowMs: nowRaw), tracker: nil, generation: 0)
        }
        var problems: [String] = []
        var ctx: RunContextInput?
        switch config.context {
        case .value(let v): ctx = v
        case .provider(let p):
            do { ctx = try p() } catch { problems.append("the context closure failed") }
        }
        let spec = StartValidation.spec(options, context: ctx, problems: &problems)
        let runId = mintRunId(&fx)
        if !problems.isEmpty {
            fx.diag("invalid-start", "start refused: " + problems.joined(separator: "; "))
            finish(fx)
            return OnboardingRun(runId: runId, tracker: nil, generation: 0)
        }
        for w in spec.warnings { fx.diag(w.code, w.message) }
        var props = JSONObject()
        if let p = options.properties { applyProperties(p, to: &props, runId: nil, fx: &fx) }

        let run: OnboardingRun = state.withLock { s in
            if s.run.disposed { return OnboardingRun(runId: runId, tracker: nil, generation: 0) }
            let now = nowRaw
            // The live run, if in progress, is replaced: its debounced change goes out first.
            perform(s.run.handle(.begin), &s, &fx)
            abandonResumable(&s, fx: &fx)
            s.session = .started
            guard var r = RunState(runId: runId, spec: spec, lastActiveAt: now) else {
                // Cannot happen with validated input; never hand a sink a snapshot outside contract v1.
                fx.diag("internal-error", "the run's start does not fit contract v1; nothing is recorded", runId)
                return OnboardingRun(runId: runId, tracker: nil, generation: 0)
            }
            let map = scalarMap(props)
            r.setProperties(map, header: r.headerSize(properties: map))
            s.run.current = r
            requestWrite(&s, fx: &fx)
            return OnboardingRun(runId: runId, tracker: self, generation: s.run.generation)
        }
        finish(fx)
        return run
    }

    private func mintRunId(_ fx: inout Effects) -> String {
        if let make = config.uuid {
            if let raw = try? make() {
                let lower = raw.lowercased()
                if IDs.isLowercaseUUID(lower) { return lower }
            }
            fx.diag("invalid-uuid", "the uuid option did not return a UUID; using a UUIDv7")
        }
        return IDs.uuidV7(nowMs: nowRaw)
    }

    /// A resumable run is abandoned by a start (<doc:Storage#Abandoned-run>).
    func abandonResumable(_ s: inout State, fx: inout Effects) {
        guard var r = s.resumable else { return }
        s.session = .awaiting(resumable: nil)
        if r.dirty && r.hasEntries && !r.completed {
            buildAndStage(&r, s: &s, fx: &fx, flush: false)
        }
    }

    // MARK: Run methods

    /// Checks that `run` may record; returns false after reporting why not.
    private func guardRun(_ run: OnboardingRun, _ s: State, _ fx: inout Effects, allowCompleted: Bool = false) -> Bool {
        switch s.run.verdict(runId: run.runId, generation: run.generation, handleCompleted: run.isCompleted) {
        case .record:
            return true
        case .disposed:
            fx.diag("disposed", "the tracker was disposed; nothing is recorded", run.runId)
        case .inactive:
            fx.diag("run-inactive", "a newer run replaced this one; nothing is recorded", run.runId)
        case .completed(live: true) where allowCompleted:
            return true
        case .completed(live: false) where allowCompleted:
            // `background()` still skips the retry backoff of an unsent completion (<doc:InputValidation#Step-calls>).
            if let d = s.deliveries[run.runId] { fx.run { d.flush() } }
        case .completed:
            fx.diag("run-completed", "the run is completed; nothing is recorded", run.runId)
        }
        return false
    }

    private func now(_ r: RunState) -> Int64 { max(nowRaw, r.floor) }

    func enterStep(_ run: OnboardingRun, _ stepKey: String) {
        var fx = Effects()
        state.withLock { s in
            guard guardRun(run, s, &fx), var r = s.run.current else { return }
            s.run.current = nil  // keep the run's buffers uniquely referenced: recording stays O(1)
            defer { s.run.current = r }
            guard r.manifestKeys.contains(stepKey) else {
                fx.diag(
                    "unknown-step",
                    "a step key that is not in the manifest (\(stepKey.unicodeScalars.count) characters; not repeated here, it may not be a key)",
                    r.runId)
                return
            }
            let t = now(r)
            if let last = r.steps.last, last.stepKey == stepKey, last.exitedAt == nil {
                fx.diag("already-on-step", "step \"\(stepKey)\" is already the open entry", r.runId)
                return
            }
            var changed = false
            if r.truncated {
                if let i = r.steps.indices.last, r.steps[i].exitedAt == nil {
                    r.steps[i].setExit(t)
                    changed = true
                }
                fx.diag("truncated", "recording stopped at 500 entries or 261,120 bytes", r.runId)
            } else if r.steps.count >= maxEntries || r.measure(extra: r.entryCost(stepKey)) > recordingBudget {
                r.truncated = true
                if let i = r.steps.indices.last, r.steps[i].exitedAt == nil { r.steps[i].setExit(t) }
                r.provisionalExit = false
                changed = true
                fx.diag("truncated", "recording stopped at 500 entries or 261,120 bytes", r.runId)
            } else {
                if let i = r.steps.indices.last, r.steps[i].exitedAt == nil { r.steps[i].setExit(t) }
                r.append(r.newEntry(stepKey, enteredAt: t))
                r.provisionalExit = false
                r.lastActiveAt = t
                changed = true
                run.lastStepKey.withLock { $0 = stepKey }
            }
            if changed { recordChange(&r, s: &s, fx: &fx) }
            s.run.current = r
        }
        finish(fx)
    }

    func exitStep(_ run: OnboardingRun, _ stepKey: String, _ answers: [AnswerInput]) {
        var fx = Effects()
        state.withLock { s in
            guard guardRun(run, s, &fx), var r = s.run.current else { return }
            s.run.current = nil  // keep the run's buffers uniquely referenced: recording stays O(1)
            defer { s.run.current = r }
            let n = r.steps.count
            let target: Int
            if n >= 1, r.steps[n - 1].stepKey == stepKey {
                target = n - 1
            } else if n >= 2, r.steps[n - 2].stepKey == stepKey {
                target = n - 2
            } else {
                fx.diag(
                    "not-current-step",
                    "step \"\(r.manifestKeys.contains(stepKey) ? stepKey : "?")\" is neither the current nor the previous entry", r.runId)
                return
            }
            let t = now(r)
            var changed = false
            var refused = false
            // One diagnostic per call and code, with the count and the first names (not one per dropped answer).
            var invalid = DropTally()
            var overCap = DropTally()
            for a in answers {
                guard let json = StartValidation.answer(a) else {
                    invalid.add(InputPatterns.isKey(a.questionKey) ? a.questionKey : "?")
                    continue
                }
                if r.truncated || refused {
                    refused = true
                    continue
                }
                guard let ans = AnswerState(json: json) else {
                    invalid.add(a.questionKey)
                    continue
                }
                let (delta, idx) = r.steps[target].sizeDelta(for: ans)
                if idx == nil && r.steps[target].answers.count >= 50 {
                    overCap.add(a.questionKey)
                    continue
                }
                if r.measure(extra: delta) > recordingBudget {
                    r.truncated = true
                    refused = true
                    changed = true
                    continue
                }
                r.applyAnswer(ans, entry: target, at: idx, delta: delta)
                changed = true
            }
            if let m = invalid.message(one: "answer", many: "answers", "invalid and dropped") {
                fx.diag("invalid-answer", m, r.runId)
            }
            if let m = overCap.message(one: "answer", many: "answers", "dropped: an entry holds at most 50 questions") {
                fx.diag("too-many-answers", m, r.runId)
            }
            // Only a valid answer that recording refused reports `truncated`; answers that are
            // all invalid report `invalid-answer` alone (<doc:InputValidation#Answers>).
            if refused {
                fx.diag("truncated", "recording stopped at 500 entries or 261,120 bytes", r.runId)
            }
            if target == n - 1 && r.steps[target].exitedAt == nil {
                r.steps[target].setExit(t)
                r.provisionalExit = !r.truncated
                changed = true
            }
            if r.truncated { r.provisionalExit = false }
            if changed { recordChange(&r, s: &s, fx: &fx) }
            s.run.current = r
        }
        finish(fx)
    }

    /// Validates and merges `patch` into `props` (<doc:InputValidation#Properties>).
    @discardableResult
    func applyProperties(_ patch: RunProperties, to props: inout JSONObject, runId: String?, fx: inout Effects) -> Bool {
        var changed = false
        // One diagnostic per call and code, with the count and the first names (not one per dropped key).
        var invalid = DropTally()
        var overCap = DropTally()
        for (k, v) in patch.entries {
            guard let json = StartValidation.property(k, v) else {
                invalid.add(InputPatterns.isPropertyKey(k) ? k : "?")
                continue
            }
            if let old = props[k] {
                if old != json {
                    props[k] = json
                    changed = true
                }
            } else if props.count >= 20 {
                overCap.add(k)
            } else {
                props.appendUnchecked(k, json)
                changed = true
            }
        }
        if let m = invalid.message(one: "property", many: "properties", "invalid and dropped") {
            fx.diag("invalid-property", m, runId)
        }
        if let m = overCap.message(one: "property", many: "properties", "dropped: a run holds at most 20 properties") {
            fx.diag("too-many-properties", m, runId)
        }
        return changed
    }

    func setProperties(_ run: OnboardingRun, _ patch: RunProperties) {
        var fx = Effects()
        state.withLock { s in
            guard guardRun(run, s, &fx), var r = s.run.current else { return }
            s.run.current = nil  // keep the run's buffers uniquely referenced: recording stays O(1)
            defer { s.run.current = r }
            var props = r.properties.wireJSON().objectValue ?? JSONObject()
            let changed = applyProperties(patch, to: &props, runId: r.runId, fx: &fx)
            guard changed else { return }
            if r.truncated {
                fx.diag("truncated", "recording stopped at 500 entries or 261,120 bytes", r.runId)
                return
            }
            let map = scalarMap(props)
            let header = r.headerSize(properties: map)
            if r.measure(header: header) > recordingBudget {
                r.truncated = true
                r.provisionalExit = false
                fx.diag("truncated", "recording stopped at 500 entries or 261,120 bytes", r.runId)
            } else {
                r.setProperties(map, header: header)
            }
            recordChange(&r, s: &s, fx: &fx)
            s.run.current = r
        }
        finish(fx)
    }

    func complete(_ run: OnboardingRun) {
        var fx = Effects()
        state.withLock { s in
            guard guardRun(run, s, &fx), var r = s.run.current else { return }
            s.run.current = nil  // keep the run's buffers uniquely referenced: recording stays O(1)
            defer { s.run.current = r }
            guard r.hasEntries else {
                fx.diag("no-steps", "complete() before any entry: nothing is sent", r.runId)
                return
            }
            let t = now(r)
            r.completed = true
            r.completedAt = t
            run.completedFlag.withLock { $0 = true }
            let last = r.steps.count - 1
            if !r.truncated || r.steps[last].exitedAt == nil { r.steps[last].setExit(t) }
            r.provisionalExit = false
            perform(s.run.handle(.flushed), &s, &fx)
            buildAndStage(&r, s: &s, fx: &fx, flush: true, at: t)
            s.run.current = r
        }
        finish(fx)
    }

    func background(_ run: OnboardingRun) {
        var fx = Effects()
        state.withLock { s in
            guard guardRun(run, s, &fx, allowCompleted: true), var r = s.run.current else { return }
            s.run.current = nil
            defer { s.run.current = r }
            guard r.hasEntries else {
                fx.diag("no-steps", "background() before any entry: nothing is sent", r.runId)
                return
            }
            if r.completed {
                if let d = s.deliveries[r.runId] { fx.run { d.flush() } }
                return
            }
            perform(s.run.handle(.flushed), &s, &fx)
            buildAndStage(&r, s: &s, fx: &fx, flush: true)
            s.run.current = r
        }
        finish(fx)
    }

    // MARK: Building and sending

    /// A recorded change: written now, sent after the debounce window.
    func recordChange(_ r: inout RunState, s: inout State, fx: inout Effects) {
        r.dirty = true
        for action in s.run.handle(.changed(debounceMs: config.debounceMs, hasEntries: r.hasEntries)) {
            if case .stage = action { buildAndStage(&r, s: &s, fx: &fx, flush: false) } else { perform(action, &s, &fx) }
        }
    }

    /// Performs what ``RunMachine`` decided, `.stage` on the run in `s.run.current`.
    func perform(_ actions: [RunMachine.Action], _ s: inout State, _ fx: inout Effects) {
        for action in actions { perform(action, &s, &fx) }
    }

    private func perform(_ action: RunMachine.Action, _ s: inout State, _ fx: inout Effects) {
        switch action {
        case .stage:
            guard var r = s.run.current else { return }
            s.run.current = nil  // keep the run's buffers uniquely referenced
            buildAndStage(&r, s: &s, fx: &fx, flush: false)
            s.run.current = r
        case .reportReplaced(let runId):
            fx.diag("run-replaced", "a new run was started; this run records nothing more", runId)
        case .write:
            requestWrite(&s, fx: &fx)
        case .scheduleTimer(let ms, let gen):
            let token = scheduler.schedule(afterMs: ms) { [weak self] in self?.debounceFired(gen) }
            perform(s.run.handle(.timerScheduled(token, generation: gen)), &s, &fx)
        case .cancelTimer(let token):
            scheduler.cancel(token)
        }
    }

    private func debounceFired(_ gen: UInt64) {
        var fx = Effects()
        state.withLock { s in perform(s.run.handle(.timerFired(generation: gen)), &s, &fx) }
        finish(fx)
    }

    func delivery(_ runId: String, _ s: inout State) -> DeliveryRuntime<OnboardingRunSnapshot> {
        if let d = s.deliveries[runId] { return d }
        let sink = config.sink
        let d = DeliveryRuntime<OnboardingRunSnapshot>(
            send: { try await sink.send($0) }, scheduler: scheduler, retry: config.retry, attemptTimeoutMs: config.attemptTimeoutMs,
            onSettled: { [weak self] item, result in self?.settled(item, result) },
            onTransient: { [weak self] _, _ in self?.checkLeftover() }
        )
        s.deliveries[runId] = d
        s.deliveryOrder.append(runId)
        if s.run.disposed { d.close() }
        return d
    }

    /// Builds the next snapshot of `r` (seq + 1), makes it the run's outbox item and stages it:
    /// written first, handed to delivery once the write finished or `persistTimeoutMs` passed.
    func buildAndStage(_ r: inout RunState, s: inout State, fx: inout Effects, flush: Bool, at: Int64? = nil) {
        guard r.hasEntries else { return }
        let t = at ?? now(r)
        let seq = r.lastSeq + 1
        let payload = r.snapshot(seq: seq, sentAt: t)
        r.lastSeq = seq
        if !r.completed { r.lastActiveAt = t }
        r.dirty = false
        let item = Item(seq: seq, payload: payload)
        s.outboxes[r.runId] = item
        s.held.remove(r.runId)
        let d = delivery(r.runId, &s)
        s.staging += 1
        let handOver: @Sendable (PersistResult) -> Void = { [weak self] result in
            guard let self else { return }
            let id = item.payload.runId
            let (send, report) = self.state.withLock { s -> (Bool, Bool) in
                s.staging -= 1
                // A snapshot whose seq storage has not reserved is held until a write lands:
                // sent now, a resumed run could send that seq again with another body. Only a
                // write that finished can hold it: one still under way after `persistTimeoutMs`
                // lets it go, as in the reference (a kill before that write lands is the cost,
                // <doc:Delivery#Persist-before-send>); holding it behind a write that never
                // completes would hold every later snapshot, the completion included (issue 29).
                guard self.persister != nil, result != .timedOut, !self.mayLeave(item, s) else { return (true, false) }
                defer { s.heldForStorageReported = true }
                return (false, !s.heldForStorageReported)
            }
            if send {
                // A newer snapshot leaves: an older one held for storage is not worth sending.
                self.persister?.dropHeld(key: id, olderThan: item.seq)
            } else {
                // Held in the outbox until a landed write covers its seq (outside the lock: a
                // write that covers it already releases it at once).
                self.persister?.hold(key: id, seq: item.seq) { [weak self] in self?.releaseHeld(item) }
            }
            if report {
                self.emit([
                    Diagnostic(
                        code: "storage",
                        message:
                            "snapshot seq \(item.seq) is held until storage takes a write: storage has not recorded that its seq is used, so sending it could let a resumed run reuse the seq",
                        runId: item.payload.runId)
                ])
            }
            // Every staged snapshot is handed over when its write finished or timed out, even
            // when a newer one was built meanwhile (<doc:Delivery#Persist-before-send>): latest-wins applies among handed
            // snapshots (rule 2 of TrackerCore's Delivery article), so a newer one replaces it only once it is handed over
            // itself. (Dropping it here starved the sink while writes were slow, issue 15.)
            if send { d.enqueue(item) }
            if flush { d.flush() }
            self.checkLeftover()
        }
        if let persister {
            fx.run { [weak self] in
                persister.request(compose: { [weak self] in self?.composeWrite() ?? .skip }, handOver: handOver)
            }
        } else {
            fx.run { handOver(.landed) }
        }
    }

    private func settled(_ item: Item, _ result: SinkResult) {
        var fx = Effects()
        state.withLock { s in
            let id = item.payload.runId
            s.settled[id] = max(s.settled[id] ?? 0, item.seq)
            if let o = s.outboxes[id], o.seq <= item.seq { s.outboxes[id] = nil }
            if result.outcome == .rejected {
                fx.diag("rejected", "snapshot seq \(item.seq) was rejected: \(result.reason ?? "no reason")", id)
            }
            requestWrite(&s, fx: &fx)
        }
        finish(fx)
        checkLeftover()
    }

    // MARK: Storage

    /// Requests a write of the whole state, composed when it runs (joining one already waiting).
    func requestWrite(_ s: inout State, fx: inout Effects, evenIfDisposed: Bool = false) {
        guard let persister, !s.run.disposed || evenIfDisposed else { return }
        fx.run { [weak self] in
            persister.request(compose: { [weak self] in self?.composeWrite() ?? .skip })
        }
    }

    func composeWrite() -> OutboxWrite {
        state.withLock { s in s.persistenceOff ? .skip : compose(&s) }
    }

    /// The whole stored state, and what it records for the outbox's ledger: the run it holds as
    /// resumable and the seq it reserves (``StoredRunMark``).
    func compose(_ s: inout State) -> OutboxWrite {
        var current: JSONValue = .null
        var mark = StoredRunMark.none
        if s.run.current != nil, !s.run.current!.completed {
            // The live run reserves seqs ahead (issue 14 item 5).
            let reserved = s.run.current!.lastSeq + seqReservation
            current = s.run.current!.storedJSON(seqReserved: reserved)
            mark = StoredRunMark(runId: s.run.current!.runId, reserved: reserved)
        } else if case .awaiting(var r?) = s.session {
            // Nothing was sent for it this session: its reservation stays what it was.
            current = r.storedJSON(seqReserved: r.lastSeq)
            mark = StoredRunMark(runId: r.runId, reserved: r.lastSeq)
            s.session = .awaiting(resumable: r)
        }
        var outboxes = JSONObject()
        var bodies: [String: (seq: Int, json: JSONValue)] = [:]
        for (id, item) in s.outboxes.sorted(by: { $0.key < $1.key }) {
            let body: JSONValue
            if let b = s.storedBodies[id], b.seq == item.seq { body = b.json } else { body = item.payload.wireJSON() }
            bodies[id] = (item.seq, body)
            outboxes.appendUnchecked(id, .object(["seq": .number(Double(item.seq)), "body": body]))
        }
        s.storedBodies = bodies
        if current == .null && outboxes.isEmpty { return OutboxWrite(.remove, records: mark.records) }
        var o = JSONObject()
        o.appendUnchecked("format", 1)
        if let destination { o.appendUnchecked("destination", .string(destination)) }
        o.appendUnchecked("current", current)
        o.appendUnchecked("outboxes", .object(outboxes))
        return OutboxWrite(.value(.object(o)), records: mark.records)
    }

    /// Whether `item` may go to delivery now: no stored state this tracker knows of (landed or
    /// being written) could make a resumed run build its seq again.
    func mayLeave(_ item: Item, _ s: State) -> Bool {
        persister?.covers(key: item.payload.runId, seq: item.seq) ?? true
    }

    /// A write of this tracker finished: landed (its state is now what is stored) or failed.
    func writeFinished(landed: Bool) {
        state.withLock { $0.writeFailed = !landed }
    }

    /// A snapshot held for storage is covered by a landed write now (the outbox releases it).
    func releaseHeld(_ item: Item) {
        let d = state.withLock { $0.deliveries[item.payload.runId] }
        d?.enqueue(item)
    }

    enum RawRead {
        case ok(String?)
        case failed
    }

    func readStored() async -> RawRead {
        guard let store else { return .ok(nil) }
        do { return .ok(try await store.storage.getItem(config.storageKey)) } catch {
            do { return .ok(try await store.storage.getItem(config.storageKey)) } catch { return .failed }
        }
    }

    /// Applies the stored-state read (<doc:Storage#Reading-at-creation>): ``StoredReadMachine`` decides, this performs.
    func processRead(_ raw: RawRead) {
        let parsed = StoredReadMachine.parse(raw)
        var fx = Effects()
        state.withLock { s in
            var handedNothing = false
            if case .nothing = s.handover.handedRun { handedNothing = true }
            let ctx = StoredReadMachine.Context(
                destination: destination, handoffRefused: s.handover.isRefused, destinationChangedReported: s.destinationChangedReported,
                settled: s.settled, outboxSeqs: s.outboxes.mapValues(\.seq), handedNothing: handedNothing,
                sessionStarted: s.sessionStarted, hasCurrent: s.run.current != nil, predecessorDone: s.handover.predecessorDone,
                disposed: s.run.disposed)
            for action in StoredReadMachine.decide(parsed, ctx) {
                switch action {
                case .diagnose(let code, let message): fx.diag(code, message)
                case .persistenceOff: s.persistenceOff = true
                case .storedRun(let mark): persister?.setStored(mark.records)
                case .destinationChangedReported: s.destinationChangedReported = true
                case .adoptOutbox(let id, let item, let deliver):
                    s.outboxes[id] = item
                    if deliver {
                        let d = delivery(id, &s)
                        fx.run { d.enqueue(item) }
                    } else {
                        s.held.insert(id)
                    }
                case .keepResumable(let r): s.session = .awaiting(resumable: r)
                case .stage(var r): buildAndStage(&r, s: &s, fx: &fx, flush: false)
                case .write: requestWrite(&s, fx: &fx)
                }
            }
        }
        finish(fx)
        readDeferred.complete(())
    }

    /// A write of a disposed predecessor landed after this tracker's read: write our state again.
    private func lateWriteLanded() {
        var fx = Effects()
        state.withLock { s in
            let hasRun: Bool
            if case .nothing = s.handover.handedRun { hasRun = false } else { hasRun = true }
            guard !s.run.disposed, s.sessionStarted || hasRun || s.handover.isRefused else { return }
            requestWrite(&s, fx: &fx)
        }
        finish(fx)
    }

    // MARK: Hand-over

    /// The predecessor's last attempts are answered (<doc:HandOver>, S3 and X3): ``HandoverMachine``
    /// decides, this performs.
    private func adoptLeftover(_ left: Leftover, accepted: Bool) {
        var fx = Effects()
        let ledger = persister?.ledger
        let storedMark = ledger.map { StoredRunMark(records: $0.stored) }
        let writingMark = ledger?.writing.map { StoredRunMark(records: $0) }
        state.withLock { s in
            s.handover = s.handover.leftoverAdopted
            let ctx = HandoverMachine.Context(
                destinationChangedReported: s.destinationChangedReported, settled: s.settled, outboxes: s.outboxes, held: s.held,
                disposed: s.run.disposed, hasStore: store != nil, writeFailed: s.writeFailed, storedRun: storedMark,
                writing: writingMark)
            for action in HandoverMachine.leftoverAnswered(left, accepted: accepted, ctx) {
                switch action {
                case .diagnose(let code, let message): fx.diag(code, message)
                case .destinationChangedReported: s.destinationChangedReported = true
                case .settled(let id, let seq): s.settled[id] = seq
                case .take(let id, let item):
                    s.outboxes[id] = item
                    s.held.insert(id)
                case .drop(let id): s.outboxes[id] = nil
                case .deliver(let id, let item):
                    let d = delivery(id, &s)
                    fx.run { d.enqueue(item) }
                case .holdForStorage(let id, let item):
                    // A snapshot the predecessor held for storage stays held here (issue 14 item 5).
                    _ = delivery(id, &s)
                    fx.run { [weak self] in
                        self?.persister?.hold(key: id, seq: item.seq) { [weak self] in self?.releaseHeld(item) }
                    }
                case .clearHeld: s.held = []
                case .write: requestWrite(&s, fx: &fx)
                }
            }
        }
        finish(fx)
        checkLeftover()
    }

    /// Completes this tracker's leftover once disposed, the predecessor's leftover adopted, every
    /// staged send handed over and no attempt in flight (<doc:HandOver>, D6).
    func checkLeftover() {
        let ready = state.withLock { s -> (Deferred<Leftover>, Leftover)? in
            guard s.run.disposed, let left = s.leftover, !left.isComplete, s.handover.predecessorDone, s.staging == 0 else { return nil }
            for d in s.deliveries.values where d.isBusy { return nil }
            return (left, Leftover(unsent: s.outboxes, settled: s.settled))
        }
        if let (d, v) = ready { d.complete(v) }
        releaseIfDone()
    }

    /// Lets a disposed tracker go once its leftover is complete and its drain done.
    private func releaseIfDone() {
        let done = state.withLock { s in s.leftover?.isComplete == true && s.drain?.isComplete != false }
        guard done else { return }
        // Released outside the lock: this may be the last reference.
        let me = keepAlive.withLock { k -> OnboardingRunTracker? in
            defer { k = nil }
            return k
        }
        _ = me
    }

    // MARK: resume

    /// Resolves the run that was in progress (killed, or handed over by a reconfigure), restored,
    /// or `nil`. Waits for the stored-state read however long it takes; returns `nil` promptly
    /// when the calling task is cancelled (leaving the stored run where it was).
    public func resume(expected: StartOptions? = nil) async -> OnboardingRun? {
        var fx = Effects()
        let (disposed, startSlow) = state.withLock { s -> (Bool, Bool) in
            if s.run.disposed { return (true, false) }
            defer { s.slowReadStarted = true }
            return (false, !s.slowReadStarted && store != nil)
        }
        if disposed {
            fx.diag("disposed", "resume called on a disposed tracker")
            finish(fx)
            return nil
        }
        if startSlow {
            let ms = config.storageReadTimeoutMs
            scheduler.schedule(afterMs: ms) { [weak self] in self?.reportSlowRead() }
        }
        let completed = await awaitCancellable { cb in readDeferred.onComplete { _ in cb() } }
        guard completed, !Task.isCancelled else { return nil }

        var expectedSpec: RunSpec?
        var expectedInvalid = false
        if let expected {
            var problems: [String] = []
            let spec = StartValidation.spec(expected, context: nil, problems: &problems)
            if problems.isEmpty { expectedSpec = spec } else { expectedInvalid = true }
        }
        let result: OnboardingRun? = state.withLock { s in
            if s.run.disposed {
                fx.diag("disposed", "resume called on a disposed tracker")
                return nil
            }
            guard !s.sessionStarted, var r = s.resumable, !r.completed else { return nil }
            if expected != nil {
                // Typed values: an absent member equals a null one
                // (<doc:Delivery#What-the-ingest-answers>).
                let same = !expectedInvalid && expectedSpec.map { r.onboarding == $0.onboarding && r.manifest == $0.manifest } == true
                if !same {
                    fx.diag("resume-mismatch", "the stored run belongs to another onboarding identity or manifest", r.runId)
                    return nil
                }
            }
            s.session = .started
            perform(s.run.handle(.begin), &s, &fx)
            if r.hasEntries {
                let t = max(nowRaw, r.floor, r.lastActiveAt)
                restore(&r, now: t, fx: &fx)
                s.run.current = r
                requestWrite(&s, fx: &fx)
                buildAndStage(&r, s: &s, fx: &fx, flush: false)
            }
            s.run.current = r
            if !r.hasEntries { requestWrite(&s, fx: &fx) }
            return OnboardingRun(runId: r.runId, tracker: self, generation: s.run.generation, stepKey: r.steps.last?.stepKey)
        }
        finish(fx)
        return result
    }

    /// Reports, once per tracker, a stored-state read still running after `storageReadTimeoutMs`
    /// (<doc:Diagnostics>, `storage` (g)): from `resume()`'s timer, and from every bounded wait on the read (`idle()`, a
    /// disposed tracker's drain) that ran out.
    func reportSlowRead() {
        guard !readDeferred.isComplete else { return }
        let first = state.withLock { s -> Bool in
            defer { s.slowReadReported = true }
            return !s.slowReadReported
        }
        guard first else { return }
        let ms = config.storageReadTimeoutMs
        emit([Diagnostic(code: "storage", message: "the stored-state read has taken longer than \(ms) ms; still waiting")])
    }

    /// Drops null members so that absent == null when comparing (<doc:Delivery#What-the-ingest-answers>).
    static func canonical(_ v: JSONValue) -> JSONValue {
        switch v {
        case .object(let o):
            var out = JSONObject()
            for (k, x) in o.entries where !x.isNull { out.appendUnchecked(k, canonical(x)) }
            return .object(out)
        case .array(let a): return .array(a.map(canonical))
        default: return v
        }
    }

    /// The restore rule (<doc:Resume#The-restore-rule>).
    func restore(_ r: inout RunState, now t: Int64, fx: inout Effects) {
        let last = r.steps.count - 1
        if !r.truncated {
            if let exit = r.steps[last].exitedAt {
                if r.provisionalExit { r.steps[last].setExit(max(exit, r.lastActiveAt)) }
            } else {
                r.steps[last].setExit(max(r.lastActiveAt, r.steps[last].enteredAt))
            }
        }
        r.provisionalExit = false
        r.lastActiveAt = t
        if r.truncated { return }
        let key = r.steps[last].stepKey
        if r.steps.count >= maxEntries || r.measure(extra: r.entryCost(key)) > recordingBudget {
            r.truncated = true
            fx.diag("truncated", "recording stopped at 500 entries or 261,120 bytes", r.runId)
            return
        }
        r.append(r.newEntry(key, enteredAt: t))
    }

    // MARK: idle, dispose

    /// Waits, bounded, for the stored-state read (≤ `storageReadTimeoutMs`) and then for the
    /// queued writes (≤ `storageReadTimeoutMs` more). Never fails.
    public func idle() async {
        guard let store else { return }
        let ms = config.storageReadTimeoutMs
        let scheduler = self.scheduler
        let readDeferred = self.readDeferred
        let readOK = await waitBounded(ms) { cb in readDeferred.onComplete { _ in cb() } }
        guard readOK else {
            reportSlowRead()
            return
        }
        _ = await waitBounded(ms) { cb in
            scheduler.spawn {
                await store.idle()
                cb()
            }
        }
    }

    private func waitBounded(_ ms: Int64, _ register: @escaping (@escaping @Sendable () -> Void) -> Void) async -> Bool {
        await withCheckedContinuation { (c: CheckedContinuation<Bool, Never>) in
            boundedWait(ms: ms, scheduler: scheduler, register: register) { timedOut in c.resume(returning: !timedOut) }
        }
    }

    /// Stops recording and hands what is left to the next tracker on the same storage key.
    /// A change waiting on the debounce is sent, queued writes still land, and every unsent
    /// snapshot gets one last attempt. Idempotent.
    public func dispose() {
        var fx = Effects()
        let me = ObjectIdentifier(self)
        let published: (Handoff, Deferred<Void>?)? = state.withLock { s in
            guard !s.run.disposed else { return nil }
            perform(s.run.handle(.disposing), &s, &fx)
            perform(s.run.handle(.disposed), &s, &fx)
            let run: HandedRun
            if s.sessionStarted {
                if let r = s.run.current, !r.completed { run = .run(r) } else { run = .noRun }
            } else {
                run = s.handover.handedRun
            }
            let left = Deferred<Leftover>()
            s.leftover = left
            let handoff = Handoff(
                sink: sinkObject, destination: destination, run: run, outboxes: s.outboxes, leftover: left,
                storedRun: persister.map { StoredRunMark(records: $0.ledger.stored) }, writeFailed: s.writeFailed)
            // Run-creation order: the last attempts go out in an order the inputs decide.
            for id in s.deliveryOrder { if let d = s.deliveries[id] { fx.run { d.close() } } }
            let drain = store != nil ? Deferred<Void>() : nil
            s.drain = drain
            return (handoff, drain)
        }
        guard let (handoff, drain) = published else { return }
        keepAlive.withLock { $0 = self }
        drain?.onComplete { [weak self] _ in self?.releaseIfDone() }
        config.registry.publish(key: config.storageKey, tracker: me, handoff: handoff, drain: drain)
        finish(fx)
        if let drain, let store {
            let ms = config.storageReadTimeoutMs
            let scheduler = self.scheduler
            let readDeferred = self.readDeferred
            boundedWait(ms: ms, scheduler: scheduler, register: { cb in readDeferred.onComplete { _ in cb() } }) { [weak self] timedOut in
                if timedOut {
                    self?.reportSlowRead()
                    drain.complete(())
                    return
                }
                // The wait for the queued writes starts in a background step after the read wait,
                // as in the reference (where it follows an `await`): its bound then runs from a
                // moment after the caller's own synchronous work (a successor's `resume()` call
                // included), never before it.
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
        checkLeftover()
    }

    // MARK: Testing support

    /// The incremental completion-form measure and the real encoded size of the current run
    /// (for tests: the two must be equal).
    func debugMeasure() -> (incremental: Int, encoded: Int)? {
        state.withLock { s in
            guard let r = s.run.current, r.hasEntries else { return nil }
            return (r.measure(), r.completionFormBytes(now: max(nowRaw, r.floor)).count)
        }
    }
}

/// A tracker's session (the run lifecycle before and after its first `start()` or `resume()`).
enum SessionPhase: Sendable {
    /// No `start()` or `resume()` yet; `resumable` is the run a `resume()` would continue (from
    /// the predecessor's hand-over or the stored state), if any.
    case awaiting(resumable: RunState?)
    /// `start()` or `resume()` ran: the session's run is the tracker's `current`.
    case started

    var started: Bool {
        if case .started = self { return true }
        return false
    }

    var resumable: RunState? {
        if case .awaiting(let r) = self { return r }
        return nil
    }
}

/// Validated properties (scalars only) in their contract type.
func scalarMap(_ props: JSONObject) -> OrderedScalarMap {
    (try? OrderedScalarMap(json: .object(props), path: "$")) ?? OrderedScalarMap()
}

/// Counts what one recording call dropped for one reason, so that the call reports it once: the
/// diagnostic gives the count and names the first ``DropTally/namedAtMost`` entries (a key that
/// does not match its pattern is named `"?"`, since it may hold anything).
struct DropTally {
    /// How many dropped entries one diagnostic names; the rest are counted ("and 3 more").
    static let namedAtMost = 10
    private(set) var count = 0
    private var names: [String] = []

    mutating func add(_ key: String) {
        if names.count < Self.namedAtMost { names.append(key) }
        count += 1
    }

    /// The diagnostic's message, `nil` when nothing was dropped: `property "x" invalid and
    /// dropped`, or `12 properties ("a", "b", … and 2 more) invalid and dropped`.
    func message(one: String, many: String, _ what: String) -> String? {
        guard count > 0 else { return nil }
        let quoted = names.map { "\"\($0)\"" }
        if count == 1 { return "\(one) \(quoted[0]) \(what)" }
        let rest = count - names.count
        let list = quoted.joined(separator: ", ") + (rest > 0 ? " and \(rest) more" : "")
        return "\(count) \(many) (\(list)) \(what)"
    }
}
