/// The closed JSON Schemas of the paywall presentation contract, checked by hand (v1, or v1.1
/// which also admits every v1 snapshot): what ``ContractChecker/paywallPresentation(_:previous:)``
/// checks only coarsely, with one message per problem. `make validate-payloads` runs the
/// schemas themselves.
extension ContractChecker {
    /// Which paywall schema to check against.
    public enum PaywallSchema: Sendable, Equatable {
        /// `paywall-presentation.schema.json`: `schema_version` 1 only, no provider keys.
        case v1
        /// `paywall-presentation.v1_1.schema.json`: v1 snapshots and provider snapshots (1.1).
        case v1_1
    }

    /// Every schema problem of `value` (empty when it fits `schema`), as messages such as
    /// `unknown key outcome.transaction.price` or `context.locale must be a BCP 47 tag`.
    public static func paywallSchemaProblems(_ value: JSONValue, schema: PaywallSchema = .v1_1) -> [String] {
        var p: [String] = []
        PaywallSchemaCheck.check(value, schema, &p)
        return p
    }
}

enum PaywallSchemaCheck {
    typealias Schema = ContractChecker.PaywallSchema

    private static let topKeys: Set<String> = [
        "schema_version", "presentation_id", "seq", "status", "started_at", "shown_at", "ended_at", "sent_at",
        "paywall", "surface", "onboarding_run", "outcome", "context",
    ]
    private static let v1PaywallKeys: Set<String> = [
        "moment_key", "paywall_id", "audience_id", "render_mode", "billing", "variant_key", "deployment_id",
    ]
    private static let v11PaywallKeys: Set<String> = ["provider", "provider_name", "placement", "external_paywall_id"]

    static func check(_ value: JSONValue, _ schema: Schema, _ p: inout [String]) {
        guard case .object(let o) = value else {
            p.append("snapshot is not an object")
            return
        }
        closed(o, topKeys, "", &p)
        for key in topKeys where key != "onboarding_run" && o[key] == nil { p.append("missing \(key)") }

        let version = o["schema_version"]?.numberValue
        switch schema {
        case .v1: if version != 1 { p.append("schema_version must be 1") }
        case .v1_1: if version != 1 && version != 1.1 { p.append("schema_version must be 1 or 1.1") }
        }
        if let v = o["presentation_id"], !(v.stringValue.map(InputPatterns.isLowercaseUUID) ?? false) {
            p.append("presentation_id must be a lowercase UUID")
        }
        if let v = o["seq"], !(v.intValue.map { $0 >= 1 } ?? false) { p.append("seq must be an integer >= 1") }
        if let v = o["status"], !["in_progress", "ended"].contains(v.stringValue ?? "") { p.append("status must be in_progress or ended") }
        for key in ["started_at", "sent_at"] {
            if let v = o[key], !isTimestamp(v) { p.append("\(key) must be a timestamp") }
        }
        for key in ["shown_at", "ended_at"] {
            if let v = o[key], !v.isNull, !isTimestamp(v) { p.append("\(key) must be a timestamp or null") }
        }
        if let v = o["surface"], !["present", "paywall_step"].contains(v.stringValue ?? "") {
            p.append("surface must be present or paywall_step")
        }

        if let v = o["paywall"] {
            if case .object(let pw) = v {
                checkPaywall(pw, schema, version: version, &p)
            } else {
                p.append("paywall must be an object")
            }
        }
        if let v = o["onboarding_run"] {
            if case .object(let run) = v {
                closed(run, ["run_id", "step_key"], "onboarding_run.", &p)
                if !(run["run_id"]?.stringValue.map(InputPatterns.isLowercaseUUID) ?? false) {
                    p.append("onboarding_run.run_id must be a lowercase UUID")
                }
                if !(run["step_key"]?.stringValue.map(InputPatterns.isKey) ?? false) { p.append("onboarding_run.step_key must be a key") }
            } else {
                p.append("onboarding_run must be an object")
            }
        }
        if let v = o["outcome"], !v.isNull {
            if case .object(let out) = v {
                closed(out, ["status", "reason", "transaction"], "outcome.", &p)
                if !["purchased", "dismissed", "cancelled", "error"].contains(out["status"]?.stringValue ?? "") {
                    p.append("outcome.status must be purchased, dismissed, cancelled or error")
                }
                if let r = out["reason"], !(r.stringValue.map(InputPatterns.isKey) ?? false) { p.append("outcome.reason must be a key") }
                if let t = out["transaction"] {
                    if case .object(let tx) = t {
                        closed(
                            tx, ["original_transaction_identifier", "purchase_token", "product_id", "restored"], "outcome.transaction.", &p)
                        for key in ["original_transaction_identifier", "purchase_token", "product_id"] {
                            if let s = tx[key], !isText(s, 1...1024) { p.append("outcome.transaction.\(key) must be 1 to 1024 characters") }
                        }
                        if let r = tx["restored"], r.boolValue == nil { p.append("outcome.transaction.restored must be a boolean") }
                    } else {
                        p.append("outcome.transaction must be an object")
                    }
                }
            } else {
                p.append("outcome must be an object or null")
            }
        }
        if let v = o["context"] {
            if case .object(let c) = v {
                checkContext(c, &p)
            } else {
                p.append("context must be an object")
            }
        }
    }

