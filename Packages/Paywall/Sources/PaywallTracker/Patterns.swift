import TrackerCore

/// The string checks of the paywall contract, counted the way the spec says (never `String.count`).
enum Patterns {
    /// `^[A-Za-z0-9][A-Za-z0-9_.:-]{0,127}$`
    static func isKey(_ s: String) -> Bool {
        var n = 0
        for c in s.utf8 {
            let alnum = (c >= 48 && c <= 57) || (c >= 65 && c <= 90) || (c >= 97 && c <= 122)
            if n == 0 {
                if !alnum { return false }
            } else if !(alnum || c == 95 || c == 46 || c == 58 || c == 45) {
                return false
            }
            n += 1
            if n > 128 { return false }
        }
        return n >= 1
    }

    /// A string of `min...max` UTF-16 code units (JavaScript `.length`).
    static func utf16Length(_ s: String, _ range: ClosedRange<Int>) -> Bool {
        range.contains(s.utf16.count)
    }

    /// A string of `min...max` Unicode code points (JSON Schema length).
    static func codePointLength(_ s: String, _ range: ClosedRange<Int>) -> Bool {
        range.contains(s.unicodeScalars.count)
    }

    /// BCP 47 shape: `^[A-Za-z]{2,3}(-[A-Za-z0-9]{1,8})*$`
    static func isLocale(_ s: String) -> Bool {
        let parts = s.utf8.split(separator: 45, omittingEmptySubsequences: false)
        guard let first = parts.first, (2...3).contains(first.count), first.allSatisfy(isAlpha) else { return false }
        for p in parts.dropFirst() {
            guard (1...8).contains(p.count), p.allSatisfy({ isAlpha($0) || isDigit($0) }) else { return false }
        }
        return true
    }

    /// IANA shape: `^[A-Za-z][A-Za-z0-9_+-]*(/[A-Za-z0-9_+-]+)*$`, at most 64 characters.
    static func isTimezone(_ s: String) -> Bool {
        guard s.unicodeScalars.count <= 64 else { return false }
        let parts = s.utf8.split(separator: 47, omittingEmptySubsequences: false)
        guard let first = parts.first, let head = first.first, isAlpha(head) else { return false }
        let tail: (UInt8) -> Bool = { isAlpha($0) || isDigit($0) || $0 == 95 || $0 == 43 || $0 == 45 }
        guard first.allSatisfy(tail) else { return false }
        for p in parts.dropFirst() {
            guard !p.isEmpty, p.allSatisfy(tail) else { return false }
        }
        return true
    }

    /// A lowercase UUID.
    static func isLowercaseUUID(_ s: String) -> Bool { IDs.isLowercaseUUID(s) }

    private static func isAlpha(_ c: UInt8) -> Bool { (c >= 65 && c <= 90) || (c >= 97 && c <= 122) }
    private static func isDigit(_ c: UInt8) -> Bool { c >= 48 && c <= 57 }
}
