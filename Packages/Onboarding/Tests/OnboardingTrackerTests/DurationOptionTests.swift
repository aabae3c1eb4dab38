import OnboardingTracker
import Testing
import TrackerCore
import TrackerCoreTestKit

/// Issue 37 item 10: the configuration's durations in seconds (`TimeInterval`), the TypeScript
/// README's milliseconds kept beside them.
@Suite struct DurationOptionTests {
    /// S263 — the seconds form sets exactly the milliseconds the `…Ms` form sets (whole
    /// milliseconds, rounded to the nearest); the defaults are the spec's.
    @Test func S263_configurationDurationsInSeconds() {
        let sink = RecordingSink<OnboardingRunSnapshot>()
        let context = ContextSource.value(
            RunContextInput(
                appVersion: "1.0", build: "1", platform: .ios, osVersion: "18.0", locale: "en-US", timezone: "Europe/Paris"))
        let defaults = OnboardingRunConfiguration(sink: sink, context: context)
        #expect(
            [defaults.debounceMs, defaults.persistTimeoutMs, defaults.storageReadTimeoutMs, defaults.attemptTimeoutMs]
                == [500, 1_000, 5_000, 30_000])
        #expect([defaults.debounce, defaults.persistTimeout, defaults.storageReadTimeout, defaults.attemptTimeout] == [0.5, 1, 5, 30])
        let seconds = OnboardingRunConfiguration(
            sink: sink, context: context, debounce: 0.25, persistTimeout: 0.0015, storageReadTimeout: 2, attemptTimeout: 10.0004)
        let ms = OnboardingRunConfiguration(
            sink: sink, context: context, debounceMs: 250, persistTimeoutMs: 2, storageReadTimeoutMs: 2_000, attemptTimeoutMs: 10_000)
        #expect(
            [seconds.debounceMs, seconds.persistTimeoutMs, seconds.storageReadTimeoutMs, seconds.attemptTimeoutMs]
                == [ms.debounceMs, ms.persistTimeoutMs, ms.storageReadTimeoutMs, ms.attemptTimeoutMs])
        var edited = defaults
        edited.debounce = 0
        edited.attemptTimeout = 0.5
        #expect(edited.debounceMs == 0 && edited.attemptTimeoutMs == 500)
    }
}
