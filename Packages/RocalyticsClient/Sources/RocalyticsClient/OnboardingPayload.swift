import TrackerCore

/// The shared `sent_at` of a snapshot's Rocalytics body: the latest timestamp recorded in the
/// snapshot (`started_at`, every `entered_at`, every non-null `exited_at`, `completed_at`) plus
/// `seq` milliseconds. It rises strictly across one run's sends whatever the device clock does,
/// and a retry resends the identical value. `nil` when the snapshot has no readable timestamp.
public func onboardingSentAtMs(_ snapshot: JSONObject) -> Int64? {
    var latest: Int64?
    func consider(_ v: JSONValue?) {
        guard let s = v?.stringValue, let ms = Timestamp.parse(s) else { return }
        latest = max(latest ?? ms, ms)
    }
    consider(snapshot["started_at"])
    for step in snapshot["steps"]?.arrayValue ?? [] {
        consider(step["entered_at"])
        consider(step["exited_at"])
    }
    consider(snapshot["completed_at"])
    guard let latest else { return nil }
    let seq = Int64(snapshot["seq"]?.intValue ?? 0)
    return latest + seq
}

/// The pre-v1 onboarding payload of a v1 snapshot: `{onboarding_metadata, sent_at, responses}`
/// (<doc:OnboardingSink#The-pre-v1-part>). Depends on nothing but the snapshot, so a resend, even from a
/// later process, gives the very same bytes.
public func toOnboardingResponsePayload(_ snapshot: some WireEncodable) -> JSONObject {
    toOnboardingResponsePayload(snapshotObject: snapshot.wireJSON().objectValue ?? JSONObject())
}

/// ``toOnboardingResponsePayload(_:)`` on the snapshot's JSON object.
public func toOnboardingResponsePayload(snapshotObject s: JSONObject) -> JSONObject {
    var out = JSONObject()
    out.appendUnchecked("onboarding_metadata", .object(onboardingMetadata(s)))
    out.appendUnchecked("sent_at", sentAtValue(s))
    out.appendUnchecked("responses", .array(responses(s)))
    return out
}

/// The Rocalytics onboarding body (0.3.0): the v1 snapshot itself at the top level, in the
/// contract's key order, with `sent_at` replaced by the computed shared value, then the pre-v1
/// `responses` and `onboarding_metadata`. Both extra keys are always present, whatever the size.
public func toOnboardingRunBody(_ snapshot: some WireEncodable) -> JSONObject {
    toOnboardingRunBody(snapshotObject: snapshot.wireJSON().objectValue ?? JSONObject())
}

/// ``toOnboardingRunBody(_:)`` on the snapshot's JSON object, whose members keep their order:
/// the contract's key order is the one the generated `OnboardingRunSnapshot` writes (its
/// `wireJSON()`), so it is written down in one place only, the code generator's table.
public func toOnboardingRunBody(snapshotObject s: JSONObject) -> JSONObject {
    var out = JSONObject()
    let sentAt = sentAtValue(s)
    for (k, v) in s.entries where k != "responses" && k != "onboarding_metadata" {
        out.appendUnchecked(k, k == "sent_at" ? sentAt : v)
    }
    out.appendUnchecked("responses", .array(responses(s)))
    out.appendUnchecked("onboarding_metadata", .object(onboardingMetadata(s)))
    return out
}

private func sentAtValue(_ s: JSONObject) -> JSONValue {
    if let ms = onboardingSentAtMs(s) { return .string(Timestamp.format(ms: ms)) }
    return s["sent_at"] ?? .null
}

private func onboardingMetadata(_ s: JSONObject) -> JSONObject {
    var m = JSONObject()
    func put(_ key: String, _ value: JSONValue?) {
        if let value, !value.isNull { m.appendUnchecked(key, value) }
    }
    let onboarding = s["onboarding"]
    let studio = s["studio"]
    if let id = studio?["onboarding_id"], !id.isNull {
        put("onboardingId", id)
    } else {
        put("onboarding_id", onboarding?["key"])
    }
    put("audienceId", studio?["audience_id"])
    put("deployment_id", studio?["deployment_id"])
    put("locale", s["context"]?["locale"])
    if onboarding?["version"]?.stringValue == "draft" { put("draft", .bool(true)) }
    put("onboarding_key", onboarding?["key"])
    put("onboarding_version", onboarding?["version"])
    put("variant_key", onboarding?["variant_key"])
    put("studio_variant_key", studio?["variant_key"])
    put("run_id", s["run_id"])
    put("seq", s["seq"])
    return m
}

private func responses(_ s: JSONObject) -> [JSONValue] {
    (s["steps"]?.arrayValue ?? []).map { step in
        var answers = JSONObject()
        for answer in step["answers"]?.arrayValue ?? [] {
            guard let key = answer["question_key"]?.stringValue else { continue }
            answers[key] = answer["value"] ?? .null
        }
        var r = JSONObject()
        r.appendUnchecked("step_id", step["step_key"] ?? .null)
        r.appendUnchecked("entered_at", step["entered_at"] ?? .null)
        r.appendUnchecked("exited_at", step["exited_at"] ?? .null)
        r.appendUnchecked("answers", .object(answers.javaScriptOrdered()))
        return .object(r)
    }
}

/// The outcome of an onboarding-response answer: a 2xx is accepted (its body is not read);
/// otherwise a body object whose `outcome` is `rejected` is rejected (with its string `reason`);
/// anything else is transient with reason `status <n>`. `ignored` never comes out.
public func rocalyticsOutcome(status: Int, body: JSONValue?) -> SinkResult {
    if (200...299).contains(status) { return .accepted }
    if let o = body?.objectValue, o["outcome"]?.stringValue == "rejected" {
        return SinkResult(.rejected, reason: o["reason"]?.stringValue)
    }
    return SinkResult(.transient, reason: "status \(status)")
}

/// The outcome of a paywall-presentations answer (<doc:PaywallSink#Outcome-rules>): a body whose
/// `outcome` is `rejected` is rejected whatever the status; `accepted` or `ignored` count only on a
/// 2xx; anything else (a bare 2xx, a 204, a 500 saying accepted) is transient with reason `status
/// <n>`.
public func paywallIngestOutcome(status: Int, body: JSONValue?) -> SinkResult {
    let o = body?.objectValue
    let outcome = o?["outcome"]?.stringValue
    if outcome == "rejected" { return SinkResult(.rejected, reason: o?["reason"]?.stringValue) }
    if (200...299).contains(status) {
        if outcome == "accepted" { return .accepted }
        if outcome == "ignored" { return .ignored }
    }
    return SinkResult(.transient, reason: "status \(status)")
}
