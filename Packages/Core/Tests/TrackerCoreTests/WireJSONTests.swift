import Foundation
import Testing
import TrackerCore
import TrackerCoreTestKit

@Suite struct WireJSONNumberTests {
    /// Contract §3.5 vectors plus a few more layouts of ECMAScript Number::toString.
    static let vectors: [(Double, String)] = [
        (15, "15"), (2, "2"), (502, "502"), (0.5, "0.5"), (0.1, "0.1"), (1.5, "1.5"), (-2.25, "-2.25"),
        (1e20, "100000000000000000000"), (1_152_921_504_606_846_976, "1152921504606847000"),
        (1e21, "1e+21"), (1.23e22, "1.23e+22"), (0.000001, "0.000001"), (1e-7, "1e-7"),
        (1.5e-7, "1.5e-7"), (0, "0"), (-0.0, "0"), (-1, "-1"), (123.456, "123.456"),
        (9_007_199_254_740_992, "9007199254740992"), (Double("9007199254740993")!, "9007199254740992"),
        (-9_007_199_254_740_991, "-9007199254740991"), (1e16, "10000000000000000"),
        (0.1 + 0.2, "0.30000000000000004"), (Double.leastNonzeroMagnitude, "5e-324"), (1.7976931348623157e308, "1.7976931348623157e+308"),
        (123e-20, "1.23e-18"), (0.00001234, "0.00001234"), (1e-6, "0.000001"), (1.25e-6, "0.00000125"),
        (Double("123456789012345680000")!, "123456789012345680000"), (-1e21, "-1e+21"), (1e100, "1e+100"),
        (4.35, "4.35"), (100, "100"), (2.5e-5, "0.000025"),
    ]

    @Test(arguments: vectors.indices)
    func formatsLikeJavaScript(_ i: Int) {
        let (value, expected) = Self.vectors[i]
        #expect(WireJSON.formatNumber(value) == expected)
        #expect(WireJSON.encodeString(.number(value)) == expected)
    }

    @Test func nonFiniteIsNull() {
        #expect(WireJSON.formatNumber(.nan) == "null")
        #expect(WireJSON.formatNumber(.infinity) == "null")
        #expect(WireJSON.encodeString([.number(-.infinity)]) == "[null]")
    }

    @Test func integersPrintAsDigits() {
        var w = WireWriter()
        for v in [0, 7, 10, 99, 100, 12345, -42, Int.max, Int.min] {
            w.writeInt(v)
            w.writeByte(32)
        }
        let s = String(decoding: w.finish(), as: UTF8.self)
        #expect(s == "0 7 10 99 100 12345 -42 9223372036854775807 -9223372036854775808 ")
    }

    @Test func randomDoublesRoundTrip() throws {
        var rng = SplitMix64(seed: 42)
        for _ in 0..<20_000 {
            let bits = rng.next()
            let d = Double(bitPattern: bits)
            guard d.isFinite else { continue }
            let text = WireJSON.formatNumber(d)
            let back = try WireJSON.decode(text)
            #expect(back == .number(d == 0 ? 0 : d), "\(d) -> \(text)")
            // Layout: never a trailing `.0`, never a `+` exponent below 1e21.
            #expect(!text.hasSuffix(".0"))
        }
    }
}

@Suite struct WireJSONStringTests {
    @Test func escapesLikeJSONStringify() {
        #expect(WireJSON.encodeString("a\"b\\c") == #""a\"b\\c""#)
        #expect(WireJSON.encodeString("\u{8}\t\n\u{C}\r") == #""\b\t\n\f\r""#)
        #expect(WireJSON.encodeString("\u{0}\u{1}\u{B}\u{1F}") == #""\u0000\u0001\u000b\u001f""#)
        #expect(WireJSON.encodeString("a/b") == #""a/b""#)
        #expect(WireJSON.encodeString("\u{7F}\u{2028}\u{2029}") == "\"\u{7F}\u{2028}\u{2029}\"")
        #expect(WireJSON.encodeString("é👍🏽日本") == "\"é👍🏽日本\"")
        #expect(WireJSON.encodeString("") == "\"\"")
    }

