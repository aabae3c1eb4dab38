/// A report of something a tracker declined to do or could not do.
///
/// Codes are stable and are the testable part; messages are free text written for a developer
/// reading logs. A diagnostic never carries a token, a key or personal data.
///
/// Handlers run on whatever thread reported the diagnostic (often a background one). To update UI,
/// hop to the main actor yourself:
///
/// ```swift
/// Diagnostics.setHandler { diagnostic in
///     Task { @MainActor in model.lastProblem = diagnostic.description }
/// }
/// ```
public struct Diagnostic: Sendable, Equatable, CustomStringConvertible {
    /// Stable, kebab-case code such as ``DiagnosticCode/invalidStart`` or ``DiagnosticCode/storage``.
    public let code: DiagnosticCode
    /// Human-readable explanation.
    public let message: String
    /// The run, presentation or event the diagnostic is about, when known.
    public let runId: String?
    /// The surface that reported it (``DiagnosticSurface/unspecified`` when made by hand).
    public let surface: DiagnosticSurface

    /// How serious it is, from the code (see ``DiagnosticSeverity``).
    public var severity: DiagnosticSeverity { DiagnosticSeverity.of(code) }

    /// Creates a diagnostic.
    public init(code: DiagnosticCode, message: String, runId: String? = nil, surface: DiagnosticSurface = .unspecified) {
        self.code = code
        self.message = message
        self.runId = runId
        self.surface = surface
    }

    /// Creates a diagnostic from a code's raw spelling.
    @_disfavoredOverload
    public init(code: String, message: String, runId: String? = nil, surface: DiagnosticSurface = .unspecified) {
        self.init(code: DiagnosticCode(rawValue: code), message: message, runId: runId, surface: surface)
    }

    /// The same diagnostic, reported by `surface`.
    public func from(_ surface: DiagnosticSurface) -> Diagnostic {
        Diagnostic(code: code, message: message, runId: runId, surface: surface)
    }

    /// `<code>: <message>`, the form the default handlers print (no surface, no run id).
    public var description: String { "\(code.rawValue): \(message)" }
}

/// A diagnostic's stable code, as `URLError.Code` is for URL errors: compare against the static
/// constants (`diagnostic.code == .storage`), or against a string literal
/// (`diagnostic.code == "storage"`), which is the same code.
public struct DiagnosticCode: RawRepresentable, Hashable, Sendable, ExpressibleByStringLiteral, CustomStringConvertible {
    /// The kebab-case spelling, as the specs and the default handlers write it.
    public let rawValue: String
    /// Creates a code from its spelling.
    public init(rawValue: String) { self.rawValue = rawValue }
    /// Creates a code from a string literal.
    public init(stringLiteral value: String) { self.rawValue = value }
    public var description: String { rawValue }
}

extension DiagnosticCode {
    // Shared by several surfaces.
    /// A store could not be read or written; the surface goes on in memory (see its README section).
    public static let storage: DiagnosticCode = "storage"
    /// The server or a sink refused something for good; it is not resent.
    public static let rejected: DiagnosticCode = "rejected"
    /// An unexpected failure inside the SDK; nothing escaped to the app.
    public static let internalError: DiagnosticCode = "internal-error"
    /// An unexpected failure inside the paywall tracker (its spec's spelling).
    public static let `internal`: DiagnosticCode = "internal"
    /// Something left for another destination was discarded.
    public static let destinationChanged: DiagnosticCode = "destination-changed"
    /// A call was refused because the tracker was disposed.
    public static let disposed: DiagnosticCode = "disposed"
    /// Stored state was malformed and was dropped.
    public static let invalidStored: DiagnosticCode = "invalid-stored"
    /// Recording is switched off (opt-out or no consent); what was dropped is named.
    public static let optedOut: DiagnosticCode = "opted-out"

