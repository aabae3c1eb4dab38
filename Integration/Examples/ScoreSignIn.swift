// The Score integration guide's "Auth0 (JWT)" section, in Swift: a token provider consulted
// before each flush, and identify once the fan signed in. Compiled and run by `IntegrationTests`
// (ScoreTokenProviderTests) against a loopback server through the real libcurl transport.

import ScoreTracker

/// The app's credentials source (Auth0.swift's `CredentialsManager`, for example).
public protocol AccessTokenSource: Sendable {
    /// A valid access token, renewed when it expired.
    func accessToken() async throws -> String
}

/// When the fan signs in: every flush from now on carries a fresh access token, and the device's
/// anonymous id is linked to the fan on the next flush.
public func onFanSignedIn(_ score: ScoreClient, credentials: any AccessTokenSource, userId: String) {
    score.setTokenProvider { try await credentials.accessToken() }
    score.identify(userId: userId)  // optional: set userId now
}
