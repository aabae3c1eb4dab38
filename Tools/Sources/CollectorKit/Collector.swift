import Foundation
import Synchronization
import TrackerCore

/// The answer of the ingest to one snapshot or request.
public enum Outcome: String, Sendable, Equatable {
    /// Stored (it is now the stored snapshot).
    case accepted
    /// Nothing to do (retry, stale, or already completed/ended).
    case ignored
    /// Invalid; will never be accepted.
    case rejected
}

/// One rule a payload broke, with the JSON path it points at (`/steps/0/entered_at`; empty for
/// the whole body).
public struct VerdictViolation: Sendable, Equatable {
    /// `schema`, `size`, `json`, or a contract rule id such as `onboarding.5.seq`.
    public var rule: String
    /// Where in the body (JSON Pointer style), empty for the whole body.
    public var path: String
    /// Explanation for people.
    public var message: String

    /// Creates a violation.
    public init(rule: String, path: String, message: String) {
        self.rule = rule
        self.path = path
        self.message = message
    }

    static func schema(_ v: SchemaViolation) -> VerdictViolation { VerdictViolation(rule: "schema", path: v.path, message: v.message) }
    static func contract(_ v: ContractViolation) -> VerdictViolation {
        VerdictViolation(rule: v.rule.rawValue, path: v.path, message: v.message)
    }
}

/// Why a snapshot (onboarding run or paywall presentation) does not conform: the first problem's text and every violation of
/// the step that found it (the JSON Schema, or else the contract rules).
struct ConformanceProblem: Sendable, Equatable {
    var reason: String
    var violations: [VerdictViolation]
}

/// What the collector decided about one request, with what it prints and answers.
public struct Verdict: Sendable, Equatable {
    /// `onboarding-run`, `paywall-presentation`, `score-batch`, `rocalytics-track`, …
    public var kind: String
    /// The decision.
    public var outcome: Outcome
    /// Why (rejections), as sent in the body.
    public var reason: String?
    /// Run id, presentation id, or another id naming what the request was about.
    public var subject: String?
    /// The snapshot's `seq`, when there is one.
    public var seq: Int?
    /// A note printed and logged but not sent (`version-conflict`, `retry-body-mismatch`).
    public var note: String?
    /// HTTP status to answer.
    public var httpStatus: Int
    /// Extra members appended to the outcome body (Score batch counts); the demand score answer
    /// replaces the body entirely.
    public var bodyOverride: JSONValue?
    /// Every rule the payload broke (a rejection's `reason` is the first of them).
    public var violations: [VerdictViolation]

    /// The response body: `{"outcome":"…"}`, plus `"reason"` for a rejection.
    public var responseBody: [UInt8] {
        if let bodyOverride { return WireJSON.encode(bodyOverride) }
        var object = JSONObject()
        object["outcome"] = .string(outcome.rawValue)
        if outcome == .rejected { object["reason"] = .string(reason ?? "rejected") }
        return WireJSON.encode(.object(object))
    }

    init(
        kind: String, outcome: Outcome, reason: String? = nil, subject: String? = nil, seq: Int? = nil, note: String? = nil,
        httpStatus: Int? = nil, bodyOverride: JSONValue? = nil, violations: [VerdictViolation] = []
    ) {
        self.violations = violations
        self.kind = kind
        self.outcome = outcome
        self.reason = reason
        self.subject = subject
        self.seq = seq
        self.note = note
        self.httpStatus = httpStatus ?? (outcome == .rejected ? 400 : 200)
        self.bodyOverride = bodyOverride
    }
}

/// The contract schemas the collector validates against, read from a `Contracts` directory
/// (default `Packages/Core/Contracts`).
public struct ContractSchemas: Sendable {
    /// `onboarding-run.schema.json` (schema_version 1).
    public let onboardingRun: JSONSchemaValidator
    /// `paywall-presentation.schema.json` (v1).
    public let paywallV1: JSONSchemaValidator
    /// `paywall-presentation.v1_1.schema.json` (v1.1).
    public let paywallV1_1: JSONSchemaValidator

    /// Loads the three schemas from `directory`.
    public init(directory: String) throws {
        func load(_ name: String) throws -> JSONSchemaValidator {
            let url = URL(fileURLWithPath: directory).appendingPathComponent(name)
            let data: Data
            do { data = try Data(contentsOf: url) } catch { throw SchemaLoadError(message: "cannot read \(url.path)") }
            do { return try JSONSchemaValidator(schemaBytes: [UInt8](data)) } catch {
                throw SchemaLoadError(message: "\(name): \(error)")
            }
        }
        onboardingRun = try load("onboarding-run.schema.json")
        paywallV1 = try load("paywall-presentation.schema.json")
        paywallV1_1 = try load("paywall-presentation.v1_1.schema.json")
    }
}

