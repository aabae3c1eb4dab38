/// The wire JSON codec: compact output byte-identical to JavaScript's `JSON.stringify`, and a
/// strict RFC 8259 parser that keeps object member order.
///
/// Encoding rules (<doc:WireEncoding#Strings> and <doc:WireEncoding#Numbers>):
/// - no whitespace between tokens, object members in the order they are stored;
/// - strings: `"` and `\` escaped, U+0008/09/0A/0C/0D as `\b \t \n \f \r`, every other code point
///   below U+0020 as `\u00xx` (lowercase hex); everything else (including `/`, U+007F, U+2028,
///   U+2029 and all non-ASCII) written literally as UTF-8;
/// - numbers: ECMAScript Number-to-String (`15`, `0.5`, `1e+21`, `1.5e-7`, `-0` → `0`);
///   NaN and infinities are written `null`, as JavaScript does.
public enum WireJSON {
    /// Encodes `value` compactly, as `JSON.stringify(value)` would. Non-finite numbers are
    /// written `null`, as JavaScript does.
    public static func encode(_ value: JSONValue) -> [UInt8] {
        var w = WireWriter()
        w.write(value)
        return w.finish()
    }

    /// Encodes `value` to a `String`.
    public static func encodeString(_ value: JSONValue) -> String {
        String(decoding: encode(value), as: UTF8.self)
    }

    /// Appends the encoding of `value` to `out`.
    public static func write(_ value: JSONValue, into out: inout [UInt8]) {
        var w = WireWriter()
        w.write(value)
        w.appendBytes(to: &out)
    }

    /// Appends a JSON string literal with JavaScript's escaping.
    public static func writeString(_ s: String, into out: inout [UInt8]) {
        var w = WireWriter(capacity: s.utf8.count + 16)
        w.writeString(s)
        w.appendBytes(to: &out)
    }

    /// Appends a number in ECMAScript Number-to-String form.
    public static func writeNumber(_ n: Double, into out: inout [UInt8]) {
        var w = WireWriter(capacity: 32)
        w.writeNumber(n)
        w.appendBytes(to: &out)
    }

    /// ECMAScript Number-to-String (`String(n)` in JavaScript); `null` for NaN and infinities.
    public static func formatNumber(_ value: Double) -> String {
        var w = WireWriter(capacity: 32)
        w.writeNumber(value)
        return String(decoding: w.finish(), as: UTF8.self)
    }
}

/// A growable byte buffer that writes JSON tokens exactly as `JSON.stringify` does.
///
/// Contract types use it for their direct encoding path (``WireEncodable/writeWire(to:)``), which
/// skips building a ``JSONValue`` tree. The writer only emits tokens: callers are responsible for
/// the `,` and `:` separators between them (see ``writeKey(_:first:)``).
public struct WireWriter: ~Copyable {
    private var base: UnsafeMutablePointer<UInt8>
    private var capacity: Int
    /// Number of bytes written so far.
    public private(set) var count: Int

    /// Creates an empty writer with room for `capacity` bytes before it grows.
    public init(capacity: Int = 1024) {
        let c = Swift.max(capacity, 16)
        base = .allocate(capacity: c)
        self.capacity = c
        count = 0
    }

    deinit { base.deallocate() }

    /// The bytes written, as an array. Consumes the writer.
    public consuming func finish() -> [UInt8] {
        let n = count
        let src = UnsafePointer(base)
        return ByteArrays.make(count: n) { buf, initialized in
            buf.baseAddress!.initialize(from: src, count: n)
            initialized = n
        }
    }

    /// Appends the bytes written so far to `out`.
    public func appendBytes(to out: inout [UInt8]) {
        out.append(contentsOf: UnsafeBufferPointer(start: base, count: count))
    }

    /// Calls `body` with the bytes written so far (valid only during the call), e.g. to copy
    /// parts of them in another order without finishing the writer.
    public func withUnsafeBytes<R, E: Error>(_ body: (UnsafeBufferPointer<UInt8>) throws(E) -> R) throws(E) -> R {
        try body(UnsafeBufferPointer(start: base, count: count))
    }

