import Testing

@testable import TrackerCore

/// Issue 37 item 7: the portable parts of the SwiftUI integration.
@Suite struct ViewPresenceTests {
    /// VP1 — appear enters, disappear exits, a re-appearance enters again; a duplicate appear
    /// enters nothing and needs its own disappear; an unmatched disappear exits nothing.
    @Test func VP1_enterOnFirstAppearExitOnLastDisappear() {
        var p = ViewPresence()
        #expect(p.disappear() == false)
        #expect(p.appear() == true)
        #expect(p.appear() == false)  // duplicate onAppear
        #expect(p.disappear() == false)
        #expect(p.isVisible)
        #expect(p.disappear() == true)
        #expect(!p.isVisible)
        #expect(p.disappear() == false)
        #expect(p.appear() == true)  // re-appear
        #expect(p.visibleCount == 1)
    }

    /// VP2 — Xcode Previews are recognised from XCODE_RUNNING_FOR_PREVIEWS.
    @Test func VP2_xcodePreviewsFromTheEnvironment() {
        #expect(XcodePreviews.isRunning(environmentValue: "1"))
        #expect(XcodePreviews.isRunning(environmentValue: "YES"))
        #expect(!XcodePreviews.isRunning(environmentValue: nil))
        #expect(!XcodePreviews.isRunning(environmentValue: "0"))
        #expect(!XcodePreviews.isRunning(environmentValue: ""))
        // The test process is no preview (the variable is read, not assumed).
        #expect(XcodePreviews.isRunning == (getenvValue(XcodePreviews.environmentVariable) == "1"))
    }
}

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

private func getenvValue(_ name: String) -> String? { getenv(name).map { String(cString: $0) } }