    // Onboarding.
    /// An app-wide onboarding call came before `configure`.
    public static let notConfigured: DiagnosticCode = "not-configured"
    /// An onboarding run could not start (bad context, identity, links or manifest).
    public static let invalidStart: DiagnosticCode = "invalid-start"
    /// The `uuid` option failed; the default id is used.
    public static let invalidUUID: DiagnosticCode = "invalid-uuid"
    /// A Studio draft declared a version other than `draft`.
    public static let draftVersion: DiagnosticCode = "draft-version"
    /// A variant key given on a Studio-served run was dropped.
    public static let studioVariantDropped: DiagnosticCode = "studio-variant-dropped"
    /// A property key or value was invalid and was dropped.
    public static let invalidProperty: DiagnosticCode = "invalid-property"
    /// Property keys beyond the limit were dropped.
    public static let tooManyProperties: DiagnosticCode = "too-many-properties"
    /// An answer was invalid and was dropped.
    public static let invalidAnswer: DiagnosticCode = "invalid-answer"
    /// Answers beyond the limit were dropped.
    public static let tooManyAnswers: DiagnosticCode = "too-many-answers"
    /// A change was refused because the run reached a limit.
    public static let truncated: DiagnosticCode = "truncated"
    /// `enterStep` named a step the manifest does not have.
    public static let unknownStep: DiagnosticCode = "unknown-step"
    /// `enterStep` named the step already open.
    public static let alreadyOnStep: DiagnosticCode = "already-on-step"
    /// `exitStep` named a step that is not current.
    public static let notCurrentStep: DiagnosticCode = "not-current-step"
    /// `complete()` or `background()` before any step.
    public static let noSteps: DiagnosticCode = "no-steps"
    /// A new run replaced a live one.
    public static let runReplaced: DiagnosticCode = "run-replaced"
    /// A call on a run that a newer run replaced.
    public static let runInactive: DiagnosticCode = "run-inactive"
    /// A call on a completed run.
    public static let runCompleted: DiagnosticCode = "run-completed"
    /// `resume(expected)` found a different run.
    public static let resumeMismatch: DiagnosticCode = "resume-mismatch"

    // Paywall.
    /// `start()` input failed validation.
    public static let invalidInfo: DiagnosticCode = "invalid-info"
    /// The context failed or was invalid.
    public static let invalidContext: DiagnosticCode = "invalid-context"
    /// A second `shown()`.
    public static let alreadyShown: DiagnosticCode = "already-shown"
    /// `shown()` after `end()`.
    public static let afterEnd: DiagnosticCode = "after-end"
    /// A second `end()`.
    public static let alreadyEnded: DiagnosticCode = "already-ended"
    /// `end()` with a missing or unknown outcome.
    public static let invalidStatus: DiagnosticCode = "invalid-status"
    /// More unsent presentations than the store keeps; the oldest was dropped.
    public static let storageCap: DiagnosticCode = "storage-cap"

    // Rocalytics client.
    /// No platform services are available; the client is disabled for the session.
    public static let nativeModulesUnavailable: DiagnosticCode = "native-modules-unavailable"
    /// The device id could not be read or stored; the client went inert.
    public static let identityUnavailable: DiagnosticCode = "identity-unavailable"
    /// Copying the legacy device id failed (the id is kept).
    public static let identityMigrationFailed: DiagnosticCode = "identity-migration-failed"
    /// Writing the legacy device id failed (the id is kept).
    public static let identityLegacyWriteFailed: DiagnosticCode = "identity-legacy-write-failed"
    /// The client's start-up requests failed.
    public static let initFailed: DiagnosticCode = "init-failed"
    /// The install ping failed (not retried).
    public static let installPingFailed: DiagnosticCode = "install-ping-failed"
    /// `trackPurchase` got a purchase type other than `upsell`.
    public static let unknownPurchaseType: DiagnosticCode = "unknown-purchase-type"
    /// A recorded request (`recordPurchase`, `recordIdentify`, `record`) was refused for good by the
    /// server (a 4xx other than 408 and 429) and dropped.
    public static let recordedRequestRejected: DiagnosticCode = "recorded-request-rejected"

