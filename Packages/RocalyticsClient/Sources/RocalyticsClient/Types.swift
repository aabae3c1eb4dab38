import Foundation
import TrackerCore

/// The analytics events `track` accepts. The server refuses other names: send those with
/// ``RocalyticsClient/trackCustomEvent(_:properties:dedupSuffix:)``.
public enum TrackEventName: String, Sendable, Equatable, CaseIterable {
    /// The first launch on a device (the client sends it itself, once per device).
    case install
    /// The onboarding was completed.
    case onboardingCompleted = "onboarding_completed"
    /// A purchase (prefer ``RocalyticsClient/trackPurchase(_:)``).
    case purchase
    /// A subscription started.
    case subscriptionStarted = "subscription_started"
    /// A trial started.
    case trialStarted = "trial_started"
}

/// Marks a purchase that is not an ordinary one, sent as `properties.purchase_type`.
///
/// Its one value today is ``upsell``. A value built from untyped input with another raw value
/// is not sent, and is reported as `unknown-purchase-type` (the purchase itself is still sent).
public struct PurchaseType: RawRepresentable, Sendable, Hashable {
    /// The wire value.
    public let rawValue: String
    /// Creates a purchase type from its wire value (for values from untyped sources).
    public init(rawValue: String) { self.rawValue = rawValue }
    /// A purchase by an existing customer that is revenue but not a new subscription.
    public static let upsell = PurchaseType(rawValue: "upsell")
    /// The values this version knows.
    static let known: Set<String> = ["upsell"]
}

/// The parameters of ``RocalyticsClient/trackPurchase(_:)``.
public struct TrackPurchaseParams: Sendable, Equatable {
    /// Whether the purchase starts a free trial.
    public var isTrial: Bool
    /// The price charged; 0 for a free trial.
    public var value: Double
    /// ISO 4217 currency code.
    public var currency: String
    /// The store's original transaction id: the purchase's deduplication key.
    public var originalTransactionIdentifier: String
    /// The product id; defaults to `product.productIdentifier` when that is a string.
    public var productId: String?
    /// The purchase SDK's product object, forwarded whole (see `JSONValue(encoding:)`, which this module adds).
    public var product: JSONValue?
    /// The purchase SDK's transaction object, forwarded whole.
    public var transaction: JSONValue?
    /// A web-checkout redemption result, forwarded whole.
    public var redemptionResult: JSONValue?
    /// ``PurchaseType/upsell`` for an upsell; `nil` for every other purchase.
    public var purchaseType: PurchaseType?

    /// Creates purchase parameters.
    public init(
        isTrial: Bool, value: Double, currency: String, originalTransactionIdentifier: String,
        productId: String? = nil, product: JSONValue? = nil, transaction: JSONValue? = nil,
        redemptionResult: JSONValue? = nil, purchaseType: PurchaseType? = nil
    ) {
        self.isTrial = isTrial
        self.value = value
        self.currency = currency
        self.originalTransactionIdentifier = originalTransactionIdentifier
        self.productId = productId
        self.product = product
        self.transaction = transaction
        self.redemptionResult = redemptionResult
        self.purchaseType = purchaseType
    }
}

/// The identifiers ``RocalyticsClient/identify(_:)`` attaches to the device's identity.
///
/// An ordered map: identifiers go on the wire in the order they were set. Top-level `nil` or
/// `null` values are dropped by the client; nested values are sent as given.
///
/// ```swift
/// var ids = IdentifyParams()
/// ids.userId = "user-42"
/// ids.revenueCatId = revenueCatId   // nil: not sent
/// try await rocalytics.identify(ids)
/// ```
public struct IdentifyParams: Sendable, Equatable, ExpressibleByDictionaryLiteral {
    /// The identifiers in order, nulls included (the client drops top-level nulls).
    public private(set) var values: JSONObject

    /// No identifiers.
    public init() { values = JSONObject() }
    /// Identifiers from an ordered JSON object (for example, untyped input).
    public init(_ values: JSONObject) { self.values = values }
    /// Identifiers from a literal; `nil` values are dropped.
    public init(dictionaryLiteral elements: (String, JSONValue?)...) {
        values = JSONObject()
        for (k, v) in elements { values[k] = v ?? .null }
    }

    /// Any identifier by its wire key; setting `nil` sends nothing for it.
    public subscript(key: String) -> JSONValue? {
        get { values[key] }
        set { values[key] = newValue ?? .null }
    }

    private func string(_ key: String) -> String? { values[key]?.stringValue }
    private mutating func set(_ key: String, _ value: String?) { values[key] = value.map(JSONValue.string) ?? .null }

