import TrackerCore

/// The stored snapshot of one onboarding run (the one with the highest accepted `seq`).
public struct StoredRun: Sendable, Equatable {
    /// Who sent it (transport identity; never printed).
    public var sender: String
    /// `run_id`.
    public var runId: String
    /// Highest accepted `seq`.
    public var seq: Int
    /// `status` of the stored snapshot.
    public var status: String
    /// `onboarding.key`.
    public var key: String
    /// `onboarding.version`.
    public var version: String
    /// `onboarding.variant_key`, when set.
    public var variantKey: String?
    /// The stored snapshot, compact JSON.
    public var body: String
    /// Server receive time of the first accepted snapshot (epoch ms).
    public var firstReceivedAtMs: Int64
    /// Server receive time of the latest accepted snapshot (epoch ms).
    public var lastReceivedAtMs: Int64
    /// The run declares another manifest than the canonical one of its (key, version) (D18).
    public var versionConflict: Bool
}

/// The stored snapshot of one paywall presentation.
public struct StoredPresentation: Sendable, Equatable {
    /// Who sent it (never printed).
    public var sender: String
    /// `presentation_id`.
    public var presentationId: String
    /// Highest accepted `seq`.
    public var seq: Int
    /// `status` of the stored snapshot.
    public var status: String
    /// The stored snapshot, compact JSON.
    public var body: String
    /// Server receive time of the first accepted snapshot (epoch ms).
    public var firstReceivedAtMs: Int64
    /// Server receive time of the latest accepted snapshot (epoch ms).
    public var lastReceivedAtMs: Int64
}

/// How many track events of one name an application sent, and when the latest arrived.
public struct IngestedEventCount: Sendable, Equatable {
    /// The event name (`install`, `onboarding_completed`, `purchase`, a custom event's name, …).
    public var name: String
    /// Accepted events of that name.
    public var count: Int
    /// Server receive time of the latest one (epoch ms).
    public var latestReceivedAtMs: Int64

    /// Creates a count.
    public init(name: String, count: Int, latestReceivedAtMs: Int64) {
        self.name = name
        self.count = count
        self.latestReceivedAtMs = latestReceivedAtMs
    }
}

/// One line of the verdict log.
public struct VerdictRecord: Sendable, Equatable {
    /// Server receive time (epoch ms).
    public var receivedAtMs: Int64
    /// Request path.
    public var path: String
    /// What the request carried (`onboarding-run`, `paywall-presentation`, `score-batch`, …).
    public var kind: String
    /// Run, presentation or event id, when there is one.
    public var subject: String?
    /// `seq`, when there is one.
    public var seq: Int?
    /// `accepted`, `ignored` or `rejected`.
    public var outcome: String
    /// Why, for a rejection (or a note such as `version-conflict`).
    public var reason: String?
}

/// One received HTTP request with its verdict, as the request log keeps it (every request to a
/// contract or API route, whatever its outcome; the authorization header is never kept).
public struct RequestRecord: Sendable, Equatable {
    /// Position in the log (increasing).
    public var id: Int64
    /// Server receive time (epoch ms).
    public var receivedAtMs: Int64
    /// HTTP method.
    public var method: String
    /// Request path (the route).
    public var route: String
    /// `onboarding-run`, `paywall-presentation`, `score-batch`, `rocalytics-track`, `http`, `unknown`, …
    public var kind: String
    /// Run, presentation or event id (or what the request was about).
    public var subject: String?
    /// `seq`, when there is one.
    public var seq: Int?
    /// `accepted`, `ignored`, `rejected`, or `-` for a request no route took.
    public var outcome: String
    /// The HTTP status answered.
    public var status: Int
    /// Why, for a rejection.
    public var reason: String?
    /// A note (`retry`, `version-conflict`, `1 duplicates`, …).
    public var note: String?
    /// Every rule broken, with its JSON path.
    public var violations: [VerdictViolation]
    /// The `X-Roca-ID` header (Rocalytics requests), when sent.
    public var rocaId: String?
    /// The body bytes exactly as received (empty in listings).
    public var body: [UInt8]
    /// Size of the body as received.
    public var bodyBytes: Int

    /// Creates a record.
    public init(
        id: Int64 = 0, receivedAtMs: Int64, method: String, route: String, kind: String, subject: String? = nil, seq: Int? = nil,
        outcome: String, status: Int, reason: String? = nil, note: String? = nil, violations: [VerdictViolation] = [],
        rocaId: String? = nil, body: [UInt8] = [], bodyBytes: Int? = nil
    ) {
        self.id = id
        self.receivedAtMs = receivedAtMs
        self.method = method
        self.route = route
        self.kind = kind
        self.subject = subject
        self.seq = seq
        self.outcome = outcome
        self.status = status
        self.reason = reason
        self.note = note
        self.violations = violations
        self.rocaId = rocaId
        self.body = body
        self.bodyBytes = bodyBytes ?? body.count
    }

