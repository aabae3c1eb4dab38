import TrackerCore

/// The recording budget of the contract (256 KiB − 1 KiB), measured on the completion form.
let recordingBudget = 261_120
/// The entry limit.
let maxEntries = 500

typealias Snapshot = OnboardingRunSnapshot

/// The bytes `value` writes: every size below is measured by the contract type's own writer.
func wireSize(_ value: some WireEncodable) -> Int {
    var w = WireWriter(capacity: 256)
    value.writeWire(to: &w)
    return w.count
}

/// A timestamp of the wire width (every timestamp is written with 24 characters), for measuring
/// a form whose times are not known yet.
private let widthTimestamp = "2026-01-10T08:00:00.000Z"

/// One recorded answer in its contract type, with its encoded size.
struct AnswerState: Sendable {
    var answer: Snapshot.Answer
    var size: Int

    init(_ answer: Snapshot.Answer) {
        self.answer = answer
        self.size = wireSize(answer)
    }

    /// An answer's JSON in its contract type: the validated form `StartValidation.answer`
    /// builds (read directly), or a stored one (decoded, so anything outside the contract fails).
    init?(json: JSONValue) {
        guard let a = AnswerState.validated(json) ?? (try? Snapshot.Answer(json: json)) else { return nil }
        self.init(a)
    }

    /// The answer when `json` is exactly `{question_key, kind, value[, unit]}` with the right types.
    private static func validated(_ json: JSONValue) -> Snapshot.Answer? {
        guard case .object(let o) = json, o.count == 3 || o.count == 4, o.entries[0].key == "question_key", o.entries[1].key == "kind",
            o.entries[2].key == "value", case .string(let question) = o.entries[0].value, case .string(let kind) = o.entries[1].value
        else { return nil }
        let value = o.entries[2].value
        let unit: String?
        if o.count == 4 {
            guard kind == "numeric", o.entries[3].key == "unit", case .string(let u) = o.entries[3].value else { return nil }
            unit = u
        } else {
            unit = nil
        }
        switch (kind, value) {
        case ("single", .string(let v)): return Snapshot.Answer(questionKey: question, value: .single(v))
        case ("text", .string(let v)): return Snapshot.Answer(questionKey: question, value: .text(v))
        case ("numeric", .number(let n)): return Snapshot.Answer(questionKey: question, value: .numeric(n, unit: unit))
        case ("multi", .array(let items)):
            var keys: [String] = []
            keys.reserveCapacity(items.count)
            for i in items {
                guard case .string(let k) = i else { return nil }
                keys.append(k)
            }
            return Snapshot.Answer(questionKey: question, value: .multi(keys))
        default: return nil
        }
    }

    var questionKey: String { answer.questionKey }
}

/// One entry (its exit as recorded) with running byte counts of its completion form; its
/// contract type is built when a snapshot or a write needs it, and kept until the entry changes.
struct EntryState: Sendable {
    let stepKey: String
    private(set) var enteredAt: Int64
    private(set) var exitedAt: Int64?
    private(set) var answers: [Snapshot.Answer] = []
    /// Encoded size of each answer, in `answers` order.
    private var answerSizes: [Int] = []
    /// Bytes of the completion form with no answer (`{"step_key":…,"answers":[]}`).
    let baseSize: Int
    /// Bytes of the answers, commas included.
    private(set) var answersSize = 0
    /// The entry in its contract type, and its stored form's JSON, until the entry changes.
    private var wireCache: Snapshot.Entry?
    private var storedCache: JSONValue?

    /// `baseSize`: ``baseSize(_:)`` of `stepKey`, when the caller has it.
    init(stepKey: String, enteredAt: Int64, exitedAt: Int64? = nil, baseSize: Int? = nil) {
        self.stepKey = stepKey
        self.enteredAt = enteredAt
        self.exitedAt = exitedAt
        self.baseSize = baseSize ?? EntryState.baseSize(stepKey)
    }

