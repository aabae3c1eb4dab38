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
}
