import TrackerCore

/// What one recording rule did to a run (<doc:InputValidation>): the tracker's runtime acts on it
/// (reports the diagnostics, writes and stages the change, updates the handle) after the rule ran.
/// The rules themselves are pure mutating functions on ``RunState``: no lock, clock, storage or
/// delivery (issue 36 item 4).
struct RecordingOutcome: Sendable, Equatable {
    /// What the call declined or noticed, in the order the reference reports it.
    var diagnostics: [Diagnostic] = []
    /// The run changed: it is written, and sent after the debounce window (or at once).
    var changed = false
    /// The step key of the entry the call added (the handle's `currentStepKey`), if any.
    var entered: String?

    mutating func diag(_ code: String, _ message: String, _ runId: String?) {
        diagnostics.append(Diagnostic(code: code, message: message, runId: runId))
    }
}

/// The message of every `truncated` diagnostic.
let truncatedMessage = "recording stopped at 500 entries or 261,120 bytes"

extension RunState {
    /// "Now" for this run: never before the latest recorded time of its last entry.
    func time(_ nowMs: Int64) -> Int64 { max(nowMs, floor) }

    /// `enterStep(stepKey)` at `nowMs` (<doc:InputValidation#Step-calls>): closes the open entry
    /// and opens one for `stepKey`, or truncates the run at the entry or byte limit.
    mutating func enterStep(_ stepKey: String, nowMs: Int64) -> RecordingOutcome {
        var o = RecordingOutcome()
        guard manifestKeys.contains(stepKey) else {
            o.diag(
                "unknown-step",
                "a step key that is not in the manifest (\(stepKey.unicodeScalars.count) characters; not repeated here, it may not be a key)",
                runId)
            return o
        }
        let t = time(nowMs)
        if let last = steps.last, last.stepKey == stepKey, last.exitedAt == nil {
            o.diag("already-on-step", "step \"\(stepKey)\" is already the open entry", runId)
            return o
        }
        let open = steps.indices.last.flatMap { steps[$0].exitedAt == nil ? $0 : nil }
        if truncated {
            if let i = open {
                steps[i].setExit(t)
                o.changed = true
            }
            o.diag("truncated", truncatedMessage, runId)
        } else if steps.count >= maxEntries || measure(extra: entryCost(stepKey)) > recordingBudget {
            truncated = true
            if let i = open { steps[i].setExit(t) }
            provisionalExit = false
            o.changed = true
            o.diag("truncated", truncatedMessage, runId)
        } else {
            if let i = open { steps[i].setExit(t) }
            append(newEntry(stepKey, enteredAt: t))
            provisionalExit = false
            lastActiveAt = t
            o.changed = true
            o.entered = stepKey
        }
        return o
    }

    /// `exitStep(stepKey, answers:)` at `nowMs` (<doc:InputValidation#Answers>): records the
    /// valid answers on the current or previous entry and exits the open one (provisionally).
    /// One diagnostic per code, with the count and the first names, never one per dropped answer.
    mutating func exitStep(_ stepKey: String, answers: [AnswerInput], nowMs: Int64) -> RecordingOutcome {
        var o = RecordingOutcome()
        let n = steps.count
        let target: Int
        if n >= 1, steps[n - 1].stepKey == stepKey {
            target = n - 1
        } else if n >= 2, steps[n - 2].stepKey == stepKey {
            target = n - 2
        } else {
            o.diag(
                "not-current-step",
                "step \"\(manifestKeys.contains(stepKey) ? stepKey : "?")\" is neither the current nor the previous entry", runId)
            return o
        }
        let t = time(nowMs)
        var refused = false
        var invalid = DropTally()
        var overCap = DropTally()
        for a in answers {
            guard let json = StartValidation.answer(a) else {
                invalid.add(InputPatterns.isKey(a.questionKey) ? a.questionKey : "?")
                continue
            }
            if truncated || refused {
                refused = true
                continue
            }
            guard let ans = AnswerState(json: json) else {
                invalid.add(a.questionKey)
                continue
            }
            let (delta, idx) = steps[target].sizeDelta(for: ans)
            if idx == nil && steps[target].answers.count >= 50 {
                overCap.add(a.questionKey)
                continue
            }
            if measure(extra: delta) > recordingBudget {
                truncated = true
                refused = true
                o.changed = true
                continue
            }
            applyAnswer(ans, entry: target, at: idx, delta: delta)
            o.changed = true
        }
        if let m = invalid.message(one: "answer", many: "answers", "invalid and dropped") {
            o.diag("invalid-answer", m, runId)
        }
        if let m = overCap.message(one: "answer", many: "answers", "dropped: an entry holds at most 50 questions") {
            o.diag("too-many-answers", m, runId)
        }
        // Only a valid answer that recording refused reports `truncated`; answers that are all
        // invalid report `invalid-answer` alone (<doc:InputValidation#Answers>).
        if refused { o.diag("truncated", truncatedMessage, runId) }
        if target == n - 1 && steps[target].exitedAt == nil {
            steps[target].setExit(t)
            provisionalExit = !truncated
            o.changed = true
        }
        if truncated { provisionalExit = false }
        return o
    }

