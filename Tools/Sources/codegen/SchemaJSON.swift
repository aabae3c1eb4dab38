// The generator's own JSON reading (RFC 8259), so that codegen depends on nothing it generates:
// a generator bug that leaves Core's generated files broken cannot stop codegen from building and
// writing the fix. Only schemas are read with it; member order is not kept (nothing here needs it).

/// A parsed JSON value of a schema file.
indirect enum SchemaJSON: Equatable, Sendable {
    case null
    case bool(Bool)
    case number(Double)
    case string(String)
    case array([SchemaJSON])
    case object([String: SchemaJSON])

    /// The member `key` of an object; `nil` for a missing member or a value that is not an object.
    subscript(key: String) -> SchemaJSON? {
        if case .object(let o) = self { return o[key] }
        return nil
    }

    var stringValue: String? {
        if case .string(let s) = self { return s }
        return nil
    }

    var arrayValue: [SchemaJSON]? {
        if case .array(let a) = self { return a }
        return nil
    }

    var objectValue: [String: SchemaJSON]? {
        if case .object(let o) = self { return o }
        return nil
    }

    /// Parses one JSON text (surrounding whitespace allowed). Rejects trailing content, duplicate
    /// object members, control characters in strings, unpaired surrogates and non-finite numbers.
    static func parse(_ bytes: [UInt8]) throws(SchemaJSONError) -> SchemaJSON {
        var p = Parser(bytes: bytes)
        p.skipWhitespace()
        let v = try p.value(depth: 0)
        p.skipWhitespace()
        guard p.i == bytes.count else { throw p.error("trailing content") }
        return v
    }
}

/// Why a schema file is not valid JSON, with the byte offset where reading stopped.
struct SchemaJSONError: Error, Equatable, CustomStringConvertible {
    let offset: Int
    let reason: String
    var description: String { "invalid JSON at byte \(offset): \(reason)" }
}

private struct Parser {
    let bytes: [UInt8]
    var i = 0
    /// Deeper nesting than any schema needs is refused rather than recursed into.
    static let maxDepth = 256

    init(bytes: [UInt8]) { self.bytes = bytes }

    func error(_ reason: String) -> SchemaJSONError { SchemaJSONError(offset: i, reason: reason) }

    var peek: UInt8? { i < bytes.count ? bytes[i] : nil }

    mutating func skipWhitespace() {
        while let b = peek, b == 0x20 || b == 0x0A || b == 0x0D || b == 0x09 { i += 1 }
    }

    mutating func expect(_ literal: String) throws(SchemaJSONError) {
        for b in literal.utf8 {
            guard peek == b else { throw error("expected \(literal)") }
            i += 1
        }
    }

    mutating func value(depth: Int) throws(SchemaJSONError) -> SchemaJSON {
        guard depth < Self.maxDepth else { throw error("nested too deeply") }
        guard let b = peek else { throw error("unexpected end") }
        switch b {
        case UInt8(ascii: "{"): return try object(depth: depth)
        case UInt8(ascii: "["): return try array(depth: depth)
        case UInt8(ascii: "\""): return .string(try string())
        case UInt8(ascii: "t"):
            try expect("true")
            return .bool(true)
        case UInt8(ascii: "f"):
            try expect("false")
            return .bool(false)
        case UInt8(ascii: "n"):
            try expect("null")
            return .null
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return try number()
        default: throw error("unexpected character")
        }
    }

    mutating func object(depth: Int) throws(SchemaJSONError) -> SchemaJSON {
        i += 1
        var members: [String: SchemaJSON] = [:]
        skipWhitespace()
        if peek == UInt8(ascii: "}") {
            i += 1
            return .object(members)
        }
        while true {
            skipWhitespace()
            guard peek == UInt8(ascii: "\"") else { throw error("expected a member name") }
            let start = i
            let key = try string()
            skipWhitespace()
            try expect(":")
            skipWhitespace()
            let v = try value(depth: depth + 1)
            guard members.updateValue(v, forKey: key) == nil else {
                throw SchemaJSONError(offset: start, reason: "duplicate member \"\(key)\"")
            }
            skipWhitespace()
            if peek == UInt8(ascii: ",") {
                i += 1
                continue
            }
            try expect("}")
            return .object(members)
        }
    }

