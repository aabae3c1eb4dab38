// The snippets of the DocC article "Getting started with the Rocalytics client", compiled here
// (`make check-readme` checks that each snippet of the article is part of this file or another
// compiled one). Each function is one section of the article.

import RocalyticsClient
import TrackerCore

/// "Create the client".
public func gettingStartedCreate() -> RocalyticsClient {
    let rocalytics = RocalyticsClient()  // on iOS, iPadOS, tvOS and visionOS the defaults are all it needs
    return rocalytics
}

/// "Identify and track".
public func gettingStartedIdentifyAndTrack(
    _ rocalytics: RocalyticsClient, userId: String, revenueCatId: String?, originalTransactionIdentifier: String, productId: String
) async throws {
    try await rocalytics.identify(userId: userId, revenueCatId: revenueCatId)  // nil values are not sent

    try await rocalytics.trackPurchase(
        originalTransactionIdentifier: originalTransactionIdentifier, productId: productId, price: 9.99,
        currency: "EUR")
}

/// "Record what must not be lost".
public func gettingStartedRecord(
    _ rocalytics: RocalyticsClient, userId: String, originalTransactionIdentifier: String, productId: String
) {
    rocalytics.recordIdentify(userId: userId)  // from synchronous code: never throws, never waits
    rocalytics.recordPurchase(
        originalTransactionIdentifier: originalTransactionIdentifier, productId: productId, price: 9.99,
        currency: "EUR")
}

/// "Let users opt out".
public func gettingStartedOptOut(_ rocalytics: RocalyticsClient) {
    rocalytics.optOut()  // kept across launches; rocalytics.optIn() undoes it
}

/// "Diagnostics arrive on any thread".
@MainActor public func gettingStartedDiagnostics(_ status: SDKStatus) -> RocalyticsConfiguration {
    let configuration = RocalyticsConfiguration(onDiagnostic: { diagnostic in
        Task { @MainActor in status.show(diagnostic) }
    })
    return configuration
}