/// The local collector: applies the contracts' acceptance rules to onboarding runs and paywall
/// presentations, answers Rocalytics and Score requests as their real APIs would, and keeps
/// what it accepted in SQLite. Thread-safe: every call runs under one lock.
public final class Collector: Sendable {
    /// Largest onboarding-run snapshot (compact bytes), contract D8.
    public static let maxRunBytes = ContractChecker.onboardingRunMaxBytes
    /// Largest paywall snapshot (compact bytes), paywall rule 9 of TrackerCore's ContractRules article
    /// (``TrackerCore/ContractChecker/paywallMaxBytes``).
    public static let maxPaywallBytes = ContractChecker.paywallMaxBytes
    /// Largest Score batch body (ScoreTracker's Envelope article, requests).
    public static let maxScoreBatchBytes = 524_288
    /// The quit threshold of the funnel (D14).
    public static let quitAfterMs: Int64 = 24 * 60 * 60 * 1000

    private let schemas: ContractSchemas
    private let clock: any TrackerClock
    private let store: Mutex<CollectorStore>

    /// Opens (or creates) the database at `databasePath` (`:memory:` allowed) and loads the
    /// schemas from `contractsDirectory`.
    public init(databasePath: String, contractsDirectory: String, clock: any TrackerClock = SystemClock()) throws {
        schemas = try ContractSchemas(directory: contractsDirectory)
        self.clock = clock
        if databasePath != ":memory:" {
            let dir = URL(fileURLWithPath: databasePath).deletingLastPathComponent().path
            try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        }
        let opened = try CollectorStore(path: databasePath)
        store = Mutex(opened)
    }

    /// The schemas in use.
    public var contractSchemas: ContractSchemas { schemas }

    // MARK: - Onboarding runs