    mutating func array(depth: Int) throws(SchemaJSONError) -> SchemaJSON {
        i += 1
        var items: [SchemaJSON] = []
        skipWhitespace()
        if peek == UInt8(ascii: "]") {
            i += 1
            return .array(items)
        }
        while true {
            skipWhitespace()
            items.append(try value(depth: depth + 1))
            skipWhitespace()
            if peek == UInt8(ascii: ",") {
                i += 1
                continue
            }
            try expect("]")
            return .array(items)
        }
    }

    mutating func number() throws(SchemaJSONError) -> SchemaJSON {
        let start = i
        func digits(_ p: inout Parser) -> Int {
            let s = p.i
            while let b = p.peek, b >= UInt8(ascii: "0"), b <= UInt8(ascii: "9") { p.i += 1 }
            return p.i - s
        }
        if peek == UInt8(ascii: "-") { i += 1 }
        if peek == UInt8(ascii: "0") {
            i += 1
        } else if digits(&self) == 0 {
            throw error("expected a digit")
        }
        if peek == UInt8(ascii: ".") {
            i += 1
            guard digits(&self) > 0 else { throw error("expected a fraction digit") }
        }
        if peek == UInt8(ascii: "e") || peek == UInt8(ascii: "E") {
            i += 1
            if peek == UInt8(ascii: "+") || peek == UInt8(ascii: "-") { i += 1 }
            guard digits(&self) > 0 else { throw error("expected an exponent digit") }
        }
        guard let d = Double(String(decoding: bytes[start..<i], as: UTF8.self)), d.isFinite else {
            throw SchemaJSONError(offset: start, reason: "number out of range")
        }
        return .number(d)
    }

    mutating func string() throws(SchemaJSONError) -> String {
        i += 1
        var out: [UInt8] = []
        while true {
            guard let b = peek else { throw error("unterminated string") }
            i += 1
            switch b {
            case UInt8(ascii: "\""):
                guard let s = String(validating: out, as: UTF8.self) else { throw error("string is not UTF-8") }
                return s
            case UInt8(ascii: "\\"):
                guard let e = peek else { throw error("unterminated escape") }
                i += 1
                switch e {
                case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): out.append(e)
                case UInt8(ascii: "b"): out.append(0x08)
                case UInt8(ascii: "f"): out.append(0x0C)
                case UInt8(ascii: "n"): out.append(0x0A)
                case UInt8(ascii: "r"): out.append(0x0D)
                case UInt8(ascii: "t"): out.append(0x09)
                case UInt8(ascii: "u"):
                    var scalar = try hex4()
                    if (0xD800...0xDBFF).contains(scalar) {
                        try expect("\\u")
                        let low = try hex4()
                        guard (0xDC00...0xDFFF).contains(low) else { throw error("unpaired surrogate") }
                        scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
                    }
                    guard let u = Unicode.Scalar(scalar) else { throw error("unpaired surrogate") }
                    UTF8.encode(u) { out.append($0) }
                default: throw error("unknown escape")
                }
            case 0x00..<0x20: throw error("control character in a string")
            default: out.append(b)
            }
        }
    }

    mutating func hex4() throws(SchemaJSONError) -> UInt32 {
        var v: UInt32 = 0
        for _ in 0..<4 {
            guard let b = peek else { throw error("unterminated escape") }
            let d: UInt8
            switch b {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): d = b - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): d = b - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): d = b - UInt8(ascii: "A") + 10
            default: throw error("bad hex digit")
            }
            v = v << 4 | UInt32(d)
            i += 1
        }
        return v
    }
}