    /// `setProperties(patch)` (<doc:InputValidation#Properties>): merges the valid properties, or
    /// truncates the run when they would not fit the byte budget.
    mutating func setProperties(_ patch: RunProperties) -> RecordingOutcome {
        let before = properties.wireJSON().objectValue ?? JSONObject()
        var props = before
        var o = RecordingOutcome()
        o.diagnostics = Self.merge(patch, into: &props, runId: runId)
        guard props != before else { return o }
        if truncated {
            o.diag("truncated", truncatedMessage, runId)
            return o
        }
        let map = scalarMap(props)
        let header = headerSize(properties: map)
        if measure(header: header) > recordingBudget {
            truncated = true
            provisionalExit = false
            o.diag("truncated", truncatedMessage, runId)
        } else {
            setProperties(map, header: header)
        }
        o.changed = true
        return o
    }

    /// Validates and merges `patch` into `props` (<doc:InputValidation#Properties>); returns what
    /// it dropped, one diagnostic per code.
    static func merge(_ patch: RunProperties, into props: inout JSONObject, runId: String?) -> [Diagnostic] {
        var invalid = DropTally()
        var overCap = DropTally()
        for (k, v) in patch.entries {
            guard let json = StartValidation.property(k, v) else {
                invalid.add(InputPatterns.isPropertyKey(k) ? k : "?")
                continue
            }
            if let old = props[k] {
                if old != json { props[k] = json }
            } else if props.count >= 20 {
                overCap.add(k)
            } else {
                props.appendUnchecked(k, json)
            }
        }
        var out: [Diagnostic] = []
        if let m = invalid.message(one: "property", many: "properties", "invalid and dropped") {
            out.append(Diagnostic(code: "invalid-property", message: m, runId: runId))
        }
        if let m = overCap.message(one: "property", many: "properties", "dropped: a run holds at most 20 properties") {
            out.append(Diagnostic(code: "too-many-properties", message: m, runId: runId))
        }
        return out
    }

    /// `complete()` at `nowMs`: the run is completed at ``completedAt`` and its last entry exited
    /// (`changed`: the completion is built and sent at once). Nothing without an entry.
    mutating func complete(nowMs: Int64) -> RecordingOutcome {
        var o = RecordingOutcome()
        guard hasEntries else {
            o.diag("no-steps", "complete() before any entry: nothing is sent", runId)
            return o
        }
        let t = time(nowMs)
        completed = true
        completedAt = t
        let last = steps.count - 1
        if !truncated || steps[last].exitedAt == nil { steps[last].setExit(t) }
        provisionalExit = false
        o.changed = true
        return o
    }

    /// The restore rule at `t` (<doc:Resume#The-restore-rule>): the last entry gets its exit, and
    /// a new entry of the same step opens at `t` unless the run is (or becomes) truncated.
    mutating func restore(at t: Int64) -> RecordingOutcome {
        var o = RecordingOutcome()
        let last = steps.count - 1
        if !truncated {
            if let exit = steps[last].exitedAt {
                if provisionalExit { steps[last].setExit(max(exit, lastActiveAt)) }
            } else {
                steps[last].setExit(max(lastActiveAt, steps[last].enteredAt))
            }
        }
        provisionalExit = false
        lastActiveAt = t
        o.changed = true
        if truncated { return o }
        let key = steps[last].stepKey
        if steps.count >= maxEntries || measure(extra: entryCost(key)) > recordingBudget {
            truncated = true
            o.diag("truncated", truncatedMessage, runId)
            return o
        }
        append(newEntry(key, enteredAt: t))
        o.entered = key
        return o
    }
}

/// Validated properties (scalars only) in their contract type.
func scalarMap(_ props: JSONObject) -> OrderedScalarMap {
    (try? OrderedScalarMap(json: .object(props), path: "$")) ?? OrderedScalarMap()
}

/// Counts what one recording call dropped for one reason, so that the call reports it once: the
/// diagnostic gives the count and names the first ``DropTally/namedAtMost`` entries (a key that
/// does not match its pattern is named `"?"`, since it may hold anything).
struct DropTally {
    /// How many dropped entries one diagnostic names; the rest are counted ("and 3 more").
    static let namedAtMost = 10
    private(set) var count = 0
    private var names: [String] = []

    mutating func add(_ key: String) {
        if names.count < Self.namedAtMost { names.append(key) }
        count += 1
    }

    /// The diagnostic's message, `nil` when nothing was dropped: `property "x" invalid and
    /// dropped`, or `12 properties ("a", "b", … and 2 more) invalid and dropped`.
    func message(one: String, many: String, _ what: String) -> String? {
        guard count > 0 else { return nil }
        let quoted = names.map { "\"\($0)\"" }
        if count == 1 { return "\(one) \(quoted[0]) \(what)" }
        let rest = count - names.count
        let list = quoted.joined(separator: ", ") + (rest > 0 ? " and \(rest) more" : "")
        return "\(count) \(many) (\(list)) \(what)"
    }
}
