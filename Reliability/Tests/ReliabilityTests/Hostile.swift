import Foundation
import TrackerCoreTestKit

/// Generators of odd and hostile input for the property tests.
extension SplitMix64 {
    /// A string: empty, 10,000 code points, emoji, NUL, replacement characters (what a lone
    /// surrogate becomes in Swift), right-to-left text, control characters, a valid-looking key…
    mutating func hostileString() -> String {
        switch below(14) {
        case 0: return ""
        case 1: return String(repeating: "é", count: 10_000)
        case 2: return String(repeating: "😀", count: below(300) + 1)
        case 3: return "a\u{0}b"
        case 4: return "\u{FFFD}\u{D7FF}\u{E000}"
        case 5: return "שלום مرحبا \u{202E}abc"
        case 6: return "\u{1}\u{7F}\n\t\r\"\\"
        case 7: return "key_\(below(5))"
        case 8: return String(repeating: "x", count: 256)
        case 9: return String(repeating: "x", count: 257)
        case 10: return "👨‍👩‍👧‍👦" + String(repeating: "\u{301}", count: below(50))
        case 11: return " leading and trailing "
        case 12: return "UPPER-Case.key"
        default: return "v\(below(1_000_000))"
        }
    }

    /// A key: mostly plausible snake_case, sometimes hostile.
    mutating func hostileKey() -> String {
        chance(60) ? pick(["goal", "age", "plan", "source", "q_1", "k\(below(30))"]) : hostileString()
    }

    /// NaN, ±infinity, -0, 2^53+1, huge, tiny, ordinary.
    mutating func hostileNumber() -> Double {
        switch below(10) {
        case 0: return .nan
        case 1: return .infinity
        case 2: return -.infinity
        case 3: return -0.0
        case 4: return 9_007_199_254_740_992 + 2  // 2^53+1 is not a Double; the next one above 2^53
        case 5: return .greatestFiniteMagnitude
        case 6: return .leastNonzeroMagnitude
        case 7: return -Double(below(1000))
        case 8: return 0.1 + 0.2
        default: return Double(below(100))
        }
    }
}
