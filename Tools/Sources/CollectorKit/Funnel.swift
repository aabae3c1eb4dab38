import TrackerCore

/// One alternative screen of a slot position (onboarding-run contract section 13.3).
public struct FunnelAlternative: Sendable, Equatable {
    /// The alternative's `step_key`.
    public var stepKey: String
    /// Runs that saw this screen.
    public var sawIt: Int
    /// Quit runs whose last screen was this one.
    public var quitHere: Int
    /// Quit here ÷ Saw it, in whole percent (rounded to nearest), `nil` when Saw it is 0.
    public var quitRatePercent: Int?
}

/// One position of a funnel: one manifest step, or a slot of alternatives.
public struct FunnelPosition: Sendable, Equatable {
    /// The step key, or `slot <name>` for a slot.
    public var label: String
    /// The slot name, for a slot position.
    public var slot: String?
    /// Runs that reached this position (furthest ≥ p).
    public var stillInFlow: Int
    /// Runs that saw one of its screens.
    public var sawIt: Int
    /// Still in the flow − Saw it.
    public var skipped: Int
    /// Quit runs whose last screen is one of its screens.
    public var quitHere: Int
    /// Quit here ÷ Saw it in whole percent, `nil` (shown `—`) when Saw it is 0.
    public var quitRatePercent: Int?
    /// The alternatives of a slot, in manifest order (empty otherwise).
    public var alternatives: [FunnelAlternative]
}

/// The funnel of one `(onboarding.key, onboarding.version)` pair.
public struct Funnel: Sendable, Equatable {
    /// `onboarding.key`.
    public var key: String
    /// `onboarding.version`.
    public var version: String
    /// Positions in manifest order.
    public var positions: [FunnelPosition]
    /// All runs in scope.
    public var started: Int
    /// Completed runs.
    public var completed: Int
    /// Quit runs (in progress, nothing received for 24 h or more).
    public var quit: Int
    /// Neither completed nor quit.
    public var stillInProgress: Int
    /// Runs left out as version conflicts (D18).
    public var versionConflicts: Int

    /// The funnel as a text table, in the layout of the contract's worked examples.
    public func rendered() -> String {
        var lines = ["onboarding \(key) version \(version)"]
        let header = ["Position", "Still in the flow", "Saw it", "Skipped", "Quit here", "Quit rate"]
        var rows: [[String]] = []
        func rate(_ r: Int?) -> String { r.map { "\($0)%" } ?? "—" }
        for p in positions {
            rows.append([p.label, "\(p.stillInFlow)", "\(p.sawIt)", "\(p.skipped)", "\(p.quitHere)", rate(p.quitRatePercent)])
            for a in p.alternatives {
                rows.append(["↳ \(a.stepKey)", "—", "\(a.sawIt)", "—", "\(a.quitHere)", rate(a.quitRatePercent)])
            }
        }
        let all = [header] + rows
        let widths = header.indices.map { c in all.map { $0[c].unicodeScalars.count }.max() ?? 0 }
        for row in all {
            let cells = row.enumerated().map { c, text in
                text + String(repeating: " ", count: widths[c] - text.unicodeScalars.count)
            }
            lines.append("  " + cells.joined(separator: "  ").trimmingSuffixSpaces())
        }
        var totals = "  Totals: Started \(started) · Completed \(completed) · Quit \(quit) · Still in progress \(stillInProgress)"
        if versionConflicts > 0 { totals += " (\(versionConflicts) version-conflict runs left out)" }
        lines.append(totals)
        return lines.joined(separator: "\n")
    }
}

extension String {
    fileprivate func trimmingSuffixSpaces() -> String {
        var s = self
        while s.hasSuffix(" ") { s.removeLast() }
        return s
    }
}

/// Computes the funnel measures of the onboarding-run contract, section 13.
public enum FunnelCalculator {
    struct Position {
        var slot: String?
        var members: [String]
    }

    /// Positions of a manifest (`{"steps":[{step_key, slot?}, …]}`): a step without slot is its
    /// own position; consecutive steps sharing a slot form one.
    static func positions(of manifest: JSONValue) -> [Position] {
        var out: [Position] = []
        for step in manifest["steps"]?.arrayValue ?? [] {
            guard let key = step["step_key"]?.stringValue else { continue }
            let slot = step["slot"]?.stringValue
            if let slot, let last = out.last, last.slot == slot {
                out[out.count - 1].members.append(key)
            } else {
                out.append(Position(slot: slot, members: [key]))
            }
        }
        return out
    }

