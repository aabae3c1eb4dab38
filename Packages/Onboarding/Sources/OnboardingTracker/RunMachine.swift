import TrackerCore

/// The live run (<doc:InputValidation>, <doc:Diagnostics>, <doc:Delivery>) as an explicit state and
/// pure transitions in the style of Core's `DeliveryMachine`: which run is in session, which
/// ``OnboardingRun`` handles still record (the generation), the debounce window, and disposal. The
/// tracker keeps one ``RunMachine`` in its state, feeds it ``Event``s and performs the ``Action``s
/// it returns (timers, building and staging a snapshot, writes); the recording itself (entries,
/// answers, properties) stays in ``RunState``.
struct RunMachine: Sendable {
    /// The debounce window (<doc:Delivery#When-a-snapshot-is-built>): open from the first unsent
    /// change until its timer fires or a snapshot is built for another reason.
    enum Window: Sendable, Equatable {
        case closed
        /// Opened in `generation`; `timer` once the scheduler returned its token.
        case open(generation: UInt64, timer: TimerToken?)
    }

    /// The run in session (the last `start()` or `resume()`), completed or not; `nil` before.
    var current: RunState?
    /// Bumped by each `start()`/`resume()`: a handle of an older generation records nothing.
    private(set) var generation: UInt64 = 0
    private(set) var window: Window = .closed
    private(set) var disposed = false

    enum Event: Sendable {
        /// `start()` or `resume()` begins a run (the runtime then sets `current`).
        case begin
        /// A change was recorded on the live run (which has entries or not yet). The recording
        /// call holds the run out of `current` meanwhile: `.stage` is for the run it holds.
        case changed(debounceMs: Int64, hasEntries: Bool)
        /// The scheduler returned the token of the window's timer.
        case timerScheduled(TimerToken, generation: UInt64)
        /// The window's timer fired (it was scheduled in `generation`).
        case timerFired(generation: UInt64)
        /// `complete()` or `background()` builds a snapshot now: the window closes.
        case flushed
        /// `dispose()` begins: the unsent change goes out (staged while the tracker is still live)
        /// and the window closes.
        case disposing
        /// `dispose()` staged what was left: nothing records any more.
        case disposed
    }

    enum Action: Sendable, Equatable {
        /// Build the next snapshot of `current` and stage it.
        case stage
        /// The run in progress is replaced by a new start: report it (after staging its change).
        case reportReplaced(runId: String)
        /// Write the whole state (the change is stored before it is sent).
        case write
        case scheduleTimer(afterMs: Int64, generation: UInt64)
        case cancelTimer(TimerToken)
    }

    /// What a call on a run handle may do.
    enum Verdict: Sendable, Equatable {
        /// The handle is the live run's and may record.
        case record
        case disposed
        /// A newer run replaced the handle's.
        case inactive
        /// The handle's run is completed: the live run (`live`), or an earlier one a later start
        /// did not replace (calls that accept a completed run flush its delivery instead).
        case completed(live: Bool)
    }

    /// Whether a handle of run `runId` from `generation` (known completed or not) may record.
    func verdict(runId: String, generation: UInt64, handleCompleted: Bool) -> Verdict {
        if disposed { return .disposed }
        guard generation == self.generation, let cur = current, cur.runId == runId else {
            // A completed run is not replaced by a later start (<doc:Diagnostics>: `run-replaced`
            // is for a run in progress): it stays completed.
            return handleCompleted ? .completed(live: false) : .inactive
        }
        return cur.completed ? .completed(live: true) : .record
    }

    /// Whether `current` has a change no snapshot carries yet.
    var hasUnsentChange: Bool {
        guard let r = current else { return false }
        return !r.completed && r.dirty && r.hasEntries
    }

    mutating func handle(_ event: Event) -> [Action] {
        var out: [Action] = []
        switch event {
        case .begin:
            guard !disposed else { return [] }
            if let old = current, !old.completed {
                // The live run's debounced change goes out first.
                if hasUnsentChange { out.append(.stage) }
                out.append(.reportReplaced(runId: old.runId))
            }
            closeWindow(&out)
            generation += 1
        case .changed(let debounceMs, let hasEntries):
            guard !disposed else { return [] }
            if debounceMs <= 0 { return [hasEntries ? .stage : .write] }
            // The window opens at the first unsent change, an entry or not: a property set before
            // the first entry opens it (when it ends with no entry, nothing is built and the next
            // change opens a new one).
            if window == .closed {
                window = .open(generation: generation, timer: nil)
                out.append(.scheduleTimer(afterMs: debounceMs, generation: generation))
            }
            out.append(.write)
        case .timerScheduled(let token, let gen):
            if case .open(gen, nil) = window {
                window = .open(generation: gen, timer: token)
            } else {
                // The window closed (or moved on) before its token came back.
                out.append(.cancelTimer(token))
            }
        case .timerFired(let gen):
            guard case .open(gen, _) = window else { return [] }
            window = .closed
            guard !disposed, gen == generation, hasUnsentChange else { return [] }
            out.append(.stage)
        case .flushed:
            closeWindow(&out)
        case .disposing:
            guard !disposed else { return [] }
            if hasUnsentChange { out.append(.stage) }
            closeWindow(&out)
        case .disposed:
            closeWindow(&out)
            disposed = true
        }
        return out
    }

    private mutating func closeWindow(_ out: inout [Action]) {
        if case .open(_, let timer) = window, let timer { out.append(.cancelTimer(timer)) }
        window = .closed
    }
}