    /// `revenue_cat_id`.
    public var revenueCatId: String? {
        get { string("revenue_cat_id") }
        set { set("revenue_cat_id", newValue) }
    }
    /// `qonversion_id`.
    public var qonversionId: String? {
        get { string("qonversion_id") }
        set { set("qonversion_id", newValue) }
    }
    /// `adjust_id`.
    public var adjustId: String? {
        get { string("adjust_id") }
        set { set("adjust_id", newValue) }
    }
    /// `adjust_attribution`, as Adjust reports it.
    public var adjustAttribution: AdjustAttribution? {
        get { values["adjust_attribution"].flatMap(AdjustAttribution.init(json:)) }
        set { values["adjust_attribution"] = newValue?.json ?? .null }
    }
    /// `user_id`.
    public var userId: String? {
        get { string("user_id") }
        set { set("user_id", newValue) }
    }
    /// `email`.
    public var email: String? {
        get { string("email") }
        set { set("email", newValue) }
    }
    /// `amplitude_device_id`.
    public var amplitudeDeviceId: String? {
        get { string("amplitude_device_id") }
        set { set("amplitude_device_id", newValue) }
    }
    /// `idfa`.
    public var idfa: String? {
        get { string("idfa") }
        set { set("idfa", newValue) }
    }
    /// `idfv`.
    public var idfv: String? {
        get { string("idfv") }
        set { set("idfv", newValue) }
    }
    /// `android_id`.
    public var androidId: String? {
        get { string("android_id") }
        set { set("android_id", newValue) }
    }
    /// `customerio_id`.
    public var customerioId: String? {
        get { string("customerio_id") }
        set { set("customerio_id", newValue) }
    }
    /// `segment_id`.
    public var segmentId: String? {
        get { string("segment_id") }
        set { set("segment_id", newValue) }
    }
    /// `gaid`.
    public var gaid: String? {
        get { string("gaid") }
        set { set("gaid", newValue) }
    }
    /// `locale`: the BCP 47 tag of the language the app is shown in.
    public var locale: String? {
        get { string("locale") }
        set { set("locale", newValue) }
    }
}

/// Adjust's attribution, sent as `adjust_attribution`. `nil` members are left out.
public struct AdjustAttribution: Sendable, Equatable {
    /// `trackerToken`.
    public var trackerToken: String?
    /// `trackerName`.
    public var trackerName: String?
    /// `network`.
    public var network: String?
    /// `campaign`.
    public var campaign: String?
    /// `adgroup`.
    public var adgroup: String?
    /// `creative`.
    public var creative: String?
    /// `clickLabel`.
    public var clickLabel: String?
    /// `adid`.
    public var adid: String?
    /// `costType`.
    public var costType: String?
    /// `costAmount`.
    public var costAmount: Double?
    /// `costCurrency`.
    public var costCurrency: String?
    /// `fbInstallReferrer`.
    public var fbInstallReferrer: String?

    /// Creates an attribution; every member is optional.
    public init(
        trackerToken: String? = nil, trackerName: String? = nil, network: String? = nil, campaign: String? = nil,
        adgroup: String? = nil, creative: String? = nil, clickLabel: String? = nil, adid: String? = nil,
        costType: String? = nil, costAmount: Double? = nil, costCurrency: String? = nil, fbInstallReferrer: String? = nil
    ) {
        self.trackerToken = trackerToken
        self.trackerName = trackerName
        self.network = network
        self.campaign = campaign
        self.adgroup = adgroup
        self.creative = creative
        self.clickLabel = clickLabel
        self.adid = adid
        self.costType = costType
        self.costAmount = costAmount
        self.costCurrency = costCurrency
        self.fbInstallReferrer = fbInstallReferrer
    }

    init?(json: JSONValue) {
        guard let o = json.objectValue else { return nil }
        self.init(
            trackerToken: o["trackerToken"]?.stringValue, trackerName: o["trackerName"]?.stringValue,
            network: o["network"]?.stringValue, campaign: o["campaign"]?.stringValue, adgroup: o["adgroup"]?.stringValue,
            creative: o["creative"]?.stringValue, clickLabel: o["clickLabel"]?.stringValue, adid: o["adid"]?.stringValue,
            costType: o["costType"]?.stringValue, costAmount: o["costAmount"]?.numberValue,
            costCurrency: o["costCurrency"]?.stringValue, fbInstallReferrer: o["fbInstallReferrer"]?.stringValue)
    }

    /// The wire object, members in the documented order.
    public var json: JSONValue {
        var o = JSONObject()
        let strings: [(String, String?)] = [
            ("trackerToken", trackerToken), ("trackerName", trackerName), ("network", network), ("campaign", campaign),
            ("adgroup", adgroup), ("creative", creative), ("clickLabel", clickLabel), ("adid", adid), ("costType", costType),
        ]
        for (k, v) in strings { if let v { o.appendUnchecked(k, .string(v)) } }
        if let costAmount { o.appendUnchecked("costAmount", .number(costAmount)) }
        if let costCurrency { o.appendUnchecked("costCurrency", .string(costCurrency)) }
        if let fbInstallReferrer { o.appendUnchecked("fbInstallReferrer", .string(fbInstallReferrer)) }
        return .object(o)
    }
}

