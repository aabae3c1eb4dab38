/// Gives the Score client a fresh access token before a flush (issue 37 item 4).
///
/// The client calls it from its own tasks, on any thread, so a provider is `Sendable` (Swift 6
/// checks it): a `final class` whose state is immutable or behind a lock, an `actor`, or a
/// `struct` of `Sendable` values. Hand it your auth SDK's own refresh call:
///
/// ```swift
/// struct SessionTokens: ScoreTokenProvider {
///     let session: AuthSession            // your auth SDK's Sendable session
///     func accessToken() async throws -> String? { try await session.freshAccessToken() }
/// }
/// score.setTokenProvider(SessionTokens(session: session))
/// ```
///
/// The closure form of `setTokenProvider(_:)` takes an `@Sendable` closure: capture only
/// `Sendable` values in it.
public protocol ScoreTokenProvider: Sendable {
    /// A current access token, or `nil` when the fan is signed out. A throw or `nil` keeps the
    /// last known token; the call is bounded by `tokenRefreshTimeoutSeconds`.
    func accessToken() async throws -> String?
}

extension ScoreClient {
    /// Sets the token provider, consulted before each flush (single-flight, bounded by
    /// `tokenRefreshTimeoutSeconds`). A throw or `nil` keeps the last known token.
    public func setTokenProvider(_ provider: some ScoreTokenProvider) {
        setTokenProvider { try await provider.accessToken() }
    }
}
