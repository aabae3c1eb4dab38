/// The string checks shared by the contracts' inputs (keys, versions, locales, time zones and
/// lengths), written as byte matchers with no regex engine. Lengths are counted the way each
/// contract says: Unicode code points (JSON Schema `maxLength`) or UTF-16 code units (JavaScript
/// `.length`), never `String.count`.
public enum InputPatterns {
    /// `^[A-Za-z0-9][A-Za-z0-9_.:-]{0,127}$`: a step, question, option, slot or reason key.
    public static func isKey(_ s: String) -> Bool {
        var n = 0
        for c in s.utf8 {
            if n == 0 {
                guard isAlnum(c) else { return false }
            } else {
                guard isAlnum(c) || c == 0x5F || c == 0x2E || c == 0x3A || c == 0x2D else { return false }
            }
            n += 1
            if n > 128 { return false }
        }
        return n >= 1
    }

    /// `^[A-Za-z0-9][A-Za-z0-9_.:+-]{0,63}$`: a flow version.
    public static func isVersion(_ s: String) -> Bool {
        var n = 0
        for c in s.utf8 {
            if n == 0 {
                guard isAlnum(c) else { return false }
            } else {
                guard isAlnum(c) || c == 0x5F || c == 0x2E || c == 0x3A || c == 0x2B || c == 0x2D else { return false }
            }
            n += 1
            if n > 64 { return false }
        }
        return n >= 1
    }

    /// `^[a-z][a-z0-9_]{0,39}$`: a run property key.
    public static func isPropertyKey(_ s: String) -> Bool {
        var n = 0
        for c in s.utf8 {
            let lower = c >= 0x61 && c <= 0x7A
            if n == 0 {
                guard lower else { return false }
            } else {
                guard lower || isDigit(c) || c == 0x5F else { return false }
            }
            n += 1
            if n > 40 { return false }
        }
        return n >= 1
    }

    /// The BCP 47 shape `^[A-Za-z]{2,3}(-[A-Za-z0-9]{1,8})*$`.
    public static func isLocale(_ s: String) -> Bool {
        let parts = s.utf8.split(separator: 0x2D, omittingEmptySubsequences: false)
        guard let first = parts.first, (2...3).contains(first.count), first.allSatisfy(isAlpha) else { return false }
        for p in parts.dropFirst() {
            guard (1...8).contains(p.count), p.allSatisfy(isAlnum) else { return false }
        }
        return true
    }

    /// The IANA shape `^[A-Za-z][A-Za-z0-9_+-]*(/[A-Za-z0-9_+-]+)*$`, at most 64 characters.
    public static func isTimezone(_ s: String) -> Bool {
        // Every accepted character is ASCII, so the UTF-8 count is the character count.
        var n = 0
        var partLength = 0
        for c in s.utf8 {
            n += 1
            if n > 64 { return false }
            if c == 0x2F {
                guard partLength > 0 else { return false }
                partLength = 0
                continue
            }
            if n == 1 {
                guard isAlpha(c) else { return false }
            } else {
                guard isAlnum(c) || c == 0x5F || c == 0x2B || c == 0x2D else { return false }
            }
            partLength += 1
        }
        return partLength > 0
    }

    /// A lowercase UUID (`IDs.isLowercaseUUID`).
    public static func isLowercaseUUID(_ s: String) -> Bool { IDs.isLowercaseUUID(s) }

    /// The length in Unicode code points (JSON Schema `minLength`/`maxLength`).
    @inline(__always) public static func codePoints(_ s: String) -> Int { s.unicodeScalars.count }

    /// Whether `s` has `range` Unicode code points.
    @inline(__always) public static func codePointLength(_ s: String, _ range: ClosedRange<Int>) -> Bool {
        range.contains(s.unicodeScalars.count)
    }

    /// Whether `s` has `range` UTF-16 code units (JavaScript `.length`).
    @inline(__always) public static func utf16Length(_ s: String, _ range: ClosedRange<Int>) -> Bool {
        range.contains(s.utf16.count)
    }

    @inline(__always) static func isAlpha(_ c: UInt8) -> Bool { (c >= 0x41 && c <= 0x5A) || (c >= 0x61 && c <= 0x7A) }
    @inline(__always) static func isDigit(_ c: UInt8) -> Bool { c >= 0x30 && c <= 0x39 }
    @inline(__always) static func isAlnum(_ c: UInt8) -> Bool { isAlpha(c) || isDigit(c) }
}
