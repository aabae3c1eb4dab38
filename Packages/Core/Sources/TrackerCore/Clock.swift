#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// A source of wall-clock time in milliseconds since the Unix epoch.
///
/// Every tracker takes its time from an injected clock, so tests drive time with
/// `ManualClock` (in `TrackerCoreTestKit`) and never sleep.
public protocol TrackerClock: Sendable {
    /// Milliseconds since 1970-01-01T00:00:00Z.
    func nowMs() -> Int64
}

/// The system's real-time clock.
public struct SystemClock: TrackerClock {
    /// Creates the system clock.
    public init() {}

    public func nowMs() -> Int64 {
        var ts = timespec()
        clock_gettime(CLOCK_REALTIME, &ts)
        return Int64(ts.tv_sec) * 1000 + Int64(ts.tv_nsec) / 1_000_000
    }
}

/// A monotonic clock for measuring durations (never for contract timestamps).
public enum MonotonicClock {
    /// Nanoseconds from an arbitrary fixed origin.
    public static func nowNs() -> UInt64 {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return UInt64(ts.tv_sec) * 1_000_000_000 + UInt64(ts.tv_nsec)
    }
}