    // Score.
    /// An event was invalid and was dropped.
    public static let invalidEvent: DiagnosticCode = "invalid-event"
    /// Events were dropped because nothing is granted yet (once per period without consent).
    public static let consent: DiagnosticCode = "consent"
}

/// The surface (package) that reported a diagnostic.
public struct DiagnosticSurface: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    /// The surface's name.
    public let rawValue: String
    /// Creates a surface from its name.
    public init(rawValue: String) { self.rawValue = rawValue }
    public var description: String { rawValue }

    /// A diagnostic made by hand, not by one of the SDK's surfaces.
    public static let unspecified = DiagnosticSurface(rawValue: "unspecified")
    /// The onboarding run tracker.
    public static let onboarding = DiagnosticSurface(rawValue: "onboarding")
    /// The paywall presentation tracker.
    public static let paywall = DiagnosticSurface(rawValue: "paywall")
    /// The Rocalytics client.
    public static let rocalyticsClient = DiagnosticSurface(rawValue: "rocalytics-client")
    /// The Score event tracker.
    public static let score = DiagnosticSurface(rawValue: "score")
}

/// How serious a diagnostic is.
public enum DiagnosticSeverity: Int, Sendable, Comparable, CustomStringConvertible {
    /// Informational: the SDK did what the call asked in a documented, adjusted way.
    case info
    /// The app's input was refused or partly dropped; the SDK works.
    case warning
    /// The SDK could not do its job (storage, identity, start-up, an internal failure).
    case error

    public static func < (a: DiagnosticSeverity, b: DiagnosticSeverity) -> Bool { a.rawValue < b.rawValue }

    public var description: String {
        switch self {
        case .info: "info"
        case .warning: "warning"
        case .error: "error"
        }
    }

    /// The severity of `code` (portable, so Linux tests check it). Unknown codes are warnings.
    public static func of(_ code: DiagnosticCode) -> DiagnosticSeverity {
        switch code {
        case .internal, .internalError, .storage, .initFailed, .identityUnavailable, .nativeModulesUnavailable:
            .error
        case .destinationChanged, .draftVersion, .studioVariantDropped, .runReplaced, .invalidUUID,
            .identityMigrationFailed, .identityLegacyWriteFailed, .optedOut, .consent:
            .info
        default:
            .warning
        }
    }
}

/// Receives diagnostics. A handler is called synchronously from whatever thread reported the
/// diagnostic; it must not block. To touch UI, hop to the main actor (`Task { @MainActor in … }`).
public typealias DiagnosticHandler = @Sendable (Diagnostic) -> Void

/// Diagnostic helpers shared by every surface.
public enum Diagnostics {
    private static let installed = Locked<DiagnosticHandler?>(nil)

    /// Installs one handler for every surface of the process: each surface's *default* handler
    /// (``systemLog(subsystem:prefix:)``, used when a surface is given no handler of its own)
    /// forwards to it instead of logging. `nil` restores logging. A handler given to a surface
    /// explicitly still receives that surface's diagnostics alone. Diagnostics carry their
    /// ``Diagnostic/surface`` and ``Diagnostic/severity``.
    public static func setHandler(_ handler: DiagnosticHandler?) {
        installed.withLock { $0 = handler }
    }

    /// The handler installed with ``setHandler(_:)``, if any.
    public static var handler: DiagnosticHandler? { installed.withLock { $0 } }

    /// `handler`, with every diagnostic marked as reported by `surface`.
    public static func stamped(_ surface: DiagnosticSurface, _ handler: @escaping DiagnosticHandler) -> DiagnosticHandler {
        { diagnostic in handler(diagnostic.from(surface)) }
    }

    /// One line on standard error, `[<prefix>] <code>: <message>`.
    public static func consolePrinter(prefix: String = "rocalytics-sdk") -> DiagnosticHandler {
        { diagnostic in
            var line = "[\(prefix)] \(diagnostic.code.rawValue): \(diagnostic.message)\n"
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
