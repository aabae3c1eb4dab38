#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// Facts about the process a surface runs in that change what it may do.
public enum RuntimeEnvironment {
    /// Whether the process renders Xcode Previews: Xcode sets `XCODE_RUNNING_FOR_PREVIEWS=1` in
    /// the preview agent's environment. Every surface goes inert there (it records nothing, writes
    /// nothing and sends nothing), so a SwiftUI preview never reaches a real backend or the app's
    /// stored state.
    public static var isXcodePreview: Bool { isXcodePreview(environment: processValue) }

    /// ``isXcodePreview`` over an explicit environment lookup (tests).
    public static func isXcodePreview(environment: (String) -> String?) -> Bool {
        environment("XCODE_RUNNING_FOR_PREVIEWS") == "1"
    }

    /// Reads a variable of this process's environment.
    public static func processValue(_ name: String) -> String? {
        guard let value = getenv(name) else { return nil }
        return String(cString: value)
    }
}

/// The sink a tracker uses in Xcode Previews: it sends nothing and answers ``SinkResult/ignored``,
/// so the snapshot is settled and dropped (issue 37 item 7).
public final class PreviewSink<Payload: Sendable>: Sink, Sendable {
    /// Creates the sink.
    public init() {}
    /// `nil`: no destination, so no hand-over ever targets it.
    public var destination: String? { nil }
    /// Answers `ignored` without sending.
    public func send(_ payload: Payload) async throws -> SinkResult { .ignored }
}
