/// How a sink settled (or did not settle) one snapshot.
public enum SinkOutcome: String, Sendable, Equatable {
    /// The backend took the snapshot.
    case accepted
    /// The backend already had it (or something newer); nothing to resend.
    case ignored
    /// The backend refused it for good; it is never resent unchanged.
    case rejected
    /// No decision: retried after a backoff.
    case transient

    /// Whether the outcome settles the snapshot.
    public var isSettled: Bool { self != .transient }
}

/// A sink's answer: the outcome and an optional reason.
public struct SinkResult: Sendable, Equatable {
    /// The outcome.
    public var outcome: SinkOutcome
    /// Why, when the sink said (for `rejected` it reaches the `rejected` diagnostic).
    public var reason: String?

    /// Creates a result.
    public init(_ outcome: SinkOutcome, reason: String? = nil) {
        self.outcome = outcome
        self.reason = reason
    }

    /// The snapshot is now the stored one: it is settled.
    public static let accepted = SinkResult(.accepted)
    /// Nothing to do (the same or a newer snapshot is stored, or the run ended): settled too.
    public static let ignored = SinkResult(.ignored)
    /// No verdict (no answer, no outcome in the body, a failure): retried with backoff.
    public static let transient = SinkResult(.transient)

    /// Normalises a JSON answer: an object whose `outcome` is `accepted`, `ignored` or
    /// `rejected` gives that outcome (with its string `reason`, if any); anything else is
    /// transient.
    public static func normalizing(_ answer: JSONValue?) -> SinkResult {
        guard let object = answer?.objectValue, let outcome = object["outcome"]?.stringValue else {
            return SinkResult(.transient, reason: "no outcome")
        }
        let reason = object["reason"]?.stringValue
        switch outcome {
        case "accepted": return SinkResult(.accepted, reason: reason)
        case "ignored": return SinkResult(.ignored, reason: reason)
        case "rejected": return SinkResult(.rejected, reason: reason)
        default: return SinkResult(.transient, reason: "unknown outcome")
        }
    }
}

/// Where snapshots go. Class-bound because identity matters: two trackers hand work over only
/// to the same destination, and without a destination string only to the same instance.
///
/// A `send` that throws counts as transient, like an explicit `.transient`.
public protocol Sink<Payload>: AnyObject, Sendable {
    /// The payload this sink takes.
    associatedtype Payload: Sendable
    /// Where this sink delivers (its URL, for example); `nil` for test doubles.
    var destination: String? { get }
    /// Delivers one snapshot.
    func send(_ payload: Payload) async throws -> SinkResult
}

/// Whether two sinks deliver to the same place: equal destination strings, or, when either has
/// none, the very same instance.
public func sameDestination(_ a: AnyObject & Sendable, _ aDestination: String?, _ b: AnyObject & Sendable, _ bDestination: String?) -> Bool
{
    if let aDestination, let bDestination { return aDestination == bDestination }
    return a === b
}
