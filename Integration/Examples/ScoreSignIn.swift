// The Score integration guide's "Auth0 (JWT)" section, in Swift: a token provider consulted
// before each flush, and identify once the fan signed in. Compiled and run by `IntegrationTests`
// (ScoreTokenProviderTests) against a loopback server through the real libcurl transport.

import ScoreTracker

/// When the fan signs in: every flush from now on carries a fresh access token from `tokens` (your
/// auth SDK's credentials, wrapped in a `ScoreTokenProvider`), and the device's anonymous id is
/// linked to the fan on the next flush.
public func onFanSignedIn(_ score: ScoreClient, tokens: some ScoreTokenProvider, userId: String) {
    score.setTokenProvider(tokens)
    score.identify(userId: userId)  // optional: set userId now
}
