import TrackerCore

/// The parts of a snapshot fixed at start, from a validated info: Core's generated types.
struct ValidatedInfo: Sendable {
    var paywall: PaywallPresentationSnapshotV1_1.Paywall
    var surface: PaywallPresentationSnapshot.Surface
    var onboardingRun: PaywallPresentationSnapshot.OnboardingRun?
}

/// One member of an info as the host gave it: absent, an explicit `null`, a string, or a value
/// of another type (untyped input only).
enum InfoField: Sendable, Equatable {
    case absent
    case null
    case string(String)
    case other

    /// A typed member: `nil` is absent.
    init(_ s: String?) { self = s.map(InfoField.string) ?? .absent }

    /// An untyped member.
    init(json v: JSONValue?) {
        switch v {
        case nil: self = .absent
        case .null?: self = .null
        case .string(let s)?: self = .string(s)
        default: self = .other
        }
    }

    /// The member with an explicit `null` counted as not given (the optional members of v1.1).
    var given: InfoField { self == .null ? .absent : self }
    var isAbsent: Bool { self == .absent }
    var string: String? {
        if case .string(let s) = self { return s }
        return nil
    }

    /// A string of 1 to `max` UTF-16 code units (JavaScript `.length`, spec section 7.2).
    func isId(max: Int = 128) -> Bool { string.map { InputPatterns.utf16Length($0, 1...max) } ?? false }
}

/// The members of an info, typed or untyped, as one validator reads them.
struct InfoFields: Sendable {
    var moment = InfoField.absent
    var paywallId = InfoField.absent
    var audienceId = InfoField.absent
    var renderMode = InfoField.absent
    var billing = InfoField.absent
    var surface = InfoField.absent
    var variantKey = InfoField.absent
    var deploymentId = InfoField.absent
    /// `nil` when absent; otherwise its `runId` and `stepKey` when they are strings.
    var onboardingRun: (runId: String?, stepKey: String?)?
    var provider = InfoField.absent
    var placement = InfoField.absent
    var externalPaywallId = InfoField.absent
    var providerName = InfoField.absent

    /// A typed info: without a provider a `nil` audience is an explicit `null` (v1: "no
    /// audience"); with one it is left out.
    init(_ info: PaywallPresentationInfo) {
        moment = InfoField(info.moment)
        paywallId = InfoField(info.paywallId)
        audienceId = info.audienceId.map(InfoField.string) ?? (info.provider == nil ? .null : .absent)
        renderMode = InfoField(info.renderMode?.rawValue)
        billing = InfoField(info.billing?.rawValue)
        surface = .string(info.surface.rawValue)
        variantKey = InfoField(info.variantKey)
        deploymentId = InfoField(info.deploymentId)
        onboardingRun = info.onboardingRun.map { (runId: $0.runId, stepKey: $0.stepKey) }
        provider = InfoField(info.provider?.rawValue)
        placement = InfoField(info.placement)
        externalPaywallId = InfoField(info.externalPaywallId)
        providerName = InfoField(info.providerName)
    }

    /// An untyped info object (the observer's key names).
    init(json i: JSONObject) {
        moment = InfoField(json: i["moment"])
        paywallId = InfoField(json: i["paywallId"])
        audienceId = InfoField(json: i["audienceId"])
        renderMode = InfoField(json: i["renderMode"])
        billing = InfoField(json: i["billing"])
        surface = InfoField(json: i["surface"])
        variantKey = InfoField(json: i["variantKey"])
        deploymentId = InfoField(json: i["deploymentId"])
        if let r = i["onboardingRun"] { onboardingRun = (runId: r["runId"]?.stringValue, stepKey: r["stepKey"]?.stringValue) }
        provider = InfoField(json: i["provider"])
        placement = InfoField(json: i["placement"])
        externalPaywallId = InfoField(json: i["externalPaywallId"])
        providerName = InfoField(json: i["providerName"])
    }
}

enum InfoValidation {
    /// Validates a typed info.
    static func validate(_ info: PaywallPresentationInfo) -> Result<ValidatedInfo, InfoProblems> {
        validate(InfoFields(info))
    }

    /// Validates an untyped info (`info is not an object` when it is not one).
    static func validate(_ value: JSONValue) -> Result<ValidatedInfo, InfoProblems> {
        guard case .object(let i) = value else { return .failure(InfoProblems(["info is not an object"])) }
        return validate(InfoFields(json: i))
    }