    private static func checkPaywall(_ pw: JSONObject, _ schema: Schema, version: Double?, _ p: inout [String]) {
        let allowed = schema == .v1 ? v1PaywallKeys : v1PaywallKeys.union(v11PaywallKeys)
        closed(pw, allowed, "paywall.", &p)
        for key in ["moment_key", "paywall_id", "variant_key", "deployment_id", "placement", "external_paywall_id"] {
            if let v = pw[key], !isText(v, 1...128) { p.append("paywall.\(key) must be 1 to 128 characters") }
        }
        if let v = pw["audience_id"], !v.isNull, !isText(v, 1...128) { p.append("paywall.audience_id must be null or 1 to 128 characters") }
        if let v = pw["render_mode"], !["elements", "custom"].contains(v.stringValue ?? "") {
            p.append("paywall.render_mode must be elements or custom")
        }
        if let v = pw["billing"], !["store", "stripe"].contains(v.stringValue ?? "") {
            p.append("paywall.billing must be store or stripe")
        }
        if let v = pw["provider_name"], !isText(v, 1...64) { p.append("paywall.provider_name must be 1 to 64 characters") }
        if let v = pw["provider"], !["external", "native"].contains(v.stringValue ?? "") {
            p.append("paywall.provider must be external or native")
        }
        if pw["provider"] != nil {
            if pw["external_paywall_id"] == nil { p.append("paywall.external_paywall_id is required with a provider") }
            if pw["provider"]?.stringValue == "external", pw["placement"] == nil {
                p.append("paywall.placement is required with provider external")
            }
            if version == 1 { p.append("a snapshot with a provider has schema_version 1.1") }
        } else {
            for key in ["moment_key", "paywall_id", "audience_id", "render_mode", "billing"] where pw[key] == nil {
                p.append("missing paywall.\(key)")
            }
            for key in ["provider_name", "placement", "external_paywall_id"] where pw[key] != nil {
                p.append("paywall.\(key) only with a provider")
            }
            if version == 1.1 { p.append("schema_version 1.1 requires paywall.provider") }
        }
    }

    private static func checkContext(_ c: JSONObject, _ p: inout [String]) {
        closed(c, ["app_version", "build", "platform", "os_version", "locale", "timezone", "library_version"], "context.", &p)
        for key in ["app_version", "build", "platform", "os_version", "locale", "timezone"] where c[key] == nil {
            p.append("missing context.\(key)")
        }
        if let v = c["app_version"], !isText(v, 1...32) { p.append("context.app_version must be 1 to 32 characters") }
        if let v = c["library_version"], !isText(v, 1...32) { p.append("context.library_version must be 1 to 32 characters") }
        for key in ["build", "os_version"] {
            if let v = c[key], !v.isNull, !isText(v, 1...32) { p.append("context.\(key) must be null or 1 to 32 characters") }
        }
        if let v = c["platform"], !["ios", "android", "web"].contains(v.stringValue ?? "") {
            p.append("context.platform must be ios, android or web")
        }
        if let v = c["locale"], !(v.stringValue.map(InputPatterns.isLocale) ?? false) { p.append("context.locale must be a BCP 47 tag") }
        if let v = c["timezone"], !(v.stringValue.map(InputPatterns.isTimezone) ?? false) {
            p.append("context.timezone must be an IANA name")
        }
    }

    private static func closed(_ o: JSONObject, _ allowed: Set<String>, _ prefix: String, _ p: inout [String]) {
        for key in o.keys where !allowed.contains(key) { p.append("unknown key \(prefix)\(key)") }
    }

    private static func isTimestamp(_ v: JSONValue) -> Bool {
        v.stringValue.map(Timestamp.matchesPattern) ?? false
    }

    /// A string whose length in code points (JSON Schema counting) is in `range`.
    private static func isText(_ v: JSONValue, _ range: ClosedRange<Int>) -> Bool {
        v.stringValue.map { InputPatterns.codePointLength($0, range) } ?? false
    }
}