    /// Makes sure `extra` more bytes fit without growing.
    @inline(__always)
    public mutating func reserve(_ extra: Int) {
        if count &+ extra > capacity { grow(count + extra) }
    }

    private mutating func grow(_ needed: Int) {
        var c = capacity &* 2
        while c < needed { c &*= 2 }
        let nb = UnsafeMutablePointer<UInt8>.allocate(capacity: c)
        nb.initialize(from: base, count: count)
        base.deallocate()
        base = nb
        capacity = c
    }

    /// Appends one byte (no escaping).
    @inline(__always)
    public mutating func writeByte(_ b: UInt8) {
        if count == capacity { grow(count + 1) }
        base[count] = b
        count &+= 1
    }

    /// Appends raw bytes (no escaping): for punctuation and pre-encoded fragments.
    @inline(__always)
    public mutating func writeRaw(_ bytes: UnsafeRawBufferPointer) {
        let n = bytes.count
        guard n > 0 else { return }
        reserve(n)
        (base + count).initialize(from: bytes.baseAddress!.assumingMemoryBound(to: UInt8.self), count: n)
        count &+= n
    }

    /// Appends a static ASCII fragment verbatim, e.g. `,"seq":`.
    @inline(__always)
    public mutating func writeRaw(_ s: StaticString) {
        writeRaw(UnsafeRawBufferPointer(start: s.utf8Start, count: s.utf8CodeUnitCount))
    }

    /// Writes `"key":` preceded by `,` unless `first`. `key` must need no escaping (contract keys
    /// are ASCII identifiers); use ``writeString(_:)`` for arbitrary keys.
    @inline(__always)
    public mutating func writeKey(_ key: StaticString, first: Bool = false) {
        let n = key.utf8CodeUnitCount
        reserve(n + 4)
        if !first {
            base[count] = 44
            count &+= 1
        }
        base[count] = 34
        (base + count + 1).initialize(from: key.utf8Start, count: n)
        base[count + 1 + n] = 34
        base[count + 2 + n] = 58
        count &+= n + 3
    }

    /// Writes `null`.
    @inline(__always)
    public mutating func writeNull() { writeRaw("null") }

    /// Writes `true` or `false`.
    @inline(__always)
    public mutating func writeBool(_ b: Bool) { if b { writeRaw("true") } else { writeRaw("false") } }

    /// Writes any JSON value.
    public mutating func write(_ value: borrowing JSONValue) {
        switch value {
        case .null: writeRaw("null")
        case .bool(let b): writeBool(b)
        case .number(let n): writeNumber(n)
        case .string(let s): writeString(s)
        case .array(let a):
            writeByte(91)
            // Elements are borrowed through the buffer pointer: no retain/release per element.
            a.withUnsafeBufferPointer { buf in
                for i in 0..<buf.count {
                    if i > 0 { writeByte(44) }
                    write(buf[i])
                }
            }
            writeByte(93)
        case .object(let o):
            writeByte(123)
            o.entries.withUnsafeBufferPointer { buf in
                for i in 0..<buf.count {
                    if i > 0 { writeByte(44) }
                    writeString(buf[i].key)
                    writeByte(58)
                    write(buf[i].value)
                }
            }
            writeByte(125)
        }
    }

    // MARK: Strings

    /// Writes a JSON string literal with `JSON.stringify`'s escaping.
    @inline(__always)
    public mutating func writeString(_ s: String) {
        // Native strings (including small ones) expose contiguous UTF-8; bridged ones are made native.
        if s.utf8.withContiguousStorageIfAvailable({ writeStringBytes($0) }) == nil {
            var copy = s
            copy.makeContiguousUTF8()
            copy.utf8.withContiguousStorageIfAvailable { writeStringBytes($0) }
        }
    }

