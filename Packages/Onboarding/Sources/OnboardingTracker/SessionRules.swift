import TrackerCore

/// What a `resume(expected:)` call expects of the stored run.
enum ResumeExpectation: Sendable {
    /// Any stored run (`resume()` without options).
    case any
    /// The options given do not validate: no stored run matches them.
    case invalid
    /// The stored run must belong to this onboarding identity and manifest.
    case spec(RunSpec)

    /// What `resume(expected: options)` expects (`nil`: any stored run).
    init(_ options: StartOptions?) {
        guard let options else {
            self = .any
            return
        }
        var problems: [String] = []
        let spec = StartValidation.spec(options, context: nil, problems: &problems)
        self = problems.isEmpty ? .spec(spec) : .invalid
    }
}

extension StartValidation {
    /// `start(options)` read with the tracker's `context`: the run's spec, and the problems that
    /// refuse it (none when it is valid).
    static func request(_ options: StartOptions, context: ContextSource) -> (spec: RunSpec, problems: [String]) {
        var problems: [String] = []
        var ctx: RunContextInput?
        switch context {
        case .value(let v): ctx = v
        case .provider(let p):
            do { ctx = try p() } catch { problems.append("the context closure failed") }
        }
        let spec = StartValidation.spec(options, context: ctx, problems: &problems)
        return (spec, problems)
    }

    /// A start with `problems` is refused (`nil`, reported as `invalid-start`); otherwise its
    /// warnings are reported and its initial properties returned (those dropped reported).
    static func accept(_ spec: RunSpec, problems: [String], _ options: StartOptions, _ fx: inout Effects) -> OrderedScalarMap? {
        guard problems.isEmpty else {
            fx.diag("invalid-start", "start refused: " + problems.joined(separator: "; "))
            return nil
        }
        for w in spec.warnings { fx.diag(w.code, w.message) }
        var props = JSONObject()
        if let p = options.properties { fx.diagnostics += RunState.merge(p, into: &props, runId: nil) }
        return scalarMap(props)
    }
}