    /// Validates an info (the messages of spec section 7.2, in order, then the v1.1 ones); on
    /// success returns the wire parts.
    static func validate(_ f: InfoFields) -> Result<ValidatedInfo, InfoProblems> {
        var errors: [String] = []
        let hasProvider = !f.provider.given.isAbsent
        let provider = f.provider.given.string.flatMap(PaywallPresentationSnapshotV1_1.Provider.init(rawValue:))
        let renderMode = f.renderMode.string.flatMap(PaywallPresentationSnapshot.RenderMode.init(rawValue:))
        let billing = f.billing.string.flatMap(PaywallPresentationSnapshot.Billing.init(rawValue:))

        if hasProvider {
            if !f.moment.given.isAbsent, !f.moment.isId() { errors.append("moment must be 1 to 128 characters") }
            if !f.paywallId.given.isAbsent, !f.paywallId.isId() { errors.append("paywallId must be 1 to 128 characters") }
            if !f.audienceId.given.isAbsent, !f.audienceId.isId() { errors.append("audienceId must be null or 1 to 128 characters") }
            if !f.renderMode.given.isAbsent, renderMode == nil { errors.append("renderMode must be elements or custom") }
            if !f.billing.given.isAbsent, billing == nil { errors.append("billing must be store or stripe") }
        } else {
            if !f.moment.isId() { errors.append("moment must be 1 to 128 characters") }
            if !f.paywallId.isId() { errors.append("paywallId must be 1 to 128 characters") }
            if f.audienceId != .null, !f.audienceId.isId() { errors.append("audienceId must be null or 1 to 128 characters") }
            if renderMode == nil { errors.append("renderMode must be elements or custom") }
            if billing == nil { errors.append("billing must be store or stripe") }
        }
        let surface = f.surface.string.flatMap(PaywallPresentationSnapshot.Surface.init(rawValue:))
        if surface == nil { errors.append("surface must be present or paywall_step") }
        if !f.variantKey.isAbsent, !f.variantKey.isId() { errors.append("variantKey must be 1 to 128 characters") }
        if !f.deploymentId.isAbsent, !f.deploymentId.isId() { errors.append("deploymentId must be 1 to 128 characters") }
        var run: PaywallPresentationSnapshot.OnboardingRun?
        if let r = f.onboardingRun {
            if let runId = r.runId, InputPatterns.isLowercaseUUID(runId), let stepKey = r.stepKey, InputPatterns.isKey(stepKey) {
                run = PaywallPresentationSnapshot.OnboardingRun(runId: runId, stepKey: stepKey)
            } else {
                errors.append("onboardingRun must be { runId: lowercase UUID, stepKey: key }")
            }
        }
        if hasProvider {
            if provider == nil { errors.append("provider must be external or native") }
            if provider == .external || !f.placement.given.isAbsent, !f.placement.isId() {
                errors.append("placement must be 1 to 128 characters")
            }
            if !f.externalPaywallId.isId() { errors.append("externalPaywallId must be 1 to 128 characters") }
            if !f.providerName.given.isAbsent, !f.providerName.isId(max: 64) { errors.append("providerName must be 1 to 64 characters") }
        }
        guard errors.isEmpty, let surface else { return .failure(InfoProblems(errors)) }

        // audience_id keeps its v1 meaning with a provider too: an explicit null (no audience)
        // is sent as null; absent stays absent.
        let audience: Nullable<String>? =
            switch f.audienceId {
            case .null: .null
            case .string(let s): .value(s)
            case .absent, .other: nil
            }
        let paywall = PaywallPresentationSnapshotV1_1.Paywall(
            // The provider members only with a provider (v1 has none).
            provider: provider, providerName: provider == nil ? nil : f.providerName.given.string,
            placement: provider == nil ? nil : f.placement.given.string,
            externalPaywallId: provider == nil ? nil : f.externalPaywallId.string, momentKey: f.moment.given.string,
            paywallId: f.paywallId.given.string,
            audienceId: audience, renderMode: renderMode, billing: billing,
            variantKey: f.variantKey.string, deploymentId: f.deploymentId.string)
        return .success(ValidatedInfo(paywall: paywall, surface: surface, onboardingRun: surface == .paywallStep ? run : nil))
    }
}

/// The validation messages of a refused info.
struct InfoProblems: Error, Sendable {
    let messages: [String]
    init(_ messages: [String]) { self.messages = messages }
}