    /// Writes a JSON string literal from UTF-8 bytes (assumed valid UTF-8) with `JSON.stringify`'s escaping.
    public mutating func writeStringBytes(_ src: UnsafeBufferPointer<UInt8>) {
        let n = src.count
        // Worst case: every byte becomes `\u00xx`; 8 bytes of slack for the word-wide copy.
        reserve(n &* 6 &+ 10)
        var out = base + count
        out.pointee = 34
        out += 1
        guard n > 0, let p = src.baseAddress else {
            out.pointee = 34
            count = out + 1 - base
            return
        }
        var i = 0
        while i < n {
            // Copy the run of bytes needing no escape, a word at a time, then byte by byte.
            var j = i
            while j &+ 8 <= n {
                let w = UnsafeRawPointer(p + j).loadUnaligned(as: UInt64.self)
                if WireWriter.needsEscape(w) { break }
                UnsafeMutableRawPointer(out).storeBytes(of: w, as: UInt64.self)
                out += 8
                j &+= 8
            }
            while j < n {
                let c = p[j]
                if c < 0x20 || c == 0x22 || c == 0x5C { break }
                out.pointee = c
                out += 1
                j &+= 1
            }
            if j == n { break }
            let c = p[j]
            out.pointee = 92
            let letter: UInt8
            switch c {
            case 0x22: letter = 0x22
            case 0x5C: letter = 0x5C
            case 0x08: letter = 98  // b
            case 0x09: letter = 116  // t
            case 0x0A: letter = 110  // n
            case 0x0C: letter = 102  // f
            case 0x0D: letter = 114  // r
            default: letter = 0
            }
            if letter != 0 {
                out[1] = letter
                out += 2
            } else {
                // `\u00xx`, lowercase hex.
                out[1] = 117
                out[2] = 48
                out[3] = 48
                out[4] = WireWriter.hexDigit(c >> 4)
                out[5] = WireWriter.hexDigit(c & 15)
                out += 6
            }
            i = j &+ 1
        }
        out.pointee = 34
        count = out + 1 - base
    }

    @inline(__always)
    private static func hexDigit(_ v: UInt8) -> UInt8 { v < 10 ? 48 &+ v : 87 &+ v }

    /// Whether any of the 8 bytes is below 0x20, `"` or `\`.
    @inline(__always)
    private static func needsEscape(_ w: UInt64) -> Bool {
        let ones: UInt64 = 0x0101_0101_0101_0101
        let high: UInt64 = 0x8080_8080_8080_8080
        let lt20 = (w &- ones &* 0x20) & ~w & high
        let q = w ^ (ones &* 0x22)
        let bs = w ^ (ones &* 0x5C)
        let eqQ = (q &- ones) & ~q & high
        let eqB = (bs &- ones) & ~bs & high
        return (lt20 | eqQ | eqB) != 0
    }

    // MARK: Numbers

    /// Writes an integer as plain decimal digits.
    public mutating func writeInt(_ v: Int) {
        reserve(21)
        var out = base + count
        var m: UInt64
        if v < 0 {
            out.pointee = 45
            out += 1
            m = UInt64(bitPattern: Int64(v)).magnitudeOfNegative
        } else {
            m = UInt64(v)
        }
        out += WireWriter.writeDigits(m, to: out)
        count = out - base
    }

    /// Writes the decimal digits of `m` at `out`, returning how many were written (at most 20).
    @inline(__always)
    private static func writeDigits(_ m: UInt64, to out: UnsafeMutablePointer<UInt8>) -> Int {
        if m < 10 {
            out.pointee = 48 &+ UInt8(truncatingIfNeeded: m)
            return 1
        }
        var len = 1
        var t = m
        while t >= 10 {
            t /= 10
            len &+= 1
        }
        var v = m
        var pos = len
        digitPairs.withUnsafeBufferPointer { pairs in
            while v >= 100 {
                let r = Int(v % 100)
                v /= 100
                pos &-= 2
                out[pos] = pairs[2 &* r]
                out[pos &+ 1] = pairs[2 &* r &+ 1]
            }
            if v >= 10 {
                let r = Int(v)
                out[0] = pairs[2 &* r]
                out[1] = pairs[2 &* r &+ 1]
            } else {
                out[0] = 48 &+ UInt8(truncatingIfNeeded: v)
            }
        }
        return len
    }

