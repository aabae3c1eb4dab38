import TrackerCore

/// The stored-state read (<doc:Storage#Reading-at-creation>) as pure functions, in the style of Core's
/// `DeliveryMachine`: ``parse(_:)`` says what the stored value holds, ``decide(_:_:)`` turns that
/// and the tracker's state into actions; the tracker (`processRead`) only performs them. Neither
/// does I/O or touches a lock, so tests drive them directly.
enum StoredReadMachine {
    /// What the read found.
    enum Parsed: Sendable {
        /// The read failed twice: this session runs without persistence.
        case unreadable
        /// A stored state of another format: left untouched, this session runs without persistence.
        case foreignFormat(Double)
        /// A state of format 1, nothing stored, or a value discarded as unusable.
        case contents(Contents)
    }

    /// The usable parts of a stored state of format 1.
    struct Contents: Sendable {
        /// The `destination` stamp.
        var destination: String?
        var current: RunState?
        var outboxes: [String: Item] = [:]
        /// `storage` diagnostics about what was discarded or dropped.
        var problems: [String] = []
        /// Whether the stored value must be written again (something in it was dropped).
        var rewrite = false

        static let empty = Contents()
    }

    /// What the tracker knows when the read lands.
    struct Context: Sendable {
        var destination: String?
        /// The predecessor's hand-over was for another destination.
        var handoffRefused = false
        var destinationChangedReported = false
        /// Highest settled seq per run.
        var settled: [String: Int] = [:]
        /// Seq of each outbox the tracker already holds.
        var outboxSeqs: [String: Int] = [:]
        /// The predecessor handed over nothing (no run, not even "no run").
        var handedNothing = true
        var sessionStarted = false
        var hasCurrent = false
        var predecessorDone = true
        var disposed = false
    }

    enum Action: Sendable {
        case diagnose(code: String, message: String)
        /// This session runs without persistence (nothing is written).
        case persistenceOff
        /// What the store holds now as resumable.
        case storedRun(StoredRunMark)
        /// `destination-changed` is now reported (once per tracker).
        case destinationChangedReported
        /// A stored outbox becomes the run's outbox: delivered now, or held until the
        /// predecessor's last attempts are answered.
        case adoptOutbox(String, Item, deliver: Bool)
        /// The stored run waits for `resume()`.
        case keepResumable(RunState)
        /// The stored run's unsent change is built and sent (a session already started).
        case stage(RunState)
        /// Write the whole state.
        case write
    }

    // MARK: Parse

    /// Whether the stored state holds the opt-out switch (`"optedOut": true`), read before
    /// anything else in it is applied.
    static func optedOut(_ raw: OnboardingRunTracker.RawRead) -> Bool {
        guard case .ok(let text?) = raw else { return false }
        return (try? WireJSON.decode(text))?["optedOut"]?.boolValue == true
    }

    static func parse(_ raw: OnboardingRunTracker.RawRead) -> Parsed {
        switch raw {
        case .failed: return .unreadable
        case .ok(nil): return .contents(.empty)
        case .ok(.some(let text)): return parse(text: text)
        }
    }

    static func parse(text: String) -> Parsed {
        var c = Contents()
        guard let value = try? WireJSON.decode(text) else {
            c.problems = ["the stored state is not JSON; it is discarded"]
            c.rewrite = true
            return .contents(c)
        }
        guard let obj = value.objectValue, let format = obj["format"]?.numberValue else {
            c.problems = ["the stored state is not recognised; it is discarded"]
            c.rewrite = true
            return .contents(c)
        }
        guard format == 1 else { return .foreignFormat(format) }
        c.destination = obj["destination"]?.stringValue
        var dropped: [String] = []
        if let cur = obj["current"], !cur.isNull {
            let (r, problem) = RunState.fromStored(cur)
            if let problem { dropped.append(problem) } else { c.current = r }
        }
        if let ob = obj["outboxes"] {
            if let oo = ob.objectValue {
                for (id, member) in oo.entries {
                    if let item = validOutbox(id, member) {
                        c.outboxes[id] = item
                    } else {
                        dropped.append("outbox \(id.prefix(36)) is malformed")
                    }
                }
            } else {
                dropped.append("outboxes is not an object")
            }
        }
        if !dropped.isEmpty {
            c.problems = ["malformed stored parts were dropped: " + dropped.joined(separator: "; ")]
            c.rewrite = true
        }
        return .contents(c)
    }

