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
        /// Live, then handing over once disposed, then released (``DisposalPhase``).
        var disposal = DisposalPhase.live
        var heldForStorageReported = false
        /// The app opted out (``OnboardingRunTracker/optOut()``): nothing is recorded, stored or sent.
        var optedOut = false
        /// The one `opted-out` diagnostic of this opt-out period was reported.
        var optedOutReported = false
        /// `optOut()` or `optIn()` was called this session: it overrides the stored switch.
        var switchSetThisSession = false
        /// Each outbox body's JSON for the stored state, built once per snapshot.
        var storedBodies: [String: (seq: Int, json: JSONValue)] = [:]
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

    /// Creates an independent tracker. It claims the hand-over of the tracker disposed last on
    /// its storage key (in this process) and reads the stored state in the background.
    public init(configuration: OnboardingRunConfiguration) {
        let configuration = Self.previewSafe(configuration, inPreviews: RuntimeEnvironment.isXcodePreview)
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
            // What the predecessor stored (the outbox's ledger, outside this tracker's lock).
            if same, let mark = handoff.storedRun { persister?.setStored(mark.records) }
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
                // The persisted opt-out (a member of the stored state), before anything read is
                // applied: when set, nothing stored or recorded is sent.
                if case .ok(let text?) = raw, (try? WireJSON.decode(text))?["optedOut"]?.boolValue == true,
                    !self.state.withLock({ $0.switchSetThisSession })
                {
                    self.applyOptOut(persist: false)
                }
                self.processRead(self.state.withLock({ $0.optedOut }) ? .ok(nil) : raw)
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
        if state.withLock({ s in optedOutCheck(&s, &fx) }) {
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
        if let p = options.properties { fx.diagnostics += RunState.merge(p, into: &props, runId: nil) }

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
    private func guardRun(_ run: OnboardingRun, _ s: inout State, _ fx: inout Effects, allowCompleted: Bool = false) -> Bool {
        if optedOutCheck(&s, &fx) { return false }
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

    func enterStep(_ run: OnboardingRun, _ stepKey: String) {
        record(run) { r, now in r.enterStep(stepKey, nowMs: now) }
    }

    func exitStep(_ run: OnboardingRun, _ stepKey: String, _ answers: [AnswerInput]) {
        record(run) { r, now in r.exitStep(stepKey, answers: answers, nowMs: now) }
    }

    func setProperties(_ run: OnboardingRun, _ patch: RunProperties) {
        record(run) { r, _ in r.setProperties(patch) }
    }

    /// Applies one recording rule (``RecordingOutcome``) to the live run of `run`, under the lock:
    /// a change is written now and sent after the debounce window; the handle learns its step
    /// after the lock.
    private func record(_ run: OnboardingRun, _ rule: (inout RunState, Int64) -> RecordingOutcome) {
        var fx = Effects()
        let entered: String? = state.withLock { s in
            guard guardRun(run, &s, &fx), var r = s.run.current else { return nil }
            s.run.current = nil  // keep the run's buffers uniquely referenced: recording stays O(1)
            defer { s.run.current = r }
            let outcome = rule(&r, nowRaw)
            fx.diagnostics += outcome.diagnostics
            if outcome.changed { recordChange(&r, s: &s, fx: &fx) }
            return outcome.entered
        }
        if let entered { run.lastStepKey.withLock { $0 = entered } }
        finish(fx)
    }

    func complete(_ run: OnboardingRun) {
        var fx = Effects()
        let completed: Bool = state.withLock { s in
            guard guardRun(run, &s, &fx), var r = s.run.current else { return false }
            s.run.current = nil  // keep the run's buffers uniquely referenced: recording stays O(1)
            defer { s.run.current = r }
            let outcome = r.complete(nowMs: nowRaw)
            fx.diagnostics += outcome.diagnostics
            guard outcome.changed else { return false }
            perform(s.run.handle(.flushed), &s, &fx)
            buildAndStage(&r, s: &s, fx: &fx, flush: true, at: r.completedAt)
            return true
        }
        if completed { run.completedFlag.withLock { $0 = true } }
        finish(fx)
    }

    func background(_ run: OnboardingRun) {
        var fx = Effects()
        state.withLock { s in
            guard guardRun(run, &s, &fx, allowCompleted: true), var r = s.run.current else { return }
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
            // After the lock (the scheduler has a lock of its own): the machine learns the token
            // then, and cancels it when the window closed meanwhile.
            fx.run { [weak self] in self?.scheduleDebounce(afterMs: ms, generation: gen) }
        case .cancelTimer(let token):
            let scheduler = self.scheduler
            fx.run { scheduler.cancel(token) }
        }
    }

    private func scheduleDebounce(afterMs ms: Int64, generation gen: UInt64) {
        let token = scheduler.schedule(afterMs: ms) { [weak self] in self?.debounceFired(gen) }
        var fx = Effects()
        state.withLock { s in perform(s.run.handle(.timerScheduled(token, generation: gen)), &s, &fx) }
        finish(fx)
    }

    /// The debounce timer fired: the outcome is computed under the lock, its effects (the write,
    /// the hand-over to delivery, diagnostics) performed after it.
    private func debounceFired(_ gen: UInt64) {
        var fx = Effects()
        state.withLock { s in perform(s.run.handle(.timerFired(generation: gen)), &s, &fx) }
        finish(fx)
    }

    func delivery(_ runId: String, _ s: inout State, _ fx: inout Effects) -> DeliveryRuntime<OnboardingRunSnapshot> {
        if let d = s.deliveries[runId] { return d }
        let sink = config.sink
        let d = DeliveryRuntime<OnboardingRunSnapshot>(
            send: { try await sink.send($0) }, scheduler: scheduler, retry: config.retry, attemptTimeoutMs: config.attemptTimeoutMs,
            onSettled: { [weak self] item, result in self?.settled(item, result) },
            onTransient: { [weak self] _, _ in self?.checkLeftover() }
        )
        s.deliveries[runId] = d
        s.deliveryOrder.append(runId)
        if s.run.disposed { fx.run { d.close() } }  // after the lock: one lock at a time
        return d
    }

    /// Builds the next snapshot of `r` (seq + 1), makes it the run's outbox item and stages it:
    /// written first, handed to delivery once the write finished or `persistTimeoutMs` passed.
    func buildAndStage(_ r: inout RunState, s: inout State, fx: inout Effects, flush: Bool, at: Int64? = nil) {
        guard r.hasEntries else { return }
        let t = at ?? r.time(nowRaw)
        let seq = r.lastSeq + 1
        let payload = r.snapshot(seq: seq, sentAt: t)
        r.lastSeq = seq
        if !r.completed { r.lastActiveAt = t }
        r.dirty = false
        let item = Item(seq: seq, payload: payload)
        s.outboxes[r.runId] = item
        s.held.remove(r.runId)
        let d = delivery(r.runId, &s, &fx)
        s.staging += 1
        let handOver: @Sendable (PersistResult) -> Void = { [weak self] result in
            guard let self else { return }
            let id = item.payload.runId
            // Read from the outbox before this tracker's lock (one lock at a time).
            let covered = self.persister?.covers(key: id, seq: item.seq) ?? true
            let (send, report, optedOut) = self.state.withLock { s -> (Bool, Bool, Bool) in
                s.staging -= 1
                if s.optedOut { return (false, false, true) }
                // A snapshot whose seq storage has not reserved is held until a write lands:
                // sent now, a resumed run could send that seq again with another body. Only a
                // write that finished can hold it: one still under way after `persistTimeoutMs`
                // lets it go, as in the reference (a kill before that write lands is the cost,
                // <doc:Delivery#Persist-before-send>); holding it behind a write that never
                // completes would hold every later snapshot, the completion included (issue 29).
                guard result != .timedOut, !covered else { return (true, false, false) }
                defer { s.heldForStorageReported = true }
                return (false, !s.heldForStorageReported, false)
            }
            if optedOut {
                // Recorded before the opt-out: never sent (its delivery is stopped).
                self.checkLeftover()
                return
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
        state.withLock { s in s.persistenceOff ? .skip : s.storedState(destination: destination) }
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
                case .storedRun(let mark): if let persister { fx.run { persister.setStored(mark.records) } }
                case .destinationChangedReported: s.destinationChangedReported = true
                case .adoptOutbox(let id, let item, let deliver):
                    s.outboxes[id] = item
                    if deliver {
                        let d = delivery(id, &s, &fx)
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
                if s.optedOut {
                    // Opted out: the predecessor's unsent snapshots are dropped, never sent.
                    switch action {
                    case .take, .deliver, .holdForStorage, .write: continue
                    default: break
                    }
                }
                switch action {
                case .diagnose(let code, let message): fx.diag(code, message)
                case .destinationChangedReported: s.destinationChangedReported = true
                case .settled(let id, let seq): s.settled[id] = seq
                case .take(let id, let item):
                    s.outboxes[id] = item
                    s.held.insert(id)
                case .drop(let id): s.outboxes[id] = nil
                case .deliver(let id, let item):
                    let d = delivery(id, &s, &fx)
                    fx.run { d.enqueue(item) }
                case .holdForStorage(let id, let item):
                    // A snapshot the predecessor held for storage stays held here (issue 14 item 5).
                    _ = delivery(id, &s, &fx)
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
        // The deliveries are asked outside this tracker's lock (one lock at a time).
        let deliveries = state.withLock { s -> [DeliveryRuntime<OnboardingRunSnapshot>]? in
            guard s.disposal.leftoverPending, s.handover.predecessorDone, s.staging == 0 else { return nil }
            return Array(s.deliveries.values)
        }
        if let deliveries, !deliveries.contains(where: \.isBusy) {
            let ready = state.withLock { s -> (Deferred<Leftover>, Leftover)? in
                guard s.handover.predecessorDone, s.staging == 0, s.deliveries.count == deliveries.count,
                    let left = s.disposal.takeLeftover()
                else { return nil }
                return (left, Leftover(unsent: s.outboxes, settled: s.settled))
            }
            if let (d, v) = ready { d.complete(v) }
        }
        releaseIfDone()
    }

    /// Lets a disposed tracker go once its leftover is complete and its drain done: the registry
    /// kept it since `dispose()` (``DisposalPhase``).
    private func releaseIfDone() {
        guard state.withLock({ $0.disposal.release() }) else { return }
        config.registry.release(ObjectIdentifier(self))
    }

    // MARK: Opt-out

    /// Whether the app opted out (``optOut()``); with storage, persisted across launches (known
    /// once the stored state has been read).
    public var isOptedOut: Bool { state.withLock { $0.optedOut } }

    /// Opts out: the run in progress and every unsent snapshot are dropped (nothing recorded before
    /// is sent after), the stored state is removed, and until ``optIn()`` every recording call is
    /// dropped, with one `opted-out` diagnostic per opt-out period. With storage the switch is
    /// persisted (the stored state keeps only `"optedOut": true`) and read at the next launch before
    /// anything stored is sent; an `optOut()` or ``optIn()`` made before that read wins. Idempotent.
    public func optOut() { applyOptOut(persist: true) }

    /// Opts in again: recording resumes with the next `start()`; the persisted switch is removed.
    public func optIn() {
        var fx = Effects()
        state.withLock { s in
            guard !s.run.disposed else { return }
            s.switchSetThisSession = true
            s.optedOut = false
            s.optedOutReported = false
            // Written even when not known to be opted out (the stored switch may not be read yet).
            requestWrite(&s, fx: &fx)
        }
        finish(fx)
    }

    /// Drops what is recorded and unsent, stops its deliveries and writes the switch (`persist`:
    /// set by the app this session, so it wins over the stored one).
    func applyOptOut(persist: Bool) {
        var fx = Effects()
        let stopped = state.withLock { s -> [DeliveryRuntime<OnboardingRunSnapshot>]? in
            if persist && !s.run.disposed { s.switchSetThisSession = true }
            guard !s.optedOut, !s.run.disposed else { return nil }
            s.optedOut = true
            s.optedOutReported = false
            perform(s.run.handle(.flushed), &s, &fx)
            s.run.current = nil
            s.session = .started
            s.outboxes = [:]
            s.held = []
            s.storedBodies = [:]
            let deliveries = s.deliveryOrder.compactMap { s.deliveries[$0] }
            s.deliveries = [:]
            s.deliveryOrder = []
            requestWrite(&s, fx: &fx)
            return deliveries
        }
        for d in stopped ?? [] { d.stop() }
        finish(fx)
        checkLeftover()
    }

    /// While opted out: reports `opted-out` once per opt-out period and says to drop the call.
    private func optedOutCheck(_ s: inout State, _ fx: inout Effects) -> Bool {
        guard s.optedOut else { return false }
        if !s.optedOutReported {
            s.optedOutReported = true
            fx.diag("opted-out", "the app opted out: recording calls are dropped until optIn()")
        }
        return true
    }

    // MARK: resume

    /// Resumes the run the app was killed in (or that a reconfigure handed over) when it belongs
    /// to `options`' onboarding and manifest and the stored state is read within
    /// `resumeTimeout` seconds; otherwise starts a new run with `options` (<doc:Resume>).
    ///
    /// Replaces the race of `resume(expected:)` against a timer: the wait is bounded on the
    /// tracker's scheduler, and a read that lands as the bound passes never resumes a run that
    /// is then replaced. When the bound wins, the stored run stays stored: the new run abandons it
    /// as a `start()` does (its unsent change is still sent).
    ///
    /// - Parameters:
    ///   - options: the flow's identity, manifest and initial properties, as for `start(_:)`.
    ///   - resumeTimeout: how long to wait for the stored-state read, in seconds (a
    ///     `TimeInterval`); 3 by default, `0` starts at once unless the read is already done.
    public func resumeOrStart(_ options: StartOptions, resumeTimeout: Double = 3) async -> OnboardingRun {
        // A disposed tracker reports once, from start().
        if state.withLock({ $0.run.disposed }) { return start(options) }
        let readDeferred = self.readDeferred
        if store != nil && !readDeferred.isComplete {
            armSlowReadReport()
            let ms = Int64(min(max(resumeTimeout.isNaN ? 0 : resumeTimeout, 0), 86_400) * 1000)
            let read = await waitBounded(ms) { cb in readDeferred.onComplete { _ in cb() } }
            if !read { return start(options) }
        }
        return (await resume(expected: options)) ?? start(options)
    }

    /// Reports, once, a stored-state read still running after `storageReadTimeoutMs` (the first
    /// wait on the read arms it).
    private func armSlowReadReport() {
        let startSlow = state.withLock { s -> Bool in
            defer { s.slowReadStarted = true }
            return !s.slowReadStarted && !s.run.disposed && store != nil
        }
        if startSlow {
            scheduler.schedule(afterMs: config.storageReadTimeoutMs) { [weak self] in self?.reportSlowRead() }
        }
    }

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
                fx.diagnostics += r.restore(at: t).diagnostics
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
        // Kept by the registry until its hand-over duties are over (its leftover completed, its
        // drain done), so that a tracker the app releases at once, as `configure()` does, still
        // adopts its predecessor's leftover, completes its own, lands its queued writes and runs
        // its read. Both are bounded (<doc:HandOver>, D6 and D8). Kept before the phase changes,
        // so that a release can never come first.
        config.registry.keep(self)
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
            let handoff = Handoff(
                sink: sinkObject, destination: destination, run: run, outboxes: s.outboxes, leftover: left,
                storedRun: persister.map { StoredRunMark(records: $0.ledger.stored) }, writeFailed: s.writeFailed)
            // Run-creation order: the last attempts go out in an order the inputs decide.
            for id in s.deliveryOrder { if let d = s.deliveries[id] { fx.run { d.close() } } }
            let drain = store != nil ? Deferred<Void>() : nil
            s.disposal = .handingOver(leftover: left, drained: drain == nil)
            return (handoff, drain)
        }
        guard let (handoff, drain) = published else {
            // Disposed before: let go again if that disposal is over.
            if state.withLock({ $0.disposal.isReleased }) { config.registry.release(me) }
            return
        }
        drain?.onComplete { [weak self] _ in
            self?.state.withLock { $0.disposal.drained() }
            self?.releaseIfDone()
        }
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

extension OnboardingRunTracker {
    /// In Xcode Previews nothing is written or sent (issue 37 item 7): no storage, and a sink that
    /// sends nothing (``PreviewSink``).
    static func previewSafe(_ configuration: OnboardingRunConfiguration, inPreviews: Bool) -> OnboardingRunConfiguration {
        guard inPreviews else { return configuration }
        var safe = configuration
        safe.sink = PreviewSink<OnboardingRunSnapshot>()
        safe.storage = nil
        return safe
    }
}
