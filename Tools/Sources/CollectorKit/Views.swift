import TrackerCore

/// The figures behind the web debugger's views, as JSON for `/api/…`. Each is computed from the
/// SQLite store alone (so it survives a collector restart); the funnels are the very ``Funnel``
/// values `collector report` prints.
public enum CollectorViews {
    static func num(_ n: Int) -> JSONValue { .number(Double(n)) }
    static func num(_ n: Int64) -> JSONValue { .number(Double(n)) }
    static func text(_ s: String?) -> JSONValue { s.map(JSONValue.string) ?? .null }

    // MARK: Funnels

    /// `{"funnels":[{key, version, started, completed, quit, still_in_progress, version_conflicts,
    /// positions:[{label, slot, still_in_flow, saw_it, skipped, quit_here, quit_rate_percent,
    /// alternatives:[{step_key, saw_it, quit_here, quit_rate_percent}]}]}]}`.
    public static func funnels(_ funnels: [Funnel]) -> JSONValue {
        .object([
            "funnels": .array(
                funnels.map { f in
                    .object([
                        "key": .string(f.key), "version": .string(f.version), "started": num(f.started), "completed": num(f.completed),
                        "quit": num(f.quit), "still_in_progress": num(f.stillInProgress), "version_conflicts": num(f.versionConflicts),
                        "positions": .array(
                            f.positions.map { p in
                                .object([
                                    "label": .string(p.label), "slot": text(p.slot), "still_in_flow": num(p.stillInFlow),
                                    "saw_it": num(p.sawIt),
                                    "skipped": num(p.skipped), "quit_here": num(p.quitHere),
                                    "quit_rate_percent": p.quitRatePercent.map(num) ?? .null,
                                    "alternatives": .array(
                                        p.alternatives.map { a in
                                            .object([
                                                "step_key": .string(a.stepKey), "saw_it": num(a.sawIt), "quit_here": num(a.quitHere),
                                                "quit_rate_percent": a.quitRatePercent.map(num) ?? .null,
                                            ])
                                        }),
                                ])
                            }),
                    ])
                })
        ])
    }

    // MARK: Paywalls

    /// Presentations grouped per moment/paywall (v1: `moment_key` / `paywall_id`; v1.1:
    /// `placement` / `external_paywall_id`, with the provider) with shown, purchased, restored,
    /// dismissed, cancelled and error counts and the conversion rate (purchased ÷ shown), and
    /// each presentation's timeline (its accepted snapshots, and the times they carry).
    public static func paywalls(presentations: [StoredPresentation], requests: [RequestRecord]) -> JSONValue {
        struct Group {
            var moment: String
            var paywall: String
            var provider: String
            var counts: [String: Int] = [:]
            var items: [JSONValue] = []
        }
        var groups: [String: Group] = [:]
        var order: [String] = []
        var timelines: [String: [JSONValue]] = [:]
        for r in requests where r.kind == "paywall-presentation" {
            guard let subject = r.subject else { continue }
            timelines[subject, default: []].append(
                .object([
                    "request_id": num(r.id), "time": .string(Timestamp.format(ms: r.receivedAtMs)), "seq": r.seq.map(num) ?? .null,
                    "outcome": .string(r.outcome),
                    "status": text((try? WireJSON.decode(r.body))?["status"]?.stringValue),
                ]))
        }
        for p in presentations {
            let body = (try? WireJSON.decode(p.body)) ?? .null
            let paywall = body["paywall"] ?? .null
            let moment = paywall["moment_key"]?.stringValue ?? paywall["placement"]?.stringValue ?? "—"
            let id = paywall["paywall_id"]?.stringValue ?? paywall["external_paywall_id"]?.stringValue ?? "—"
            let provider = paywall["provider"]?.stringValue ?? "studio"
            let groupKey = moment + "\u{0}" + id + "\u{0}" + provider
            if groups[groupKey] == nil {
                order.append(groupKey)
                groups[groupKey] = Group(moment: moment, paywall: id, provider: provider)
            }
            let shown = body["shown_at"]?.stringValue != nil
            var end = body["outcome"]?["status"]?.stringValue
            if end == "purchased", body["outcome"]?["reason"]?.stringValue == "restored" { end = "restored" }
            groups[groupKey]?.counts["presentations", default: 0] += 1
            if shown { groups[groupKey]?.counts["shown", default: 0] += 1 }
            if let end { groups[groupKey]?.counts[end, default: 0] += 1 }
            groups[groupKey]?.items.append(
                .object([
                    "presentation_id": .string(p.presentationId), "status": .string(p.status), "outcome": text(end),
                    "started_at": text(body["started_at"]?.stringValue), "shown_at": text(body["shown_at"]?.stringValue),
                    "ended_at": text(body["ended_at"]?.stringValue),
                    "timeline": .array(timelines[p.presentationId] ?? []),
                ]))
        }
        return .object([
            "paywalls": .array(
                order.compactMap { key in
                    guard let g = groups[key] else { return nil }
                    let shown = g.counts["shown"] ?? 0
                    let purchased = g.counts["purchased"] ?? 0
                    var o: JSONObject = ["moment": .string(g.moment), "paywall": .string(g.paywall), "provider": .string(g.provider)]
                    for name in ["presentations", "shown", "purchased", "restored", "dismissed", "cancelled", "error"] {
                        o[name] = num(g.counts[name] ?? 0)
                    }
                    o["conversion_percent"] = shown == 0 ? .null : .number((Double(purchased) * 1000 / Double(shown)).rounded() / 10)
                    o["items"] = .array(g.items)
                    return .object(o)
                })
        ])
    }

