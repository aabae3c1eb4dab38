import Testing
import TrackerCore
import TrackerCoreTestKit

@testable import ScoreTracker

/// Issue 37 item 6: Score's `bindToAppLifecycle` returns the binding Onboarding and Paywall return.
@Suite struct W_LifecycleBindingTests {
    /// SC197 — the returned binding's unbind() stops observing and the periodic flush; a binding
    /// replaced by a later bind does nothing when unbound; the deprecated unbindAppLifecycle()
    /// still ends the current one (SC198).
    @Test func SC197_theReturnedBindingUnbinds() async {
        let h = Harness()
        let c = h.client(granted: true)
        let lc = LC(clock: h.clock, state: .foreground)
        let first: AppLifecycleBinding = c.bindToAppLifecycle(source: lc)
        let second = c.bindToAppLifecycle(source: lc, autoFlushEverySeconds: 10)
        first.unbind()  // replaced: the second binding stays
        c.pv()
        await h.advance(10 * SEC)
        #expect(h.tx.eventRequests.count == 1)
        second.unbind()
        c.pv()
        await lc.emit(.background)
        await lc.emit(.foreground)
        await lc.emit(.networkAvailable)
        await h.advance(300 * SEC)
        #expect(h.tx.eventRequests.count == 1)
        #expect(c.state.withLock { $0.periodic.binding == nil && $0.periodic.timer == nil })
        second.unbind()  // twice: nothing more
    }

    /// SC198 — the integration guide's `unbindAppLifecycle()` still compiles (deprecated) and works.
    @available(*, deprecated)
    @Test func SC198_deprecatedUnbindStillWorks() async {
        let h = Harness()
        let c = h.client(granted: true)
        let lc = LC(clock: h.clock, state: .foreground)
        c.bindToAppLifecycle(source: lc)
        await h.settle()
        c.unbindAppLifecycle()
        c.pv()
        await lc.emit(.foreground)
        await h.advance(300 * SEC)
        #expect(h.tx.eventRequests.isEmpty)
    }
}
