import Foundation
import TrackerCore

/// One benchmark case: a name and a function returning its figures.
struct BenchCase {
    /// Stable name, e.g. `wire.encode.truncated`.
    let name: String
    /// Runs the case and returns its metrics (units in the metric names: `_ns`, `_mb_s`, `_per_s`, ...).
    let run: () throws -> [String: Double]
}

/// Median and percentiles of a sample.
enum Stats {
    static func percentile(_ sorted: [Double], _ p: Double) -> Double {
        guard !sorted.isEmpty else { return 0 }
        let idx = min(sorted.count - 1, max(0, Int((Double(sorted.count - 1) * p).rounded())))
        return sorted[idx]
    }
    static func summary(_ samples: [Double], prefix: String) -> [String: Double] {
        let s = samples.sorted()
        var out = ["\(prefix)_median": percentile(s, 0.5), "\(prefix)_p99": percentile(s, 0.99)]
        if ProcessInfo.processInfo.environment["BENCH_TAILS"] != nil {
            for p in [0.9, 0.95, 0.98, 0.995, 0.999] { out["\(prefix)_p\(p * 100)"] = percentile(s, p) }
        }
        return out
    }
}

/// Wall time of `body` in nanoseconds.
func timeNs(_ body: () throws -> Void) rethrows -> Double {
    let start = MonotonicClock.nowNs()
    try body()
    return Double(MonotonicClock.nowNs() - start)
}