    // MARK: Score

    /// Whether a scrubbed value: `h:` + 8 hex digits (hash), `t:N` (token) or `<redacted>`.
    static func scrubbedMark(_ value: JSONValue) -> String? {
        guard let s = value.stringValue else { return nil }
        if s == "<redacted>" { return "redacted" }
        let scalars = Array(s.unicodeScalars)
        if s.hasPrefix("h:"), scalars.count == 10, scalars.dropFirst(2).allSatisfy({ "0123456789abcdef".unicodeScalars.contains($0) }) {
            return "hashed"
        }
        if s.hasPrefix("t:"), scalars.count > 2, scalars.dropFirst(2).allSatisfy({ ("0"..."9").contains($0) }) { return "tokenized" }
        return nil
    }

    /// Score events by name (count, scrubbed fields, context members present and the device
    /// signals missing from it), the events received again after they were acknowledged, and the
    /// identity link requests.
    public static func score(
        events: [(id: String, type: String, name: String, body: String, receivedAtMs: Int64)],
        requests: [RequestRecord]
    ) -> JSONValue {
        // Acknowledged = in an accepted batch; a later accepted batch carrying it again is a duplicate.
        var seen: [String: Int64] = [:]
        var duplicates: [JSONValue] = []
        for r in requests where r.kind == "score-batch" && r.outcome == "accepted" {
            for event in (try? WireJSON.decode(r.body))?["events"]?.arrayValue ?? [] {
                guard let id = event["eventId"]?.stringValue else { continue }
                if let first = seen[id] {
                    duplicates.append(
                        .object([
                            "event_id": .string(id), "name": text(event["name"]?.stringValue), "first_request_id": num(first),
                            "again_request_id": num(r.id), "time": .string(Timestamp.format(ms: r.receivedAtMs)),
                        ]))
                } else {
                    seen[id] = r.id
                }
            }
        }
        let duplicateIds = Set(duplicates.compactMap { $0["event_id"]?.stringValue })
        struct Name {
            var type: String
            var count = 0
            var scrubbed: [String: String] = [:]
            var contextKeys: Set<String> = []
            var missingSignals: Set<String> = []
            var duplicates = 0
        }
        var byName: [String: Name] = [:]
        var order: [String] = []
        var recent: [JSONValue] = []
        for e in events {
            let body = (try? WireJSON.decode(e.body)) ?? .null
            if byName[e.name] == nil {
                order.append(e.name)
                byName[e.name] = Name(type: e.type)
            }
            byName[e.name]?.count += 1
            if duplicateIds.contains(e.id) { byName[e.name]?.duplicates += 1 }
            var marks: JSONObject = [:]
            for member in ["props", "traits"] {
                let object = body[member]?.objectValue ?? JSONObject()
                for key in object.keys {
                    if let value = object[key], let mark = scrubbedMark(value) {
                        byName[e.name]?.scrubbed["\(member).\(key)"] = mark
                        marks["\(member).\(key)"] = .string(mark)
                    }
                }
            }
            let context = body["context"]?.objectValue ?? JSONObject()
            for key in context.keys { byName[e.name]?.contextKeys.insert(key) }
            for signal in ["locale", "device"] where context[signal] == nil { byName[e.name]?.missingSignals.insert(signal) }
            recent.append(
                .object([
                    "event_id": .string(e.id), "name": .string(e.name), "type": .string(e.type),
                    "time": .string(Timestamp.format(ms: e.receivedAtMs)), "scrubbed": .object(marks),
                    "duplicate": .bool(duplicateIds.contains(e.id)), "body": .string(e.body),
                ]))
        }
        let links = requests.filter { $0.kind == "score-link" }.map { r -> JSONValue in
            let body = (try? WireJSON.decode(r.body)) ?? .null
            return .object([
                "request_id": num(r.id), "time": .string(Timestamp.format(ms: r.receivedAtMs)), "outcome": .string(r.outcome),
                "anonymous_id": text(body["anonymousId"]?.stringValue), "user_id": text(body["userId"]?.stringValue),
            ])
        }
        return .object([
            "names": .array(
                order.compactMap { name in
                    guard let n = byName[name] else { return nil }
                    return .object([
                        "name": .string(name), "type": .string(n.type), "count": num(n.count), "duplicates": num(n.duplicates),
                        "scrubbed": .object(JSONObject(n.scrubbed.sorted { $0.key < $1.key }.map { ($0.key, JSONValue.string($0.value)) })),
                        "context": .array(n.contextKeys.sorted().map(JSONValue.string)),
                        "consent_dropped_context": .array(n.missingSignals.sorted().map(JSONValue.string)),
                    ])
                }),
            "events": .array(recent.suffix(200).reversed()),
            "duplicates_after_ack": .array(duplicates),
            "links": .array(links.reversed()),
        ])
    }

