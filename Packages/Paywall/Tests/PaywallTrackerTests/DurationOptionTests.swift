import Testing
import TrackerCore
import TrackerCoreTestKit

@testable import PaywallTracker

/// Issue 37 item 10: the attempt timeout in seconds (`TimeInterval`).
@Suite struct PaywallDurationOptionTests {
    /// P83 — `attemptTimeout` in seconds is the deprecated `attemptTimeoutMs` in whole milliseconds
    /// (rounded to the nearest), and what the tracker's delivery is given. Deprecated: it calls the
    /// `…Ms` form.
    @available(*, deprecated)
    @Test func P83_attemptTimeoutInSeconds() {
        let sink = RecordingSink<PaywallSnapshot>()
        let context = ContextSource.value(
            RunContextInput(appVersion: "1.0", build: "1", platform: .ios, osVersion: "18.1", locale: "en-US", timezone: "Europe/Paris"))
        let defaults = PaywallTrackerConfiguration(sink: sink, context: context)
        #expect(defaults.attemptTimeout == 30 && defaults.attemptMs == 30_000)
        let seconds = PaywallTrackerConfiguration(sink: sink, context: context, attemptTimeout: 10.0006)
        let ms = PaywallTrackerConfiguration(sink: sink, context: context, attemptTimeoutMs: 10_001)
        #expect(seconds.attemptMs == 10_001 && ms.attemptMs == 10_001 && ms.attemptTimeout == 10.001)
        var edited = defaults
        edited.attemptTimeout = 0.25
        #expect(edited.attemptTimeoutMs == 250)
    }
}
