/// A JSON text that could not be parsed.
public struct JSONParseError: Error, Sendable, Equatable, CustomStringConvertible {
    /// Byte offset of the problem.
    public let offset: Int
    /// What was wrong.
    public let reason: String
    public var description: String { "invalid JSON at byte \(offset): \(reason)" }
}

extension WireJSON {
    /// Parses a complete JSON text (RFC 8259), keeping object member order. A repeated key keeps
    /// its first position and its last value (as `JSON.parse` does).
    ///
    /// Strings: a `\uXXXX` escape of a lone UTF-16 surrogate (a high surrogate not followed by a
    /// `\u` low surrogate escape, or a low surrogate on its own) decodes to U+FFFD, since a Swift
    /// `String` cannot hold a lone surrogate; re-encoding therefore writes the UTF-8 of U+FFFD
    /// where `JSON.stringify` would write the `\udxxx` escape back. Valid surrogate pairs decode
    /// to their code point. Invalid UTF-8 in the input is likewise repaired to U+FFFD.
    public static func decode(_ text: String) throws(JSONParseError) -> JSONValue {
        try decode(Array(text.utf8))
    }

    /// Parses UTF-8 bytes.
    public static func decode(_ bytes: [UInt8]) throws(JSONParseError) -> JSONValue {
        let result: Result<JSONValue, JSONParseError> = bytes.withUnsafeBufferPointer { buffer in
            Result { () throws(JSONParseError) -> JSONValue in try decode(buffer) }
        }
        return try result.get()
    }

    /// Parses UTF-8 bytes.
    public static func decode(_ bytes: UnsafeBufferPointer<UInt8>) throws(JSONParseError) -> JSONValue {
        var p = Parser(bytes: bytes)
        p.skipWhitespace()
        let v = try p.parseValue(depth: 0)
        p.skipWhitespace()
        guard p.i == bytes.count else { throw JSONParseError(offset: p.i, reason: "trailing characters") }
        return v
    }
}

private struct Parser {
    let bytes: UnsafeBufferPointer<UInt8>
    var i = 0
    static let maxDepth = 512

    init(bytes: UnsafeBufferPointer<UInt8>) { self.bytes = bytes }

    func fail(_ reason: String) -> JSONParseError { JSONParseError(offset: i, reason: reason) }

    mutating func skipWhitespace() {
        while i < bytes.count {
            switch bytes[i] {
            case 32, 9, 10, 13: i += 1
            default: return
            }
        }
    }

    mutating func parseValue(depth: Int) throws(JSONParseError) -> JSONValue {
        guard depth < Parser.maxDepth else { throw fail("nesting too deep") }
        guard i < bytes.count else { throw fail("unexpected end") }
        switch bytes[i] {
        case 123: return try parseObject(depth: depth)
        case 91: return try parseArray(depth: depth)
        case 34: return .string(try parseString())
        case 116:
            try literal("true")
            return .bool(true)
        case 102:
            try literal("false")
            return .bool(false)
        case 110:
            try literal("null")
            return .null
        case 45, 48...57: return .number(try parseNumber())
        default: throw fail("unexpected character")
        }
    }

    mutating func literal(_ word: StaticString) throws(JSONParseError) {
        let n = word.utf8CodeUnitCount
        guard i + n <= bytes.count else { throw fail("unexpected end") }
        let p = word.utf8Start
        for k in 0..<n where bytes[i + k] != p[k] { throw fail("invalid literal") }
        i += n
    }

    mutating func parseObject(depth: Int) throws(JSONParseError) -> JSONValue {
        i += 1
        var obj = JSONObject()
        skipWhitespace()
        if i < bytes.count, bytes[i] == 125 {
            i += 1
            return .object(obj)
        }
        while true {
            skipWhitespace()
            guard i < bytes.count, bytes[i] == 34 else { throw fail("expected a key") }
            let key = try parseString()
            skipWhitespace()
            guard i < bytes.count, bytes[i] == 58 else { throw fail("expected ':'") }
            i += 1
            skipWhitespace()
            let v = try parseValue(depth: depth + 1)
            obj[key] = v
            skipWhitespace()
            guard i < bytes.count else { throw fail("unexpected end") }
            if bytes[i] == 44 {
                i += 1
                continue
            }
            if bytes[i] == 125 {
                i += 1
                return .object(obj)
            }
            throw fail("expected ',' or '}'")
        }
    }

