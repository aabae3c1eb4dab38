import TrackerCore

/// The parts of a snapshot fixed at start, from a validated info.
struct ValidatedInfo: Sendable {
    /// `1` without a provider, `1.1` with one.
    var schemaVersion: Double
    var paywall: JSONObject
    var surface: String
    var onboardingRun: JSONObject?
}

enum InfoValidation {
    /// The untyped form of a typed info: the keys the host passed. Without a provider a `nil`
    /// audience is an explicit `null` (v1: "no audience"); with one it is left out.
    static func raw(_ info: PaywallPresentationInfo) -> JSONValue {
        var o = JSONObject()
        if let v = info.moment { o["moment"] = .string(v) }
        if let v = info.paywallId { o["paywallId"] = .string(v) }
        if let v = info.audienceId { o["audienceId"] = .string(v) } else if info.provider == nil { o["audienceId"] = .null }
        if let v = info.renderMode { o["renderMode"] = .string(v.rawValue) }
        if let v = info.billing { o["billing"] = .string(v.rawValue) }
        o["surface"] = .string(info.surface.rawValue)
        if let v = info.variantKey { o["variantKey"] = .string(v) }
        if let v = info.deploymentId { o["deploymentId"] = .string(v) }
        if let r = info.onboardingRun { o["onboardingRun"] = ["runId": .string(r.runId), "stepKey": .string(r.stepKey)] }
        if let v = info.provider { o["provider"] = .string(v.rawValue) }
        if let v = info.placement { o["placement"] = .string(v) }
        if let v = info.externalPaywallId { o["externalPaywallId"] = .string(v) }
        if let v = info.providerName { o["providerName"] = .string(v) }
        return .object(o)
    }

    /// Validates an untyped info (the messages of spec section 7.2, in order, then the v1.1
    /// ones); on success returns the wire parts.
    static func validate(_ value: JSONValue) -> Result<ValidatedInfo, InfoProblems> {
        guard case let .object(i) = value else { return .failure(InfoProblems(["info is not an object"])) }
        var errors: [String] = []
        // A key whose value is `null` counts as not given for the optional fields of v1.1.
        func given(_ key: String) -> JSONValue? {
            guard let v = i[key], !v.isNull else { return nil }
            return v
        }
        func isId(_ v: JSONValue?, max: Int = 128) -> Bool {
            guard let s = v?.stringValue else { return false }
            return InputPatterns.utf16Length(s, 1...max)
        }
        let providerValue = given("provider")
        let hasProvider = providerValue != nil
        let provider = providerValue?.stringValue.flatMap(PaywallProvider.init(rawValue:))

        if hasProvider {
            if let v = given("moment"), !isId(v) { errors.append("moment must be 1 to 128 characters") }
            if let v = given("paywallId"), !isId(v) { errors.append("paywallId must be 1 to 128 characters") }
            if let v = given("audienceId"), !isId(v) { errors.append("audienceId must be null or 1 to 128 characters") }
            if let v = given("renderMode"), PaywallRenderMode(rawValue: v.stringValue ?? "") == nil {
                errors.append("renderMode must be elements or custom")
            }
            if let v = given("billing"), PaywallBilling(rawValue: v.stringValue ?? "") == nil {
                errors.append("billing must be store or stripe")
            }
        } else {
            if !isId(i["moment"]) { errors.append("moment must be 1 to 128 characters") }
            if !isId(i["paywallId"]) { errors.append("paywallId must be 1 to 128 characters") }
            if let a = i["audienceId"], a.isNull {} else if !isId(i["audienceId"]) {
                errors.append("audienceId must be null or 1 to 128 characters")
            }
            if PaywallRenderMode(rawValue: i["renderMode"]?.stringValue ?? "") == nil { errors.append("renderMode must be elements or custom") }
            if PaywallBilling(rawValue: i["billing"]?.stringValue ?? "") == nil { errors.append("billing must be store or stripe") }
        }
        let surface = PaywallSurface(rawValue: i["surface"]?.stringValue ?? "")
        if surface == nil { errors.append("surface must be present or paywall_step") }
        if let v = i["variantKey"], !isId(v) { errors.append("variantKey must be 1 to 128 characters") }
        if let v = i["deploymentId"], !isId(v) { errors.append("deploymentId must be 1 to 128 characters") }
        var run: (String, String)?
        if let r = i["onboardingRun"] {
            if let runId = r["runId"]?.stringValue, InputPatterns.isLowercaseUUID(runId),
               let stepKey = r["stepKey"]?.stringValue, InputPatterns.isKey(stepKey) {
                run = (runId, stepKey)
            } else {
                errors.append("onboardingRun must be { runId: lowercase UUID, stepKey: key }")
            }
        }
        if hasProvider {
            if provider == nil { errors.append("provider must be external or native") }
            if provider == .external || given("placement") != nil, !isId(given("placement")) {
                errors.append("placement must be 1 to 128 characters")
            }
            if !isId(given("externalPaywallId")) { errors.append("externalPaywallId must be 1 to 128 characters") }
            if let v = given("providerName"), !isId(v, max: 64) { errors.append("providerName must be 1 to 64 characters") }
        }
        guard errors.isEmpty, let surface else { return .failure(InfoProblems(errors)) }

        var paywall = JSONObject()
        if let provider {
            paywall.appendUnchecked("provider", .string(provider.rawValue))
            if let v = given("providerName") { paywall.appendUnchecked("provider_name", v) }
            if let v = given("placement") { paywall.appendUnchecked("placement", v) }
            paywall.appendUnchecked("external_paywall_id", given("externalPaywallId")!)
            if let v = given("moment") { paywall.appendUnchecked("moment_key", v) }
            if let v = given("paywallId") { paywall.appendUnchecked("paywall_id", v) }
            // audience_id keeps its v1 meaning: an explicit null (no audience) is sent as null.
            if let v = i["audienceId"] { paywall.appendUnchecked("audience_id", v) }
            if let v = given("renderMode") { paywall.appendUnchecked("render_mode", v) }
            if let v = given("billing") { paywall.appendUnchecked("billing", v) }
        } else {
            paywall.appendUnchecked("moment_key", i["moment"]!)
            paywall.appendUnchecked("paywall_id", i["paywallId"]!)
            paywall.appendUnchecked("audience_id", i["audienceId"]!)
            paywall.appendUnchecked("render_mode", i["renderMode"]!)
            paywall.appendUnchecked("billing", i["billing"]!)
        }
        if let v = i["variantKey"] { paywall.appendUnchecked("variant_key", v) }
        if let v = i["deploymentId"] { paywall.appendUnchecked("deployment_id", v) }
        var onboardingRun: JSONObject?
        if surface == .paywallStep, let (runId, stepKey) = run {
            onboardingRun = ["run_id": .string(runId), "step_key": .string(stepKey)]
        }
        return .success(ValidatedInfo(schemaVersion: provider == nil ? 1 : 1.1, paywall: paywall, surface: surface.rawValue, onboardingRun: onboardingRun))
    }
}

/// The validation messages of a refused info.
struct InfoProblems: Error, Sendable {
    let messages: [String]
    init(_ messages: [String]) { self.messages = messages }
}
