import Foundation

/// A store purchase as plain values: what `RocalyticsClient.recordPurchase(_:product:)` (StoreKit 2) reads from
/// a StoreKit 2 `Transaction` and its `Product`, mapped to ``TrackPurchaseParams`` here, in
/// portable code (issue 37, item 12).
public struct StorePurchase: Sendable, Equatable {
    /// The original transaction id (`Transaction.originalID`): the purchase's deduplication key.
    public var originalTransactionID: UInt64
    /// The product id (`Transaction.productID`).
    public var productID: String
    /// The product's price in its currency (`Product.price`).
    public var price: Decimal
    /// The ISO 4217 currency code (`Product.priceFormatStyle.currencyCode`).
    public var currencyCode: String
    /// Whether the transaction redeemed a free-trial offer (`Transaction.offer?.paymentMode == .freeTrial`).
    public var isFreeTrial: Bool
    /// ``PurchaseType/upsell`` for an upsell; `nil` otherwise.
    public var purchaseType: PurchaseType?

    /// Creates a purchase from its values.
    public init(
        originalTransactionID: UInt64, productID: String, price: Decimal, currencyCode: String, isFreeTrial: Bool,
        purchaseType: PurchaseType? = nil
    ) {
        self.originalTransactionID = originalTransactionID
        self.productID = productID
        self.price = price
        self.currencyCode = currencyCode
        self.isFreeTrial = isFreeTrial
        self.purchaseType = purchaseType
    }

    /// The purchase parameters: `originalTransactionIdentifier` the original id in decimal,
    /// `productId`, `isTrial`, `currency`, and `value` the price (its shortest decimal form, so
    /// `9.99` is sent as `9.99`), or 0 for a free trial, which charges nothing.
    public var params: TrackPurchaseParams {
        TrackPurchaseParams(
            isTrial: isFreeTrial, value: isFreeTrial ? 0 : Double(price.description) ?? 0, currency: currencyCode,
            originalTransactionIdentifier: String(originalTransactionID), productId: productID, purchaseType: purchaseType)
    }
}

extension RocalyticsClient {
    /// Records a store purchase (``recordPurchase(_:)-(TrackPurchaseParams)`` of ``StorePurchase/params``).
    public func recordPurchase(_ purchase: StorePurchase) {
        record(purchase: purchase.params)
    }
}
