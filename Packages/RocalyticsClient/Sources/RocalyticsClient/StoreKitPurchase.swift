// StoreKit 2 only calls here; the mapping is `StorePurchase` (portable, tested on Linux). This
// file cannot be built on Linux: it was checked against Apple's published declarations only
// (`Transaction.originalID: UInt64`, `productID: String`, `offer: Transaction.Offer?` with
// `paymentMode: Transaction.Offer.PaymentMode?` from iOS 17.2, `Product.price: Decimal`,
// `Product.priceFormatStyle: Decimal.FormatStyle.Currency`).
#if canImport(StoreKit)
    import StoreKit

    @available(iOS 17.2, macOS 14.2, tvOS 17.2, visionOS 1.1, *)
    extension StorePurchase {
        /// The values of a verified StoreKit 2 `transaction` of `product`.
        public init(_ transaction: Transaction, product: Product, purchaseType: PurchaseType? = nil) {
            self.init(
                originalTransactionID: transaction.originalID, productID: transaction.productID, price: product.price,
                currencyCode: product.priceFormatStyle.currencyCode,
                isFreeTrial: transaction.offer?.paymentMode == .freeTrial, purchaseType: purchaseType)
        }
    }

    @available(iOS 17.2, macOS 14.2, tvOS 17.2, visionOS 1.1, *)
    extension RocalyticsClient {
        /// Records the purchase of a verified StoreKit 2 `transaction` of `product`, stored and
        /// retried like ``recordPurchase(_:)-(TrackPurchaseParams)``: original transaction id, product id, price and
        /// currency from the product (0 for a free trial), trial flag from the transaction's offer.
        /// Call it after verifying the transaction, before or after `finish()`.
        public func recordPurchase(_ transaction: Transaction, product: Product, purchaseType: PurchaseType? = nil) {
            recordPurchase(StorePurchase(transaction, product: product, purchaseType: purchaseType))
        }
    }
#endif
