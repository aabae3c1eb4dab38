/// A duration in seconds, as Foundation's `TimeInterval` (issue 37 item 10): the type of every
/// app-facing duration option of the SDK (`RetryPolicy(initialDelay:)`, `HTTPSink(url:timeout:)`,
/// the trackers' `debounce`, `attemptTimeout`, …).
///
/// Declared here so that Core stays free of Foundation on Linux. It is the same type as
/// Foundation's (`Double`), so a file that imports both uses either name without ambiguity.
public typealias TimeInterval = Double

/// The conversion between the app-facing durations (``TimeInterval``, seconds) and the whole
/// milliseconds the SDK's clock, scheduler and stored state count in.
public enum Milliseconds {
    /// `seconds` in whole milliseconds, rounded to the nearest millisecond, halves away from zero
    /// (`0.0005` → 1, `0.0004` → 0, `-0.0005` → -1), so that a duration written in seconds gives
    /// exactly the milliseconds the `…Ms` form took (`0.5` → 500). NaN gives 0; a value beyond
    /// `Int64`'s range in milliseconds gives `Int64.max` or `Int64.min`.
    public static func from(seconds: TimeInterval) -> Int64 {
        let ms = (seconds * 1000).rounded(.toNearestOrAwayFromZero)
        if ms.isNaN { return 0 }
        // 2^63 as a Double: the first value `Int64` cannot hold.
        let limit = 9_223_372_036_854_775_808.0
        if ms >= limit { return .max }
        if ms < -limit { return .min }
        return Int64(ms)
    }

    /// `milliseconds` in seconds (exact for every value below 2^53 ms).
    public static func seconds(_ milliseconds: Int64) -> TimeInterval {
        TimeInterval(milliseconds) / 1000
    }
}
