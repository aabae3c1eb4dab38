import TrackerCore

/// The state of one presentation (<doc:Presentations>): marks in integer milliseconds, clamped so
/// they never go backwards, and the parts frozen at start.
struct PresentationState: Sendable {
    let id: String
    let startedAt: Int64
    let fixed: ValidatedInfo
    let context: PaywallPresentationSnapshot.Context
    private(set) var seq = 0
    private(set) var shownAt: Int64?
    private(set) var endedAt: Int64?
    private(set) var outcome: PaywallPresentationSnapshot.Outcome?

    init(id: String, startedAt: Int64, fixed: ValidatedInfo, context: PaywallPresentationSnapshot.Context) {
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

    /// Ends the presentation from a typed end.
    mutating func markEnded(_ end: PaywallPresentationEnd, nowMs: Int64) -> MarkResult {
        let t = end.transaction.map {
            PaywallPresentationSnapshot.Transaction(
                originalTransactionIdentifier: $0.originalTransactionIdentifier, purchaseToken: $0.purchaseToken,
                productId: $0.productId, restored: $0.restored)
        }
        return markEnded(
            status: PaywallPresentationSnapshot.OutcomeStatus(rawValue: end.status.rawValue), reason: end.reason,
            transaction: t, nowMs: nowMs)
    }

    /// Ends the presentation from an untyped end (`{status, reason?, transaction?}`).
    mutating func markEnded(_ end: JSONValue, nowMs: Int64) -> MarkResult {
        var t: PaywallPresentationSnapshot.Transaction?
        if case .object(let o)? = end["transaction"] {
            t = PaywallPresentationSnapshot.Transaction(
                originalTransactionIdentifier: o["originalTransactionIdentifier"]?.stringValue,
                purchaseToken: o["purchaseToken"]?.stringValue,
                productId: o["productId"]?.stringValue, restored: o["restored"]?.boolValue)
        }
        return markEnded(
            status: end["status"]?.stringValue.flatMap(PaywallPresentationSnapshot.OutcomeStatus.init(rawValue:)),
            reason: end["reason"]?.stringValue, transaction: t, nowMs: nowMs)
    }

    /// Ends the presentation: `status` `nil` is an unknown or missing one. A reason is kept only
    /// with `error` and when it is a key; a transaction only with `purchased`, keeping its ids of
    /// 1 to 1024 characters and `restored` only when true (none left: no transaction).
    private mutating func markEnded(
        status: PaywallPresentationSnapshot.OutcomeStatus?, reason: String?, transaction: PaywallPresentationSnapshot.Transaction?,
        nowMs: Int64
    ) -> MarkResult {
        if endedAt != nil { return .alreadyEnded }
        guard let status else { return .invalidStatus }
        var o = PaywallPresentationSnapshot.Outcome(status: status)
        if status == .error, let reason, InputPatterns.isKey(reason) { o.reason = reason }
        if status == .purchased, let transaction { o.transaction = Self.kept(transaction) }
        let ended = max(nowMs, floor)
        endedAt = ended
        // A purchase implies the paywall was on screen (P7).
        if status == .purchased, shownAt == nil { shownAt = ended }
        outcome = o
        return .ok
    }

    private static func kept(_ t: PaywallPresentationSnapshot.Transaction) -> PaywallPresentationSnapshot.Transaction? {
        func id(_ s: String?) -> String? { s.flatMap { InputPatterns.utf16Length($0, 1...1024) ? $0 : nil } }
        let out = PaywallPresentationSnapshot.Transaction(
            originalTransactionIdentifier: id(t.originalTransactionIdentifier), purchaseToken: id(t.purchaseToken),
            productId: id(t.productId), restored: t.restored == true ? true : nil)
        return out == PaywallPresentationSnapshot.Transaction() ? nil : out
    }

    /// Builds the next send (increments `seq`), frozen at `nowMs` (clamped): Core's contract
    /// type, whose encoder writes the wire order.
    mutating func nextSnapshot(nowMs: Int64) -> PaywallSnapshot {
        seq += 1
        return PaywallSnapshot(
            presentationId: id, seq: seq, startedAt: Timestamp.format(ms: startedAt), shownAt: shownAt.map { Timestamp.format(ms: $0) },
            sentAt: Timestamp.format(ms: max(nowMs, floor)), paywall: fixed.paywall, surface: fixed.surface,
            onboardingRun: fixed.onboardingRun, context: context, status: outcome == nil ? .inProgress : .ended,
            endedAt: outcome == nil ? nil : endedAt.map { Timestamp.format(ms: $0) }, outcome: outcome)
    }
}
