import TrackerCore

// Issue 37, item 10: the purchase calls with labelled arguments beside `TrackPurchaseParams`, the
// reference's parameter bag, which stays (not deprecated: the seed's spelling, and the value the
// recording form stores).
extension RocalyticsClient {
    /// ``trackPurchase(_:)`` with labelled arguments (the same request):
    /// `try await rocalytics.trackPurchase(originalTransactionIdentifier: id, productId: "pro_monthly", price: 9.99, currency: "EUR")`.
    /// - Throws: ``RocalyticsError`` on a non-2xx answer; transport errors unchanged.
    public func trackPurchase(
        originalTransactionIdentifier: String, productId: String? = nil, price: Double, currency: String, isTrial: Bool = false,
        purchaseType: PurchaseType? = nil, product: JSONValue? = nil, transaction: JSONValue? = nil,
        redemptionResult: JSONValue? = nil
    ) async throws {
        try await trackPurchase(
            TrackPurchaseParams(
                isTrial: isTrial, value: price, currency: currency, originalTransactionIdentifier: originalTransactionIdentifier,
                productId: productId, product: product, transaction: transaction, redemptionResult: redemptionResult,
                purchaseType: purchaseType))
    }

    /// ``recordPurchase(_:)-(TrackPurchaseParams)`` with labelled arguments (the same request, stored and retried; never throws).
    public func recordPurchase(
        originalTransactionIdentifier: String, productId: String? = nil, price: Double, currency: String, isTrial: Bool = false,
        purchaseType: PurchaseType? = nil, product: JSONValue? = nil, transaction: JSONValue? = nil,
        redemptionResult: JSONValue? = nil
    ) {
        recordPurchase(
            TrackPurchaseParams(
                isTrial: isTrial, value: price, currency: currency, originalTransactionIdentifier: originalTransactionIdentifier,
                productId: productId, product: product, transaction: transaction, redemptionResult: redemptionResult,
                purchaseType: purchaseType))
    }
}
