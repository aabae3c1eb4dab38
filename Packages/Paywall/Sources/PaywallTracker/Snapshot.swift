import TrackerCore

/// One send of a paywall presentation: the complete snapshot, exactly as it goes on the wire
/// (contract v1, or v1.1 when the presentation has a provider).
///
/// The body is an ordered JSON object in the tracker's emission order (spec 3.8), so
/// ``wireBytes()`` gives the bytes the reference tracker's `JSON.stringify` writes. A retry and a
/// resend at the next launch carry the very same body, `sent_at` included. Custom sinks post
/// ``wireBytes()`` and read the verdict of their backend.
public struct PaywallSnapshot: WireEncodable, Sendable, Equatable {
    /// The snapshot's members, in wire order.
    public let body: JSONObject

    /// Wraps a body as it is (no check: see ``PaywallContractChecker`` for that).
    public init(body: JSONObject) { self.body = body }

    public func wireJSON() -> JSONValue { .object(body) }

    /// The wire bytes as a string (compact JSON).
    public var wireString: String { String(decoding: wireBytes(), as: UTF8.self) }

    /// `schema_version`: 1, or 1.1 for a snapshot with a provider.
    public var schemaVersion: Double? { body["schema_version"]?.numberValue }
    /// `presentation_id`.
    public var presentationId: String? { body["presentation_id"]?.stringValue }
    /// `seq`.
    public var seq: Int? { body["seq"]?.intValue }
    /// `status`: `in_progress` or `ended`.
    public var status: String? { body["status"]?.stringValue }
    /// Whether `status` is `ended`.
    public var isEnded: Bool { status == "ended" }
    /// `started_at`.
    public var startedAt: String? { body["started_at"]?.stringValue }
    /// `paywall.provider` (v1.1), `nil` for a v1 snapshot.
    public var provider: String? { body["paywall"]?["provider"]?.stringValue }
    /// `outcome.status`, when ended.
    public var outcomeStatus: String? { body["outcome"]?["status"]?.stringValue }
}
