/// A rule of a wire contract that JSON Schema cannot express, with a stable id.
public enum ContractRule: String, Sendable, Equatable, CaseIterable {
    /// The snapshot does not fit the typed contract (wrong type, missing or unknown member).
    /// A coarse shape check only: `make validate-payloads` runs the full JSON Schema.
    case onboardingSchemaShape = "onboarding.schema-shape"
    /// Onboarding rule 1 (<doc:ContractRules>): every entry's `step_key` is a manifest step.
    case onboardingStepInManifest = "onboarding.1.step-in-manifest"
    /// Onboarding rule 2 (<doc:ContractRules>): manifest `step_key`s are pairwise distinct.
    case onboardingManifestKeysDistinct = "onboarding.2.manifest-keys-distinct"
    /// Onboarding rule 2 (<doc:ContractRules>): the steps of one `slot` are adjacent.
    case onboardingSlotContiguous = "onboarding.2.slot-contiguous"
    /// Onboarding rule 3 (<doc:ContractRules>): `entered_at` never decreases.
    case onboardingEnteredAtOrder = "onboarding.3.entered-at-order"
    /// Onboarding rule 4 (<doc:ContractRules>): `started_at` equals `steps[0].entered_at`.
    case onboardingStartedAtFirstEntry = "onboarding.4.started-at-first-entry"
    /// Onboarding rule 5 (<doc:ContractRules>): `exited_at` is null or not before `entered_at`.
    case onboardingExitAfterEntry = "onboarding.5.exit-after-entry"
    /// Onboarding rule 6 (<doc:ContractRules>): only the last entry may be open, and it is open
    /// while an untruncated run is in progress.
    case onboardingOpenEntry = "onboarding.6.open-entry"
    /// Onboarding rule 7 (<doc:ContractRules>): a completed run's last entry exits at
    /// `completed_at` (truncated: non-null and not after it).
    case onboardingCompletedLastExit = "onboarding.7.completed-last-exit"
    /// Onboarding rule 8 (<doc:ContractRules>): `question_key`s are distinct within an entry.
    case onboardingQuestionKeysDistinct = "onboarding.8.question-keys-distinct"

    /// The snapshot does not fit the typed contract: closed objects (an unknown member such as a
    /// `price`, P12), types, required members. A coarse shape check; the JSON Schema is the full one.
    case paywallSchemaShape = "paywall.schema-shape"
    /// Paywall rule 1 (<doc:ContractRules>): `ended_at` and `outcome` are non-null exactly when
    /// `status` is `ended`.
    case paywallEndedIffStatusEnded = "paywall.1.ended-iff-status-ended"
    /// Paywall rule 2 (<doc:ContractRules>): `shown_at` ≥ `started_at`.
    case paywallShownAfterStart = "paywall.2.shown-after-start"
    /// Paywall rule 3 (<doc:ContractRules>): `ended_at` ≥ `shown_at` (or `started_at` when not shown).
    case paywallEndedAfterShown = "paywall.3.ended-after-shown"
    /// Paywall rule 4 (<doc:ContractRules>): `sent_at` ≥ `started_at`.
    case paywallSentAfterStart = "paywall.4.sent-after-start"
    /// Paywall rule 5 (<doc:ContractRules>): `outcome.reason` only with status `error`.
    case paywallReasonOnlyWithError = "paywall.5.reason-only-with-error"
    /// Paywall rule 6 (<doc:ContractRules>): `outcome.transaction` only with status `purchased`.
    case paywallTransactionOnlyWithPurchased = "paywall.6.transaction-only-with-purchased"
    /// Paywall rule 6 (<doc:ContractRules>): `outcome.transaction` is never `{}`.
    case paywallTransactionNeverEmpty = "paywall.6.transaction-never-empty"
    /// Paywall rule 7 (<doc:ContractRules>): a `purchased` outcome requires `shown_at`.
    case paywallPurchasedRequiresShown = "paywall.7.purchased-requires-shown"
    /// Paywall rule 8 (<doc:ContractRules>): `onboarding_run` only with surface `paywall_step`.
    case paywallOnboardingRunOnlyOnStep = "paywall.8.onboarding-run-only-on-step"
    /// Paywall rule 9 (<doc:ContractRules>): at most 16,384 bytes of compact UTF-8.
    case paywallMaxSize = "paywall.9.max-size"
    /// Paywall P6: `presentation_id`, `started_at`, `paywall`, `surface`, `onboarding_run` and
    /// `context` never change within a presentation (checked against an earlier snapshot).
    case paywallImmutable = "paywall.p6.immutable"
}

/// One broken rule: which, where, and what.
public struct ContractViolation: Sendable, Equatable, CustomStringConvertible {
    /// The rule broken.
    public let rule: ContractRule
    /// JSON path of the offending value.
    public let path: String
    /// Explanation for people.
    public let message: String

