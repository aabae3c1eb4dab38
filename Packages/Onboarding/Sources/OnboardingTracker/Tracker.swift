import TrackerCore

/// An onboarding run tracker (see <doc:GettingStarted>). Independent instances are for tests or two
/// flows at once; trackers live at the same time must use distinct storage keys.
///
/// No method throws; recording methods never wait for storage or the network.
///
/// The tracker is a runtime around one `State` under one lock: each call reads what it needs
/// (the clock, the outbox's ledger) before the lock, lets a rule on the state decide under it
/// (`TrackerRules.swift`, `SessionRules.swift`), and performs the `Effects` the rule returned
/// after it (writes, hand-overs to delivery, timers, diagnostics). No other lock is taken inside
/// the tracker's.
public final class OnboardingRunTracker: Sendable, DeliveryMaker {
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
    /// The tracker's one lock, over its whole state.
    let state: Locked<State>
    /// This tracker in its registry (the identity of its state, which lives as long as it does).
    let id: ObjectIdentifier

    /// Creates an independent tracker. It claims the hand-over of the tracker disposed last on
    /// its storage key (in this process) and reads the stored state in the background.
    public init(configuration: OnboardingRunConfiguration) {
        let configuration = Self.previewSafe(configuration, inPreviews: RuntimeEnvironment.isXcodePreview)
        config = configuration
        clock = configuration.clock ?? SystemClock()
        scheduler = configuration.scheduler ?? SystemScheduler.shared
        let onDiagnostic = Diagnostics.stamped(
            .onboarding, configuration.onDiagnostic ?? Diagnostics.systemLog(subsystem: LogSubsystem.onboarding, prefix: "rocalytics-sdk"))
        self.onDiagnostic = onDiagnostic
        sinkObject = configuration.sink as AnyObject & Sendable
        destination = configuration.sink.destination
        let state = Locked(State())
        self.state = state
        let me = ObjectIdentifier(state)
        id = me
        let registry = configuration.registry
        let key = configuration.storageKey
        // A timeout of 0 hands a snapshot over at once (the outbox reads `<= 0` as "no bound").
        let timeoutMs = max(1, configuration.persistTimeoutMs)
        if let storage = configuration.storage {
            // A file store the app shares with another engine (the paywall tracker's) is written on
            // the outbox's own thread, never behind that engine's fsync on the store's queue.
            let storage = ThreadFileStorage.sameFiles(as: storage, on: Self.ioThread) ?? storage
            // A write of this tracker that lands once it is disposed makes the newest tracker on
            // the key write its state again (<doc:HandOver> W2).
            let observed = LandingObserverStorage(storage) { [weak state] landed in
                guard landed, let state, state.withLock({ $0.run.disposed }) else { return }
                registry.lateWriteLanded(key: key, from: me)
            }
            persister = SnapshotOutbox(
                storage: observed, key: key, scheduler: scheduler, policy: .writeThenSend(timeoutMs: timeoutMs), reportsEveryFailure: true
            ) { message in onDiagnostic(Diagnostic(code: "storage", message: message)) }
        } else {
            persister = nil
        }
        store = persister?.store
        // A write finished: landed (what it stored is resumable: the outbox's ledger is updated
        // before this runs) or failed.
        persister?.observeWrites { [weak state] landed in state?.withLock { $0.writeFailed = !landed } }

        let (handoff, drain, conflict) = registry.register(key: key, tracker: me, hasStorage: store != nil)
        var fx = Effects()
        if conflict {
            fx.diag("storage", "another live tracker with storage already uses storageKey \"\(key)\"; use one key per tracker")
        }
        // 1. Take in the hand-over (state only: nothing can run yet).
        var same = false
        if let handoff {
            same = sameDestination(handoff.sink, handoff.destination, sinkObject, destination)
            state.withLock { $0.takeHandoff(handoff, same: same, &fx) }
            // What the predecessor stored (the outbox's ledger, outside this tracker's lock).
            if same, let mark = handoff.storedRun { persister?.setStored(mark.records) }
        }
        // 2. Queue the one read first: every write of this tracker is queued behind it (<doc:Storage#When-it-is-written>),
        //    even one caused by a delivery that starts from step 3 on another thread.
        if let store { queueRead(store, after: drain) } else { readDeferred.complete(()) }
        // 3. Adopt the predecessor's leftover once its last attempts are answered (possibly now).
        if let handoff {
            let accepted = same
            handoff.leftover.onComplete { [weak self] left in self?.adoptLeftover(left, accepted: accepted) }
        }
        finish(fx)
    }