/// The answers of one `trackOnboarding` step: question key to value (free-form, ordered).
public typealias OnboardingStepAnswers = JSONObject
/// The free-form metadata of `trackOnboarding`.
public typealias OnboardingMetadata = JSONObject

/// The connection type signal of the demand score.
public enum ConnectionType: String, Sendable, Equatable {
    /// Wi-Fi.
    case wifi
    /// A cellular network.
    case cellular
    /// Anything else.
    case other
}

/// Signals for ``RocalyticsClient/getDemandScore(_:)``. Send only values the app really has.
public struct DemandScoreSignals: Sendable, Equatable {
    /// A native identifier such as `iPhone15,3`.
    public var deviceModel: String?
    /// `device_release_year`.
    public var deviceReleaseYear: Int?
    /// The server uses the major part only.
    public var osVersion: String?
    /// `connection_type`.
    public var connectionType: ConnectionType?
    /// A two-letter storefront code.
    public var storeCountry: String?
    /// `app_open_count`.
    public var appOpenCount: Int?
    /// Use 0 only when the count truly is zero: the server treats a stored 0 as missing data.
    public var paywallViewCount: Int?
    /// BCP 47.
    public var locale: String?

    /// Creates signals; every one is optional.
    public init(
        deviceModel: String? = nil, deviceReleaseYear: Int? = nil, osVersion: String? = nil,
        connectionType: ConnectionType? = nil, storeCountry: String? = nil, appOpenCount: Int? = nil,
        paywallViewCount: Int? = nil, locale: String? = nil
    ) {
        self.deviceModel = deviceModel
        self.deviceReleaseYear = deviceReleaseYear
        self.osVersion = osVersion
        self.connectionType = connectionType
        self.storeCountry = storeCountry
        self.appOpenCount = appOpenCount
        self.paywallViewCount = paywallViewCount
        self.locale = locale
    }

    /// The wire object: the signals that are set, in the documented order.
    public var json: JSONObject {
        var o = JSONObject()
        if let deviceModel { o.appendUnchecked("device_model", .string(deviceModel)) }
        if let deviceReleaseYear { o.appendUnchecked("device_release_year", .number(Double(deviceReleaseYear))) }
        if let osVersion { o.appendUnchecked("os_version", .string(osVersion)) }
        if let connectionType { o.appendUnchecked("connection_type", .string(connectionType.rawValue)) }
        if let storeCountry { o.appendUnchecked("store_country", .string(storeCountry)) }
        if let appOpenCount { o.appendUnchecked("app_open_count", .number(Double(appOpenCount))) }
        if let paywallViewCount { o.appendUnchecked("paywall_view_count", .number(Double(paywallViewCount))) }
        if let locale { o.appendUnchecked("locale", .string(locale)) }
        return o
    }
}

/// The server's demand score. Optional members may be missing from older responses; ``raw``
/// keeps the whole response.
public struct DemandScoreResult: Sendable, Equatable {
    /// 1 to 100, mirroring `versions[selectedVersion].score`.
    public var demandScore: Int
    /// `v1` or `v2` (a server-side setting); absent before the score was versioned.
    public var selectedVersion: String?
    /// True when the identity has no event history yet.
    public var coldStart: Bool
    /// The per-version breakdowns; absent before the score was versioned.
    public var versions: Versions?
    /// The breakdown of the older, unversioned response.
    public var signals: [V1Signal]?
    /// The response as received.
    public var raw: JSONValue

    /// The per-version breakdowns.
    public struct Versions: Sendable, Equatable {
        /// The `v1` breakdown.
        public var v1: V1?
        /// The `v2` breakdown.
        public var v2: V2?
    }

    /// The v1 breakdown.
    public struct V1: Sendable, Equatable {
        /// `score` as the server sent it (`nil` when absent).
        public var score: Double?
        /// `coldStart` as the server sent it (`nil` when absent).
        public var coldStart: Bool?
        /// `signals` as the server sent it (`nil` when absent).
        public var signals: [V1Signal]
    }

    /// One v1 signal: `value` is `nil` when the server sent `null`.
    public struct V1Signal: Sendable, Equatable {
        /// `signal` as the server sent it (`nil` when absent).
        public var signal: String
        /// `value` as the server sent it (`nil` when absent).
        public var value: Double?
        /// `weight` as the server sent it (`nil` when absent).
        public var weight: Double?
        /// `weighted` as the server sent it (`nil` when absent).
        public var weighted: Double?
    }

