import TrackerCore

/// The state of one presentation (spec 3.7 and 7.2): marks in integer milliseconds, clamped so
/// they never go backwards, and the parts frozen at start.
struct PresentationState: Sendable {
    let id: String
    let startedAt: Int64
    let fixed: ValidatedInfo
    let context: JSONObject
    private(set) var seq = 0
    private(set) var shownAt: Int64?
    private(set) var endedAt: Int64?
    private(set) var outcome: JSONObject?

    init(id: String, startedAt: Int64, fixed: ValidatedInfo, context: JSONObject) {
        self.id = id
        self.startedAt = startedAt
        self.fixed = fixed
        self.context = context
    }

    /// The latest timestamp recorded so far: the floor of the next one.
    var floor: Int64 { max(startedAt, shownAt ?? startedAt, endedAt ?? startedAt) }

    enum MarkResult: String, Sendable {
        case ok
        case alreadyShown = "already-shown"
        case afterEnd = "after-end"
        case alreadyEnded = "already-ended"
        case invalidStatus = "invalid-status"
    }

    mutating func markShown(nowMs: Int64) -> MarkResult {
        if endedAt != nil { return .afterEnd }
        if shownAt != nil { return .alreadyShown }
        shownAt = max(nowMs, floor)
        return .ok
    }

    /// Ends the presentation from an untyped end (`{status, reason?, transaction?}`).
    mutating func markEnded(_ end: JSONValue, nowMs: Int64) -> MarkResult {
        if endedAt != nil { return .alreadyEnded }
        guard let statusText = end["status"]?.stringValue, let status = PaywallOutcomeStatus(rawValue: statusText) else {
            return .invalidStatus
        }
        var o = JSONObject()
        o.appendUnchecked("status", .string(status.rawValue))
        if status == .error, let reason = end["reason"]?.stringValue, InputPatterns.isKey(reason) {
            o.appendUnchecked("reason", .string(reason))
        }
        if status == .purchased, let t = Self.transaction(end["transaction"]) {
            o.appendUnchecked("transaction", .object(t))
        }
        let ended = max(nowMs, floor)
        endedAt = ended
        // A purchase implies the paywall was on screen (P7).
        if status == .purchased, shownAt == nil { shownAt = ended }
        outcome = o
        return .ok
    }

    private static func transaction(_ value: JSONValue?) -> JSONObject? {
        guard case let .object(t)? = value else { return nil }
        var out = JSONObject()
        func storeId(_ from: String, _ to: String) {
            if let s = t[from]?.stringValue, InputPatterns.utf16Length(s, 1...1024) { out.appendUnchecked(to, .string(s)) }
        }
        storeId("originalTransactionIdentifier", "original_transaction_identifier")
        storeId("purchaseToken", "purchase_token")
        storeId("productId", "product_id")
        if t["restored"] == .bool(true) { out.appendUnchecked("restored", true) }
        return out.isEmpty ? nil : out
    }

    /// Builds the next send (increments `seq`), frozen at `nowMs` (clamped), as Core's contract
    /// type; `nil` only if the built body does not fit the type (a bug, reported as `internal`).
    mutating func nextSnapshot(nowMs: Int64) -> PaywallSnapshot? {
        try? PaywallSnapshot(json: .object(nextBody(nowMs: nowMs)))
    }

    /// Builds the ordered body of the next send (increments `seq`).
    mutating func nextBody(nowMs: Int64) -> JSONObject {
        seq += 1
        var b = JSONObject()
        b.appendUnchecked("schema_version", .number(fixed.schemaVersion))
        b.appendUnchecked("presentation_id", .string(id))
        b.appendUnchecked("seq", .number(Double(seq)))
        b.appendUnchecked("started_at", .string(Timestamp.format(ms: startedAt)))
        b.appendUnchecked("shown_at", shownAt.map { .string(Timestamp.format(ms: $0)) } ?? .null)
        b.appendUnchecked("sent_at", .string(Timestamp.format(ms: max(nowMs, floor))))
        b.appendUnchecked("paywall", .object(fixed.paywall))
        b.appendUnchecked("surface", .string(fixed.surface))
        if let run = fixed.onboardingRun { b.appendUnchecked("onboarding_run", .object(run)) }
        b.appendUnchecked("context", .object(context))
        if let endedAt, let outcome {
            b.appendUnchecked("status", "ended")
            b.appendUnchecked("ended_at", .string(Timestamp.format(ms: endedAt)))
            b.appendUnchecked("outcome", .object(outcome))
        } else {
            b.appendUnchecked("status", "in_progress")
            b.appendUnchecked("ended_at", .null)
            b.appendUnchecked("outcome", .null)
        }
        return b
    }

    /// The untyped form of a typed end.
    static func raw(_ end: PaywallPresentationEnd) -> JSONValue {
        var o = JSONObject()
        o["status"] = .string(end.status.rawValue)
        if let r = end.reason { o["reason"] = .string(r) }
        if let t = end.transaction {
            var tx = JSONObject()
            if let v = t.originalTransactionIdentifier { tx["originalTransactionIdentifier"] = .string(v) }
            if let v = t.purchaseToken { tx["purchaseToken"] = .string(v) }
            if let v = t.productId { tx["productId"] = .string(v) }
            if let v = t.restored { tx["restored"] = .bool(v) }
            o["transaction"] = .object(tx)
        }
        return .object(o)
    }
}