    /// The record as the JSON API serves it (`body` as text only when `includeBody`).
    public func json(includeBody: Bool = false) -> JSONValue {
        var o = JSONObject()
        o["id"] = .number(Double(id))
        o["time"] = .string(Timestamp.format(ms: receivedAtMs))
        o["received_at_ms"] = .number(Double(receivedAtMs))
        o["method"] = .string(method)
        o["route"] = .string(route)
        o["kind"] = .string(kind)
        o["subject"] = subject.map(JSONValue.string) ?? .null
        o["seq"] = seq.map { .number(Double($0)) } ?? .null
        o["outcome"] = .string(outcome)
        o["status"] = .number(Double(status))
        o["reason"] = reason.map(JSONValue.string) ?? .null
        o["note"] = note.map(JSONValue.string) ?? .null
        o["violations"] = .array(violations.map { ["rule": .string($0.rule), "path": .string($0.path), "message": .string($0.message)] })
        o["roca_id"] = rocaId.map(JSONValue.string) ?? .null
        o["body_bytes"] = .number(Double(bodyBytes))
        if includeBody { o["body"] = .string(String(decoding: body, as: UTF8.self)) }
        return .object(o)
    }
}

/// The collector's SQLite database. Not thread-safe: ``Collector`` serialises access.
final class CollectorStore {
    let db: SQLiteDatabase

    init(path: String) throws(SQLiteError) {
        db = try SQLiteDatabase(path: path)
        try db.execute(
            """
            PRAGMA journal_mode = WAL;
            CREATE TABLE IF NOT EXISTS onboarding_runs (
                sender TEXT NOT NULL, run_id TEXT NOT NULL, seq INTEGER NOT NULL, status TEXT NOT NULL,
                onboarding_key TEXT NOT NULL, onboarding_version TEXT NOT NULL, variant_key TEXT,
                body TEXT NOT NULL, first_received_at INTEGER NOT NULL, last_received_at INTEGER NOT NULL,
                version_conflict INTEGER NOT NULL DEFAULT 0,
                PRIMARY KEY (sender, run_id));
            CREATE TABLE IF NOT EXISTS manifests (
                onboarding_key TEXT NOT NULL, onboarding_version TEXT NOT NULL, manifest TEXT NOT NULL,
                first_run_id TEXT NOT NULL, PRIMARY KEY (onboarding_key, onboarding_version));
            CREATE TABLE IF NOT EXISTS paywall_presentations (
                sender TEXT NOT NULL, presentation_id TEXT NOT NULL, seq INTEGER NOT NULL, status TEXT NOT NULL,
                body TEXT NOT NULL, first_received_at INTEGER NOT NULL, last_received_at INTEGER NOT NULL,
                PRIMARY KEY (sender, presentation_id));
            CREATE TABLE IF NOT EXISTS score_events (
                event_id TEXT PRIMARY KEY, type TEXT NOT NULL, name TEXT NOT NULL, body TEXT NOT NULL,
                received_at INTEGER NOT NULL);
            CREATE TABLE IF NOT EXISTS rocalytics_events (
                id INTEGER PRIMARY KEY AUTOINCREMENT, endpoint TEXT NOT NULL, name TEXT,
                body TEXT, received_at INTEGER NOT NULL);
            CREATE TABLE IF NOT EXISTS requests (
                id INTEGER PRIMARY KEY AUTOINCREMENT, received_at INTEGER NOT NULL, method TEXT NOT NULL,
                route TEXT NOT NULL, kind TEXT NOT NULL, subject TEXT, seq INTEGER, outcome TEXT NOT NULL,
                status INTEGER NOT NULL, reason TEXT, note TEXT, violations TEXT NOT NULL, roca_id TEXT, body BLOB NOT NULL);
            CREATE INDEX IF NOT EXISTS requests_kind ON requests (kind, subject);
            CREATE TABLE IF NOT EXISTS verdicts (
                id INTEGER PRIMARY KEY AUTOINCREMENT, received_at INTEGER NOT NULL, path TEXT NOT NULL,
                kind TEXT NOT NULL, subject TEXT, seq INTEGER, outcome TEXT NOT NULL, reason TEXT);
            """
        )
        // The sending application of a Rocalytics call (its X-Application-ID) and a track event's
        // deduplication_id, added for the status endpoint: a database written before gets the
        // columns, and its earlier rows count nowhere.
        let columns = try db.query("PRAGMA table_info(rocalytics_events)").compactMap { $0.count > 1 ? $0[1].text : nil }
        for column in ["application_id", "deduplication_id"] where !columns.contains(column) {
            try db.execute("ALTER TABLE rocalytics_events ADD COLUMN \(column) TEXT")
        }
        try db.execute("CREATE INDEX IF NOT EXISTS rocalytics_events_app ON rocalytics_events (application_id, endpoint, name)")
    }