    private static let digitPairs: [UInt8] = {
        var t = [UInt8]()
        t.reserveCapacity(200)
        for i in 0..<100 {
            t.append(48 + UInt8(i / 10))
            t.append(48 + UInt8(i % 10))
        }
        return t
    }()

    /// Writes a number in ECMAScript Number-to-String form; `null` for NaN and infinities.
    public mutating func writeNumber(_ value: Double) {
        guard value.isFinite else {
            writeRaw("null")
            return
        }
        if value == 0 {
            writeByte(48)
            return
        }  // also -0
        // Integers below 2^53 print as their digits.
        if value.magnitude < 9_007_199_254_740_992, value.rounded(.towardZero) == value {
            writeInt(Int(value))
            return
        }
        if value < 0 { writeByte(45) }
        writeNonIntegerMagnitude(value.magnitude)
    }

    /// Lays out a positive finite value from the shortest round-trip digits of Swift's
    /// `description` (the same digits ECMAScript picks), following Number::toString.
    private mutating func writeNonIntegerMagnitude(_ value: Double) {
        var desc = value.description  // e.g. "1.5e-07", "1e+21", "0.1", "1.152921504606847e+18"
        desc.withUTF8 { d in
            withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 32) { digits in
                var k = 0  // significant digits collected
                var pointPos = 0  // digits before the decimal point (in the mantissa)
                var seenPoint = false
                var leading = true
                var i = 0
                var exp10 = 0
                while i < d.count {
                    let c = d[i]
                    if c == 46 {
                        seenPoint = true
                        i += 1
                        continue
                    }
                    if c == 101 || c == 69 {
                        i += 1
                        var neg = false
                        if i < d.count, d[i] == 45 || d[i] == 43 {
                            neg = d[i] == 45
                            i += 1
                        }
                        var e = 0
                        while i < d.count {
                            e = e * 10 + Int(d[i] &- 48)
                            i += 1
                        }
                        exp10 = neg ? -e : e
                        break
                    }
                    if leading && c == 48 {
                        // A leading zero: before the point it does not count; after it, it shifts the point.
                        if seenPoint { pointPos -= 1 }
                        i += 1
                        continue
                    }
                    leading = false
                    if k < 32 {
                        digits[k] = c
                        k += 1
                    }
                    if !seenPoint { pointPos += 1 }
                    i += 1
                }
                while k > 1, digits[k - 1] == 48 { k -= 1 }
                let n = pointPos + exp10  // value = 0.d × 10^n
                reserve(k + 30)
                var out = base + count
                if k <= n && n <= 21 {
                    out.initialize(from: digits.baseAddress!, count: k)
                    out += k
                    for _ in 0..<(n - k) {
                        out.pointee = 48
                        out += 1
                    }
                } else if 0 < n && n <= 21 {
                    out.initialize(from: digits.baseAddress!, count: n)
                    out += n
                    out.pointee = 46
                    out += 1
                    out.initialize(from: digits.baseAddress! + n, count: k - n)
                    out += k - n
                } else if -6 < n && n <= 0 {
                    out[0] = 48
                    out[1] = 46
                    out += 2
                    for _ in 0..<(-n) {
                        out.pointee = 48
                        out += 1
                    }
                    out.initialize(from: digits.baseAddress!, count: k)
                    out += k
                } else {
                    out.pointee = digits[0]
                    out += 1
                    if k > 1 {
                        out.pointee = 46
                        out += 1
                        out.initialize(from: digits.baseAddress! + 1, count: k - 1)
                        out += k - 1
                    }
                    out.pointee = 101
                    out += 1
                    let e = n - 1
                    out.pointee = e < 0 ? 45 : 43
                    out += 1
                    out += WireWriter.writeDigits(UInt64(e.magnitude), to: out)
                }
                count = out - base
            }
        }
    }
}

extension UInt64 {
    /// The magnitude of a negative two's-complement value held in `self`.
    @inline(__always)
    fileprivate var magnitudeOfNegative: UInt64 { 0 &- self }
}
