import TrackerCore

typealias Item = Outbound<OnboardingRunSnapshot>
typealias Delivery = DeliveryRuntime<OnboardingRunSnapshot>

extension OnboardingRunTracker {
    /// Everything a tracker knows, held under its one lock (issue 36 item 4). The decisions on it
    /// are mutating functions (`TrackerRules.swift`, `SessionRules.swift`) that return the
    /// `Effects` the runtime performs after the lock.
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
        var deliveries: [String: Delivery] = [:]
        /// Run ids of `deliveries` in creation order (dispose closes them in this order).
        var deliveryOrder: [String] = []
        var persistenceOff = false
        var destinationChangedReported = false
        /// Snapshots staged and not yet handed over (their write has not finished or timed out).
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
}

extension OnboardingRunTracker {
    /// The thread of the outbox's file I/O (issue 36): on a ``FileKeyValueStorage`` or a
    /// ``StandardFileStorage`` the app also gives another engine, the onboarding trackers read and
    /// write their key here (``ThreadFileStorage``), never behind that engine's `fsync` on the
    /// store's own queue. One for every onboarding tracker of the process, so their operations on
    /// a key keep their order.
    static let ioThread = SerialThread(name: "onboarding.io")
}

/// What the tracker's runtime does after its lock, in order, and the diagnostics it then reports
/// (the rules on ``OnboardingRunTracker/State`` only ever return these: no effect runs under the
/// lock, and no other lock is taken inside it).
struct Effects {
    enum Action {
        /// Request a write of the whole state, composed when it runs (joining one already waiting).
        case write
        /// Write the state, then hand `item` to `delivery` once the write finished or
        /// `persistTimeoutMs` passed (at once without storage); `flush` attempts at once. (The
        /// cases that carry a snapshot are indirect: an effect is copied by one reference.)
        indirect case stage(Item, Delivery, flush: Bool)
        indirect case enqueue(Delivery, Item)
        case flush(Delivery)
        case close(Delivery)
        case stop(Delivery)
        /// Keep `item` in the outbox until a landed write covers its seq, then deliver it.
        indirect case holdForStorage(Item)
        /// The outbox's ledger: storage holds exactly these records (run id → reserved seq).
        case setStored([String: Int])
        case scheduleTimer(afterMs: Int64, generation: UInt64)
        case cancelTimer(TimerToken)
    }

    var diagnostics: [Diagnostic] = []
    var actions: [Action] = []

    mutating func diag(_ code: String, _ message: String, _ runId: String? = nil) {
        diagnostics.append(Diagnostic(code: code, message: message, runId: runId))
    }

    mutating func run(_ action: Action) { actions.append(action) }
}

/// Creates a run's delivery (an allocation only: no lock, no I/O).
protocol DeliveryMaker: AnyObject {
    func makeDelivery(_ runId: String) -> Delivery
}

/// What a rule needs from the runtime besides the state: the time of the call (read before the
/// lock), the configuration it applies, and how to create a run's delivery. (A class-bound maker
/// rather than a closure: building one per recording call allocates nothing.)
struct RuleEnv {
    var now: Int64
    var debounceMs: Int64 = 0
    var hasStore = false
    /// The tracker (a strong reference: an environment lives only for one call of the tracker, so
    /// this costs a retain and a release, never an allocation).
    let maker: any DeliveryMaker

    func makeDelivery(_ runId: String) -> Delivery { maker.makeDelivery(runId) }
}

/// What happens to a staged snapshot when its write finished or timed out.
enum StagedVerdict: Sendable, Equatable {
    /// The app opted out since: it is never sent.
    case dropped
    /// Handed to its run's delivery.
    case send
    /// Held in the outbox until a landed write covers its seq.
    case hold
}