    // MARK: Rocalytics

    /// Rocalytics requests per roca id (identify, track by name, purchase, demand score, install,
    /// onboarding snapshots) and each completed onboarding run with whether its
    /// `onboarding_completed` event arrived (matched by the event's deduplication id, which ends
    /// with the run id).
    public static func rocalytics(runs: [StoredRun], requests: [RequestRecord]) -> JSONValue {
        struct Device {
            var counts: [String: Int] = [:]
            var completionRuns: Set<String> = []
            var last: Int64 = 0
        }
        var devices: [String: Device] = [:]
        var order: [String] = []
        for r in requests where r.kind.hasPrefix("rocalytics-") || (r.kind == "onboarding-run" && r.rocaId != nil) {
            let roca = r.rocaId ?? "—"
            if devices[roca] == nil {
                order.append(roca)
                devices[roca] = Device()
            }
            var label = String(r.kind.dropFirst(r.kind.hasPrefix("rocalytics-") ? "rocalytics-".count : 0))
            if r.kind == "rocalytics-track" {
                let name = r.subject ?? "?"
                label = name == "purchase" ? "purchase" : "track \(name)"
                if name == "onboarding_completed", r.outcome == "accepted",
                    let dedup = (try? WireJSON.decode(r.body))?["deduplication_id"]?.stringValue
                {
                    devices[roca]?.completionRuns.insert(dedup)
                }
            }
            devices[roca]?.counts[label, default: 0] += 1
            devices[roca]?.last = r.receivedAtMs
        }
        var completed: [JSONValue] = []
        for run in runs where run.status == "completed" && run.sender != "anonymous" {
            let roca = String(run.sender.split(separator: "/", maxSplits: 1, omittingEmptySubsequences: false).last ?? "")
            let got = devices[roca]?.completionRuns.contains { $0.hasSuffix(run.runId) } ?? false
            completed.append(
                .object([
                    "run_id": .string(run.runId), "roca_id": .string(roca), "onboarding": .string("\(run.key) v\(run.version)"),
                    "completed_at": .string(Timestamp.format(ms: run.lastReceivedAtMs)), "onboarding_completed_sent": .bool(got),
                ]))
        }
        return .object([
            "devices": .array(
                order.compactMap { roca in
                    guard let d = devices[roca] else { return nil }
                    return .object([
                        "roca_id": .string(roca), "last": .string(Timestamp.format(ms: d.last)),
                        "counts": .object(JSONObject(d.counts.sorted { $0.key < $1.key }.map { ($0.key, num($0.value)) })),
                    ])
                }),
            "completed_runs": .array(completed),
        ])
    }
}
