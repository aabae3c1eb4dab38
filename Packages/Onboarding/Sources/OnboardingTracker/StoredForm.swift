import TrackerCore

extension OnboardingRunTracker.State {
    /// The whole stored state as one write (<doc:Storage#Layout>), and what it records for the
    /// outbox's ledger: the run it holds as resumable and the seq it reserves (``StoredRunMark``).
    /// Pure: composed under the tracker's lock when the outbox starts the write.
    mutating func storedState(destination: String?) -> OutboxWrite {
        // Opted out: nothing recorded stays stored, only the switch.
        if optedOut {
            var o = JSONObject()
            o.appendUnchecked("format", 1)
            if let destination { o.appendUnchecked("destination", .string(destination)) }
            o.appendUnchecked("current", .null)
            o.appendUnchecked("outboxes", .object(JSONObject()))
            o.appendUnchecked("optedOut", true)
            return OutboxWrite(.value(.object(o)), records: [:])
        }
        var current: JSONValue = .null
        var mark = StoredRunMark.none
        if run.current != nil, !run.current!.completed {
            // The live run reserves seqs ahead (issue 14 item 5).
            let reserved = run.current!.lastSeq + seqReservation
            current = run.current!.storedJSON(seqReserved: reserved)
            mark = StoredRunMark(runId: run.current!.runId, reserved: reserved)
        } else if case .awaiting(var r?) = session {
            // Nothing was sent for it this session: its reservation stays what it was.
            current = r.storedJSON(seqReserved: r.lastSeq)
            mark = StoredRunMark(runId: r.runId, reserved: r.lastSeq)
            session = .awaiting(resumable: r)
        }
        var stored = JSONObject()
        var bodies: [String: (seq: Int, json: JSONValue)] = [:]
        for (id, item) in outboxes.sorted(by: { $0.key < $1.key }) {
            let body: JSONValue
            if let b = storedBodies[id], b.seq == item.seq { body = b.json } else { body = item.payload.wireJSON() }
            bodies[id] = (item.seq, body)
            stored.appendUnchecked(id, .object(["seq": .number(Double(item.seq)), "body": body]))
        }
        storedBodies = bodies
        if current == .null && stored.isEmpty { return OutboxWrite(.remove, records: mark.records) }
        var o = JSONObject()
        o.appendUnchecked("format", 1)
        if let destination { o.appendUnchecked("destination", .string(destination)) }
        o.appendUnchecked("current", current)
        o.appendUnchecked("outboxes", .object(stored))
        return OutboxWrite(.value(.object(o)), records: mark.records)
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
