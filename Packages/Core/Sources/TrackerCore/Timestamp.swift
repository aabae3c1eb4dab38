/// Contract timestamps: UTC, exactly three fractional digits and `Z`
/// (`2026-01-10T08:00:00.000Z`), the form JavaScript's `Date.prototype.toISOString` writes.
public enum Timestamp {
    /// Formats milliseconds since the epoch. Years outside 0...9999 are clamped to that range
    /// (the contract pattern has four year digits).
    public static func format(ms: Int64) -> String {
        var bytes = [UInt8]()
        bytes.reserveCapacity(24)
        write(ms: ms, into: &bytes)
        return String(decoding: bytes, as: UTF8.self)
    }

    /// Appends the 24 bytes of ``format(ms:)`` to `out`, without building a string.
    public static func write(ms: Int64, into out: inout [UInt8]) {
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 24) { buf in
            fill(ms: ms, buf.baseAddress!)
            out.append(contentsOf: UnsafeBufferPointer(buf))
        }
    }

    /// Writes the 24 bytes of ``format(ms:)`` (no quotes) to `writer`, without building a string.
    public static func write(ms: Int64, into writer: inout WireWriter) {
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 24) { buf in
            fill(ms: ms, buf.baseAddress!)
            writer.writeRaw(UnsafeRawBufferPointer(buf))
        }
    }

    /// Writes the 24 bytes of ``format(ms:)`` at `out`.
    private static func fill(ms: Int64, _ out: UnsafeMutablePointer<UInt8>) {
        let minMs: Int64 = -62_167_219_200_000  // 0000-01-01T00:00:00.000Z
        let maxMs: Int64 = 253_402_300_799_999  // 9999-12-31T23:59:59.999Z
        let t = min(max(ms, minMs), maxMs)
        var days = t / 86_400_000
        var msOfDay = t % 86_400_000
        if msOfDay < 0 {
            msOfDay += 86_400_000
            days -= 1
        }
        let (y, m, d) = civil(fromDays: days)
        let hour = Int(msOfDay / 3_600_000)
        let minute = Int(msOfDay / 60_000 % 60)
        let second = Int(msOfDay / 1000 % 60)
        let milli = Int(msOfDay % 1000)
        var at = 0
        func put(_ value: Int, _ width: Int, then separator: UInt8) {
            var v = value
            var i = at + width - 1
            while i >= at {
                out[i] = UInt8(truncatingIfNeeded: 48 + v % 10)
                v /= 10
                i -= 1
            }
            out[at + width] = separator
            at += width + 1
        }
        put(y, 4, then: 45)  // -
        put(m, 2, then: 45)
        put(d, 2, then: 84)  // T
        put(hour, 2, then: 58)  // :
        put(minute, 2, then: 58)
        put(second, 2, then: 46)  // .
        put(milli, 3, then: 90)  // Z
    }

    /// Parses the contract form back to milliseconds; `nil` when the text does not match
    /// `^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$` or names an impossible date.
    public static func parse(_ text: String) -> Int64? {
        var text = text
        return text.withUTF8 { parse(utf8: $0) }
    }

    /// ``parse(_:)`` over the text's UTF-8 bytes.
    public static func parse(utf8 u: UnsafeBufferPointer<UInt8>) -> Int64? {
        guard u.count == 24, u[4] == 45, u[7] == 45, u[10] == 84, u[13] == 58, u[16] == 58,
            u[19] == 46, u[23] == 90
        else { return nil }
        // Each digit's value; one test for all of them (a non-digit wraps above 9).
        var bad: UInt8 = 0
        @inline(__always) func digit(_ i: Int) -> Int {
            let d = u[i] &- 48
            bad |= d > 9 ? 1 : 0
            return Int(d)
        }
        let y = digit(0) * 1000 + digit(1) * 100 + digit(2) * 10 + digit(3)
        let m = digit(5) * 10 + digit(6)
        let d = digit(8) * 10 + digit(9)
        let h = digit(11) * 10 + digit(12)
        let mi = digit(14) * 10 + digit(15)
        let s = digit(17) * 10 + digit(18)
        let ms = digit(20) * 100 + digit(21) * 10 + digit(22)
        guard bad == 0, (1...12).contains(m), d >= 1, d <= daysInMonth(y, m), h < 24, mi < 60, s < 60 else { return nil }
        let days = daysFromCivil(y, m, d)
        return days * 86_400_000 + Int64(h) * 3_600_000 + Int64(mi) * 60_000 + Int64(s) * 1000 + Int64(ms)
    }

    /// Whether `text` has the contract timestamp form (pattern only, like the JSON Schema).
    public static func matchesPattern(_ text: String) -> Bool {
        let u = Array(text.utf8)
        guard u.count == 24 else { return false }
        for (i, c) in u.enumerated() {
            switch i {
            case 4, 7: if c != 45 { return false }
            case 10: if c != 84 { return false }
            case 13, 16: if c != 58 { return false }
            case 19: if c != 46 { return false }
            case 23: if c != 90 { return false }
            default: if c < 48 || c > 57 { return false }
            }
        }
        return true
    }

    private static func daysInMonth(_ y: Int, _ m: Int) -> Int {
        switch m {
        case 2: return (y % 4 == 0 && (y % 100 != 0 || y % 400 == 0)) ? 29 : 28
        case 4, 6, 9, 11: return 30
        default: return 31
        }
    }

    // Days since 1970-01-01 for a proleptic Gregorian date (H. Hinnant's algorithm).
    private static func daysFromCivil(_ year: Int, _ month: Int, _ day: Int) -> Int64 {
        let y = Int64(month <= 2 ? year - 1 : year)
        let era = (y >= 0 ? y : y - 399) / 400
        let yoe = y - era * 400
        let mp = Int64((month + 9) % 12)
        let doy = (153 * mp + 2) / 5 + Int64(day) - 1
        let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy
        return era * 146_097 + doe - 719_468
    }

    private static func civil(fromDays days: Int64) -> (Int, Int, Int) {
        let z = days + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let doe = z - era * 146_097
        let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365
        let y = yoe + era * 400
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100)
        let mp = (5 * doy + 2) / 153
        let d = doy - (153 * mp + 2) / 5 + 1
        let m = mp < 10 ? mp + 3 : mp - 9
        return (Int(m <= 2 ? y + 1 : y), Int(m), Int(d))
    }
}