    private func queueRead(_ store: SerialStore, after drain: Deferred<Void>?) {
        let (registry, key, me, readDeferred) = (config.registry, config.storageKey, id, readDeferred)
        store.enqueueSaveWith({ [weak self] in
            if let drain { _ = await awaitCancellable { cb in drain.onComplete { _ in cb() } } }
            // A tracker released before its read ran still completes the read, so that a
            // disposed one's drain (which waits on it) ends now, not after the bound.
            guard let self else {
                readDeferred.complete(())
                return .skip
            }
            registry.armLateWrites(key: key, tracker: me) { [weak self] in self?.lateWriteLanded() }
            let raw = await self.readStored()
            // The persisted opt-out (a member of the stored state), before anything read is
            // applied: when set, nothing stored or recorded is sent.
            if StoredReadMachine.optedOut(raw), !self.state.withLock({ $0.switchSetThisSession }) { self.applyOptOut(persist: false) }
            self.processRead(self.state.withLock({ $0.optedOut }) ? .ok(nil) : raw)
            return .skip
        })
    }

    // MARK: Effects

    /// What a rule needs from the runtime: the time, read now (before the lock).
    private func env() -> RuleEnv {
        RuleEnv(now: clock.nowMs(), debounceMs: config.debounceMs, hasStore: store != nil, maker: self)
    }

    func emit(_ diagnostics: [Diagnostic]) {
        for d in diagnostics { onDiagnostic(d) }
    }

    /// Performs what a rule decided, after the lock: its actions in order, then its diagnostics.
    func finish(_ fx: Effects) {
        for action in fx.actions { perform(action) }
        emit(fx.diagnostics)
    }

    private func perform(_ action: Effects.Action) {
        switch action {
        case .write:
            persister?.request(compose: { [weak self] in self?.composeWrite() ?? .skip })
        case .stage(let item, let d, let flush):
            let handOver: @Sendable (PersistResult) -> Void = { [weak self] in self?.handedOver(item, d, flush: flush, $0) }
            if let persister {
                persister.request(compose: { [weak self] in self?.composeWrite() ?? .skip }, handOver: handOver)
            } else {
                handOver(.landed)
            }
        case .enqueue(let d, let item): d.enqueue(item)
        case .flush(let d): d.flush()
        case .close(let d): d.close()
        case .stop(let d): d.stop()
        case .holdForStorage(let item):
            persister?.hold(key: item.payload.runId, seq: item.seq) { [weak self] in self?.releaseHeld(item) }
        case .setStored(let records): persister?.setStored(records)
        case .scheduleTimer(let ms, let gen):
            // The machine learns the token after the scheduler's call, and cancels it when the
            // window closed meanwhile.
            let token = scheduler.schedule(afterMs: ms) { [weak self] in self?.debounceFired(gen) }
            change { s, env, fx in s.perform(s.run.handle(.timerScheduled(token, generation: gen)), env, &fx) }
        case .cancelTimer(let token): scheduler.cancel(token)
        }
    }

    /// Runs `rule` under the lock and performs its effects after it.
    @discardableResult
    private func change<R>(_ rule: (inout State, RuleEnv, inout Effects) -> R) -> R {
        var fx = Effects()
        let env = self.env()
        let result = state.withLock { rule(&$0, env, &fx) }
        finish(fx)
        return result
    }

    /// The debounce timer fired: its outcome is computed under the lock, its effects (the write,
    /// the hand-over to delivery, diagnostics) performed after it.
    private func debounceFired(_ gen: UInt64) {
        change { s, env, fx in s.perform(s.run.handle(.timerFired(generation: gen)), env, &fx) }
    }

    func makeDelivery(_ runId: String) -> Delivery {
        let sink = config.sink
        return Delivery(
            send: { try await sink.send($0) }, scheduler: scheduler, retry: config.retry, attemptTimeoutMs: config.attemptTimeoutMs,
            onSettled: { [weak self] item, result in self?.settled(item, result) },
            onTransient: { [weak self] _, _ in self?.checkLeftover() })
    }

    /// A staged snapshot's write finished or timed out (<doc:Delivery#Persist-before-send>). Every
    /// staged snapshot is handed over, even when a newer one was built meanwhile: latest-wins
    /// applies among handed snapshots (rule 2 of TrackerCore's Delivery article; dropping it here
    /// starved the sink while writes were slow, issue 15).
    private func handedOver(_ item: Item, _ d: Delivery, flush: Bool, _ result: PersistResult) {
        let id = item.payload.runId
        let covered = persister?.covers(key: id, seq: item.seq) ?? true
        var fx = Effects()
        let verdict = state.withLock { $0.handedOver(item, result: result, covered: covered, &fx) }
        switch verdict {
        case .dropped:
            break  // Recorded before the opt-out: never sent (its delivery is stopped).
        case .send:
            // A newer snapshot leaves: an older one held for storage is not worth sending.
            persister?.dropHeld(key: id, olderThan: item.seq)
            d.enqueue(item)
        case .hold:
            // Held in the outbox until a landed write covers its seq (a write that covers it
            // already releases it at once).
            persister?.hold(key: id, seq: item.seq) { [weak self] in self?.releaseHeld(item) }
        }
        emit(fx.diagnostics)
        if verdict != .dropped && flush { d.flush() }
        checkLeftover()
    }