    // MARK: onboarding runs

    private static let runColumns =
        "sender, run_id, seq, status, onboarding_key, onboarding_version, variant_key, body, first_received_at, last_received_at, version_conflict"

    private static func run(_ row: [SQLValue]) -> StoredRun {
        StoredRun(
            sender: row[0].text ?? "", runId: row[1].text ?? "", seq: Int(row[2].int ?? 0), status: row[3].text ?? "",
            key: row[4].text ?? "", version: row[5].text ?? "", variantKey: row[6].text, body: row[7].text ?? "",
            firstReceivedAtMs: row[8].int ?? 0, lastReceivedAtMs: row[9].int ?? 0, versionConflict: (row[10].int ?? 0) != 0
        )
    }

    func run(sender: String, runId: String) throws(SQLiteError) -> StoredRun? {
        try db.query("SELECT \(Self.runColumns) FROM onboarding_runs WHERE sender = ? AND run_id = ?", [.text(sender), .text(runId)])
            .first.map(Self.run)
    }

    func allRuns() throws(SQLiteError) -> [StoredRun] {
        try db.query("SELECT \(Self.runColumns) FROM onboarding_runs ORDER BY first_received_at, run_id").map(Self.run)
    }

    func saveRun(_ r: StoredRun) throws(SQLiteError) {
        try db.query(
            "INSERT OR REPLACE INTO onboarding_runs (\(Self.runColumns)) VALUES (?,?,?,?,?,?,?,?,?,?,?)",
            [
                .text(r.sender), .text(r.runId), .int(Int64(r.seq)), .text(r.status), .text(r.key), .text(r.version),
                r.variantKey.map(SQLValue.text) ?? .null, .text(r.body), .int(r.firstReceivedAtMs), .int(r.lastReceivedAtMs),
                .int(r.versionConflict ? 1 : 0),
            ]
        )
    }

    /// The canonical manifest text of (key, version), if one was stored.
    func canonicalManifest(key: String, version: String) throws(SQLiteError) -> String? {
        try db.query(
            "SELECT manifest FROM manifests WHERE onboarding_key = ? AND onboarding_version = ?", [.text(key), .text(version)]
        ).first?.first?.text
    }

    func setCanonicalManifest(key: String, version: String, manifest: String, runId: String) throws(SQLiteError) {
        try db.query(
            "INSERT OR IGNORE INTO manifests (onboarding_key, onboarding_version, manifest, first_run_id) VALUES (?,?,?,?)",
            [.text(key), .text(version), .text(manifest), .text(runId)]
        )
    }

    // MARK: paywall presentations

    private static let presentationColumns = "sender, presentation_id, seq, status, body, first_received_at, last_received_at"

    func presentation(sender: String, id: String) throws(SQLiteError) -> StoredPresentation? {
        try db.query(
            "SELECT \(Self.presentationColumns) FROM paywall_presentations WHERE sender = ? AND presentation_id = ?",
            [.text(sender), .text(id)]
        ).first.map { row in
            StoredPresentation(
                sender: row[0].text ?? "", presentationId: row[1].text ?? "", seq: Int(row[2].int ?? 0), status: row[3].text ?? "",
                body: row[4].text ?? "", firstReceivedAtMs: row[5].int ?? 0, lastReceivedAtMs: row[6].int ?? 0
            )
        }
    }

    func savePresentation(_ p: StoredPresentation) throws(SQLiteError) {
        try db.query(
            "INSERT OR REPLACE INTO paywall_presentations (\(Self.presentationColumns)) VALUES (?,?,?,?,?,?,?)",
            [
                .text(p.sender), .text(p.presentationId), .int(Int64(p.seq)), .text(p.status), .text(p.body),
                .int(p.firstReceivedAtMs), .int(p.lastReceivedAtMs),
            ]
        )
    }