    /// Applies the acceptance rules of the onboarding-run contract (section 12.1, first match
    /// wins) to `body` sent by `sender`, stores it when accepted, and logs the verdict.
    /// `extraKeys` are stripped first (the Rocalytics body's `responses` and `onboarding_metadata`).
    public func ingestOnboardingRun(
        body: [UInt8], sender: String, path: String = "/v1/onboarding-runs", receivedAtMs: Int64? = nil,
        stripping extraKeys: [String] = []
    ) -> Verdict {
        let now = receivedAtMs ?? clock.nowMs()
        let kind = "onboarding-run"
        guard case .object(var object) = (try? WireJSON.decode(body)) ?? .null else {
            return log(
                Verdict(
                    kind: kind, outcome: .rejected, reason: "body is not a JSON object",
                    violations: [VerdictViolation(rule: "json", path: "", message: "body is not a JSON object")]), path: path, at: now)
        }
        for key in extraKeys { object[key] = nil }
        let snapshot = JSONValue.object(object)
        let runId = snapshot["run_id"]?.stringValue
        let seq = snapshot["seq"]?.intValue
        func verdict(_ outcome: Outcome, _ reason: String? = nil, note: String? = nil, violations: [VerdictViolation] = []) -> Verdict {
            Verdict(kind: kind, outcome: outcome, reason: reason, subject: runId, seq: seq, note: note, violations: violations)
        }
        let result: Verdict = store.withLock { store in
            do {
                let stored = try runId.flatMap { id throws(SQLiteError) in try store.run(sender: sender, runId: id) }
                let compact = WireJSON.encode(snapshot)
                // Core's verdict (rules 1-7), with this collector's full JSON Schema as the
                // conformance step and the contract rules after it.
                let decision = ContractChecker.onboardingRunVerdict(
                    incoming: snapshot, stored: stored.map { (try? WireJSON.decode($0.body)) ?? .null }, size: compact.count
                ) { value -> [ConformanceProblem] in
                    let schemaProblems = schemas.onboardingRun.validate(value)
                    if let problem = schemaProblems.first {
                        return [ConformanceProblem(reason: "schema: \(problem)", violations: schemaProblems.map(VerdictViolation.schema))]
                    }
                    let contractProblems = ContractRules.onboardingRunViolations(value)
                    if let problem = contractProblems.first {
                        return [
                            ConformanceProblem(reason: problem.description, violations: contractProblems.map(VerdictViolation.contract))
                        ]
                    }
                    return []
                }
                switch decision {
                case .ignoredCompleted:
                    return verdict(.ignored, note: "run already completed")
                case .rejectedTooLarge(let bytes):
                    let text = "snapshot exceeds \(Self.maxRunBytes) bytes (\(bytes))"
                    return verdict(.rejected, text, violations: [VerdictViolation(rule: "size", path: "", message: text)])
                case .rejectedNonconformant(let problems):
                    return verdict(.rejected, problems.first?.reason, violations: problems.flatMap(\.violations))
                case .rejectedOnboardingChanged:
                    let text = "onboarding differs from the stored snapshot of this run"
                    return verdict(
                        .rejected, text, violations: [VerdictViolation(rule: "acceptance.4.identity", path: "/onboarding", message: text)])
                case .rejectedManifestChanged:
                    let text = "manifest differs from the stored snapshot of this run"
                    return verdict(
                        .rejected, text, violations: [VerdictViolation(rule: "acceptance.4.manifest", path: "/manifest", message: text)])
                case .ignoredRetry:
                    return verdict(.ignored, note: "retry")
                case .ignoredRetryBodyMismatch:
                    return verdict(.ignored, note: "retry-body-mismatch")
                case .ignoredStale(let storedSeq):
                    return verdict(.ignored, note: "stale seq (stored \(storedSeq))")
                case .acceptedFirst, .acceptedHigherSeq:
                    break
                }
                guard let runId, let seq else { return verdict(.rejected, "schema: run_id or seq missing") }
                let status = snapshot["status"]?.stringValue ?? ""
                let text = String(decoding: compact, as: UTF8.self)
                if var next = stored {
                    // Rule 5: a higher seq replaces the stored snapshot.
                    next.seq = seq
                    next.status = status
                    next.body = text
                    next.lastReceivedAtMs = now
                    try store.saveRun(next)
                    return verdict(.accepted, note: next.versionConflict ? "version-conflict" : nil)
                }
                // Rule 3: new run; D18 manifest identity per (key, version), drafts exempt.
                let key = snapshot["onboarding"]?["key"]?.stringValue ?? ""
                let version = snapshot["onboarding"]?["version"]?.stringValue ?? ""
                let manifest = Canonical.text(snapshot["manifest"] ?? .null)
                var conflict = false
                if version != "draft" {
                    if let canonical = try store.canonicalManifest(key: key, version: version) {
                        conflict = canonical != manifest
                    } else {
                        try store.setCanonicalManifest(key: key, version: version, manifest: manifest, runId: runId)
                    }
                }
                try store.saveRun(
                    StoredRun(
                        sender: sender, runId: runId, seq: seq, status: status, key: key, version: version,
                        variantKey: snapshot["onboarding"]?["variant_key"]?.stringValue, body: text,
                        firstReceivedAtMs: now, lastReceivedAtMs: now, versionConflict: conflict
                    )
                )
                return verdict(.accepted, note: conflict ? "version-conflict" : nil)
            } catch {
                return Verdict(kind: kind, outcome: .rejected, reason: "storage error", subject: runId, seq: seq, httpStatus: 500)
            }
        }
        return log(result, path: path, at: now)
    }

    // MARK: - Paywall presentations