    /// Creates a violation.
    public init(rule: ContractRule, path: String, message: String) {
        self.rule = rule
        self.path = path
        self.message = message
    }

    public var description: String { "\(rule.rawValue) at \(path): \(message)" }
}

/// Checks the contract rules that the JSON Schemas cannot express (<doc:ContractRules>: the
/// onboarding run rules, the paywall rules and P6). Works on any JSON value: checks whose inputs
/// are missing or of the wrong type are skipped (that is the schema's job, reported once as a shape
/// violation).
public enum ContractChecker {
    /// The maximum compact size of a paywall snapshot, in bytes (16 KiB, rule 9 of
    /// <doc:ContractRules#Paywall-presentation-rules>): the one declaration of the limit, which
    /// `PaywallContractChecker.maxBytes` and the collector use.
    public static let paywallMaxBytes = 16_384

    /// The violations of one onboarding run snapshot (onboarding rules 1-8 of <doc:ContractRules>,
    /// truncated forms included).
    public static func onboardingRun(_ json: JSONValue) -> [ContractViolation] {
        var out: [ContractViolation] = []
        do {
            _ = try OnboardingRunSnapshot(json: json)
        } catch {
            out.append(ContractViolation(rule: .onboardingSchemaShape, path: error.path, message: error.reason))
        }
        let manifest = json["manifest"]?["steps"]?.arrayValue ?? []
        let steps = json["steps"]?.arrayValue ?? []

        // Rule 2.
        var manifestKeys = Set<String>()
        var closedSlots = Set<String>()
        for (i, m) in manifest.enumerated() {
            if let k = m["step_key"]?.stringValue, !manifestKeys.insert(k).inserted {
                out.append(
                    .init(
                        rule: .onboardingManifestKeysDistinct, path: "$.manifest.steps[\(i)].step_key", message: "step_key \"\(k)\" repeats"
                    ))
            }
            if let s = m["slot"]?.stringValue {
                if closedSlots.contains(s) {
                    out.append(
                        .init(rule: .onboardingSlotContiguous, path: "$.manifest.steps[\(i)].slot", message: "slot \(s) is not contiguous"))
                }
                let next = i + 1 < manifest.count ? manifest[i + 1]["slot"]?.stringValue : nil
                if next != s { closedSlots.insert(s) }
            }
        }

        let truncated = json["truncated"] == .bool(true)
        let status = json["status"]?.stringValue
        let completedAt = json["completed_at"]?.stringValue
        var previousEntered: String?
        for (i, e) in steps.enumerated() {
            let path = "$.steps[\(i)]"
            // Rule 1.
            if let k = e["step_key"]?.stringValue, !manifestKeys.contains(k) {
                out.append(
                    .init(rule: .onboardingStepInManifest, path: path + ".step_key", message: "step_key \"\(k)\" is not in the manifest"))
            }
            let entered = e["entered_at"]?.stringValue
            let exited = e["exited_at"]?.stringValue
            let isOpen = e["exited_at"]?.isNull ?? false
            // Rule 3.
            if let entered, let previousEntered, entered < previousEntered {
                out.append(
                    .init(
                        rule: .onboardingEnteredAtOrder, path: path + ".entered_at",
                        message: "\(entered) is before the previous entry's \(previousEntered)"))
            }
            if let entered { previousEntered = entered }
            // Rule 5.
            if let entered, let exited, exited < entered {
                out.append(
                    .init(rule: .onboardingExitAfterEntry, path: path + ".exited_at", message: "\(exited) is before entered_at \(entered)"))
            }
            // Rule 6, first part.
            if isOpen && i != steps.count - 1 {
                out.append(
                    .init(rule: .onboardingOpenEntry, path: path + ".exited_at", message: "only the last entry may have exited_at null"))
            }
            // Rule 8.
            var questions = Set<String>()
            for (j, a) in (e["answers"]?.arrayValue ?? []).enumerated() {
                if let q = a["question_key"]?.stringValue, !questions.insert(q).inserted {
                    out.append(
                        .init(
                            rule: .onboardingQuestionKeysDistinct, path: "\(path).answers[\(j)].question_key",
                            message: "question_key \"\(q)\" repeats in this entry"))
                }
            }
        }
        // Rule 4.
        if let started = json["started_at"]?.stringValue, let first = steps.first?["entered_at"]?.stringValue, started != first {
            out.append(
                .init(
                    rule: .onboardingStartedAtFirstEntry, path: "$.started_at",
                    message: "\(started) differs from steps[0].entered_at \(first)"))
        }
        if let last = steps.last {
            let path = "$.steps[\(steps.count - 1)].exited_at"
            let lastExit = last["exited_at"]
            // Rule 6, second part.
            if status == "in_progress", !truncated, let lastExit, !lastExit.isNull {
                out.append(
                    .init(rule: .onboardingOpenEntry, path: path, message: "the last entry of an in-progress run must be open (null)"))
            }
            // Rule 7.
            if status == "completed", let completedAt {
                if !truncated {
                    if lastExit?.stringValue != completedAt {
                        out.append(.init(rule: .onboardingCompletedLastExit, path: path, message: "must equal completed_at \(completedAt)"))
                    }
                } else if let exit = lastExit?.stringValue {
                    if exit > completedAt {
                        out.append(
                            .init(rule: .onboardingCompletedLastExit, path: path, message: "\(exit) is after completed_at \(completedAt)"))
                    }
                } else {
                    out.append(
                        .init(
                            rule: .onboardingCompletedLastExit, path: path, message: "a completed truncated run's last entry must be closed"
                        ))
                }
            }
        }
        return out
    }