    @Test func longStringsUseTheBulkPathCorrectly() {
        // Escapes at every offset relative to the 8-byte blocks.
        for offset in 0..<20 {
            let plain = String(repeating: "x", count: offset)
            let tail = String(repeating: "y", count: 13)
            for special in ["\"", "\\", "\n", "\u{1}", "é", "\u{7F}"] {
                let s = plain + special + tail
                let expected: String
                switch special {
                case "\"": expected = plain + "\\\"" + tail
                case "\\": expected = plain + "\\\\" + tail
                case "\n": expected = plain + "\\n" + tail
                case "\u{1}": expected = plain + "\\u0001" + tail
                default: expected = s
                }
                #expect(WireJSON.encodeString(.string(s)) == "\"" + expected + "\"")
            }
        }
    }

    @Test func bridgedAndSubstringBackedStringsEncode() {
        let big = String(repeating: "ab/\"", count: 1000)
        let out = WireJSON.encode(.string(big))
        #expect(out.count == 2 + 1000 * 5)
    }

    @Test func compactObjectsKeepOrder() {
        let v: JSONValue = ["z": 1, "a": [true, false, nil], "m": ["k": "v"], "e": [:], "l": []]
        #expect(WireJSON.encodeString(v) == #"{"z":1,"a":[true,false,null],"m":{"k":"v"},"e":{},"l":[]}"#)
        var out: [UInt8] = [65]
        WireJSON.write(v, into: &out)
        #expect(out.count == 1 + WireJSON.encode(v).count)
    }

    @Test func writerKeysAndFragments() {
        var w = WireWriter(capacity: 1)
        w.writeByte(123)
        w.writeKey("a", first: true)
        w.writeInt(1)
        w.writeKey("b")
        w.writeString("x")
        w.writeKey("c")
        w.writeNull()
        w.writeKey("d")
        w.writeBool(false)
        w.writeByte(125)
        #expect(String(decoding: w.finish(), as: UTF8.self) == #"{"a":1,"b":"x","c":null,"d":false}"#)
    }
}

@Suite struct WireJSONDecoderTests {
    @Test func loneSurrogatesBecomeReplacementCharacter() throws {
        #expect(try WireJSON.decode(#""\ud800""#) == .string("\u{FFFD}"))
        #expect(try WireJSON.decode(#""\udc00x""#) == .string("\u{FFFD}x"))
        #expect(try WireJSON.decode(#""\ud800\u0041""#) == .string("\u{FFFD}A"))
        #expect(try WireJSON.decode(#""\ud83d\udc4d""#) == .string("👍"))
        #expect(try WireJSON.decode(#""\u00e9\/""#) == .string("é/"))
    }

    @Test func duplicateKeysKeepFirstPositionLastValue() throws {
        let v = try WireJSON.decode(#"{"a":1,"b":2,"a":3}"#)
        #expect(WireJSON.encodeString(v) == #"{"a":3,"b":2}"#)
    }

    @Test func numbers() throws {
        #expect(try WireJSON.decode("-0") == .number(-0.0))
        #expect(try WireJSON.decode("123456789012345678") == .number(Double("123456789012345678")!))
        #expect(try WireJSON.decode("1.5e-7") == .number(1.5e-7))
        #expect(try WireJSON.decode("1E+2") == .number(100))
        for bad in ["01", "1.", ".5", "-", "1e", "+1", "[1,]", "{\"a\"}", "\"\u{1}\"", "tru", "1 2"] {
            #expect(throws: JSONParseError.self, "\(bad)") { try WireJSON.decode(bad) }
        }
    }
}

@Suite struct WireJSONJavaScriptVectorTests {
    /// `Tests/Fixtures/js-number-vectors.txt` was written by Node's `String(n)`
    /// (`Tools/scripts/make-js-number-vectors.js`): random bit patterns, powers of ten, short decimals.
    @Test func matchesNodeNumberToString() throws {
        let path = PackagePaths.packageRoot(#filePath) + "/Tests/Fixtures/js-number-vectors.txt"
        let text = try String(contentsOfFile: path, encoding: .utf8)
        var checked = 0
        for line in text.split(separator: "\n") {
            let parts = line.split(separator: " ")
            try #require(parts.count == 2)
            let bits = try #require(UInt64(parts[0], radix: 16))
            let value = Double(bitPattern: bits)
            #expect(WireJSON.formatNumber(value) == String(parts[1]), "bits \(parts[0])")
            checked += 1
        }
        #expect(checked > 1000)
    }
}
