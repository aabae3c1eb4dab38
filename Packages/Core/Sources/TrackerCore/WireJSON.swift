/// The wire JSON codec: compact output byte-identical to JavaScript's `JSON.stringify`, and a
/// strict RFC 8259 parser that keeps object member order.
public enum WireJSON {
    /// Encodes `value` compactly, as `JSON.stringify(value)` would. Non-finite numbers are
    /// written `null`, as JavaScript does.
    public static func encode(_ value: JSONValue) -> [UInt8] {
        var out = [UInt8]()
        out.reserveCapacity(256)
        write(value, into: &out)
        return out
    }

    /// Encodes `value` to a `String`.
    public static func encodeString(_ value: JSONValue) -> String {
        String(decoding: encode(value), as: UTF8.self)
    }

    /// Appends the encoding of `value` to `out`.
    public static func write(_ value: JSONValue, into out: inout [UInt8]) {
        switch value {
        case .null: out.append(contentsOf: [110, 117, 108, 108])
        case let .bool(b): out.append(contentsOf: b ? [116, 114, 117, 101] : [102, 97, 108, 115, 101])
        case let .number(n): writeNumber(n, into: &out)
        case let .string(s): writeString(s, into: &out)
        case let .array(a):
            out.append(91)
            for (i, v) in a.enumerated() {
                if i > 0 { out.append(44) }
                write(v, into: &out)
            }
            out.append(93)
        case let .object(o):
            out.append(123)
            for (i, e) in o.entries.enumerated() {
                if i > 0 { out.append(44) }
                writeString(e.key, into: &out)
                out.append(58)
                write(e.value, into: &out)
            }
            out.append(125)
        }
    }

    /// Appends a JSON string literal with JavaScript's escaping.
    public static func writeString(_ s: String, into out: inout [UInt8]) {
        out.append(34)
        let hex: StaticString = "0123456789abcdef"
        for c in s.utf8 {
            switch c {
            case 34: out.append(92); out.append(34)
            case 92: out.append(92); out.append(92)
            case 8: out.append(92); out.append(98)
            case 9: out.append(92); out.append(116)
            case 10: out.append(92); out.append(110)
            case 12: out.append(92); out.append(102)
            case 13: out.append(92); out.append(114)
            case 0..<32:
                out.append(contentsOf: [92, 117, 48, 48])
                hex.withUTF8Buffer { h in
                    out.append(h[Int(c >> 4)])
                    out.append(h[Int(c & 15)])
                }
            default: out.append(c)
            }
        }
        out.append(34)
    }

    /// Appends a number in ECMAScript Number-to-String form.
    public static func writeNumber(_ n: Double, into out: inout [UInt8]) {
        out.append(contentsOf: formatNumber(n).utf8)
    }

    /// ECMAScript Number-to-String (`String(n)` in JavaScript); `null` for NaN and infinities.
    public static func formatNumber(_ value: Double) -> String {
        guard value.isFinite else { return "null" }
        if value == 0 { return "0" }
        if value < 0 { return "-" + formatNumber(-value) }
        if value < 9_007_199_254_740_992, value.rounded(.towardZero) == value {
            return String(Int64(value))
        }
        // Shortest round-trip digits from Swift's description, then re-laid out.
        let desc = value.description // e.g. "1.5e-07", "1e+21", "0.1", "123.0"
        var mantissa = Substring(desc)
        var exp10 = 0
        if let e = desc.firstIndex(where: { $0 == "e" || $0 == "E" }) {
            mantissa = desc[..<e]
            var expText = String(desc[desc.index(after: e)...])
            if expText.hasPrefix("+") { expText.removeFirst() }
            exp10 = Int(expText) ?? 0
        }
        var digits = ""
        var pointPos = mantissa.count
        if let dot = mantissa.firstIndex(of: ".") {
            pointPos = mantissa.distance(from: mantissa.startIndex, to: dot)
            digits = String(mantissa[..<dot]) + String(mantissa[mantissa.index(after: dot)...])
        } else {
            digits = String(mantissa)
        }
        // Strip leading zeros (adjusting the point) and trailing zeros.
        var lead = 0
        for ch in digits { if ch == "0" { lead += 1 } else { break } }
        digits.removeFirst(lead)
        pointPos -= lead
        while digits.hasSuffix("0") { digits.removeLast() }
        let k = digits.count
        let n = pointPos + exp10 // value = 0.d × 10^n
        if k <= n && n <= 21 {
            return digits + String(repeating: "0", count: n - k)
        }
        if 0 < n && n <= 21 {
            let i = digits.index(digits.startIndex, offsetBy: n)
            return String(digits[..<i]) + "." + String(digits[i...])
        }
        if -6 < n && n <= 0 {
            return "0." + String(repeating: "0", count: -n) + digits
        }
        let e = n - 1
        let sign = e < 0 ? "-" : "+"
        let first = String(digits.prefix(1))
        let rest = String(digits.dropFirst())
        return first + (rest.isEmpty ? "" : "." + rest) + "e" + sign + String(abs(e))
    }
}

