import TrackerCore

/// What a disposed tracker's run hand-over says (<doc:HandOver>, D7).
enum HandedRun: Sendable {
    /// Nothing is known (the tracker started nothing and was handed nothing).
    case nothing
    /// Explicitly no run: the latest run completed.
    case noRun
    /// A run in progress, in its newest state.
    case run(RunState)
}

/// What a disposed tracker leaves unsent once its last attempts are answered (<doc:HandOver>, D6).
struct Leftover: Sendable {
    var unsent: [String: Outbound<OnboardingRunSnapshot>]
    var settled: [String: Int]
}

/// A disposed tracker's hand-over on its storage key.
final class Handoff: Sendable {
    let sink: AnyObject & Sendable
    let destination: String?
    let run: HandedRun
    let outboxes: [String: Outbound<OnboardingRunSnapshot>]
    let leftover: Deferred<Leftover>
    /// The run the disposed tracker's last landed write stored as resumable, with its reservation.
    let storedRun: StoredRunMark?
    /// Whether the disposed tracker's last finished write failed (storage did not take it).
    let writeFailed: Bool

    init(
        sink: AnyObject & Sendable, destination: String?, run: HandedRun, outboxes: [String: Outbound<OnboardingRunSnapshot>],
        leftover: Deferred<Leftover>, storedRun: StoredRunMark? = nil, writeFailed: Bool = false
    ) {
        self.sink = sink
        self.destination = destination
        self.run = run
        self.outboxes = outboxes
        self.leftover = leftover
        self.storedRun = storedRun
        self.writeFailed = writeFailed
    }
}

/// The process-wide records of the onboarding trackers, per storage key (<doc:HandOver>): the
/// hand-over of the last disposed tracker (claimed once), the drain of the last disposed tracker
/// that had storage, and the live trackers with storage.
///
/// Use ``shared`` in apps. Tests create a fresh registry to simulate a new app process.
public final class HandoffRegistry: Sendable {
    /// The registry of this process.
    public static let shared = HandoffRegistry()

    struct KeyRecord: Sendable {
        var handoff: Handoff?
        var drain: Deferred<Void>?
        var liveWithStorage: Set<ObjectIdentifier> = []
        /// The newest tracker on the key, told about writes of disposed trackers that land late.
        var lateWriteOwner: ObjectIdentifier?
        var lateWriteHook: (@Sendable () -> Void)?
    }

    private let records = Locked<[String: KeyRecord]>([:])
    /// Disposed trackers kept until their hand-over duties are over (``DisposalPhase``).
    private let kept = Locked<[ObjectIdentifier: OnboardingRunTracker]>([:])

    /// Creates an empty registry (a "fresh process").
    public init() {}

    /// Registers a new tracker: claims the hand-over, returns the drain to wait for, and whether
    /// another live tracker with storage already uses the key.
    func register(key: String, tracker: ObjectIdentifier, hasStorage: Bool) -> (handoff: Handoff?, drain: Deferred<Void>?, conflict: Bool) {
        records.withLock { r in
            var rec = r[key] ?? KeyRecord()
            let handoff = rec.handoff
            rec.handoff = nil
            let conflict = hasStorage && !rec.liveWithStorage.isEmpty
            if hasStorage { rec.liveWithStorage.insert(tracker) }
            rec.lateWriteOwner = tracker
            rec.lateWriteHook = nil
            r[key] = rec
            return (handoff, rec.drain, conflict)
        }
    }

    /// Arms the late-write hook of `tracker` (once its wait on the drain finished).
    func armLateWrites(key: String, tracker: ObjectIdentifier, hook: @escaping @Sendable () -> Void) {
        records.withLock { r in
            guard r[key]?.lateWriteOwner == tracker else { return }
            r[key]?.lateWriteHook = hook
        }
    }

    /// A write of a disposed tracker landed.
    func lateWriteLanded(key: String, from tracker: ObjectIdentifier) {
        let hook = records.withLock { r -> (@Sendable () -> Void)? in
            guard let rec = r[key], rec.lateWriteOwner != tracker else { return nil }
            return rec.lateWriteHook
        }
        hook?()
    }

    /// Publishes a disposed tracker's hand-over (and drain, when it had storage).
    func publish(key: String, tracker: ObjectIdentifier, handoff: Handoff, drain: Deferred<Void>?) {
        records.withLock { r in
            var rec = r[key] ?? KeyRecord()
            rec.handoff = handoff
            if let drain { rec.drain = drain }
            rec.liveWithStorage.remove(tracker)
            r[key] = rec
        }
    }

    /// Keeps a disposed tracker alive until ``release(_:)`` (idempotent).
    func keep(_ tracker: OnboardingRunTracker) {
        kept.withLock { $0[tracker.id] = tracker }
    }

    /// Lets a disposed tracker go (released outside the lock: this may be the last reference).
    func release(_ tracker: ObjectIdentifier) {
        let gone = kept.withLock { $0.removeValue(forKey: tracker) }
        _ = gone
    }

    /// How many disposed trackers are kept (for tests).
    var keptCount: Int { kept.withLock { $0.count } }
}
