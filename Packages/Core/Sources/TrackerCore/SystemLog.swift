#if canImport(os)
    import os
#endif

/// The namespace of the packages' unified-log subsystem names, as
/// ``Diagnostics/systemLog(subsystem:prefix:)`` uses them on Apple platforms. Core names none:
/// each package declares its own name in an extension of its own (for example
/// `extension LogSubsystem { static let paywall = "com.rocapine.rocalytics.paywall" }`), so that
/// a package's subsystem is written once, in that package.
public enum LogSubsystem {}

extension Diagnostics {
    /// The default diagnostic handler of a package. When a process-wide handler is installed
    /// (``setHandler(_:)``) it forwards there. Otherwise, on Apple platforms, it writes to the
    /// unified log (`os.Logger`, subsystem `subsystem`, category `diagnostics`, level `error` for
    /// codes of severity ``DiagnosticSeverity/error`` and `default` otherwise): the stable code is
    /// public, the message is private (it may name a run, a step or an event). Elsewhere it is
    /// ``consolePrinter(prefix:)`` (standard error).
    public static func systemLog(subsystem: String, prefix: String) -> DiagnosticHandler {
        let log = platformLog(subsystem: subsystem, prefix: prefix)
        return { d in
            if let installed = Diagnostics.handler {
                installed(d)
            } else {
                log(d)
            }
        }
    }

    private static func platformLog(subsystem: String, prefix: String) -> DiagnosticHandler {
        #if canImport(os)
            if #available(iOS 14, macOS 11, tvOS 14, watchOS 7, visionOS 1, *) {
                let logger = Logger(subsystem: subsystem, category: "diagnostics")
                return { d in
                    let code = d.code.rawValue
                    if d.severity == .error {
                        logger.error("[\(prefix, privacy: .public)] \(code, privacy: .public): \(d.message, privacy: .private)")
                    } else {
                        logger.log("[\(prefix, privacy: .public)] \(code, privacy: .public): \(d.message, privacy: .private)")
                    }
                }
            }
        #endif
        return consolePrinter(prefix: prefix)
    }
}

/// Which diagnostic codes are logged as errors (portable, so Linux tests check it).
public enum SystemLogLevel {
    /// `true` for codes that mean the SDK could not do its job (not the caller's bad input).
    public static func isError(_ code: DiagnosticCode) -> Bool {
        DiagnosticSeverity.of(code) == .error
    }
}