    /// Applies the paywall acceptance rules (TrackerCore's ContractRules article, the paywall
    /// server's verdict) to `body` sent by `sender`.
    public func ingestPaywallPresentation(
        body: [UInt8], sender: String, path: String = "/v1/paywall-presentations", receivedAtMs: Int64? = nil
    ) -> Verdict {
        let now = receivedAtMs ?? clock.nowMs()
        let kind = "paywall-presentation"
        guard let snapshot = try? WireJSON.decode(body), snapshot.objectValue != nil else {
            return log(
                Verdict(
                    kind: kind, outcome: .rejected, reason: "body is not a JSON object",
                    violations: [VerdictViolation(rule: "json", path: "", message: "body is not a JSON object")]), path: path, at: now)
        }
        let id = snapshot["presentation_id"]?.stringValue
        let seq = snapshot["seq"]?.intValue
        func verdict(_ outcome: Outcome, _ reason: String? = nil, note: String? = nil, violations: [VerdictViolation] = []) -> Verdict {
            Verdict(kind: kind, outcome: outcome, reason: reason, subject: id, seq: seq, note: note, violations: violations)
        }
        let result: Verdict = store.withLock { store in
            do {
                let stored = try id.flatMap { id throws(SQLiteError) in try store.presentation(sender: sender, id: id) }
                let compact = WireJSON.encode(snapshot)
                // Core's verdict (the one the paywall checker gives), with this collector's full
                // JSON Schema as the conformance step and the contract rules after it.
                let decision = ContractChecker.paywallVerdict(
                    incoming: snapshot, stored: stored.map { (try? WireJSON.decode($0.body)) ?? .null }, size: compact.count
                ) { value -> [ConformanceProblem] in
                    let schema = value["schema_version"] == .number(1) ? schemas.paywallV1 : schemas.paywallV1_1
                    let schemaProblems = schema.validate(value)
                    if let problem = schemaProblems.first {
                        return [ConformanceProblem(reason: "schema: \(problem)", violations: schemaProblems.map(VerdictViolation.schema))]
                    }
                    let contractProblems = ContractRules.paywallViolations(value)
                    if let problem = contractProblems.first {
                        return [
                            ConformanceProblem(reason: problem.description, violations: contractProblems.map(VerdictViolation.contract))
                        ]
                    }
                    return []
                }
                switch decision {
                case .ignoredEnded:
                    return verdict(.ignored, note: "presentation already ended")
                case .rejectedTooLarge(let bytes):
                    let text = "snapshot exceeds \(Self.maxPaywallBytes) bytes (\(bytes))"
                    return verdict(.rejected, text, violations: [VerdictViolation(rule: "size", path: "", message: text)])
                case .rejectedNonconformant(let problems):
                    return verdict(.rejected, problems.first?.reason, violations: problems.flatMap(\.violations))
                case .rejectedImmutable(let problem):
                    return verdict(.rejected, problem.description, violations: [.contract(problem)])
                case .ignoredRetry:
                    return verdict(.ignored, note: "retry")
                case .ignoredStale(let storedSeq):
                    return verdict(.ignored, note: "stale seq (stored \(storedSeq))")
                case .acceptedFirst, .acceptedHigherSeq:
                    break
                }
                guard let id, let seq else { return verdict(.rejected, "schema: presentation_id or seq missing") }
                let status = snapshot["status"]?.stringValue ?? ""
                let text = String(decoding: compact, as: UTF8.self)
                if var next = stored {
                    next.seq = seq
                    next.status = status
                    next.body = text
                    next.lastReceivedAtMs = now
                    try store.savePresentation(next)
                } else {
                    try store.savePresentation(
                        StoredPresentation(
                            sender: sender, presentationId: id, seq: seq, status: status, body: text,
                            firstReceivedAtMs: now, lastReceivedAtMs: now
                        )
                    )
                }
                return verdict(.accepted)
            } catch {
                return Verdict(kind: kind, outcome: .rejected, reason: "storage error", subject: id, seq: seq, httpStatus: 500)
            }
        }
        return log(result, path: path, at: now)
    }

    // MARK: - Score

    /// Stores a Score batch (`{"sentAt","events":[…]}`, ScoreTracker's Envelope article). A body over
    /// 512 KiB gets 413 (the tracker halves its batch); an invalid batch is rejected with 400 and
    /// nothing of it is stored; a valid one is accepted with 200 (events deduplicated by `eventId`).
    public func ingestScoreBatch(body: [UInt8], path: String = "/api/events", receivedAtMs: Int64? = nil) -> Verdict {
        let now = receivedAtMs ?? clock.nowMs()
        let kind = "score-batch"
        if body.count > Self.maxScoreBatchBytes {
            return log(
                Verdict(kind: kind, outcome: .rejected, reason: "batch exceeds \(Self.maxScoreBatchBytes) bytes", httpStatus: 413),
                path: path, at: now
            )
        }
        guard let batch = try? WireJSON.decode(body), batch.objectValue != nil else {
            return log(Verdict(kind: kind, outcome: .rejected, reason: "body is not a JSON object"), path: path, at: now)
        }
        if let problem = ScoreEnvelope.batchViolation(batch) {
            return log(
                Verdict(
                    kind: kind, outcome: .rejected, reason: problem,
                    violations: [VerdictViolation(rule: "score.envelope", path: ScoreEnvelope.path(of: problem), message: problem)]),
                path: path, at: now)
        }
        let events = batch["events"]?.arrayValue ?? []
        let result: Verdict = store.withLock { store in
            do {
                var fresh = 0
                try store.db.transaction {
                    for event in events {
                        let inserted = try store.saveScoreEvent(
                            id: event["eventId"]?.stringValue ?? "", type: event["type"]?.stringValue ?? "",
                            name: event["name"]?.stringValue ?? "", body: WireJSON.encodeString(event), receivedAtMs: now
                        )
                        if inserted { fresh += 1 }
                    }
                }
                let body: JSONValue = ["outcome": "accepted", "received": .number(Double(events.count)), "stored": .number(Double(fresh))]
                return Verdict(
                    kind: kind, outcome: .accepted, subject: "\(events.count) events",
                    note: fresh < events.count ? "\(events.count - fresh) duplicates" : nil,
                    bodyOverride: body
                )
            } catch {
                return Verdict(kind: kind, outcome: .rejected, reason: "storage error", httpStatus: 500)
            }
        }
        return log(result, path: path, at: now)
    }