    mutating func parseArray(depth: Int) throws(JSONParseError) -> JSONValue {
        i += 1
        var arr: [JSONValue] = []
        skipWhitespace()
        if i < bytes.count, bytes[i] == 93 {
            i += 1
            return .array(arr)
        }
        while true {
            skipWhitespace()
            arr.append(try parseValue(depth: depth + 1))
            skipWhitespace()
            guard i < bytes.count else { throw fail("unexpected end") }
            if bytes[i] == 44 {
                i += 1
                continue
            }
            if bytes[i] == 93 {
                i += 1
                return .array(arr)
            }
            throw fail("expected ',' or ']'")
        }
    }

    mutating func hex4() throws(JSONParseError) -> UInt32 {
        guard i + 4 <= bytes.count else { throw fail("bad \\u escape") }
        var v: UInt32 = 0
        for _ in 0..<4 {
            let c = bytes[i]
            let d: UInt32
            switch c {
            case 48...57: d = UInt32(c - 48)
            case 97...102: d = UInt32(c - 87)
            case 65...70: d = UInt32(c - 55)
            default: throw fail("bad \\u escape")
            }
            v = v << 4 | d
            i += 1
        }
        return v
    }

    mutating func parseString() throws(JSONParseError) -> String {
        i += 1
        let start = i
        // Fast path: no escapes.
        while i < bytes.count {
            let c = bytes[i]
            if c == 34 {
                let s = String(decoding: UnsafeBufferPointer(rebasing: bytes[start..<i]), as: UTF8.self)
                i += 1
                return s
            }
            if c == 92 || c < 32 { break }
            i += 1
        }
        var out = [UInt8](UnsafeBufferPointer(rebasing: bytes[start..<i]))
        while i < bytes.count {
            let c = bytes[i]
            if c == 34 {
                i += 1
                return String(decoding: out, as: UTF8.self)
            }
            if c < 32 { throw fail("control character in string") }
            if c != 92 {
                out.append(c)
                i += 1
                continue
            }
            i += 1
            guard i < bytes.count else { throw fail("unexpected end") }
            let e = bytes[i]
            i += 1
            switch e {
            case 34: out.append(34)
            case 92: out.append(92)
            case 47: out.append(47)
            case 98: out.append(8)
            case 102: out.append(12)
            case 110: out.append(10)
            case 114: out.append(13)
            case 116: out.append(9)
            case 117:
                var scalar = try hex4()
                if (0xD800...0xDBFF).contains(scalar) {
                    if i + 6 <= bytes.count, bytes[i] == 92, bytes[i + 1] == 117 {
                        let save = i
                        i += 2
                        let low = try hex4()
                        if (0xDC00...0xDFFF).contains(low) {
                            scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
                        } else {
                            i = save
                            scalar = 0xFFFD
                        }
                    } else {
                        scalar = 0xFFFD
                    }
                } else if (0xDC00...0xDFFF).contains(scalar) {
                    scalar = 0xFFFD
                }
                let us = Unicode.Scalar(scalar) ?? "\u{FFFD}"
                UTF8.encode(us) { out.append($0) }
            default: throw fail("bad escape")
            }
        }
        throw fail("unterminated string")
    }

    mutating func parseNumber() throws(JSONParseError) -> Double {
        let start = i
        if bytes[i] == 45 { i += 1 }
        guard i < bytes.count else { throw fail("bad number") }
        if bytes[i] == 48 {
            i += 1
        } else if (49...57).contains(bytes[i]) {
            while i < bytes.count, (48...57).contains(bytes[i]) { i += 1 }
        } else {
            throw fail("bad number")
        }
        if i < bytes.count, bytes[i] == 46 {
            i += 1
            guard i < bytes.count, (48...57).contains(bytes[i]) else { throw fail("bad number") }
            while i < bytes.count, (48...57).contains(bytes[i]) { i += 1 }
        }
        if i < bytes.count, bytes[i] == 101 || bytes[i] == 69 {
            i += 1
            if i < bytes.count, bytes[i] == 43 || bytes[i] == 45 { i += 1 }
            guard i < bytes.count, (48...57).contains(bytes[i]) else { throw fail("bad number") }
            while i < bytes.count, (48...57).contains(bytes[i]) { i += 1 }
        }
        // Fast path: a plain integer of at most 15 digits is exact as a double.
        var plain = true
        var digits = 0
        var magnitude = 0
        for k in start..<i {
            let c = bytes[k]
            if c == 45 { continue }
            if c < 48 || c > 57 {
                plain = false
                break
            }
            magnitude = magnitude &* 10 &+ Int(c &- 48)
            digits += 1
        }
        if plain && digits <= 15 {
            if bytes[start] == 45 { return magnitude == 0 ? -0.0 : -Double(magnitude) }
            return Double(magnitude)
        }
        let text = String(decoding: UnsafeBufferPointer(rebasing: bytes[start..<i]), as: UTF8.self)
        guard let d = Double(text) else { throw fail("bad number") }
        return d
    }
}