    /// Funnels of every (key, version) among `runs`, as of `nowMs`. Version-conflict runs are
    /// left out, and so are `draft` runs unless `includeDrafts` (a draft funnel uses the
    /// manifest of the draft's first run). `canonicalManifests` maps `key + "\0" + version` to
    /// the canonical manifest text.
    public static func funnels(runs: [StoredRun], canonicalManifests: [String: String], nowMs: Int64, includeDrafts: Bool) -> [Funnel] {
        var groups: [String: [StoredRun]] = [:]
        var order: [String] = []
        for run in runs where run.version != "draft" || includeDrafts {
            let id = run.key + "\u{0}" + run.version
            if groups[id] == nil { order.append(id) }
            groups[id, default: []].append(run)
        }
        return order.sorted().compactMap { id in
            let group = groups[id] ?? []
            guard let first = group.first else { return nil }
            let manifest: JSONValue
            if let text = canonicalManifests[id], let value = try? WireJSON.decode(text) {
                manifest = value
            } else if let value = try? WireJSON.decode(first.body), let m = value["manifest"] {
                manifest = m
            } else {
                return nil
            }
            let inScope = group.filter { !$0.versionConflict }
            var funnel = compute(
                key: first.key, version: first.version, manifest: manifest,
                runs: inScope.compactMap { run in (try? WireJSON.decode(run.body)).map { (run, $0) } }, nowMs: nowMs
            )
            funnel.versionConflicts = group.count - inScope.count
            return funnel
        }
    }

    /// The funnel of `runs` (stored run with its parsed snapshot) against `manifest`.
    public static func compute(key: String, version: String, manifest: JSONValue, runs: [(StoredRun, JSONValue)], nowMs: Int64) -> Funnel {
        let positions = positions(of: manifest)
        var positionOf: [String: Int] = [:]
        for (i, p) in positions.enumerated() { for m in p.members { positionOf[m] = i } }

        struct RunFacts {
            var viewed: Set<String>
            var furthest: Int
            var lastSeen: String?
            var quit: Bool
            var completed: Bool
        }
        let facts: [RunFacts] = runs.map { run, snapshot in
            let entries = (snapshot["steps"]?.arrayValue ?? []).compactMap { $0["step_key"]?.stringValue }
            let completed = snapshot["status"]?.stringValue == "completed"
            let truncated = snapshot["truncated"]?.boolValue == true
            let furthest = completed ? Int.max : (entries.compactMap { positionOf[$0] }.max() ?? -1)
            let quit = !completed && nowMs - run.lastReceivedAtMs >= Collector.quitAfterMs
            return RunFacts(
                viewed: Set(entries), furthest: furthest, lastSeen: truncated ? nil : entries.last, quit: quit, completed: completed)
        }
        func percent(_ part: Int, _ whole: Int) -> Int? {
            whole == 0 ? nil : Int((Double(part) * 100 / Double(whole)).rounded(.toNearestOrAwayFromZero))
        }
        var rows: [FunnelPosition] = []
        for (i, p) in positions.enumerated() {
            let members = Set(p.members)
            let still = facts.filter { $0.furthest >= i }.count
            let saw = facts.filter { !$0.viewed.isDisjoint(with: members) }.count
            let quitHere = facts.filter { $0.quit && $0.lastSeen.map(members.contains) == true }.count
            var alternatives: [FunnelAlternative] = []
            if p.slot != nil {
                for m in p.members {
                    let s = facts.filter { $0.viewed.contains(m) }.count
                    let q = facts.filter { $0.quit && $0.lastSeen == m }.count
                    alternatives.append(FunnelAlternative(stepKey: m, sawIt: s, quitHere: q, quitRatePercent: percent(q, s)))
                }
            }
            rows.append(
                FunnelPosition(
                    label: p.slot.map { "slot \($0)" } ?? p.members[0], slot: p.slot, stillInFlow: still, sawIt: saw,
                    skipped: still - saw, quitHere: quitHere, quitRatePercent: percent(quitHere, saw), alternatives: alternatives
                )
            )
        }
        let completed = facts.filter(\.completed).count
        let quit = facts.filter(\.quit).count
        return Funnel(
            key: key, version: version, positions: rows, started: facts.count, completed: completed, quit: quit,
            stillInProgress: facts.count - completed - quit, versionConflicts: 0
        )
    }
}