    private func settled(_ item: Item, _ result: SinkResult) {
        let rejected: String?? = result.outcome == .rejected ? .some(result.reason) : nil
        change { s, env, fx in s.settled(item, rejected: rejected, env, &fx) }
        checkLeftover()
    }

    /// A snapshot held for storage is covered by a landed write now (the outbox releases it).
    func releaseHeld(_ item: Item) {
        state.withLock { $0.deliveries[item.payload.runId] }?.enqueue(item)
    }

    // MARK: start and the run methods

    /// Starts a new run (never waits for storage). An invalid start returns a run that records
    /// nothing and reports `invalid-start`.
    public func start(_ options: StartOptions) -> OnboardingRun {
        var fx = Effects()
        if state.withLock({ $0.refusesStart(&fx) }) {
            finish(fx)
            return OnboardingRun(runId: IDs.uuidV7(nowMs: clock.nowMs()), tracker: nil, generation: 0)
        }
        let (spec, problems) = StartValidation.request(options, context: config.context)
        let runId = RunIds.mint(config.uuid, nowMs: clock.nowMs(), &fx)
        guard let map = StartValidation.accept(spec, problems: problems, options, &fx) else {
            finish(fx)
            return OnboardingRun(runId: runId, tracker: nil, generation: 0)
        }
        let env = self.env()
        let begun = state.withLock { $0.start(runId: runId, spec: spec, properties: map, env, &fx) }
        finish(fx)
        return OnboardingRun(runId: runId, tracker: begun == nil ? nil : self, generation: begun?.generation ?? 0)
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

    /// Applies one recording rule (``RecordingOutcome``) to the live run of `run`; the handle
    /// learns its step after the lock.
    private func record(_ run: OnboardingRun, _ rule: (inout RunState, Int64) -> RecordingOutcome) {
        let h = RunHandle(run)
        let entered = change { s, env, fx in s.record(h, env, &fx, rule) }
        if let entered { run.lastStepKey.withLock { $0 = entered } }
    }

    func complete(_ run: OnboardingRun) {
        let h = RunHandle(run)
        var fx = Effects()
        let env = self.env()
        let completed = state.withLock { $0.complete(h, env, &fx) }
        if completed { run.completedFlag.store(1) }
        finish(fx)
    }

    func background(_ run: OnboardingRun) {
        let h = RunHandle(run)
        change { s, env, fx in s.background(h, env, &fx) }
    }

    // MARK: Storage

    func composeWrite() -> OutboxWrite {
        state.withLock { s in s.persistenceOff ? .skip : s.storedState(destination: destination) }
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

    /// Applies the stored-state read (<doc:Storage#Reading-at-creation>): ``StoredReadMachine`` decides, the state applies.
    func processRead(_ raw: RawRead) {
        let parsed = StoredReadMachine.parse(raw)
        let destination = self.destination
        change { s, env, fx in s.applyRead(StoredReadMachine.decide(parsed, s.readContext(destination: destination)), env, &fx) }
        readDeferred.complete(())
    }

    /// A write of a disposed predecessor landed after this tracker's read: write our state again.
    private func lateWriteLanded() {
        change { s, env, fx in s.lateWriteLanded(env, &fx) }
    }

    // MARK: Hand-over

    /// The predecessor's last attempts are answered (<doc:HandOver>, S3 and X3): ``HandoverMachine``
    /// decides, the state applies.
    private func adoptLeftover(_ left: Leftover, accepted: Bool) {
        let ledger = persister?.ledger
        let stored = ledger.map { StoredRunMark(records: $0.stored) }
        let writing = ledger?.writing.map { StoredRunMark(records: $0) }
        change { s, env, fx in s.adoptLeftover(left, accepted: accepted, stored: stored, writing: writing, env, &fx) }
        checkLeftover()
    }

    /// Completes this tracker's leftover once disposed, the predecessor's leftover adopted, every
    /// staged send handed over and no attempt in flight (<doc:HandOver>, D6).
    func checkLeftover() {
        // The deliveries are asked outside this tracker's lock (one lock at a time).
        if let deliveries = state.withLock({ $0.leftoverCandidates }), !deliveries.contains(where: \.isBusy),
            let (left, value) = state.withLock({ $0.takeLeftover(idle: deliveries.count) })
        {
            left.complete(value)
        }
        releaseIfDone()
    }

    /// Lets a disposed tracker go once its leftover is complete and its drain done: the registry
    /// kept it since `dispose()` (``DisposalPhase``).
    private func releaseIfDone() {
        guard state.withLock({ $0.disposal.release() }) else { return }
        config.registry.release(id)
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
        change { s, env, fx in s.optIn(env, &fx) }
    }

    /// Drops what is recorded and unsent, stops its deliveries and writes the switch (`persist`:
    /// set by the app this session, so it wins over the stored one).
    func applyOptOut(persist: Bool) {
        change { s, env, fx in s.optOut(persist: persist, env, &fx) }
        checkLeftover()
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
    public func resumeOrStart(_ options: StartOptions, resumeTimeout: TimeInterval = 3) async -> OnboardingRun {
        // A disposed tracker reports once, from start().
        if state.withLock({ $0.run.disposed }) { return start(options) }
        let readDeferred = self.readDeferred
        if store != nil && !readDeferred.isComplete {
            armSlowReadReport()
            let read = await waitBounded(ResumeWait.ms(resumeTimeout)) { cb in readDeferred.onComplete { _ in cb() } }
            if !read { return start(options) }
        }
        return (await resume(expected: options)) ?? start(options)
    }

    /// Reports, once, a stored-state read still running after `storageReadTimeoutMs` (the first
    /// wait on the read arms it).
    private func armSlowReadReport() {
        let hasStore = store != nil
        if state.withLock({ $0.armsSlowRead(hasStore: hasStore) }) {
            scheduler.schedule(afterMs: config.storageReadTimeoutMs) { [weak self] in self?.reportSlowRead() }
        }
    }

    /// Resolves the run that was in progress (killed, or handed over by a reconfigure), restored,
    /// or `nil`. Waits for the stored-state read however long it takes; returns `nil` promptly
    /// when the calling task is cancelled (leaving the stored run where it was).
    public func resume(expected: StartOptions? = nil) async -> OnboardingRun? {
        if state.withLock({ $0.run.disposed }) {
            emit([Diagnostic(code: "disposed", message: "resume called on a disposed tracker")])
            return nil
        }
        armSlowReadReport()
        let completed = await awaitCancellable { cb in readDeferred.onComplete { _ in cb() } }
        guard completed, !Task.isCancelled else { return nil }
        let expectation = ResumeExpectation(expected)
        let begun = change { s, env, fx in s.resume(expectation, env, &fx) }
        return begun.map { OnboardingRun(runId: $0.runId, tracker: self, generation: $0.generation, stepKey: $0.stepKey) }
    }

    /// Reports, once per tracker, a stored-state read still running after `storageReadTimeoutMs`
    /// (<doc:Diagnostics>, `storage` (g)): from `resume()`'s timer, and from every bounded wait on the read (`idle()`, a
    /// disposed tracker's drain) that ran out.
    func reportSlowRead() {
        guard !readDeferred.isComplete, state.withLock({ $0.claimsSlowReadReport() }) else { return }
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
        // Kept by the registry until its hand-over duties are over (its leftover completed, its
        // drain done), so that a tracker the app releases at once, as `configure()` does, still
        // adopts its predecessor's leftover, completes its own, lands its queued writes and runs
        // its read. Both are bounded (<doc:HandOver>, D6 and D8). Kept before the phase changes,
        // so that a release can never come first.
        config.registry.keep(self)
        let storedRun = persister.map { StoredRunMark(records: $0.ledger.stored) }
        var fx = Effects()
        let env = self.env()
        let published = state.withLock { s in
            s.dispose(sink: sinkObject, destination: destination, storedRun: storedRun, hasStore: store != nil, env, &fx)
        }
        guard let (handoff, drain) = published else {
            // Disposed before: let go again if that disposal is over.
            if state.withLock({ $0.disposal.isReleased }) { config.registry.release(id) }
            return
        }
        drain?.onComplete { [weak self] _ in
            self?.state.withLock { $0.disposal.drained() }
            self?.releaseIfDone()
        }
        config.registry.publish(key: config.storageKey, tracker: id, handoff: handoff, drain: drain)
        finish(fx)
        if let drain, let store {
            drainAfterRead(
                drain, read: readDeferred, store: store, ms: config.storageReadTimeoutMs, scheduler: scheduler
            ) { [weak self] in self?.reportSlowRead() }
        }
        checkLeftover()
    }

    // MARK: Testing support

    /// The incremental completion-form measure and the real encoded size of the current run
    /// (for tests: the two must be equal).
    func debugMeasure() -> (incremental: Int, encoded: Int)? {
        let now = clock.nowMs()
        return state.withLock { s in
            guard let r = s.run.current, r.hasEntries else { return nil }
            return (r.measure(), r.completionFormBytes(now: max(now, r.floor)).count)
        }
    }
}