/// A new run's id.
enum RunIds {
    /// The app's `uuid` option, lowercased, when it returns a UUID; otherwise (reported) or
    /// without the option, a UUIDv7 minted at `nowMs`.
    static func mint(_ uuid: (@Sendable () throws -> String)?, nowMs: Int64, _ fx: inout Effects) -> String {
        if let uuid {
            if let raw = try? uuid() {
                let lower = raw.lowercased()
                if IDs.isLowercaseUUID(lower) { return lower }
            }
            fx.diag("invalid-uuid", "the uuid option did not return a UUID; using a UUIDv7")
        }
        return IDs.uuidV7(nowMs: nowMs)
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

/// How long `resumeOrStart(_:resumeTimeout:)` waits for the stored-state read.
enum ResumeWait {
    /// `resumeTimeout` seconds in milliseconds, rounded as every duration is (Core's
    /// `Milliseconds.from(seconds:)`): NaN and negative values wait 0, at most a day.
    static func ms(_ resumeTimeout: TimeInterval) -> Int64 {
        min(Milliseconds.from(seconds: resumeTimeout.isNaN ? 0 : max(resumeTimeout, 0)), 86_400_000)
    }
}

/// A run a rule began: what the runtime needs to make its ``OnboardingRun`` handle.
struct BegunRun: Sendable, Equatable {
    var runId: String
    var generation: UInt64
    var stepKey: String?
}

/// The tracker's decisions on its session: the hand-over taken in at creation, `start()`,
/// `resume()`, the opt-out switch, the slow-read report, `dispose()` and the leftover it passes
/// on (<doc:Resume>, <doc:HandOver>). Mutating functions on the state that only return
/// `Effects` (issue 36 item 4).
extension OnboardingRunTracker.State {
    /// Takes in the predecessor's hand-over at creation (`same`: it had this tracker's
    /// destination): its run becomes resumable and its outboxes are held until its last attempts
    /// are answered; another destination's is discarded.
    mutating func takeHandoff(_ handoff: Handoff, same: Bool, _ fx: inout Effects) {
        handover = same ? .accepted(handoff.run, leftoverPending: true) : .refused(leftoverPending: true)
        if same {
            writeFailed = handoff.writeFailed
            if case .run(let r) = handoff.run { session = .awaiting(resumable: r) }
            for (id, item) in handoff.outboxes {
                outboxes[id] = item
                held.insert(id)
            }
        } else if case .run = handoff.run {
            destinationChangedReported = true
            fx.diag("destination-changed", "the previous tracker's run in progress was for another destination and is discarded")
        }
    }

    /// Whether a `start()` records nothing (disposed, or opted out), reported.
    mutating func refusesStart(_ fx: inout Effects) -> Bool {
        if run.disposed {
            fx.diag("disposed", "start called on a disposed tracker")
            return true
        }
        return optedOutCheck(&fx)
    }

    /// `start()` with validated options: the live run in progress is replaced (its debounced
    /// change goes out first), a resumable one abandoned, and the new run written.
    mutating func start(runId: String, spec: RunSpec, properties: OrderedScalarMap, _ env: RuleEnv, _ fx: inout Effects) -> BegunRun? {
        if run.disposed { return nil }
        perform(run.handle(.begin), env, &fx)
        abandonResumable(env, &fx)
        session = .started
        guard var r = RunState(runId: runId, spec: spec, lastActiveAt: env.now) else {
            // Cannot happen with validated input; never hand a sink a snapshot outside contract v1.
            fx.diag("internal-error", "the run's start does not fit contract v1; nothing is recorded", runId)
            return nil
        }
        r.setProperties(properties, header: r.headerSize(properties: properties))
        run.current = r
        requestWrite(env, &fx)
        return BegunRun(runId: runId, generation: run.generation)
    }

    /// `resume(expected:)` once the stored state is read: the resumable run continues (restored
    /// at the last activity, <doc:Resume>) when it is not completed and matches `expected`.
    mutating func resume(_ expected: ResumeExpectation, _ env: RuleEnv, _ fx: inout Effects) -> BegunRun? {
        if run.disposed {
            fx.diag("disposed", "resume called on a disposed tracker")
            return nil
        }
        guard !sessionStarted, var r = resumable, !r.completed else { return nil }
        let matches: Bool
        switch expected {
        case .any: matches = true
        case .invalid: matches = false
        // Typed values: an absent member equals a null one (<doc:Delivery#What-the-ingest-answers>).
        case .spec(let spec): matches = r.onboarding == spec.onboarding && r.manifest == spec.manifest
        }
        guard matches else {
            fx.diag("resume-mismatch", "the stored run belongs to another onboarding identity or manifest", r.runId)
            return nil
        }
        session = .started
        perform(run.handle(.begin), env, &fx)
        if r.hasEntries {
            let t = max(env.now, r.floor, r.lastActiveAt)
            fx.diagnostics += r.restore(at: t).diagnostics
            run.current = r
            requestWrite(env, &fx)
            stage(&r, env, &fx, flush: false)
        }
        run.current = r
        if !r.hasEntries { requestWrite(env, &fx) }
        return BegunRun(runId: r.runId, generation: run.generation, stepKey: r.steps.last?.stepKey)
    }

    /// Whether this wait on the stored-state read arms the one slow-read report (the first wait
    /// of a live tracker with storage does).
    mutating func armsSlowRead(hasStore: Bool) -> Bool {
        defer { slowReadStarted = true }
        return !slowReadStarted && !run.disposed && hasStore
    }

    /// Whether the slow-read report is this one to make (once per tracker).
    mutating func claimsSlowReadReport() -> Bool {
        defer { slowReadReported = true }
        return !slowReadReported
    }

    /// `optOut()` (`persist`: the app's call this session, which wins over the stored switch) or
    /// the stored switch read at launch: the run in progress and every unsent snapshot are
    /// dropped, their deliveries stopped, and the switch written.
    mutating func optOut(persist: Bool, _ env: RuleEnv, _ fx: inout Effects) {
        if persist && !run.disposed { switchSetThisSession = true }
        guard !optedOut, !run.disposed else { return }
        optedOut = true
        optedOutReported = false
        for id in deliveryOrder { if let d = deliveries[id] { fx.run(.stop(d)) } }
        deliveries = [:]
        deliveryOrder = []
        perform(run.handle(.flushed), env, &fx)
        run.current = nil
        session = .started
        outboxes = [:]
        held = []
        storedBodies = [:]
        requestWrite(env, &fx)
    }

    /// `optIn()`: recording resumes with the next start; the switch is written (even when not
    /// known to be opted out: the stored switch may not be read yet).
    mutating func optIn(_ env: RuleEnv, _ fx: inout Effects) {
        guard !run.disposed else { return }
        switchSetThisSession = true
        optedOut = false
        optedOutReported = false
        requestWrite(env, &fx)
    }

    /// `dispose()`: the unsent change is staged while still live, the deliveries are closed in
    /// run-creation order, and the hand-over is built for the next tracker on the key (`nil`
    /// when disposed before). `storedRun`: the outbox's ledger, read before the lock.
    mutating func dispose(
        sink: AnyObject & Sendable, destination: String?, storedRun: StoredRunMark?, hasStore: Bool, _ env: RuleEnv, _ fx: inout Effects
    ) -> (Handoff, drain: Deferred<Void>?)? {
        guard !run.disposed else { return nil }
        perform(run.handle(.disposing), env, &fx)
        perform(run.handle(.disposed), env, &fx)
        let handed: HandedRun
        if sessionStarted {
            if let r = run.current, !r.completed { handed = .run(r) } else { handed = .noRun }
        } else {
            handed = handover.handedRun
        }
        let left = Deferred<Leftover>()
        let handoff = Handoff(
            sink: sink, destination: destination, run: handed, outboxes: outboxes, leftover: left, storedRun: storedRun,
            writeFailed: writeFailed)
        // Run-creation order: the last attempts go out in an order the inputs decide.
        for id in deliveryOrder { if let d = deliveries[id] { fx.run(.close(d)) } }
        let drain = hasStore ? Deferred<Void>() : nil
        disposal = .handingOver(leftover: left, drained: drain == nil)
        return (handoff, drain)
    }

    /// The deliveries to ask (after the lock) whether an attempt is in flight, when this
    /// tracker's leftover may be complete: disposed, its predecessor's leftover adopted and
    /// nothing staged (<doc:HandOver>, D6).
    var leftoverCandidates: [Delivery]? {
        guard disposal.leftoverPending, handover.predecessorDone, staging == 0 else { return nil }
        return Array(deliveries.values)
    }

    /// Takes the leftover to complete, once, when `idle` deliveries (all of them, found idle
    /// after the lock) are still all there is and nothing was staged meanwhile.
    mutating func takeLeftover(idle: Int) -> (Deferred<Leftover>, Leftover)? {
        guard handover.predecessorDone, staging == 0, deliveries.count == idle, let left = disposal.takeLeftover() else {
            return nil
        }
        return (left, Leftover(unsent: outboxes, settled: settled))
    }
}