    func allPresentations() throws(SQLiteError) -> [StoredPresentation] {
        try db.query("SELECT \(Self.presentationColumns) FROM paywall_presentations ORDER BY first_received_at, presentation_id").map {
            row in
            StoredPresentation(
                sender: row[0].text ?? "", presentationId: row[1].text ?? "", seq: Int(row[2].int ?? 0), status: row[3].text ?? "",
                body: row[4].text ?? "", firstReceivedAtMs: row[5].int ?? 0, lastReceivedAtMs: row[6].int ?? 0
            )
        }
    }

    /// Every stored Score event: (event id, type, name, compact body, receive time), oldest first.
    func allScoreEvents() throws(SQLiteError) -> [(id: String, type: String, name: String, body: String, receivedAtMs: Int64)] {
        try db.query("SELECT event_id, type, name, body, received_at FROM score_events ORDER BY received_at, rowid").map {
            (id: $0[0].text ?? "", type: $0[1].text ?? "", name: $0[2].text ?? "", body: $0[3].text ?? "", receivedAtMs: $0[4].int ?? 0)
        }
    }

    // MARK: events and verdicts

    /// Stores a Score event; returns false when its `eventId` was already stored.
    func saveScoreEvent(id: String, type: String, name: String, body: String, receivedAtMs: Int64) throws(SQLiteError) -> Bool {
        try db.query(
            "INSERT OR IGNORE INTO score_events (event_id, type, name, body, received_at) VALUES (?,?,?,?,?)",
            [.text(id), .text(type), .text(name), .text(body), .int(receivedAtMs)]
        )
        return try db.query("SELECT changes()").first?.first?.int == 1
    }

    func saveRocalyticsEvent(
        endpoint: String, name: String?, body: String?, receivedAtMs: Int64, application: String?, deduplicationId: String?
    ) throws(SQLiteError) {
        try db.query(
            "INSERT INTO rocalytics_events (endpoint, name, body, received_at, application_id, deduplication_id) VALUES (?,?,?,?,?,?)",
            [
                .text(endpoint), name.map(SQLValue.text) ?? .null, body.map(SQLValue.text) ?? .null, .int(receivedAtMs),
                application.map(SQLValue.text) ?? .null, deduplicationId.map(SQLValue.text) ?? .null,
            ]
        )
    }

    /// The application ids of the accepted track events, by id.
    func trackApplications() throws(SQLiteError) -> [String] {
        try db.query(
            "SELECT DISTINCT application_id FROM rocalytics_events WHERE endpoint = 'track' AND application_id IS NOT NULL ORDER BY application_id"
        ).compactMap { $0.first?.text }
    }

    /// Accepted track events of `application` per name: how many distinct deduplication ids (a
    /// retried event counts once) and the latest receive time, by name.
    func trackCounts(application: String) throws(SQLiteError) -> [IngestedEventCount] {
        try db.query(
            "SELECT name, count(DISTINCT deduplication_id), max(received_at) FROM rocalytics_events WHERE endpoint = 'track' AND application_id = ? AND name IS NOT NULL GROUP BY name ORDER BY name",
            [.text(application)]
        ).map { IngestedEventCount(name: $0[0].text ?? "", count: Int($0[1].int ?? 0), latestReceivedAtMs: $0[2].int ?? 0) }
    }

    func countScoreEvents() throws(SQLiteError) -> Int {
        Int(try db.query("SELECT count(*) FROM score_events").first?.first?.int ?? 0)
    }

    func appendVerdict(_ v: VerdictRecord) throws(SQLiteError) {
        try db.query(
            "INSERT INTO verdicts (received_at, path, kind, subject, seq, outcome, reason) VALUES (?,?,?,?,?,?,?)",
            [
                .int(v.receivedAtMs), .text(v.path), .text(v.kind), v.subject.map(SQLValue.text) ?? .null,
                v.seq.map { .int(Int64($0)) } ?? .null, .text(v.outcome), v.reason.map(SQLValue.text) ?? .null,
            ]
        )
    }

    // MARK: request log

    func appendRequest(_ r: RequestRecord) throws(SQLiteError) -> Int64 {
        let violations = WireJSON.encodeString(
            .array(r.violations.map { ["rule": .string($0.rule), "path": .string($0.path), "message": .string($0.message)] })
        )
        try db.query(
            "INSERT INTO requests (received_at, method, route, kind, subject, seq, outcome, status, reason, note, violations, roca_id, body) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)",
            [
                .int(r.receivedAtMs), .text(r.method), .text(r.route), .text(r.kind), r.subject.map(SQLValue.text) ?? .null,
                r.seq.map { .int(Int64($0)) } ?? .null, .text(r.outcome), .int(Int64(r.status)), r.reason.map(SQLValue.text) ?? .null,
                r.note.map(SQLValue.text) ?? .null, .text(violations), r.rocaId.map(SQLValue.text) ?? .null, .blob(r.body),
            ]
        )
        return try db.query("SELECT last_insert_rowid()").first?.first?.int ?? 0
    }

