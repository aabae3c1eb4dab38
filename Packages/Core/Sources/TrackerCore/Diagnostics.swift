/// A report of something a tracker declined to do or could not do.
///
/// Codes are stable and are the testable part; messages are free text written for a developer
/// reading logs. A diagnostic never carries a token, a key or personal data.
public struct Diagnostic: Sendable, Equatable, CustomStringConvertible {
    /// Stable, kebab-case code such as `invalid-start` or `storage`.
    public let code: String
    /// Human-readable explanation.
    public let message: String
    /// The run, presentation or event the diagnostic is about, when known.
    public let runId: String?

    /// Creates a diagnostic.
    public init(code: String, message: String, runId: String? = nil) {
        self.code = code
        self.message = message
        self.runId = runId
    }

    public var description: String { "\(code): \(message)" }
}

/// Receives diagnostics. A handler is called synchronously from whatever thread reported the
/// diagnostic; it must not block.
public typealias DiagnosticHandler = @Sendable (Diagnostic) -> Void

/// Diagnostic helpers shared by every surface.
public enum Diagnostics {
    /// The default handler: one line on standard error, `[<prefix>] <code>: <message>`.
    public static func consolePrinter(prefix: String = "rocalytics-sdk") -> DiagnosticHandler {
        { diagnostic in
            var line = "[\(prefix)] \(diagnostic.code): \(diagnostic.message)\n"
            line.withUTF8 { buffer in
                _ = fwriteStderr(buffer)
            }
        }
    }
}

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

@inline(__always)
private func fwriteStderr(_ buffer: UnsafeBufferPointer<UInt8>) -> Int {
    guard let base = buffer.baseAddress else { return 0 }
    return write(2, base, buffer.count)
}
