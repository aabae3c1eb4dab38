import TrackerCore

/// The recording budget of the contract (256 KiB − 1 KiB), measured on the completion form.
let recordingBudget = 261_120
/// The entry limit.
let maxEntries = 500

/// One recorded answer with its cached encoded size.
struct AnswerState: Sendable {
    var questionKey: String
    var json: JSONValue
    var size: Int

    init(questionKey: String, json: JSONValue) {
        self.questionKey = questionKey
        self.json = json
        self.size = WireJSON.encode(json).count
    }
}

/// One entry with running byte counts of its completion form.
struct EntryState: Sendable {
    var stepKey: String
    var enteredAt: Int64
    var exitedAt: Int64?
    var answers: [AnswerState] = []
    /// Bytes of the completion form with no answer (`{"step_key":…,"answers":[]}`).
    let baseSize: Int
    /// Bytes of the answers, commas included.
    var answersSize = 0
    /// Cached JSON of this entry with its recorded exit (invalidated on change).
    var cache: JSONValue?

    /// `{"step_key":"","entered_at":"…","exited_at":"…","answers":[]}` minus the two quotes of the key.
    static let overhead: Int = {
        let ts = JSONValue.string("2026-01-10T08:00:00.000Z")
        let o: JSONValue = ["step_key": "", "entered_at": ts, "exited_at": ts, "answers": []]
        return WireJSON.encode(o).count - 2
    }()

    init(stepKey: String, enteredAt: Int64, exitedAt: Int64? = nil) {
        self.stepKey = stepKey
        self.enteredAt = enteredAt
        self.exitedAt = exitedAt
        self.baseSize = EntryState.overhead + WireJSON.encode(.string(stepKey)).count
    }

    var completionSize: Int { baseSize + answersSize }

    /// Size change if `answer` were recorded (replacing the same question in place, or appended).
    func sizeDelta(for answer: AnswerState) -> (delta: Int, index: Int?) {
        if let i = answers.firstIndex(where: { $0.questionKey == answer.questionKey }) {
            return (answer.size - answers[i].size, i)
        }
        return (answer.size + (answers.isEmpty ? 0 : 1), nil)
    }

    mutating func apply(_ answer: AnswerState, at index: Int?, delta: Int) {
        if let index { answers[index] = answer } else { answers.append(answer) }
        answersSize += delta
        cache = nil
    }

    mutating func setExit(_ ms: Int64?) {
        exitedAt = ms
        cache = nil
    }

    func json(exit: Int64?) -> JSONValue {
        var o = JSONObject()
        o.appendUnchecked("step_key", .string(stepKey))
        o.appendUnchecked("entered_at", .string(Timestamp.format(ms: enteredAt)))
        o.appendUnchecked("exited_at", exit.map { .string(Timestamp.format(ms: $0)) } ?? .null)
        o.appendUnchecked("answers", .array(answers.map(\.json)))
        return .object(o)
    }

    /// The entry with its recorded exit, cached.
    mutating func recordedJSON() -> JSONValue {
        if let cache { return cache }
        let j = json(exit: exitedAt)
        cache = j
        return j
    }
}

/// Everything recorded for one run, with the running byte counts of its completion form
/// (onboarding-tracker.md §10.2) so that every recording call measures in O(1).
struct RunState: Sendable {
    var runId: String
    var lastSeq = 0
    var onboarding: JSONValue
    var studio: JSONValue?
    var context: JSONValue
    var manifest: JSONValue
    var manifestKeys: Set<String>
    var properties = JSONObject()
    var steps: [EntryState] = []
    var provisionalExit = false
    var truncated = false
    var completed = false
    var completedAt: Int64?
    var lastActiveAt: Int64
    var dirty = false

    /// Completion form bytes with `seq` 0, no properties and no entry.
    private(set) var headerSize = 0
    /// `"properties":{…},` bytes, 0 when there is none.
    private(set) var propertiesSize = 0
    /// Entries' completion-form bytes, commas included.
    private(set) var entriesSize = 0

    init(runId: String, onboarding: JSONValue, studio: JSONValue?, context: JSONValue, manifest: JSONValue,
         manifestKeys: Set<String>, lastActiveAt: Int64)
    {
        self.runId = runId
        self.onboarding = onboarding
        self.studio = studio
        self.context = context
        self.manifest = manifest
        self.manifestKeys = manifestKeys
        self.lastActiveAt = lastActiveAt
        recomputeSizes()
    }

    mutating func recomputeSizes() {
        let ts = JSONValue.string("2026-01-10T08:00:00.000Z")
        var o = JSONObject()
        o.appendUnchecked("schema_version", 1)
        o.appendUnchecked("run_id", .string(runId))
        o.appendUnchecked("seq", 0)
        o.appendUnchecked("status", "completed")
        o.appendUnchecked("started_at", ts)
        o.appendUnchecked("completed_at", ts)
        o.appendUnchecked("sent_at", ts)
        o.appendUnchecked("onboarding", onboarding)
        if let studio { o.appendUnchecked("studio", studio) }
        o.appendUnchecked("context", context)
        o.appendUnchecked("manifest", manifest)
        o.appendUnchecked("steps", [])
        headerSize = WireJSON.encode(.object(o)).count
        propertiesSize = Self.propertiesSize(properties)
        entriesSize = steps.reduce(0) { $0 + $1.completionSize } + max(0, steps.count - 1)
    }