    /// The v2 breakdown (absent when no rates table exists).
    public struct V2: Sendable, Equatable {
        /// `score` as the server sent it (`nil` when absent).
        public var score: Double?
        /// `logOdds` as the server sent it (`nil` when absent).
        public var logOdds: Double?
        /// `matchedSignals` as the server sent it (`nil` when absent).
        public var matchedSignals: Int?
        /// `app` or `portfolio`.
        public var ratesSource: String?
        /// `signals` as the server sent it (`nil` when absent).
        public var signals: [V2Signal]
    }

    /// One v2 signal.
    public struct V2Signal: Sendable, Equatable {
        /// `signal` as the server sent it (`nil` when absent).
        public var signal: String
        /// `level` as the server sent it (`nil` when absent).
        public var level: String?
        /// `rate` as the server sent it (`nil` when absent).
        public var rate: Double?
        /// `logOdds` as the server sent it (`nil` when absent).
        public var logOdds: Double?
        /// `matched` as the server sent it (`nil` when absent).
        public var matched: Bool?
    }

    /// Reads a response; `nil` when `demandScore` or `coldStart` is missing. Unknown keys are ignored.
    public init?(json: JSONValue) {
        guard let o = json.objectValue, let score = o["demandScore"]?.intValue, let cold = o["coldStart"]?.boolValue else { return nil }
        demandScore = score
        coldStart = cold
        selectedVersion = o["selectedVersion"]?.stringValue
        raw = json
        signals = o["signals"]?.arrayValue.map(Self.v1Signals)
        if let v = o["versions"]?.objectValue {
            var vs = Versions()
            if let v1 = v["v1"]?.objectValue {
                vs.v1 = V1(
                    score: v1["score"]?.numberValue, coldStart: v1["coldStart"]?.boolValue,
                    signals: Self.v1Signals(v1["signals"]?.arrayValue ?? []))
            }
            if let v2 = v["v2"]?.objectValue {
                vs.v2 = V2(
                    score: v2["score"]?.numberValue, logOdds: v2["logOdds"]?.numberValue,
                    matchedSignals: v2["matchedSignals"]?.intValue, ratesSource: v2["ratesSource"]?.stringValue,
                    signals: (v2["signals"]?.arrayValue ?? []).compactMap { s in
                        guard let so = s.objectValue, let name = so["signal"]?.stringValue else { return nil }
                        return V2Signal(
                            signal: name, level: so["level"]?.stringValue, rate: so["rate"]?.numberValue,
                            logOdds: so["logOdds"]?.numberValue, matched: so["matched"]?.boolValue)
                    })
            }
            versions = vs
        } else {
            versions = nil
        }
    }

    private static func v1Signals(_ a: [JSONValue]) -> [V1Signal] {
        a.compactMap { s in
            guard let so = s.objectValue, let name = so["signal"]?.stringValue else { return nil }
            return V1Signal(
                signal: name, value: so["value"]?.numberValue, weight: so["weight"]?.numberValue,
                weighted: so["weighted"]?.numberValue)
        }
    }
}

/// The cross-network event id for ad-network APIs (the Meta CAPI or Pixel `event_id`, the TikTok
/// Events API `event_id`, the Adjust S2S `callback_id`): `<name>-<transactionId>`, the value
/// Rocalytics computes when it relays the conversion, so the network drops the duplicate.
///
/// The transaction id is the first non-null of `original_transaction_identifier`,
/// `originalTransactionIdentifier` and `transaction.originalTransactionIdentifier`; `nil` when
/// there is none or it is empty. Pure: it does not use the roca id.
public func getEventId(_ name: String, _ properties: JSONObject?) -> String? {
    guard let properties else { return nil }
    func present(_ v: JSONValue?) -> JSONValue? {
        guard let v, !v.isNull else { return nil }
        return v
    }
    let id =
        present(properties["original_transaction_identifier"])
        ?? present(properties["originalTransactionIdentifier"])
        ?? present(properties["transaction"]?["originalTransactionIdentifier"])
    guard let id else { return nil }
    let text: String
    switch id {
    case .string(let s): text = s
    case .number(let n): text = WireJSON.formatNumber(n)
    case .bool(let b): text = b ? "true" : "false"
    default: return nil
    }
    guard !text.isEmpty else { return nil }
    return "\(name)-\(text)"
}

extension JSONValue {
    /// Converts any `Encodable` (a purchase SDK's product or transaction, for example) to JSON, to
    /// forward it whole. Object members come out in ascending key order (Foundation's encoder
    /// does not keep declaration order). `nil` when the value cannot be encoded.
    public init?(encoding value: some Encodable) {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        guard let data = try? encoder.encode(value), let json = try? WireJSON.decode([UInt8](data)) else { return nil }
        self = json
    }
}
