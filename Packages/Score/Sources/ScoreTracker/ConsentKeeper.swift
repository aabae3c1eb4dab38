import TrackerCore

/// Consent that is no longer silent, and that may be remembered (issue 37 item 3):
///
/// - the `consent` diagnostic, once per period in which nothing is granted, when that period
///   drops an event;
/// - with ``ScoreConfiguration/persistConsent``, the consent the app sets is written to a small
///   file in the store's directory, and the next launch starts from it. The file is read by a
///   background step (a constructor does no file I/O); events recorded meanwhile wait in memory
///   ("parked") and are gated by the stored consent once it is read, or by the app's own
///   `setConsent` when that comes first.
final class ConsentKeeper: Sendable {
    /// An event recorded while the stored consent was being read.
    struct Parked {
        let event: QueuedEvent
        let requires: UInt8
        /// For a recorded (pre-encoded) event: what a re-stamp needs; `nil` for an identify event.
        let restamp: (headCount: Int, identityCount: Int, generation: Int)?
    }

    enum Phase {
        /// Not persisting, or the stored consent is known.
        case ready
        /// The stored consent is being read; `appSet`: the app set consent meanwhile (it wins).
        case reading(parked: [Parked], appSet: Bool)
    }

    struct State {
        var phase = Phase.ready
        /// The `consent` diagnostic was given in the current period without consent.
        var noticeGiven = false
        /// The consent to write next, and whether a write step runs.
        var toWrite: ConsentState?
        var writing = false
    }

    /// The consent file; `nil` when consent is not persisted.
    let path: String?
    let directory: String?
    let state: Locked<State>

    /// Events parked at most while the stored consent is read (a read takes a moment; past this,
    /// events are gated by the starting consent as without persistence).
    static let maxParked = 1_000

    init(directory: String?, reading: Bool) {
        self.directory = directory
        self.path = directory.map { $0 + "/consent.json" }
        self.state = Locked(State(phase: reading && directory != nil ? .reading(parked: [], appSet: false) : .ready))
    }

    /// Whether recording calls park their events now.
    var reading: Bool {
        guard path != nil else { return false }
        return state.withLock { s in
            if case .reading = s.phase { return true }
            return false
        }
    }

    /// Parks `p`; `false` when the stored consent is known by now (hand the event over instead).
    func park(_ p: Parked) -> Bool {
        state.withLock { s in
            guard case .reading(var parked, let appSet) = s.phase, parked.count < ConsentKeeper.maxParked else { return false }
            s.phase = .ready
            parked.append(p)
            s.phase = .reading(parked: parked, appSet: appSet)
            return true
        }
    }

    /// The stored consent, from `bytes` (`{"analytics":true,"personalization":false,"advertising":true}`).
    static func decode(_ bytes: [UInt8]) -> ConsentState? {
        guard let value = try? WireJSON.decode(bytes),
            case .bool(let a)? = value["analytics"], case .bool(let p)? = value["personalization"],
            case .bool(let ad)? = value["advertising"]
        else { return nil }
        return ConsentState(analytics: a, personalization: p, advertising: ad)
    }

    static func encode(_ c: ConsentState) -> [UInt8] {
        WireJSON.encode(
            .object(
                JSONObject([
                    ("analytics", .bool(c.analytics)), ("personalization", .bool(c.personalization)),
                    ("advertising", .bool(c.advertising)),
                ])))
    }
}

extension ScoreClient {
    /// Reports the `consent` diagnostic when an event was just dropped while `consent` grants
    /// nothing, once per period without consent. Called outside the client's lock.
    func noteDroppedByConsent(_ consent: ConsentState) {
        guard consent.mask == 0 else { return }
        let first = consentKeeper.state.withLock { s -> Bool in
            defer { s.noticeGiven = true }
            return !s.noticeGiven
        }
        guard first else { return }
        // Only the fact and what to do: never the event's name, props or the user.
        diagnose(
            Diagnostic(
                code: .consent,
                message:
                    "events are dropped, not queued, while no consent category is granted: call setConsent(…) or "
                    + "grantAllConsent() once the user's choice is known (reported once until consent is granted)"))
    }

    /// The app set `consent`: it wins over a stored consent still being read, ends the current
    /// period without consent when it grants something, and is written when consent is persisted.
    func consentSetByApp(_ consent: ConsentState) {
        let write = consentKeeper.state.withLock { s -> Bool in
            if consent.mask != 0 { s.noticeGiven = false }
            if case .reading(let parked, _) = s.phase { s.phase = .reading(parked: parked, appSet: true) }
            guard consentKeeper.path != nil else { return false }
            s.toWrite = consent
            if s.writing { return false }
            s.writing = true
            return true
        }
        if write { scheduler.spawnIO { [self] in writeConsentFiles() } }
    }

    /// Writes the latest consent until none is waiting (one step at a time: the last value wins).
    func writeConsentFiles() {
        guard let path = consentKeeper.path, let directory = consentKeeper.directory else { return }
        while true {
            let next = consentKeeper.state.withLock { s -> ConsentState? in
                guard let c = s.toWrite else {
                    s.writing = false
                    return nil
                }
                s.toWrite = nil
                return c
            }
            guard let next else { return }
            do { try FileIO.writeAtomically(ConsentKeeper.encode(next), to: path, directory: directory) } catch {
                diagnose(Diagnostic(code: "storage", message: "the consent could not be stored (\(error))"))
            }
        }
    }

    /// Reads the stored consent (a background step), applies it unless the app set consent
    /// meanwhile, then hands the parked events over in their order.
    func readStoredConsent() {
        guard let path = consentKeeper.path else { return }
        var stored: ConsentState?
        do {
            if let bytes = try FileIO.readBytes(path) { stored = ConsentKeeper.decode(bytes) }
        } catch {
            diagnose(Diagnostic(code: "storage", message: "the stored consent could not be read (\(error))"))
        }
        // Held while the parked events are handed over: a recording call that finds the phase
        // ready then queues after them.
        let droppedUnder: ConsentState? = consentKeeper.state.withLock { k in
            guard case .reading(let parked, let appSet) = k.phase else { return nil }
            if !appSet, let stored { applyConsent(stored) }
            let (consent, dropped) = state.withLock { s -> (ConsentState, Bool) in
                var dropped = false
                for p in parked { dropped = !handOverParked(&s, p) || dropped }
                kickWriters(&s)
                return (s.consent, dropped)
            }
            k.phase = .ready
            return dropped ? consent : nil
        }
        if let droppedUnder { noteDroppedByConsent(droppedUnder) }
    }

    /// Queues a parked event when the consent in force allows it (`true`), else counts it dropped.
    @discardableResult
    func handOverParked(_ s: inout ClientState, _ p: Parked) -> Bool {
        guard allowed(p.requires, s.consent) else {
            countDropped(&s, p.requires)
            return false
        }
        var event = p.event
        if let r = p.restamp, s.identityGeneration != r.generation, let bytes = event.encoded {
            let current = identityBytes(&s)
            let restamped = EnvelopeWriter.restamp(
                bytes, headCount: r.headCount, oldIdentityCount: r.identityCount, identity: current)
            event = QueuedEvent(
                id: event.id, name: event.name, timestampMs: event.timestampMs, anonymousEpoch: s.anonymousEpoch,
                hasUserId: s.userId != nil, critical: event.critical, notice: false, requires: p.requires,
                encoded: restamped, layout: EnvelopeLayout(headCount: r.headCount, identity: current))
        }
        enqueue(&s, event)
        return true
    }
}

typealias Parked = ConsentKeeper.Parked
