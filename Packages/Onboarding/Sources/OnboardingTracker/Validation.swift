import TrackerCore

/// The normalised, validated parts of a start in their contract types: what the run records
/// and sends. A part is `nil` only when the start has problems.
struct RunSpec: Sendable {
    var onboarding: Snapshot.Onboarding?
    var studio: Snapshot.Studio?
    var context: Snapshot.Context?
    var manifest: Snapshot.Manifest
    var manifestKeys: Set<String>
    var warnings: [(code: String, message: String)]
}

enum StartValidation {
    /// Normalises a Studio id: safe non-negative integers become decimal strings; a string
    /// must have 1–128 code points. Returns `nil` for a valid absent id.
    static func link(_ id: StudioID?, name: String, problems: inout [String]) -> String? {
        guard let id else { return nil }
        switch id {
        case .string(let s):
            let n = InputPatterns.codePoints(s)
            if n < 1 || n > 128 {
                problems.append("studio.\(name) must be 1-128 characters")
                return nil
            }
            return s
        case .number(let d):
            if d.isFinite, d >= 0, d <= 9_007_199_254_740_991, d.rounded(.towardZero) == d {
                return String(UInt64(d))
            }
            problems.append("studio.\(name) must be a string or a safe non-negative integer")
            return nil
        }
    }

    static func context(_ c: RunContextInput, problems: inout [String]) -> Snapshot.Context? {
        problems += c.problems.map { "context." + $0 }
        return c.onboardingRunContext(libraryVersion: OnboardingTrackerVersion.current)
    }

    static func manifest(_ steps: [ManifestStepInput], problems: inout [String]) -> (Snapshot.Manifest, Set<String>) {
        if steps.isEmpty { problems.append("manifest must list 1-200 steps") }
        if steps.count > 200 { problems.append("manifest must list 1-200 steps") }
        var keys = Set<String>()
        var closed = Set<String>()
        var arr: [Snapshot.ManifestStep] = []
        arr.reserveCapacity(steps.count)
        for (i, s) in steps.enumerated() {
            if !InputPatterns.isKey(s.stepKey) { problems.append("manifest step \(i) has an invalid step key") }
            if !keys.insert(s.stepKey).inserted { problems.append("manifest step key \(s.stepKey) is repeated") }
            if let slot = s.slot {
                if !InputPatterns.isKey(slot) { problems.append("manifest step \(i) has an invalid slot") }
                if closed.contains(slot) { problems.append("slot \(slot) is not contiguous") }
                let next = i + 1 < steps.count ? steps[i + 1].slot : nil
                if next != slot { closed.insert(slot) }
            }
            arr.append(Snapshot.ManifestStep(stepKey: s.stepKey, slot: s.slot))
        }
        return (Snapshot.Manifest(steps: arr), keys)
    }

    /// Identity + Studio links + manifest (+ context when given): <doc:InputValidation>.
    static func spec(_ options: StartOptions, context ctx: RunContextInput?, problems: inout [String]) -> RunSpec {
        var warnings: [(String, String)] = []
        var studio: Snapshot.Studio?
        var draft = false
        var onboardingId: String?
        var deploymentId: String?
        var hasLink = false
        if let st = options.studio {
            onboardingId = link(st.onboardingId, name: "onboardingId", problems: &problems)
            deploymentId = link(st.deploymentId, name: "deploymentId", problems: &problems)
            let audienceId = link(st.audienceId, name: "audienceId", problems: &problems)
            let variant = link(st.variantKey, name: "variantKey", problems: &problems)
            draft = st.draft == true
            hasLink = onboardingId != nil || deploymentId != nil || audienceId != nil
            if hasLink || variant != nil {
                studio = Snapshot.Studio(
                    onboardingId: onboardingId, deploymentId: deploymentId, audienceId: audienceId, variantKey: variant)
            }
        }
        let studioServed = hasLink || draft
        var identity: Snapshot.Onboarding?
        if let ob = options.onboarding {
            if !InputPatterns.isKey(ob.key) { problems.append("onboarding.key is not a key") }
            var version = ob.version
            if draft {
                if ob.version != "draft" {
                    warnings.append(("draft-version", "a draft sends onboarding.version \"draft\" (declared \(ob.version))"))
                }
                version = "draft"
            } else if !InputPatterns.isVersion(ob.version) {
                problems.append("onboarding.version is not a version string")
            }
            var variantKey: String?
            if let vk = ob.variantKey {
                if studioServed {
                    warnings.append(("studio-variant-dropped", "a Studio-served run does not send onboarding.variant_key"))
                } else if !InputPatterns.isKey(vk) {
                    problems.append("onboarding.variantKey is not a key")
                } else {
                    variantKey = vk
                }
            }
            identity = Snapshot.Onboarding(key: ob.key, version: version, variantKey: variantKey)
        } else {
            if let id = onboardingId, InputPatterns.isKey(id) {
                if draft || deploymentId == nil {
                    identity = Snapshot.Onboarding(key: id, version: "draft")
                } else if let dep = deploymentId, InputPatterns.isVersion(dep) {
                    identity = Snapshot.Onboarding(key: id, version: dep)
                } else {
                    problems.append("studio.deploymentId is not a version string")
                }
            } else {
                problems.append("onboarding is required unless studio.onboardingId is a key")
            }
        }
        let (manifest, keys) = manifest(options.manifest, problems: &problems)
        let context = ctx.flatMap { Self.context($0, problems: &problems) }
        return RunSpec(
            onboarding: identity, studio: studio, context: context,
            manifest: manifest, manifestKeys: keys, warnings: warnings.map { (code: $0.0, message: $0.1) })
    }

    /// Validates one answer (<doc:InputValidation#Answers>); returns its wire JSON or a problem.
    static func answer(_ a: AnswerInput) -> JSONValue? {
        guard InputPatterns.isKey(a.questionKey) else { return nil }
        var o = JSONObject()
        o.appendUnchecked("question_key", .string(a.questionKey))
        switch a {
        case .single(_, let v):
            guard InputPatterns.isKey(v) else { return nil }
            o.appendUnchecked("kind", "single")
            o.appendUnchecked("value", .string(v))
        case .multi(_, let values):
            var seen = Set<String>()
            var out: [JSONValue] = []
            for v in values {
                guard InputPatterns.isKey(v) else { return nil }
                if seen.insert(v).inserted { out.append(.string(v)) }
            }
            guard out.count <= 50 else { return nil }
            o.appendUnchecked("kind", "multi")
            o.appendUnchecked("value", .array(out))
        case .numeric(_, let v, let unit):
            guard v.isFinite else { return nil }
            if let unit, !InputPatterns.isKey(unit) { return nil }
            o.appendUnchecked("kind", "numeric")
            o.appendUnchecked("value", .number(v == 0 ? 0 : v))
            if let unit { o.appendUnchecked("unit", .string(unit)) }
        case .text(_, let v):
            guard InputPatterns.codePoints(v) <= 1000 else { return nil }
            o.appendUnchecked("kind", "text")
            o.appendUnchecked("value", .string(v))
        }
        return .object(o)
    }

    /// Validates one property; `nil` when invalid.
    static func property(_ key: String, _ value: PropertyValue) -> JSONValue? {
        guard InputPatterns.isPropertyKey(key) else { return nil }
        switch value {
        case .string(let s): return InputPatterns.codePoints(s) <= 256 ? .string(s) : nil
        case .number(let n): return n.isFinite ? .number(n) : nil
        case .bool(let b): return .bool(b)
        case .null: return .null
        }
    }
}
