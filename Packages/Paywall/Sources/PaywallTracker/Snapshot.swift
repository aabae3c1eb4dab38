import TrackerCore

/// One send of a paywall presentation: Core's generated contract type (v1, or v1.1 when the
/// presentation has a provider). Its encoder writes the tracker's emission order (TrackerCore's
/// PaywallPresentationContract article, emission order), so `wireBytes()` gives the bytes the
/// reference tracker's `JSON.stringify` writes; a retry and a resend at the next launch carry the
/// very same values, `sent_at` included. A custom sink is a `Sink<PaywallSnapshot>` that posts
/// `wireBytes()` and reads its backend's verdict.
public typealias PaywallSnapshot = PaywallPresentationSnapshotV1_1

extension PaywallPresentationSnapshotV1_1 {
    /// The wire bytes as a string (compact JSON).
    public var wireString: String { String(decoding: wireBytes(), as: UTF8.self) }
    /// Whether `status` is `ended`.
    public var isEnded: Bool { status == .ended }
    /// The ordered wire members.
    var body: JSONObject { wireJSON().objectValue ?? JSONObject() }
    /// `outcome.status`, when ended.
    var outcomeStatus: String? { outcome?.status.rawValue }
    /// `paywall.provider`, `nil` for a v1 snapshot.
    var provider: String? { paywall.provider?.rawValue }
}
