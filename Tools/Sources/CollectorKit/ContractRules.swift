import TrackerCore

/// The rules beyond the schema that the ingest checks on every single snapshot
/// (onboarding-run contract section 8, paywall contract section 4 / paywall.md section 5).
/// They run on a snapshot that already passed its schema, so types are trusted.
public enum ContractRules {
    /// The first onboarding-run rule (1–8) `snapshot` breaks, as a reason text, or `nil`.
    public static func onboardingRunViolation(_ snapshot: JSONValue) -> String? {
        let manifest = snapshot["manifest"]?["steps"]?.arrayValue ?? []
        let steps = snapshot["steps"]?.arrayValue ?? []
        let manifestKeys = manifest.compactMap { $0["step_key"]?.stringValue }
        let known = Set(manifestKeys)
        // Rule 1.
        for (i, step) in steps.enumerated() {
            let key = step["step_key"]?.stringValue ?? ""
            if !known.contains(key) { return "rule 1: steps[\(i)].step_key \(key) is not in the manifest" }
        }
        // Rule 2.
        if known.count != manifestKeys.count {
            var seen = Set<String>()
            for key in manifestKeys where !seen.insert(key).inserted { return "rule 2: manifest step_key \(key) is repeated" }
        }
        var closed = Set<String>()
        for (i, step) in manifest.enumerated() {
            guard let slot = step["slot"]?.stringValue else { continue }
            if closed.contains(slot) { return "rule 2: slot \(slot) is not contiguous" }
            let next = i + 1 < manifest.count ? manifest[i + 1]["slot"]?.stringValue : nil
            if next != slot { closed.insert(slot) }
        }
        // Rule 3.
        for i in steps.indices.dropFirst() {
            let previous = steps[i - 1]["entered_at"]?.stringValue ?? "", current = steps[i]["entered_at"]?.stringValue ?? ""
            if current < previous { return "rule 3: steps[\(i)].entered_at is earlier than steps[\(i - 1)].entered_at" }
        }
        // Rule 4.
        if let first = steps.first, snapshot["started_at"]?.stringValue != first["entered_at"]?.stringValue {
            return "rule 4: started_at differs from steps[0].entered_at"
        }
        // Rule 5.
        for (i, step) in steps.enumerated() {
            if let exit = step["exited_at"]?.stringValue, exit < (step["entered_at"]?.stringValue ?? "") {
                return "rule 5: steps[\(i)].exited_at is earlier than its entered_at"
            }
        }
        // Rules 6 and 7.
        let truncated = snapshot["truncated"]?.boolValue == true
        let completed = snapshot["status"]?.stringValue == "completed"
        for (i, step) in steps.enumerated().dropLast() where step["exited_at"]?.isNull ?? true {
            return "rule 6: steps[\(i)].exited_at is null but it is not the last entry"
        }
        if let last = steps.last {
            let exit = last["exited_at"]?.stringValue
            if !completed, !truncated, exit != nil { return "rule 6: the last entry of an in-progress run must have exited_at null" }
            if completed {
                let completedAt = snapshot["completed_at"]?.stringValue ?? ""
                if truncated {
                    guard let exit else { return "rule 7: the last entry of a completed run must be closed" }
                    if exit > completedAt { return "rule 7: the last entry's exited_at is later than completed_at" }
                } else if exit != completedAt {
                    return "rule 7: the last entry's exited_at must equal completed_at"
                }
            }
        }
        // Rule 8.
        for (i, step) in steps.enumerated() {
            var seen = Set<String>()
            for answer in step["answers"]?.arrayValue ?? [] {
                let key = answer["question_key"]?.stringValue ?? ""
                if !seen.insert(key).inserted { return "rule 8: question_key \(key) repeated in steps[\(i)]" }
            }
        }
        return nil
    }

    /// The first paywall rule (paywall.md section 5, rules 1–8; the size rule 9 is checked by
    /// the acceptance step) `snapshot` breaks, or `nil`.
    public static func paywallViolation(_ snapshot: JSONValue) -> String? {
        let ended = snapshot["status"]?.stringValue == "ended"
        let endedAt = snapshot["ended_at"]?.stringValue
        let shownAt = snapshot["shown_at"]?.stringValue
        let startedAt = snapshot["started_at"]?.stringValue ?? ""
        let outcome = snapshot["outcome"]?.objectValue
        if ended != (endedAt != nil) { return "rule 1: ended_at must be set exactly when status is ended" }
        if ended != (outcome != nil) { return "rule 1: outcome must be set exactly when status is ended" }
        if let shownAt, shownAt < startedAt { return "rule 2: shown_at is earlier than started_at" }
        if let endedAt, endedAt < (shownAt ?? startedAt) { return "rule 3: ended_at is earlier than shown_at or started_at" }
        if (snapshot["sent_at"]?.stringValue ?? "") < startedAt { return "rule 4: sent_at is earlier than started_at" }
        if let outcome {
            let status = outcome["status"]?.stringValue
            if outcome["reason"] != nil, status != "error" { return "rule 5: reason only with status error" }
            if let transaction = outcome["transaction"] {
                if status != "purchased" { return "rule 6: transaction only with status purchased" }
                if transaction.objectValue?.isEmpty ?? false { return "rule 6: transaction must not be empty" }
            }
            if status == "purchased", shownAt == nil { return "rule 7: a purchased outcome requires shown_at" }
        }
        if snapshot["onboarding_run"] != nil, snapshot["surface"]?.stringValue != "paywall_step" {
            return "rule 8: onboarding_run only with surface paywall_step"
        }
        return nil
    }
}