    /// The completion-form bytes of an entry of `stepKey` with no answer.
    static func baseSize(_ stepKey: String) -> Int {
        wireSize(Snapshot.Entry(stepKey: stepKey, enteredAt: widthTimestamp, exitedAt: widthTimestamp, answers: []))
    }

    var completionSize: Int { baseSize + answersSize }

    /// Size change if `answer` were recorded (replacing the same question in place, or appended).
    func sizeDelta(for answer: AnswerState) -> (delta: Int, index: Int?) {
        if let i = answers.firstIndex(where: { $0.questionKey == answer.questionKey }) {
            return (answer.size - answerSizes[i], i)
        }
        return (answer.size + (answers.isEmpty ? 0 : 1), nil)
    }

    mutating func apply(_ answer: AnswerState, at index: Int?, delta: Int) {
        if let index {
            answers[index] = answer.answer
            answerSizes[index] = answer.size
        } else {
            answers.append(answer.answer)
            answerSizes.append(answer.size)
        }
        answersSize += delta
        wireCache = nil
        storedCache = nil
    }

    mutating func setExit(_ ms: Int64?) {
        exitedAt = ms
        wireCache = nil
        storedCache = nil
    }

    /// The entry in its contract type, with its recorded exit (cached).
    mutating func wire() -> Snapshot.Entry {
        if let wireCache { return wireCache }
        let e = Snapshot.Entry(
            stepKey: stepKey, enteredAt: Timestamp.format(ms: enteredAt),
            exitedAt: exitedAt.map { Timestamp.format(ms: $0) }, answers: answers)
        wireCache = e
        return e
    }

    /// The entry as the stored state writes it (cached).
    mutating func storedForm() -> JSONValue {
        if let storedCache { return storedCache }
        let j = wire().wireJSON()
        storedCache = j
        return j
    }
}

/// Everything recorded for one run, in Core's generated contract types, with the running byte
/// counts of its completion form (<doc:Limits#How-the-byte-budget-is-measured>) so that every
/// recording call measures in O(1). ``snapshot(seq:sentAt:)`` assembles the value a sink receives.
struct RunState: Sendable {
    var runId: String
    var lastSeq = 0
    let onboarding: Snapshot.Onboarding
    let studio: Snapshot.Studio?
    let context: Snapshot.Context
    let manifest: Snapshot.Manifest
    let manifestKeys: Set<String>
    /// ``EntryState/baseSize(_:)`` of each manifest step key, measured once.
    let entryBaseSizes: [String: Int]
    private(set) var properties = OrderedScalarMap()
    var steps: [EntryState] = []
    var provisionalExit = false
    var truncated = false
    var completed = false
    var completedAt: Int64?
    var lastActiveAt: Int64
    var dirty = false

    /// Completion form bytes with `seq` 0, the properties and no entry.
    private(set) var headerSize = 0
    /// Entries' completion-form bytes, commas included.
    private(set) var entriesSize = 0

    init(
        runId: String, onboarding: Snapshot.Onboarding, studio: Snapshot.Studio?, context: Snapshot.Context,
        manifest: Snapshot.Manifest, manifestKeys: Set<String>, lastActiveAt: Int64
    ) {
        self.runId = runId
        self.onboarding = onboarding
        self.studio = studio
        self.context = context
        self.manifest = manifest
        self.manifestKeys = manifestKeys
        var sizes: [String: Int] = [:]
        for k in manifestKeys { sizes[k] = EntryState.baseSize(k) }
        entryBaseSizes = sizes
        self.lastActiveAt = lastActiveAt
        headerSize = headerSize(properties: properties)
    }

    /// A new run from a validated start; `nil` (never with validated input) when a part does not
    /// fit its contract type.
    init?(runId: String, spec: RunSpec, lastActiveAt: Int64) {
        guard let onboarding = spec.onboarding, let context = spec.context else { return nil }
        self.init(
            runId: runId, onboarding: onboarding, studio: spec.studio, context: context, manifest: spec.manifest,
            manifestKeys: spec.manifestKeys, lastActiveAt: lastActiveAt)
    }