    /// A stored outbox member `{seq, body}` whose body is a snapshot of run `id` in contract v1.
    static func validOutbox(_ id: String, _ member: JSONValue) -> Item? {
        guard let m = member.objectValue, let seq = m["seq"]?.intValue, seq >= 1, let body = m["body"], let b = body.objectValue,
            b["run_id"]?.stringValue == id, b["seq"]?.intValue == seq,
            let status = b["status"]?.stringValue, status == "in_progress" || status == "completed",
            let steps = b["steps"]?.arrayValue, !steps.isEmpty,
            b["manifest"]?.objectValue != nil, b["onboarding"]?.objectValue != nil, b["context"]?.objectValue != nil,
            // A body that does not fit contract v1's typed form would be rejected by the ingest
            // anyway; it is dropped with the other malformed parts.
            let payload = try? OnboardingRunSnapshot(json: body)
        else { return nil }
        return Item(seq: seq, payload: payload)
    }

    // MARK: Decide

    /// What the tracker does with what the read found (<doc:Storage#Reading-at-creation> steps 5–8,
    /// <doc:HandOver> S2, S4 and R1).
    static func decide(_ parsed: Parsed, _ ctx: Context) -> [Action] {
        let c: Contents
        switch parsed {
        case .unreadable:
            return [
                .persistenceOff,
                .diagnose(code: "storage", message: "the stored state could not be read (twice); this session runs without persistence"),
            ]
        case .foreignFormat(let format):
            return [
                .persistenceOff,
                .diagnose(
                    code: "storage",
                    message:
                        "the stored state has an unknown format \(WireJSON.formatNumber(format)); it is left untouched and this session runs without persistence"
                ),
            ]
        case .contents(let contents):
            c = contents
        }
        var out: [Action] = c.problems.map { .diagnose(code: "storage", message: $0) }
        var rewrite = c.rewrite
        var current = c.current
        var stored = c.outboxes
        // What is stored now (after the predecessor's drain): the run it would resume.
        if let r = current, !r.completed {
            out.append(.storedRun(StoredRunMark(runId: r.runId, reserved: r.lastSeq)))
        } else {
            out.append(.storedRun(.none))
        }
        if (current != nil || !stored.isEmpty) && (ctx.handoffRefused || c.destination != ctx.destination) {
            current = nil
            stored = [:]
            rewrite = true
            if !ctx.destinationChangedReported {
                out.append(.destinationChangedReported)
                out.append(
                    .diagnose(code: "destination-changed", message: "stored state written for another destination is discarded unsent"))
            }
        }
        if ctx.handoffRefused { rewrite = true }
        for (id, item) in stored.sorted(by: { $0.key < $1.key }) {
            if let settled = ctx.settled[id], item.seq <= settled {
                rewrite = true
                continue
            }
            if let have = ctx.outboxSeqs[id], have >= item.seq { continue }
            out.append(.adoptOutbox(id, item, deliver: ctx.predecessorDone && !ctx.disposed))
        }
        if let r = current, !r.completed, ctx.handedNothing, !ctx.handoffRefused {
            if ctx.sessionStarted {
                if r.dirty && r.hasEntries { out.append(.stage(r)) }
                rewrite = true
            } else {
                out.append(.keepResumable(r))
            }
        }
        if rewrite || ctx.sessionStarted || ctx.hasCurrent { out.append(.write) }
        return out
    }
}
