import TrackerCore

// Issue 37, item 10: the purchase and identify calls with labelled arguments beside the reference's
// parameter bags. The purchase bag's calls (`trackPurchase(_:)`, `recordPurchase(_:)`) are
// deprecated in favour of these; `TrackPurchaseParams` itself stays (the value the recording forms
// store, and `StorePurchase.params`). `identify(_:)` with `IdentifyParams` stays undeprecated: it is
// the only form that sends an identifier these labels do not name (`ids["any_key"] = …`).
extension RocalyticsClient {
    /// ``trackPurchase(_:)`` with labelled arguments (the same request):
    /// `try await rocalytics.trackPurchase(originalTransactionIdentifier: id, productId: "pro_monthly", price: 9.99, currency: "EUR")`.
    /// - Throws: ``RocalyticsError`` on a non-2xx answer; transport errors unchanged.
    public func trackPurchase(
        originalTransactionIdentifier: String, productId: String? = nil, price: Double, currency: String, isTrial: Bool = false,
        purchaseType: PurchaseType? = nil, product: JSONValue? = nil, transaction: JSONValue? = nil,
        redemptionResult: JSONValue? = nil
    ) async throws {
        try await sendPurchase(
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
        record(
            purchase: TrackPurchaseParams(
                isTrial: isTrial, value: price, currency: currency, originalTransactionIdentifier: originalTransactionIdentifier,
                productId: productId, product: product, transaction: transaction, redemptionResult: redemptionResult,
                purchaseType: purchaseType))
    }
}

extension IdentifyParams {
    /// Identifiers from labelled arguments; `nil` ones are not sent. On the wire they keep this
    /// parameter order.
    public init(
        userId: String? = nil, email: String? = nil, revenueCatId: String? = nil, qonversionId: String? = nil,
        adjustId: String? = nil, adjustAttribution: AdjustAttribution? = nil, amplitudeDeviceId: String? = nil,
        idfa: String? = nil, idfv: String? = nil, androidId: String? = nil, customerioId: String? = nil,
        segmentId: String? = nil, gaid: String? = nil, locale: String? = nil
    ) {
        self.init()
        let strings: [(String, String?)] = [
            ("user_id", userId), ("email", email), ("revenue_cat_id", revenueCatId), ("qonversion_id", qonversionId),
            ("adjust_id", adjustId),
        ]
        for (k, v) in strings where v != nil { self[k] = v.map(JSONValue.string) }
        if let adjustAttribution { self.adjustAttribution = adjustAttribution }
        let more: [(String, String?)] = [
            ("amplitude_device_id", amplitudeDeviceId), ("idfa", idfa), ("idfv", idfv), ("android_id", androidId),
            ("customerio_id", customerioId), ("segment_id", segmentId), ("gaid", gaid), ("locale", locale),
        ]
        for (k, v) in more where v != nil { self[k] = v.map(JSONValue.string) }
    }
}

extension RocalyticsClient {
    /// ``identify(_:)`` with labelled arguments (the same request; `nil` ones are not sent):
    /// `try await rocalytics.identify(userId: userId, revenueCatId: revenueCatId)`.
    /// - Throws: ``RocalyticsError`` on a non-2xx answer; transport errors unchanged.
    public func identify(
        userId: String? = nil, email: String? = nil, revenueCatId: String? = nil, qonversionId: String? = nil,
        adjustId: String? = nil, adjustAttribution: AdjustAttribution? = nil, amplitudeDeviceId: String? = nil,
        idfa: String? = nil, idfv: String? = nil, androidId: String? = nil, customerioId: String? = nil,
        segmentId: String? = nil, gaid: String? = nil, locale: String? = nil
    ) async throws {
        try await identify(
            IdentifyParams(
                userId: userId, email: email, revenueCatId: revenueCatId, qonversionId: qonversionId, adjustId: adjustId,
                adjustAttribution: adjustAttribution, amplitudeDeviceId: amplitudeDeviceId, idfa: idfa, idfv: idfv,
                androidId: androidId, customerioId: customerioId, segmentId: segmentId, gaid: gaid, locale: locale))
    }

    /// ``recordIdentify(_:)`` with labelled arguments (the same request, stored and retried; never throws).
    public func recordIdentify(
        userId: String? = nil, email: String? = nil, revenueCatId: String? = nil, qonversionId: String? = nil,
        adjustId: String? = nil, adjustAttribution: AdjustAttribution? = nil, amplitudeDeviceId: String? = nil,
        idfa: String? = nil, idfv: String? = nil, androidId: String? = nil, customerioId: String? = nil,
        segmentId: String? = nil, gaid: String? = nil, locale: String? = nil
    ) {
        recordIdentify(
            IdentifyParams(
                userId: userId, email: email, revenueCatId: revenueCatId, qonversionId: qonversionId, adjustId: adjustId,
                adjustAttribution: adjustAttribution, amplitudeDeviceId: amplitudeDeviceId, idfa: idfa, idfv: idfv,
                androidId: androidId, customerioId: customerioId, segmentId: segmentId, gaid: gaid, locale: locale))
    }
}