    /// Answers a Score identity link (`{"anonymousId","userId"}`): 200 when both are strings.
    public func ingestScoreLink(body: [UInt8], path: String = "/api/identity/link-anonymous", receivedAtMs: Int64? = nil) -> Verdict {
        let now = receivedAtMs ?? clock.nowMs()
        let value = try? WireJSON.decode(body)
        guard let value, value["anonymousId"]?.stringValue != nil, value["userId"]?.stringValue != nil else {
            return log(Verdict(kind: "score-link", outcome: .rejected, reason: "anonymousId and userId required"), path: path, at: now)
        }
        return log(Verdict(kind: "score-link", outcome: .accepted), path: path, at: now)
    }

    // MARK: - Rocalytics

    /// Records a Rocalytics API call other than the two contract endpoints (identify, track,
    /// demand-score, install ping, pre-v1 onboarding-response) and answers it as the real API
    /// would, so that the client proceeds. `application` is the request's `X-Application-ID`: an
    /// accepted track event is counted under it by ``ingestionStatus(application:)``.
    public func ingestRocalytics(
        endpoint: String, body: [UInt8], path: String, receivedAtMs: Int64? = nil, application: String? = nil
    ) -> Verdict {
        let now = receivedAtMs ?? clock.nowMs()
        let kind = "rocalytics-\(endpoint)"
        let value = body.isEmpty ? nil : try? WireJSON.decode(body)
        if !body.isEmpty, value == nil {
            return log(Verdict(kind: kind, outcome: .rejected, reason: "body is not JSON"), path: path, at: now)
        }
        var name: String?
        var stored: String?
        var answer: JSONValue?
        switch endpoint {
        case "track":
            guard let event = value, let eventName = event["name"]?.stringValue, event["deduplication_id"]?.stringValue != nil else {
                return log(Verdict(kind: kind, outcome: .rejected, reason: "name and deduplication_id required"), path: path, at: now)
            }
            let allowed: Set<String> = ["install", "onboarding_completed", "purchase", "subscription_started", "trial_started"]
            if !allowed.contains(eventName), event["custom_event"]?.boolValue != true {
                return log(
                    Verdict(kind: kind, outcome: .rejected, reason: "unknown event name (send it as a custom event)", subject: eventName),
                    path: path, at: now
                )
            }
            name = eventName
            // Only the event name and its properties are kept: the device context stays out.
            stored = event["properties"].map(WireJSON.encodeString)
        case "identify":
            // Identifiers are personal data: keep only which kinds were sent.
            stored = value?.objectValue.map { $0.keys.joined(separator: ",") }
        case "demand-score":
            answer = DemandScore.answer(signals: value?.objectValue ?? JSONObject())
        case "onboarding-response":
            name = "pre-v1"
            stored = "\(value?["responses"]?.arrayValue?.count ?? 0) responses"
        default:
            break
        }
        let result: Verdict = store.withLock { store in
            do {
                try store.saveRocalyticsEvent(
                    endpoint: endpoint, name: name, body: stored, receivedAtMs: now, application: application,
                    deduplicationId: value?["deduplication_id"]?.stringValue)
                return Verdict(kind: kind, outcome: .accepted, subject: name, bodyOverride: answer)
            } catch {
                return Verdict(kind: kind, outcome: .rejected, reason: "storage error", httpStatus: 500)
            }
        }
        return log(result, path: path, at: now)
    }

    // MARK: - Reading

    /// Every stored onboarding run.
    public func storedRuns() throws -> [StoredRun] { try store.withLock { try $0.allRuns() } }

    /// The stored snapshot of (sender, run id).
    public func storedRun(sender: String, runId: String) throws -> StoredRun? {
        try store.withLock { try $0.run(sender: sender, runId: runId) }
    }