    /// The completion form's bytes with `seq` 0, `properties` and no entry.
    func headerSize(properties: OrderedScalarMap) -> Int {
        wireSize(
            Snapshot(
                runId: runId, seq: 0, status: .completed, startedAt: widthTimestamp, completedAt: widthTimestamp,
                sentAt: widthTimestamp, onboarding: onboarding, studio: studio, context: context, manifest: manifest,
                properties: properties, truncated: false, steps: []))
    }

    @inline(__always) static func digits(_ n: Int) -> Int {
        var d = 1
        var v = n
        while v >= 10 {
            v /= 10
            d += 1
        }
        return d
    }

    /// The completion form's size with the next seq, after adding `extra` bytes (with the
    /// header of other properties when `header` is given).
    func measure(extra: Int = 0, header: Int? = nil) -> Int {
        (header ?? headerSize) - 1 + Self.digits(lastSeq + 1) + entriesSize + extra
    }

    var hasEntries: Bool { !steps.isEmpty }

    /// The floor of "now": the latest recorded time of the last entry.
    var floor: Int64 {
        guard let last = steps.last else { return 0 }
        return max(last.enteredAt, last.exitedAt ?? last.enteredAt)
    }

    // MARK: Mutations keeping the byte counts

    /// A new entry for `key` at `enteredAt`.
    func newEntry(_ key: String, enteredAt: Int64) -> EntryState {
        EntryState(stepKey: key, enteredAt: enteredAt, baseSize: entryBaseSizes[key])
    }

    /// Bytes a new entry for `key` adds.
    func entryCost(_ key: String) -> Int {
        (entryBaseSizes[key] ?? EntryState.baseSize(key)) + (steps.isEmpty ? 0 : 1)
    }

    mutating func append(_ entry: EntryState) {
        entriesSize += entry.completionSize + (steps.isEmpty ? 0 : 1)
        steps.append(entry)
    }

    mutating func applyAnswer(_ answer: AnswerState, entry: Int, at index: Int?, delta: Int) {
        steps[entry].apply(answer, at: index, delta: delta)
        entriesSize += delta
    }

    /// Replaces the properties; `header` is ``headerSize(properties:)`` of them.
    mutating func setProperties(_ p: OrderedScalarMap, header: Int) {
        properties = p
        headerSize = header
    }

    // MARK: Wire form

    /// The snapshot at `sentAt` with `seq` (<doc:Snapshots>): the open last entry of a
    /// run in progress goes without its exit.
    mutating func snapshot(seq: Int, sentAt: Int64) -> Snapshot {
        var entries: [Snapshot.Entry] = []
        entries.reserveCapacity(steps.count)
        for i in steps.indices { entries.append(steps[i].wire()) }
        if !completed && !truncated, !entries.isEmpty { entries[entries.count - 1].exitedAt = nil }
        return Snapshot(
            runId: runId, seq: seq, status: completed ? .completed : .inProgress,
            startedAt: Timestamp.format(ms: steps.first?.enteredAt ?? sentAt),
            completedAt: completedAt.map { Timestamp.format(ms: $0) }, sentAt: Timestamp.format(ms: sentAt),
            onboarding: onboarding, studio: studio, context: context, manifest: manifest,
            properties: properties, truncated: truncated, steps: entries)
    }

    /// The completion form of the current state (for checking the incremental measure).
    func completionFormBytes(now: Int64) -> [UInt8] {
        var copy = self
        copy.completed = true
        copy.completedAt = now
        copy.truncated = false
        if let last = copy.steps.indices.last { copy.steps[last].setExit(now) }
        return copy.snapshot(seq: lastSeq + 1, sentAt: now).wireBytes()
    }

    // MARK: Stored form (<doc:Storage#Layout>)