    /// The violations of one paywall presentation snapshot, v1 or v1.1 (paywall rules 1-9 of
    /// <doc:ContractRules>), and, when `previous` (an earlier snapshot of the same presentation,
    /// e.g. the stored one) is given, the immutability rule P6.
    public static func paywallPresentation(_ json: JSONValue, previous: JSONValue? = nil) -> [ContractViolation] {
        var out: [ContractViolation] = []
        do {
            _ = try PaywallPresentationSnapshotV1_1(json: json)
        } catch {
            out.append(ContractViolation(rule: .paywallSchemaShape, path: error.path, message: error.reason))
        }
        let status = json["status"]?.stringValue
        let ended = status == "ended"
        let startedAt = json["started_at"]?.stringValue
        let shownAt = json["shown_at"]?.stringValue
        let endedAt = json["ended_at"]?.stringValue
        let outcome = json["outcome"]

        // Rule 1.
        if let v = json["ended_at"], v.isNull == ended {
            out.append(
                .init(
                    rule: .paywallEndedIffStatusEnded, path: "$.ended_at",
                    message: ended ? "must be set when status is ended" : "must be null unless status is ended"))
        }
        if let v = outcome, v.isNull == ended {
            out.append(
                .init(
                    rule: .paywallEndedIffStatusEnded, path: "$.outcome",
                    message: ended ? "must be set when status is ended" : "must be null unless status is ended"))
        }
        // Rules 2-4 (fixed-format timestamps compare as strings).
        if let shownAt, let startedAt, shownAt < startedAt {
            out.append(.init(rule: .paywallShownAfterStart, path: "$.shown_at", message: "\(shownAt) is before started_at \(startedAt)"))
        }
        if let endedAt, let floor = shownAt ?? startedAt, endedAt < floor {
            out.append(
                .init(
                    rule: .paywallEndedAfterShown, path: "$.ended_at",
                    message: "\(endedAt) is before \(shownAt == nil ? "started_at" : "shown_at") \(floor)"))
        }
        if let sentAt = json["sent_at"]?.stringValue, let startedAt, sentAt < startedAt {
            out.append(.init(rule: .paywallSentAfterStart, path: "$.sent_at", message: "\(sentAt) is before started_at \(startedAt)"))
        }
        // Rules 5-7.
        if let o = outcome?.objectValue {
            let s = o["status"]?.stringValue
            if o["reason"] != nil, s != "error" {
                out.append(
                    .init(
                        rule: .paywallReasonOnlyWithError, path: "$.outcome.reason",
                        message: "reason is only allowed with status error, not \(s ?? "?")"))
            }
            if let t = o["transaction"] {
                if s != "purchased" {
                    out.append(
                        .init(
                            rule: .paywallTransactionOnlyWithPurchased, path: "$.outcome.transaction",
                            message: "transaction is only allowed with status purchased, not \(s ?? "?")"))
                }
                if t.objectValue?.isEmpty == true {
                    out.append(
                        .init(rule: .paywallTransactionNeverEmpty, path: "$.outcome.transaction", message: "transaction must not be {}"))
                }
            }
            if s == "purchased", shownAt == nil {
                out.append(
                    .init(rule: .paywallPurchasedRequiresShown, path: "$.shown_at", message: "a purchased outcome requires shown_at"))
            }
        }
        // Rule 8.
        if json["onboarding_run"] != nil, json["surface"]?.stringValue != "paywall_step" {
            out.append(
                .init(
                    rule: .paywallOnboardingRunOnlyOnStep, path: "$.onboarding_run",
                    message: "onboarding_run is only allowed with surface paywall_step"))
        }
        // Rule 9.
        let size = WireJSON.encode(json).count
        if size > paywallMaxBytes {
            out.append(.init(rule: .paywallMaxSize, path: "$", message: "\(size) bytes exceed \(paywallMaxBytes)"))
        }
        // P6.
        if let previous { out += paywallImmutability(json, previous: previous) }
        return out
    }
}
