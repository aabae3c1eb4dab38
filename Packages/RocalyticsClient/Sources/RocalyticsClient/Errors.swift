import Foundation
import TrackerCore

/// Why a client method failed. Its ``description`` (and ``message``) is the exact text the
/// reference client rejected with, e.g. `[ROCALYTICS] track failed: 500 (install)`. Transport
/// errors (Core's `HTTPError`) are thrown unchanged.
///
/// A struct with a stable ``code`` rather than an enum, so that a new kind of failure never
/// breaks a `switch` in your code: compare codes (`error.code == .requestFailed`) and read the
/// fields that apply.
public struct RocalyticsError: Error, Sendable, Hashable, CustomStringConvertible, LocalizedError {
    /// A stable kind of failure. New codes may be added in any release.
    public struct Code: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
        /// The code's kebab-case text, e.g. `request-failed`.
        public let rawValue: String
        /// A code from its text.
        public init(rawValue: String) { self.rawValue = rawValue }

        /// The endpoint answered a non-2xx status (``RocalyticsError/status``).
        public static let requestFailed = Code(rawValue: "request-failed")
        /// `getDemandScore` on an inert client (nothing was sent).
        public static let demandScoreUnavailable = Code(rawValue: "demand-score-unavailable")
        /// A 2xx answer whose body could not be read as the expected JSON.
        public static let invalidResponse = Code(rawValue: "invalid-response")

        public var description: String { rawValue }
    }

    /// The kind of failure.
    public let code: Code
    /// The reference client's rejection text, e.g. `[ROCALYTICS] identify failed: 503`. Never
    /// carries a token, a roca id or request properties.
    public let message: String
    /// The endpoint that failed (`track`, `identify`, `demand-score`…), when one did.
    public let endpoint: String?
    /// The non-2xx status of a ``Code/requestFailed`` failure.
    public let status: Int?
    /// What the reference text adds in parentheses: the event name of a failed `track`.
    public let detail: String?

    /// Creates an error; ``message`` is the text it reads as.
    public init(code: Code, message: String, endpoint: String? = nil, status: Int? = nil, detail: String? = nil) {
        self.code = code
        self.message = message
        self.endpoint = endpoint
        self.status = status
        self.detail = detail
    }

    /// The endpoint answered `status` (`[ROCALYTICS] <endpoint> failed: <status>[ (<detail>)]`).
    /// Was the enum case of the same name.
    public static func requestFailed(endpoint: String, status: Int, detail: String?) -> RocalyticsError {
        let text = detail.map { "[ROCALYTICS] \(endpoint) failed: \(status) (\($0))" } ?? "[ROCALYTICS] \(endpoint) failed: \(status)"
        return RocalyticsError(code: .requestFailed, message: text, endpoint: endpoint, status: status, detail: detail)
    }

    /// `getDemandScore` on an inert client. Was the enum case of the same name.
    public static let demandScoreUnavailable = RocalyticsError(
        code: .demandScoreUnavailable, message: "[ROCALYTICS] demand-score unavailable: client failed to initialize",
        endpoint: "demand-score")

    /// A 2xx answer from `endpoint` that could not be read. Was the enum case of the same name.
    public static func invalidResponse(endpoint: String) -> RocalyticsError {
        RocalyticsError(code: .invalidResponse, message: "[ROCALYTICS] \(endpoint) failed: invalid response", endpoint: endpoint)
    }

    public var description: String { message }

    public var errorDescription: String? { message }

    /// Lets `catch RocalyticsError.demandScoreUnavailable` match as it did when this was an enum.
    public static func ~= (pattern: RocalyticsError, error: any Error) -> Bool {
        (error as? RocalyticsError) == pattern
    }
}

/// The text of an error as the diagnostics and transient reasons carry it.
func errorText(_ error: any Error) -> String {
    if let e = error as? RocalyticsError { return e.description }
    if let e = error as? HTTPError { return e.description }
    return String(describing: error)
}