    private static let requestColumns =
        "id, received_at, method, route, kind, subject, seq, outcome, status, reason, note, violations, roca_id, length(body)"

    private static func request(_ row: [SQLValue], body: [UInt8] = []) -> RequestRecord {
        let violations = (try? WireJSON.decode(Array((row[11].text ?? "[]").utf8)))?.arrayValue ?? []
        return RequestRecord(
            id: row[0].int ?? 0, receivedAtMs: row[1].int ?? 0, method: row[2].text ?? "", route: row[3].text ?? "",
            kind: row[4].text ?? "", subject: row[5].text, seq: row[6].int.map { Int($0) }, outcome: row[7].text ?? "",
            status: Int(row[8].int ?? 0), reason: row[9].text, note: row[10].text,
            violations: violations.map {
                VerdictViolation(
                    rule: $0["rule"]?.stringValue ?? "", path: $0["path"]?.stringValue ?? "", message: $0["message"]?.stringValue ?? "")
            },
            rocaId: row[12].text, body: body, bodyBytes: Int(row[13].int ?? 0)
        )
    }

    /// Logged requests newest first, after `afterId` (exclusive), at most `limit`, optionally of one
    /// kind (prefix match: `rocalytics` takes every `rocalytics-…`) and one outcome; bodies left out.
    func requests(afterId: Int64, beforeId: Int64?, limit: Int, kind: String?, outcome: String?) throws(SQLiteError) -> [RequestRecord] {
        var sql = "SELECT \(Self.requestColumns) FROM requests WHERE id > ?"
        var parameters: [SQLValue] = [.int(afterId)]
        if let beforeId {
            sql += " AND id < ?"
            parameters.append(.int(beforeId))
        }
        if let kind {
            sql += " AND (kind = ? OR kind LIKE ?)"
            parameters += [.text(kind), .text(kind + "-%")]
        }
        if let outcome {
            sql += " AND outcome = ?"
            parameters.append(.text(outcome))
        }
        sql += " ORDER BY id DESC LIMIT ?"
        parameters.append(.int(Int64(limit)))
        return try db.query(sql, parameters).map { Self.request($0) }
    }

    /// One logged request with its body.
    func request(id: Int64) throws(SQLiteError) -> RequestRecord? {
        guard let row = try db.query("SELECT \(Self.requestColumns), body FROM requests WHERE id = ?", [.int(id)]).first else { return nil }
        return Self.request(row, body: row[14].bytes ?? [])
    }

    /// Every logged request of `kind` (oldest first, with bodies).
    func requests(kind: String) throws(SQLiteError) -> [RequestRecord] {
        try db.query("SELECT \(Self.requestColumns), body FROM requests WHERE kind = ? ORDER BY id", [.text(kind)]).map {
            Self.request($0, body: $0[14].bytes ?? [])
        }
    }

    /// The last accepted request of `kind` about `subject` logged before `beforeId` (with its body).
    func previousAccepted(kind: String, subject: String, beforeId: Int64) throws(SQLiteError) -> RequestRecord? {
        guard
            let row = try db.query(
                "SELECT \(Self.requestColumns), body FROM requests WHERE kind = ? AND subject = ? AND outcome = 'accepted' AND id < ? ORDER BY id DESC LIMIT 1",
                [.text(kind), .text(subject), .int(beforeId)]
            ).first
        else { return nil }
        return Self.request(row, body: row[14].bytes ?? [])
    }

    func verdictCounts() throws(SQLiteError) -> [(kind: String, outcome: String, count: Int)] {
        try db.query("SELECT kind, outcome, count(*) FROM verdicts GROUP BY kind, outcome ORDER BY kind, outcome").map {
            (kind: $0[0].text ?? "", outcome: $0[1].text ?? "", count: Int($0[2].int ?? 0))
        }
    }

    func verdicts() throws(SQLiteError) -> [VerdictRecord] {
        try db.query("SELECT received_at, path, kind, subject, seq, outcome, reason FROM verdicts ORDER BY id").map {
            VerdictRecord(
                receivedAtMs: $0[0].int ?? 0, path: $0[1].text ?? "", kind: $0[2].text ?? "", subject: $0[3].text,
                seq: $0[4].int.map { Int($0) }, outcome: $0[5].text ?? "", reason: $0[6].text
            )
        }
    }
}
