import Testing
import TrackerCore
import TrackerCoreTestKit

/// Typed diagnostic codes, surfaces, severities and the one process-wide handler (issue 37 item 8).
@Suite struct DiagnosticsTests {
    @Test func DG1_codesAreTypedAndStillMatchTheirSpelling() {
        let d = Diagnostic(code: .invalidStart, message: "bad context")
        #expect(d.code == .invalidStart)
        #expect(d.code == "invalid-start")
        #expect(d.code.rawValue == "invalid-start")
        #expect(d.description == "invalid-start: bad context")
        // A code built from a runtime string is the same code.
        let spelled = "storage"
        #expect(Diagnostic(code: spelled, message: "m").code == .storage)
        // Pattern matching against the constants works as with URLError.Code.
        switch d.code {
        case .storage: Issue.record("wrong case")
        case .invalidStart: break
        default: Issue.record("no case matched")
        }
    }

    @Test func DG2_severityComesFromTheCode() {
        #expect(Diagnostic(code: .storage, message: "").severity == .error)
        #expect(Diagnostic(code: .internal, message: "").severity == .error)
        #expect(Diagnostic(code: .initFailed, message: "").severity == .error)
        #expect(Diagnostic(code: .invalidProperty, message: "").severity == .warning)
        #expect(Diagnostic(code: .rejected, message: "").severity == .warning)
        #expect(Diagnostic(code: .destinationChanged, message: "").severity == .info)
        #expect(Diagnostic(code: "some-future-code", message: "").severity == .warning)
        #expect(DiagnosticSeverity.info < .warning && DiagnosticSeverity.warning < .error)
        #expect(SystemLogLevel.isError(.internalError) && !SystemLogLevel.isError(.runReplaced))
    }

    @Test func DG3_stampedHandlerNamesTheSurface() {
        let log = DiagnosticLog()
        let handler = Diagnostics.stamped(.paywall, log.handler)
        handler(Diagnostic(code: .alreadyShown, message: "second shown()", runId: "p1"))
        #expect(log.all == [Diagnostic(code: .alreadyShown, message: "second shown()", runId: "p1", surface: .paywall)])
        #expect(Diagnostic(code: .storage, message: "").surface == .unspecified)
    }

    @Test func DG4_oneProcessWideHandlerReceivesWhatDefaultHandlersReport() {
        let log = DiagnosticLog()
        let mine = DiagnosticCode(rawValue: "dg4-\(UInt64.random(in: 0...UInt64.max))")
        Diagnostics.setHandler(log.handler)
        defer { Diagnostics.setHandler(nil) }
        let defaultOfOnboarding = Diagnostics.stamped(
            .onboarding, Diagnostics.systemLog(subsystem: "com.rocapine.test", prefix: "test"))
        defaultOfOnboarding(Diagnostic(code: mine, message: "forwarded"))
        // Other suites may report through their defaults meanwhile: look at this test's code only.
        #expect(log.with(mine).map(\.surface) == [.onboarding])
        Diagnostics.setHandler(nil)
        defaultOfOnboarding(Diagnostic(code: mine, message: "logged, not forwarded"))
        #expect(log.with(mine).count == 1)
    }

    @Test func DG5_anExplicitHandlerIsNotReplacedByTheProcessWideOne() {
        let global = DiagnosticLog()
        let own = DiagnosticLog()
        let mine = DiagnosticCode(rawValue: "dg5-\(UInt64.random(in: 0...UInt64.max))")
        Diagnostics.setHandler(global.handler)
        defer { Diagnostics.setHandler(nil) }
        Diagnostics.stamped(.score, own.handler)(Diagnostic(code: mine, message: "own"))
        #expect(own.with(mine).count == 1 && global.with(mine).isEmpty)
    }
}

/// Xcode Previews (issue 37 item 7): the surfaces go inert when Xcode renders a preview.
@Suite struct RuntimeEnvironmentTests {
    @Test func XP1_xcodePreviewsAreRecognisedFromTheEnvironment() {
        #expect(RuntimeEnvironment.isXcodePreview(environment: { $0 == "XCODE_RUNNING_FOR_PREVIEWS" ? "1" : nil }))
        #expect(!RuntimeEnvironment.isXcodePreview(environment: { $0 == "XCODE_RUNNING_FOR_PREVIEWS" ? "0" : nil }))
        #expect(!RuntimeEnvironment.isXcodePreview(environment: { _ in nil }))
        // The test process is not a preview.
        #expect(!RuntimeEnvironment.isXcodePreview)
        #expect(RuntimeEnvironment.processValue("PATH") != nil)
    }
}