    static func propertiesSize(_ p: JSONObject) -> Int {
        p.isEmpty ? 0 : 14 + WireJSON.encode(.object(p)).count // `"properties":` + value + `,`
    }

    @inline(__always) static func digits(_ n: Int) -> Int {
        var d = 1
        var v = n
        while v >= 10 { v /= 10; d += 1 }
        return d
    }

    /// The completion form's size with the next seq, after adding `extra` bytes.
    func measure(extra: Int = 0, propertiesSize p: Int? = nil) -> Int {
        headerSize - 1 + Self.digits(lastSeq + 1) + (p ?? propertiesSize) + entriesSize + extra
    }

    var hasEntries: Bool { !steps.isEmpty }

    /// The floor of "now": the latest recorded time of the last entry.
    var floor: Int64 {
        guard let last = steps.last else { return 0 }
        return max(last.enteredAt, last.exitedAt ?? last.enteredAt)
    }

    // MARK: Mutations keeping the byte counts

    /// Bytes a new entry for `key` adds.
    static func entryCost(_ key: String, count: Int) -> Int {
        EntryState.overhead + WireJSON.encode(.string(key)).count + (count == 0 ? 0 : 1)
    }

    mutating func append(_ entry: EntryState) {
        entriesSize += entry.completionSize + (steps.isEmpty ? 0 : 1)
        steps.append(entry)
    }

    mutating func applyAnswer(_ answer: AnswerState, entry: Int, at index: Int?, delta: Int) {
        steps[entry].apply(answer, at: index, delta: delta)
        entriesSize += delta
    }

    mutating func setProperties(_ p: JSONObject, size: Int) {
        properties = p
        propertiesSize = size
    }

    // MARK: Wire form

    /// The snapshot at `sentAt` with `seq` (onboarding-tracker.md §3).
    mutating func snapshotJSON(seq: Int, sentAt: Int64) -> JSONValue {
        var o = JSONObject()
        o.appendUnchecked("schema_version", 1)
        o.appendUnchecked("run_id", .string(runId))
        o.appendUnchecked("seq", .number(Double(seq)))
        o.appendUnchecked("status", completed ? "completed" : "in_progress")
        o.appendUnchecked("started_at", .string(Timestamp.format(ms: steps.first?.enteredAt ?? sentAt)))
        o.appendUnchecked("completed_at", completedAt.map { .string(Timestamp.format(ms: $0)) } ?? .null)
        o.appendUnchecked("sent_at", .string(Timestamp.format(ms: sentAt)))
        o.appendUnchecked("onboarding", onboarding)
        if let studio { o.appendUnchecked("studio", studio) }
        o.appendUnchecked("context", context)
        o.appendUnchecked("manifest", manifest)
        if !properties.isEmpty { o.appendUnchecked("properties", .object(properties)) }
        if truncated { o.appendUnchecked("truncated", true) }
        var arr: [JSONValue] = []
        arr.reserveCapacity(steps.count)
        let lastIndex = steps.count - 1
        for i in steps.indices {
            if i == lastIndex && !completed && !truncated {
                arr.append(steps[i].json(exit: nil))
            } else {
                arr.append(steps[i].recordedJSON())
            }
        }
        o.appendUnchecked("steps", .array(arr))
        return .object(o)
    }

    /// The completion form of the current state (for checking the incremental measure).
    func completionFormBytes(now: Int64) -> [UInt8] {
        var copy = self
        copy.completed = true
        copy.completedAt = now
        copy.truncated = false
        if let last = copy.steps.indices.last { copy.steps[last].setExit(now) }
        return WireJSON.encode(copy.snapshotJSON(seq: lastSeq + 1, sentAt: now))
    }

    // MARK: Stored form (onboarding-tracker.md §5.2)

    /// The stored form; `seqReserved` (≥ `lastSeq`) is the highest seq the run may have used:
    /// a run restored from it continues past it.
    mutating func storedJSON(seqReserved: Int) -> JSONValue {
        var o = JSONObject()
        o.appendUnchecked("runId", .string(runId))
        o.appendUnchecked("lastSeq", .number(Double(lastSeq)))
        o.appendUnchecked("seqReserved", .number(Double(max(seqReserved, lastSeq))))
        o.appendUnchecked("onboarding", onboarding)
        if let studio { o.appendUnchecked("studio", studio) }
        o.appendUnchecked("context", context)
        o.appendUnchecked("manifest", manifest)
        if !properties.isEmpty { o.appendUnchecked("properties", .object(properties)) }
        var arr: [JSONValue] = []
        arr.reserveCapacity(steps.count)
        for i in steps.indices { arr.append(steps[i].recordedJSON()) }
        o.appendUnchecked("steps", .array(arr))
        o.appendUnchecked("provisionalExit", .bool(provisionalExit))
        o.appendUnchecked("truncated", .bool(truncated))
        o.appendUnchecked("status", completed ? "completed" : "in_progress")
        o.appendUnchecked("completedAt", completedAt.map { .string(Timestamp.format(ms: $0)) } ?? .null)
        o.appendUnchecked("lastActiveAt", .number(Double(lastActiveAt)))
        o.appendUnchecked("dirty", .bool(dirty))
        return .object(o)
    }