    /// The stored form; `seqReserved` (≥ `lastSeq`) is the highest seq the run may have used:
    /// a run restored from it continues past it.
    mutating func storedJSON(seqReserved: Int) -> JSONValue {
        var o = JSONObject()
        o.appendUnchecked("runId", .string(runId))
        o.appendUnchecked("lastSeq", .number(Double(lastSeq)))
        o.appendUnchecked("seqReserved", .number(Double(max(seqReserved, lastSeq))))
        o.appendUnchecked("onboarding", onboarding.wireJSON())
        if let studio { o.appendUnchecked("studio", studio.wireJSON()) }
        o.appendUnchecked("context", context.wireJSON())
        o.appendUnchecked("manifest", manifest.wireJSON())
        if !properties.isEmpty { o.appendUnchecked("properties", properties.wireJSON()) }
        var arr: [JSONValue] = []
        arr.reserveCapacity(steps.count)
        for i in steps.indices { arr.append(steps[i].storedForm()) }
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
        guard let ob = o["onboarding"], let onboarding = try? Snapshot.Onboarding(json: ob) else {
            return (nil, "current.onboarding is invalid")
        }
        guard let ctx = o["context"], let context = try? Snapshot.Context(json: ctx) else { return (nil, "current.context is invalid") }
        guard let man = o["manifest"], let manifest = try? Snapshot.Manifest(json: man), !manifest.steps.isEmpty else {
            return (nil, "current.manifest is invalid")
        }
        let keys = Set(manifest.steps.map(\.stepKey))
        guard let stepsArr = o["steps"]?.arrayValue else { return (nil, "current.steps is invalid") }
        var entries: [EntryState] = []
        for e in stepsArr {
            guard let eo = e.objectValue, let k = eo["step_key"]?.stringValue,
                let ea = eo["entered_at"]?.stringValue, let enteredAt = parseTS(ea),
                let answers = eo["answers"]?.arrayValue
            else { return (nil, "current.steps holds an invalid entry") }
            var exit: Int64?
            switch eo["exited_at"] {
            case .some(.null): exit = nil
            case .some(.string(let s)):
                guard let t = parseTS(s) else { return (nil, "current.steps holds an invalid entry") }
                exit = t
            default: return (nil, "current.steps holds an invalid entry")
            }
            var entry = EntryState(stepKey: k, enteredAt: enteredAt, exitedAt: exit)
            for a in answers {
                guard let ans = AnswerState(json: a) else { return (nil, "current.steps holds an invalid entry") }
                let (delta, idx) = entry.sizeDelta(for: ans)
                entry.apply(ans, at: idx, delta: delta)
            }
            entries.append(entry)
        }
        var studio: Snapshot.Studio?
        if let s = o["studio"] {
            guard let typed = try? Snapshot.Studio(json: s) else { return (nil, "current.studio is invalid") }
            studio = typed
        }
        var properties = OrderedScalarMap()
        if let p = o["properties"] {
            guard let typed = try? OrderedScalarMap(json: p, path: "$") else { return (nil, "current.properties is invalid") }
            properties = typed
        }
        guard let prov = o["provisionalExit"]?.boolValue, let trunc = o["truncated"]?.boolValue else {
            return (nil, "current flags are invalid")
        }
        guard let status = o["status"]?.stringValue, status == "in_progress" || status == "completed" else {
            return (nil, "current.status is invalid")
        }
        var completedAt: Int64?
        switch o["completedAt"] {
        case nil, .some(.null): completedAt = nil
        case .some(.string(let s)):
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
        var r = RunState(
            runId: runId, onboarding: onboarding, studio: studio, context: context, manifest: manifest,
            manifestKeys: keys, lastActiveAt: Int64(lastActive))
        r.lastSeq = lastSeq
        r.setProperties(properties, header: r.headerSize(properties: properties))
        for e in entries { r.append(e) }
        r.provisionalExit = prov
        r.truncated = trunc
        r.completed = status == "completed"
        r.completedAt = completedAt
        r.dirty = dirty
        return (r, nil)
    }

    private static func parseTS(_ s: String) -> Int64? {
        Timestamp.matchesPattern(s) ? Timestamp.parse(s) : nil
    }
}
