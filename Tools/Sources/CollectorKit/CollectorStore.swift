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
            CREATE TABLE IF NOT EXISTS verdicts (
                id INTEGER PRIMARY KEY AUTOINCREMENT, received_at INTEGER NOT NULL, path TEXT NOT NULL,
                kind TEXT NOT NULL, subject TEXT, seq INTEGER, outcome TEXT NOT NULL, reason TEXT);
            """
        )
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

    // MARK: events and verdicts

    /// Stores a Score event; returns false when its `eventId` was already stored.
    func saveScoreEvent(id: String, type: String, name: String, body: String, receivedAtMs: Int64) throws(SQLiteError) -> Bool {
        try db.query(
            "INSERT OR IGNORE INTO score_events (event_id, type, name, body, received_at) VALUES (?,?,?,?,?)",
            [.text(id), .text(type), .text(name), .text(body), .int(receivedAtMs)]
        )
        return try db.query("SELECT changes()").first?.first?.int == 1
    }

    func saveRocalyticsEvent(endpoint: String, name: String?, body: String?, receivedAtMs: Int64) throws(SQLiteError) {
        try db.query(
            "INSERT INTO rocalytics_events (endpoint, name, body, received_at) VALUES (?,?,?,?)",
            [.text(endpoint), name.map(SQLValue.text) ?? .null, body.map(SQLValue.text) ?? .null, .int(receivedAtMs)]
        )
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
