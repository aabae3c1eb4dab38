import TrackerCore

/// Collects the diagnostics a tracker or client reports, for tests to assert on.
///
/// Pass ``handler`` as the `onDiagnostic` of a configuration (or call ``add(_:)`` from one):
///
/// ```swift
/// let log = DiagnosticLog()
/// let config = PaywallTrackerConfiguration(sink: sink, onDiagnostic: log.handler)
/// #expect(log.codes == ["invalid-info"])
/// ```
public final class DiagnosticLog: Sendable {
    private let items = Locked<[Diagnostic]>([])

    /// An empty log.
    public init() {}

    /// A handler that appends each diagnostic to this log (safe from any thread).
    public var handler: DiagnosticHandler { { [items] d in items.withLock { $0.append(d) } } }

    /// Appends `diagnostic`.
    public func add(_ diagnostic: Diagnostic) { items.withLock { $0.append(diagnostic) } }

    /// Every diagnostic reported, in order.
    public var all: [Diagnostic] { items.value }
    /// The codes of every diagnostic reported, in order.
    public var codes: [String] { all.map(\.code.rawValue) }
    /// Whether nothing was reported.
    public var isEmpty: Bool { items.withLock { $0.isEmpty } }
    /// The diagnostics with `code`, in order.
    public func with(_ code: DiagnosticCode) -> [Diagnostic] { all.filter { $0.code == code } }
    /// How many diagnostics with `code` were reported.
    public func count(_ code: DiagnosticCode) -> Int { items.withLock { $0.lazy.filter { $0.code == code }.count } }
    /// The diagnostics whose code is spelled `code`, in order.
    public func with(_ code: String) -> [Diagnostic] { with(DiagnosticCode(rawValue: code)) }
    /// How many diagnostics with a code spelled `code` were reported.
    public func count(_ code: String) -> Int { count(DiagnosticCode(rawValue: code)) }
    /// Forgets everything reported so far.
    public func clear() { items.withLock { $0 = [] } }
}
