import TrackerCore

/// Checks of the Score wire format (ScoreTracker's Envelope article, envelope version 1).
public enum ScoreEnvelope {
    static let known: Set<String> = [
        "type", "name", "eventId", "timestamp", "anonymousId", "sessionId", "userId", "siteId", "props", "traits", "context",
        "sdk", "_backfill", "_originalEventId",
    ]

    /// The first problem of a batch body, or `nil`.
    public static func batchViolation(_ batch: JSONValue) -> String? {
        guard let sentAt = batch["sentAt"]?.stringValue, Timestamp.matchesPattern(sentAt) else { return "sentAt must be a timestamp" }
        guard let events = batch["events"]?.arrayValue else { return "events must be an array" }
        if events.isEmpty { return "events must not be empty" }
        if events.count > 100 { return "more than 100 events in one batch" }
        for key in batch.objectValue?.keys ?? [] where key != "sentAt" && key != "events" { return "unknown member \(key)" }
        for (i, event) in events.enumerated() {
            if let problem = eventViolation(event) { return "events[\(i)]: \(problem)" }
        }
        return nil
    }

    /// The JSON path a problem text of ``batchViolation(_:)`` points at: `events[2]: userId must…`
    /// gives `/events/2/userId`, `sentAt must…` gives `/sentAt`.
    public static func path(of problem: String) -> String {
        var path = ""
        var rest = Substring(problem)
        if rest.hasPrefix("events["), let close = rest.firstIndex(of: "]") {
            path = "/events/" + rest[rest.index(rest.startIndex, offsetBy: 7)..<close]
            rest = rest[rest.index(after: close)...].drop { $0 == ":" || $0 == " " }
        } else if rest.hasPrefix("events") || rest.hasPrefix("more than") {
            return "/events"
        }
        let words = rest.split(separator: " ")
        if let first = words.first {
            if known.contains(String(first)) || first == "sentAt" { return path + "/" + first }
            if first == "unknown", words.count >= 3 {
                return path + (words[1] == "context" && words.count >= 4 ? "/context/" + words[3] : "/" + words[2])
            }
        }
        return path
    }

    /// The first problem of one envelope, or `nil`.
    public static func eventViolation(_ event: JSONValue) -> String? {
        guard let object = event.objectValue else { return "not an object" }
        for key in object.keys where !known.contains(key) { return "unknown member \(key)" }
        guard let type = event["type"]?.stringValue, ["track", "screen", "identify"].contains(type) else {
            return "type must be track, screen or identify"
        }
        guard let name = event["name"]?.stringValue, (1...128).contains(name.unicodeScalars.count) else {
            return "name must be 1..128 characters"
        }
        if type == "identify", name != "identify" { return "an identify event is named identify" }
        for key in ["eventId", "anonymousId", "sessionId"] {
            guard let id = event[key]?.stringValue, IDs.isLowercaseUUID(id) else { return "\(key) must be a lowercase UUID" }
        }
        guard let ts = event["timestamp"]?.stringValue, Timestamp.matchesPattern(ts) else { return "timestamp must be a timestamp" }
        if let user = event["userId"], user.stringValue == nil { return "userId must be a string" }
        guard event["siteId"]?.stringValue != nil else { return "siteId must be a string" }
        guard event["props"]?.objectValue != nil else { return "props must be an object" }
        if let traits = event["traits"] {
            if type != "identify" { return "traits only on identify" }
            if traits.objectValue == nil { return "traits must be an object" }
        }
        guard let context = event["context"]?.objectValue else { return "context must be an object" }
        for key in context.keys where !["os", "appVersion", "device", "locale"].contains(key) { return "unknown context member \(key)" }
        guard let sdk = event["sdk"]?.objectValue, sdk["name"]?.stringValue != nil, sdk["version"]?.stringValue != nil else {
            return "sdk must carry name and version"
        }
        if let backfill = event["_backfill"], backfill != .bool(true) { return "_backfill must be true" }
        if let original = event["_originalEventId"] {
            guard event["_backfill"] != nil, let id = original.stringValue, IDs.isLowercaseUUID(id) else {
                return "_originalEventId must be a UUID on a replayed event"
            }
        }
        return nil
    }
}

/// A made-up but well-formed demand-score answer (the reference client's demand-score answer), derived
/// deterministically from the signals so that a demo can show it.
public enum DemandScore {
    /// The answer for `signals`: `demandScore` 1..100, `selectedVersion` `v1`, `coldStart`, and
    /// a `versions.v1` breakdown with one item per numeric or string signal.
    public static func answer(signals: JSONObject) -> JSONValue {
        var items: [JSONValue] = []
        var score = 50.0
        for (key, value) in signals.entries {
            let number = value.numberValue
            let weight = 1.0
            let weighted = number.map { min(10, max(-10, $0 / 10)) } ?? 0
            score += weighted
            items.append([
                "signal": .string(key), "value": number.map(JSONValue.number) ?? .null, "weight": .number(weight),
                "weighted": .number(weighted),
            ])
        }
        let final = Double(Int(min(100, max(1, score.rounded()))))
        let coldStart = signals.isEmpty
        let v1: JSONValue = ["score": .number(final), "coldStart": .bool(coldStart), "signals": .array(items)]
        return [
            "demandScore": .number(final), "selectedVersion": "v1", "coldStart": .bool(coldStart),
            "versions": ["v1": v1],
        ]
    }
}
