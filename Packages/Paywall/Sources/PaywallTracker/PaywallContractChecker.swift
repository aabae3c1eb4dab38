import TrackerCore

/// Checks paywall presentation snapshots against the contract: the closed JSON Schema (v1, or v1.1
/// which also admits every v1 snapshot), the rules beyond the schema (TrackerCore's ContractRules
/// article), the 16 KiB limit, and the server's answer to a snapshot given the stored one (the
/// paywall server's verdict, same article).
///
/// Core's `ContractChecker` does the checking (the same checker the collector and
/// the tests use); this is its paywall face, in messages.
///
/// Useful to test a custom sink or backend; the tracker itself only ever builds conformant
/// snapshots.
public enum PaywallContractChecker {
    /// Which schema to check against: `.v1` or `.v1_1`.
    public typealias Schema = ContractChecker.PaywallSchema

    /// The size limit of one snapshot, in bytes of compact UTF-8 JSON
    /// (`ContractChecker.paywallMaxBytes`).
    public static let maxBytes = ContractChecker.paywallMaxBytes

    /// Every problem of `value` (empty when conformant). `size` is the byte count of the
    /// serialized form; by default that of its wire encoding.
    public static func problems(_ value: JSONValue, schema: Schema = .v1_1, size: Int? = nil) -> [String] {
        var p = conformance(value, schema: schema)
        let bytes = size ?? WireJSON.encode(value).count
        if bytes > maxBytes { p.append("size \(bytes) > \(maxBytes) bytes") }
        return p
    }

    /// Every problem of a serialized snapshot (not JSON counts as one).
    public static func problems(bytes: [UInt8], schema: Schema = .v1_1) -> [String] {
        do {
            return problems(try WireJSON.decode(bytes), schema: schema, size: bytes.count)
        } catch {
            return ["not JSON: \(error)"]
        }
    }

    /// Whether `value` is a conformant snapshot.
    public static func isConformant(_ value: JSONValue, schema: Schema = .v1_1) -> Bool {
        problems(value, schema: schema).isEmpty
    }

    /// The server's answer to `incoming` when `stored` is what it holds for the presentation
    /// (Core's `ContractChecker.paywallVerdict(incoming:stored:size:conformance:)`):
    /// ended stored → ignored; too large or not conformant → rejected; nothing stored →
    /// accepted; an immutable field changed → rejected; a higher seq → accepted; otherwise ignored.
    public static func verdict(stored: JSONValue?, incoming: JSONValue, size: Int? = nil) -> SinkOutcome {
        ContractChecker.paywallVerdict(incoming: incoming, stored: stored, size: size) { conformance($0, schema: .v1_1) }.outcome
    }

    /// The schema's problems, then (when there are none) those of the rules beyond it.
    private static func conformance(_ value: JSONValue, schema: Schema) -> [String] {
        let p = ContractChecker.paywallSchemaProblems(value, schema: schema)
        guard p.isEmpty else { return p }
        return ContractChecker.paywallPresentation(value).filter { !notRules.contains($0.rule) }.map(\.description)
    }

    /// What the schema check and the size step cover instead.
    private static let notRules: Set<ContractRule> = [.paywallSchemaShape, .paywallMaxSize]
}
