import Foundation
import TrackerCore

/// Why a client method failed. Its ``description`` is the exact text the reference client
/// rejected with, e.g. `[ROCALYTICS] track failed: 500 (install)`. Transport errors
/// (``HTTPError``) are thrown unchanged.
public enum RocalyticsError: Error, Sendable, Equatable, CustomStringConvertible, LocalizedError {
    /// The endpoint answered a non-2xx status. `detail` is the event name for `track`.
    case requestFailed(endpoint: String, status: Int, detail: String?)
    /// `getDemandScore` on an inert client.
    case demandScoreUnavailable
    /// A 2xx answer whose body could not be read as the expected JSON.
    case invalidResponse(endpoint: String)

    public var description: String {
        switch self {
        case let .requestFailed(endpoint, status, detail):
            if let detail { "[ROCALYTICS] \(endpoint) failed: \(status) (\(detail))" } else { "[ROCALYTICS] \(endpoint) failed: \(status)" }
        case .demandScoreUnavailable:
            "[ROCALYTICS] demand-score unavailable: client failed to initialize"
        case let .invalidResponse(endpoint):
            "[ROCALYTICS] \(endpoint) failed: invalid response"
        }
    }

    public var errorDescription: String? { description }
}

/// The text of an error as the diagnostics and transient reasons carry it.
func errorText(_ error: any Error) -> String {
    if let e = error as? RocalyticsError { return e.description }
    if let e = error as? HTTPError { return e.description }
    return String(describing: error)
}