    /// The stored snapshot of (sender, presentation id).
    public func storedPresentation(sender: String, id: String) throws -> StoredPresentation? {
        try store.withLock { try $0.presentation(sender: sender, id: id) }
    }

    /// Every stored paywall presentation.
    public func storedPresentations() throws -> [StoredPresentation] { try store.withLock { try $0.allPresentations() } }

    /// Every stored Score event (deduplicated by event id), oldest first.
    public func storedScoreEvents() throws -> [(id: String, type: String, name: String, body: String, receivedAtMs: Int64)] {
        try store.withLock { try $0.allScoreEvents() }
    }

    /// The accepted Rocalytics track events of `application` (its `X-Application-ID`): per event
    /// name, how many (distinct deduplication ids: a retry counts once) and when the latest was
    /// received, by name. What `GET /functions/v1/status` answers.
    public func ingestionStatus(application: String) throws -> [IngestedEventCount] {
        try store.withLock { try $0.trackCounts(application: application) }
    }

    /// Every application id (`X-Application-ID`) that sent an accepted track event, by id.
    public func rocalyticsApplications() throws -> [String] { try store.withLock { try $0.trackApplications() } }

    /// Number of stored Score events.
    public func scoreEventCount() throws -> Int { try store.withLock { try $0.countScoreEvents() } }

    /// Verdict counts per kind and outcome.
    public func verdictCounts() throws -> [(kind: String, outcome: String, count: Int)] {
        try store.withLock { try $0.verdictCounts() }
    }

    /// The verdict log, oldest first.
    public func verdicts() throws -> [VerdictRecord] { try store.withLock { try $0.verdicts() } }

    /// The canonical manifest (canonical text) of (key, version), if any.
    public func canonicalManifest(key: String, version: String) throws -> String? {
        try store.withLock { try $0.canonicalManifest(key: key, version: version) }
    }

    /// The funnels of every (key, version) as of `nowMs` (contract section 13).
    public func funnels(nowMs: Int64? = nil, includeDrafts: Bool = false) throws -> [Funnel] {
        let runs = try storedRuns()
        let manifests = try store.withLock { store throws(SQLiteError) -> [String: String] in
            var out: [String: String] = [:]
            for run in runs where out[run.key + "\u{0}" + run.version] == nil {
                if let m = try store.canonicalManifest(key: run.key, version: run.version) { out[run.key + "\u{0}" + run.version] = m }
            }
            return out
        }
        return FunnelCalculator.funnels(
            runs: runs, canonicalManifests: manifests, nowMs: nowMs ?? clock.nowMs(), includeDrafts: includeDrafts)
    }

    // MARK: - Request log

    /// The collector's clock, in epoch ms.
    public func nowMs() -> Int64 { clock.nowMs() }

    /// Appends one received request to the request log; returns its id.
    @discardableResult
    public func recordRequest(_ record: RequestRecord) -> Int64 {
        store.withLock { (try? $0.appendRequest(record)) ?? 0 }
    }

    /// Logged requests, newest first (see ``RequestRecord``); bodies left out.
    public func requests(afterId: Int64 = 0, beforeId: Int64? = nil, limit: Int = 200, kind: String? = nil, outcome: String? = nil) throws
        -> [RequestRecord]
    {
        try store.withLock { try $0.requests(afterId: afterId, beforeId: beforeId, limit: limit, kind: kind, outcome: outcome) }
    }

    /// One logged request with its body.
    public func request(id: Int64) throws -> RequestRecord? { try store.withLock { try $0.request(id: id) } }

    /// Every logged request of `kind`, oldest first, with bodies.
    public func requests(kind: String) throws -> [RequestRecord] { try store.withLock { try $0.requests(kind: kind) } }

    /// The last accepted request of `kind` about `subject` before request `beforeId`.
    public func previousAccepted(kind: String, subject: String, beforeId: Int64) throws -> RequestRecord? {
        try store.withLock { try $0.previousAccepted(kind: kind, subject: subject, beforeId: beforeId) }
    }

    // MARK: - Log

    private func log(_ verdict: Verdict, path: String, at now: Int64) -> Verdict {
        let record = VerdictRecord(
            receivedAtMs: now, path: path, kind: verdict.kind, subject: verdict.subject, seq: verdict.seq,
            outcome: verdict.outcome.rawValue, reason: verdict.reason ?? verdict.note
        )
        store.withLock { try? $0.appendVerdict(record) }
        return verdict
    }
}
