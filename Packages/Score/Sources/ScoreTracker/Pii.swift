import Foundation
import Synchronization
import TrackerCore

/// FNV-1a 32-bit, the hash behind `PiiAction.hash_`.
enum FNV1a {
    static func hash32(_ bytes: [UInt8]) -> UInt32 {
        var h: UInt32 = 0x811C_9DC5
        for b in bytes {
            h ^= UInt32(b)
            h = h &* 0x0100_0193
        }
        return h
    }

    /// `h:` + 8 lowercase hex digits of the hash of `value`'s wire encoding.
    static func piiHash(_ value: JSONValue) -> String {
        let h = hash32(WireJSON.encode(value))
        let hex: [UInt8] = Array("0123456789abcdef".utf8)
        var out: [UInt8] = [104, 58]
        for i in stride(from: 28, through: 0, by: -4) { out.append(hex[Int((h >> UInt32(i)) & 0xF)]) }
        return String(decoding: out, as: UTF8.self)
    }
}

/// Marks input that is not JSON.
struct InvalidInput: Error {}

/// Converts app values to JSON and scrubs them in one pass.
final class PiiScrubber: Sendable {
    enum Rule: Sendable { case drop, redact, tokenize, hash }
    private let rules: [String: Rule]
    private let tokens = Mutex<(next: Int, table: [[UInt8]: Int])>((1, [:]))
    let ruleCount: Int

    init(_ options: PiiOptions?) {
        var r: [String: Rule] = [:]
        switch options {
        case let .classify(list)?:
            for rule in list where r[rule.field] == nil {
                switch rule.action {
                case .drop: r[rule.field] = .drop
                case .redact: r[rule.field] = .redact
                case .tokenize: r[rule.field] = .tokenize
                case .hash_: r[rule.field] = .hash
                }
            }
        case let .denylist(keys)?:
            for k in keys { r[k] = .drop }
        case nil: break
        }
        rules = r
        ruleCount = options?.ruleCount ?? 0
    }

    /// Converts and scrubs `dict`; throws ``InvalidInput`` for a non-JSON value anywhere.
    /// `size` accumulates an upper bound of the encoded size.
    func object(_ dict: [String: Any], size: inout Int) throws(InvalidInput) -> JSONObject {
        var pairs: [(String, JSONValue)] = []
        pairs.reserveCapacity(dict.count)
        var items: [(key: String, value: Any)] = []
        items.reserveCapacity(dict.count)
        for item in dict { items.append(item) }
        items.sort { $0.key.utf8.lexicographicallyPrecedes($1.key.utf8) }
        for (key, raw) in items {
            size += key.utf8.count * 6 + 4
            if let rule = rules.isEmpty ? nil : rules[key] {
                var ignored = 0
                let value = try convert(raw, size: &ignored)
                switch rule {
                case .drop: continue
                case .redact: pairs.append((key, .string("<redacted>"))); size += 12
                case .tokenize: pairs.append((key, .string(token(for: value)))); size += 24
                case .hash: pairs.append((key, .string(FNV1a.piiHash(value)))); size += 12
                }
            } else {
                pairs.append((key, try convert(raw, size: &size)))
            }
        }
        var o = JSONObject()
        for (k, v) in pairs { o.appendUnchecked(k, v) }
        return o
    }

    private func token(for value: JSONValue) -> String {
        let key = WireJSON.encode(value)
        let n = tokens.withLock { t -> Int in
            if let n = t.table[key] { return n }
            let n = t.next
            t.next += 1
            t.table[key] = n
            return n
        }
        return "t:\(n)"
    }

    func convert(_ raw: Any, size: inout Int) throws(InvalidInput) -> JSONValue {
        switch raw {
        case let s as String:
            size += s.utf8.count * 6 + 2
            return .string(s)
        case let b as Bool:
            size += 5
            return .bool(b)
        case let i as Int:
            size += 24
            return .number(Double(i))
        case let d as Double:
            guard d.isFinite else { throw InvalidInput() }
            size += 25
            return .number(d)
        case let o as [String: Any]:
            size += 2
            return .object(try object(o, size: &size))
        case let a as [Any]:
            size += 2
            var out: [JSONValue] = []
            out.reserveCapacity(a.count)
            for e in a {
                size += 1
                out.append(try convert(e, size: &size))
            }
            return .array(out)
        case is NSNull:
            size += 4
            return .null
        case let v as JSONValue:
            return try scrubValue(v, size: &size)
        default:
            return try convertOther(raw, size: &size)
        }
    }

    private func convertOther(_ raw: Any, size: inout Int) throws(InvalidInput) -> JSONValue {
        size += 25
        switch raw {
        case let v as Float: guard v.isFinite else { throw InvalidInput() }; return .number(Double(v))
        case let v as Int8: return .number(Double(v))
        case let v as Int16: return .number(Double(v))
        case let v as Int32: return .number(Double(v))
        case let v as Int64: return .number(Double(v))
        case let v as UInt: return .number(Double(v))
        case let v as UInt8: return .number(Double(v))
        case let v as UInt16: return .number(Double(v))
        case let v as UInt32: return .number(Double(v))
        case let v as UInt64: return .number(Double(v))
        case let v as Substring: size += v.utf8.count * 6; return .string(String(v))
        case let v as NSNumber:
            let d = v.doubleValue
            guard d.isFinite else { throw InvalidInput() }
            return .number(d)
        case let v as [String]:
            var s = 0
            return try convert(v.map { $0 as Any }, size: &s)
        default:
            throw InvalidInput()
        }
    }

    /// Scrubs an already-typed JSON value (keys re-sorted by code point).
    private func scrubValue(_ v: JSONValue, size: inout Int) throws(InvalidInput) -> JSONValue {
        switch v {
        case let .object(o):
            var dict: [String: Any] = [:]
            for e in o.entries { dict[e.key] = e.value }
            return .object(try object(dict, size: &size))
        case let .array(a):
            var out: [JSONValue] = []
            for e in a { out.append(try scrubValue(e, size: &size)) }
            return .array(out)
        case let .number(n):
            guard n.isFinite else { throw InvalidInput() }
            size += 25
            return v
        case let .string(s):
            size += s.utf8.count * 6 + 2
            return v
        default:
            size += 5
            return v
        }
    }
}