    /// Decodes a stored `current`; `nil` with a problem when it is not a valid run state.
    static func fromStored(_ v: JSONValue) -> (RunState?, String?) {
        guard let o = v.objectValue else { return (nil, "current is not an object") }
        guard let runId = o["runId"]?.stringValue, IDs.isLowercaseUUID(runId) else { return (nil, "current.runId is invalid") }
        guard let storedLastSeq = o["lastSeq"]?.intValue, storedLastSeq >= 0 else { return (nil, "current.lastSeq is invalid") }
        // The reservation (absent in states written before it existed): seqs up to it may have
        // been sent without their write landing, so the restored run continues past it.
        var lastSeq = storedLastSeq
        if let r = o["seqReserved"] {
            guard let reserved = r.intValue, reserved >= storedLastSeq else { return (nil, "current.seqReserved is invalid") }
            lastSeq = reserved
        }
        guard let ob = o["onboarding"]?.objectValue, ob["key"]?.stringValue != nil, ob["version"]?.stringValue != nil
        else { return (nil, "current.onboarding is invalid") }
        guard let ctx = o["context"], ctx.objectValue != nil else { return (nil, "current.context is invalid") }
        guard let man = o["manifest"]?.objectValue, let mSteps = man["steps"]?.arrayValue, !mSteps.isEmpty else {
            return (nil, "current.manifest is invalid")
        }
        var keys = Set<String>()
        for s in mSteps {
            guard let k = s["step_key"]?.stringValue else { return (nil, "current.manifest is invalid") }
            keys.insert(k)
        }
        guard let stepsArr = o["steps"]?.arrayValue else { return (nil, "current.steps is invalid") }
        var entries: [EntryState] = []
        for e in stepsArr {
            guard let eo = e.objectValue, let k = eo["step_key"]?.stringValue,
                  let ea = eo["entered_at"]?.stringValue, let enteredAt = parseTS(ea),
                  let answers = eo["answers"]?.arrayValue, answers.allSatisfy({ $0.objectValue != nil })
            else { return (nil, "current.steps holds an invalid entry") }
            var exit: Int64?
            switch eo["exited_at"] {
            case .some(.null): exit = nil
            case let .some(.string(s)):
                guard let t = parseTS(s) else { return (nil, "current.steps holds an invalid entry") }
                exit = t
            default: return (nil, "current.steps holds an invalid entry")
            }
            var entry = EntryState(stepKey: k, enteredAt: enteredAt, exitedAt: exit)
            for a in answers {
                let ans = AnswerState(questionKey: a["question_key"]?.stringValue ?? "", json: a)
                let (delta, idx) = entry.sizeDelta(for: ans)
                entry.apply(ans, at: idx, delta: delta)
            }
            entries.append(entry)
        }
        if let s = o["studio"], s.objectValue == nil { return (nil, "current.studio is invalid") }
        if let p = o["properties"], p.objectValue == nil { return (nil, "current.properties is invalid") }
        guard let prov = o["provisionalExit"]?.boolValue, let trunc = o["truncated"]?.boolValue else {
            return (nil, "current flags are invalid")
        }
        guard let status = o["status"]?.stringValue, status == "in_progress" || status == "completed" else {
            return (nil, "current.status is invalid")
        }
        var completedAt: Int64?
        switch o["completedAt"] {
        case nil, .some(.null): completedAt = nil
        case let .some(.string(s)):
            guard let t = parseTS(s) else { return (nil, "current.completedAt is invalid") }
            completedAt = t
        default: return (nil, "current.completedAt is invalid")
        }
        guard let lastActive = o["lastActiveAt"]?.numberValue, lastActive.isFinite else { return (nil, "current.lastActiveAt is invalid") }
        var dirty = false
        if let d = o["dirty"] {
            guard let b = d.boolValue else { return (nil, "current.dirty is invalid") }
            dirty = b
        }
        var r = RunState(runId: runId, onboarding: .object(ob), studio: o["studio"], context: ctx, manifest: .object(man),
                         manifestKeys: keys, lastActiveAt: Int64(lastActive))
        r.lastSeq = lastSeq
        r.properties = o["properties"]?.objectValue ?? JSONObject()
        for e in entries { r.append(e) }
        r.provisionalExit = prov
        r.truncated = trunc
        r.completed = status == "completed"
        r.completedAt = completedAt
        r.dirty = dirty
        r.recomputeSizes()
        return (r, nil)
    }

    private static func parseTS(_ s: String) -> Int64? {
        Timestamp.matchesPattern(s) ? Timestamp.parse(s) : nil
    }
}
