import TrackerCore

#if canImport(Darwin)
    import Foundation
#endif

/// FNV-1a 32-bit, the hash behind `PiiAction.hash`.
enum FNV1a {
    static func hash32(_ bytes: [UInt8]) -> UInt32 {
        var h: UInt32 = 0x811C_9DC5
        for b in bytes {
            h ^= UInt32(b)
            h = h &* 0x0100_0193
        }
        return h
    }

    /// The hash of the wire encoding of the string `s` when it needs no escaping (`"`, its
    /// UTF-8 bytes, `"`), computed without encoding it; `nil` when it needs escaping.
    static func plainStringHash32(_ s: String) -> UInt32? {
        var h: UInt32 = 0x811C_9DC5
        @inline(__always) func mix(_ b: UInt8) {
            h ^= UInt32(b)
            h = h &* 0x0100_0193
        }
        /// Mixes `bytes` in; `false` at the first byte that needs escaping.
        func mixAll<S: Sequence<UInt8>>(_ bytes: S) -> Bool {
            for b in bytes {
                if b < 0x20 || b == 0x22 || b == 0x5C { return false }
                mix(b)
            }
            return true
        }
        mix(34)
        // Native and small strings expose their UTF-8 bytes; others are walked.
        guard s.utf8.withContiguousStorageIfAvailable({ mixAll($0) }) ?? mixAll(s.utf8) else { return nil }
        mix(34)
        return h
    }

    /// `h:` + 8 lowercase hex digits of the hash of `value`'s wire encoding.
    static func piiHash(_ value: JSONValue) -> String {
        let h: UInt32
        if case .string(let s) = value, let plain = plainStringHash32(s) {
            h = plain
        } else {
            h = hash32(WireJSON.encode(value))
        }
        // "h:" and 8 hex digits: 10 bytes, a small (inline) string.
        return withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 10) { out in
            out[0] = 104
            out[1] = 58
            for k in 0..<8 {
                let nibble = UInt8((h >> UInt32(28 - 4 * k)) & 0xF)
                out[2 + k] = nibble < 10 ? 48 + nibble : 87 + nibble
            }
            return String(decoding: out, as: UTF8.self)
        }
    }
}

/// Marks input the scrubber refuses.
enum InvalidInput: Error {
    /// Nesting deeper than ``PiiScrubber/maxDepth``: the whole call is refused.
    case tooDeep
    /// A value that is not JSON and converts to none (a non-finite number, an unknown type):
    /// only the key that holds it is dropped (issue 37 item 9).
    case unsupported
}

/// Converts app values to JSON and scrubs them in one pass.
final class PiiScrubber: Sendable {
    enum Rule: Sendable { case drop, redact, tokenize, hash }
    private let rules: [String: Rule]
    /// The rules as a list when there are only a few of them.
    private let fewRules: [(String, Rule)]?
    private let tokens = Locked<(next: Int, table: [[UInt8]: Int])>((1, [:]))
    let ruleCount: Int

    init(_ options: PiiOptions?) {
        var r: [String: Rule] = [:]
        switch options {
        case .classify(let list)?:
            for rule in list where r[rule.field] == nil {
                switch rule.action {
                case .drop: r[rule.field] = .drop
                case .redact: r[rule.field] = .redact
                case .tokenize: r[rule.field] = .tokenize
                case .hash: r[rule.field] = .hash
                }
            }
        case .denylist(let keys)?:
            for k in keys { r[k] = .drop }
        case nil: break
        }
        rules = r
        fewRules = r.count <= 8 ? r.map { ($0.key, $0.value) } : nil
        ruleCount = options?.ruleCount ?? 0
    }

    /// The rule of `key`: a few rules are compared directly (cheaper than hashing every key).
    @inline(__always)
    private func rule(for key: String) -> Rule? {
        if rules.isEmpty { return nil }
        if let few = fewRules {
            for (k, r) in few where k == key { return r }
            return nil
        }
        return rules[key]
    }

    /// Calls `body` with the entries of `dict` in key code point order (UTF-8 byte order).
    static func forEachSorted(_ dict: [String: Any], _ body: (String, Any) throws(InvalidInput) -> Void) throws(InvalidInput) {
        var keys: [String] = []
        keys.reserveCapacity(dict.count)
        var values: [Any] = []
        values.reserveCapacity(dict.count)
        for (k, v) in dict {
            keys.append(k)
            values.append(v)
        }
        // Sort positions (cheap to move), not the entries.
        var order = Array(0..<keys.count)
        if order.count > 1 { order.sort { keys[$0].utf8.lexicographicallyPrecedes(keys[$1].utf8) } }
        for i in order { try body(keys[i], values[i]) }
    }

    /// Nesting deeper than this is refused as invalid input (bounded recursion on the caller's stack).
    static let maxDepth = 64

    /// Converts and scrubs `dict`; a key whose value is not JSON (and converts to none) is
    /// dropped; throws ``InvalidInput/tooDeep`` for nesting deeper than ``maxDepth``.
    /// `size` accumulates an upper bound of the encoded size.
    func object(_ dict: [String: Any], size: inout Int) throws(InvalidInput) -> JSONObject {
        var dropped = DroppedKeys()
        return try object(dict, size: &size, depth: 0, dropped: &dropped)
    }

    /// ``object(_:size:)``, adding the keys it drops to `dropped`.
    func object(_ dict: [String: Any], size: inout Int, dropped: inout DroppedKeys) throws(InvalidInput) -> JSONObject {
        try object(dict, size: &size, depth: 0, dropped: &dropped)
    }

    private func object(
        _ dict: [String: Any], size: inout Int, depth: Int, dropped: inout DroppedKeys
    ) throws(InvalidInput) -> JSONObject {
        guard depth < PiiScrubber.maxDepth else { throw .tooDeep }
        var pairs: [(String, JSONValue)] = []
        pairs.reserveCapacity(dict.count)
        try PiiScrubber.forEachSorted(dict) { (key, raw) throws(InvalidInput) in
            size += key.utf8.count * 6 + 4
            if let rule = rule(for: key) {
                guard let text = try replacement(rule, for: raw, key: key, depth: depth, dropped: &dropped) else { return }
                pairs.append((key, .string(text)))
                size += text.utf8.count + 2
            } else {
                do throws(InvalidInput) {
                    pairs.append((key, try convert(raw, size: &size, depth: depth + 1, dropped: &dropped)))
                } catch {
                    guard error == .unsupported else { throw error }
                    dropped.add(key)
                }
            }
        }
        var o = JSONObject()
        for (k, v) in pairs { o.appendUnchecked(k, v) }
        return o
    }

    /// What `rule` puts in place of `raw` (still checked to be JSON); `nil` drops the key (a
    /// value that converts to no JSON value is reported in `dropped`, unless the rule drops it).
    private func replacement(
        _ rule: Rule, for raw: Any, key: String, depth: Int, dropped: inout DroppedKeys
    ) throws(InvalidInput) -> String? {
        let value: JSONValue
        // A `String` (the usual value of a PII field) is what `convert` makes of it, without its casts.
        if depth + 1 < PiiScrubber.maxDepth, case .string(let s) = _openExistential(raw, do: classifyCommon) {
            value = .string(s)
        } else {
            var ignored = 0
            // Keys dropped inside a value that is dropped or redacted anyway are not reported.
            var inner = DroppedKeys()
            do throws(InvalidInput) {
                value = try convert(raw, size: &ignored, depth: depth + 1, dropped: &inner)
            } catch {
                guard error == .unsupported else { throw error }
                if rule != .drop { dropped.add(key) }
                return nil
            }
            if rule == .tokenize || rule == .hash { dropped.merge(inner) }
        }
        switch rule {
        case .drop: return nil
        case .redact: return "<redacted>"
        case .tokenize: return token(for: value)
        case .hash: return FNV1a.piiHash(value)
        }
    }

    /// Only checks that values are JSON (no rules): what a call dropped by consent goes through.
    static let validator = PiiScrubber(nil)

    /// Converts, scrubs and encodes `dict` straight into wire bytes (the same bytes as
    /// `WireJSON.write(.object(object(dict)))`, without building the value tree); a key whose
    /// value is not JSON is dropped; throws ``InvalidInput/tooDeep`` for nesting deeper than
    /// ``maxDepth``, leaving `out` as it was.
    func write(_ dict: [String: Any], into out: inout [UInt8]) throws(InvalidInput) {
        var dropped = DroppedKeys()
        var w = WireWriter(capacity: 256)
        try write(dict, into: &w, depth: 0, dropped: &dropped)
        w.appendBytes(to: &out)
    }

    /// ``write(_:into:dropped:)``, not told which keys it dropped.
    func write(_ dict: [String: Any], into writer: inout WireWriter) throws(InvalidInput) {
        var dropped = DroppedKeys()
        try write(dict, into: &writer, depth: 0, dropped: &dropped)
    }

    /// Converts, scrubs and encodes `dict` into `writer` (see ``write(_:into:)-([String:Any],[UInt8])``),
    /// adding the keys it drops to `dropped`; throws ``InvalidInput/tooDeep`` for nesting deeper
    /// than ``maxDepth``, leaving `writer` partly written.
    func write(_ dict: [String: Any], into writer: inout WireWriter, dropped: inout DroppedKeys) throws(InvalidInput) {
        try write(dict, into: &writer, depth: 0, dropped: &dropped)
    }

    /// The first 8 UTF-8 bytes of `key` as a big-endian number, zero-padded: ordering two keys by
    /// it orders them by code point whenever it differs (a tie needs their bytes).
    @inline(__always)
    private static func sortPrefix(_ key: String) -> UInt64 {
        /// The first 8 of `bytes`, big-endian.
        func prefix<S: Sequence<UInt8>>(_ bytes: S) -> UInt64 {
            var p: UInt64 = 0
            var shift: UInt64 = 56
            for b in bytes {
                p |= UInt64(b) << shift
                if shift == 0 { break }
                shift -= 8
            }
            return p
        }
        // Native and small strings expose their UTF-8 bytes; others are walked.
        return key.utf8.withContiguousStorageIfAvailable { prefix($0) } ?? prefix(key.utf8)
    }

    /// Members up to this count are sorted by insertion (no comparison closure).
    private static let insertionSortMax = 16

    private func write(
        _ dict: [String: Any], into w: inout WireWriter, depth: Int, dropped: inout DroppedKeys
    ) throws(InvalidInput) {
        guard depth < PiiScrubber.maxDepth else { throw .tooDeep }
        let n = dict.count
        if n == 0 {
            w.writeRaw("{}")
            return
        }
        typealias Slot = (prefix: UInt64, index: Dictionary<String, Any>.Index)
        // The members' positions, sorted in a temporary buffer (on the stack for a few of them):
        // no copy of a key or value is made until it is written.
        try withUnsafeTemporaryAllocation(of: Slot.self, capacity: n) { (buf) throws(InvalidInput) in
            let base = buf.baseAddress!
            var count = 0
            var i = dict.startIndex
            while i != dict.endIndex && count < n {
                (base + count).initialize(to: (PiiScrubber.sortPrefix(dict.keys[i]), i))
                count += 1
                dict.formIndex(after: &i)
            }
            defer { base.deinitialize(count: count) }
            let keys = dict.keys
            func precedes(_ a: Slot, _ b: Slot) -> Bool {
                if a.prefix != b.prefix { return a.prefix < b.prefix }
                return keys[a.index].utf8.lexicographicallyPrecedes(keys[b.index].utf8)
            }
            var slots = UnsafeMutableBufferPointer(start: base, count: count)
            if count <= PiiScrubber.insertionSortMax {
                var k = 1
                while k < count {
                    let moving = slots[k]
                    var j = k
                    while j > 0 && precedes(moving, slots[j - 1]) {
                        slots[j] = slots[j - 1]
                        j -= 1
                    }
                    slots[j] = moving
                    k += 1
                }
            } else {
                slots.sort { precedes($0, $1) }
            }
            w.writeByte(123)  // {
            var first = true
            for k in 0..<count {
                let (key, raw) = dict[slots[k].index]
                if let rule = rule(for: key) {
                    guard let replaced = try replacement(rule, for: raw, key: key, depth: depth, dropped: &dropped) else {
                        continue
                    }
                    PiiScrubber.openMember(key, first: &first, into: &w)
                    w.writeString(replaced)
                } else {
                    try writeMember(key, raw, first: &first, into: &w, depth: depth + 1, dropped: &dropped)
                }
            }
            w.writeByte(125)  // }
        }
    }

    /// Writes `,` unless `first`, then `"key":`.
    @inline(__always)
    private static func openMember(_ key: String, first: inout Bool, into w: inout WireWriter) {
        if !first { w.writeByte(44) }  // ,
        first = false
        w.writeString(key)
        w.writeByte(58)  // :
    }

    /// Writes the member `key: raw`, or drops it (adding `key` to `dropped`) when `raw` converts
    /// to no JSON value: decided before the key is written. The common exact types are written
    /// directly (the same bytes as the general path: an exact `String`, `Int`, `Bool`, `Double` or
    /// `[String: Any]` matches the same case of ``writeGeneralMember(_:_:first:into:depth:dropped:)``);
    /// anything else goes through that general path.
    private func writeMember(
        _ key: String, _ raw: Any, first: inout Bool, into w: inout WireWriter, depth: Int, dropped: inout DroppedKeys
    ) throws(InvalidInput) {
        let common = _openExistential(raw, do: classifyCommon)
        switch common {
        case .string(let s):
            PiiScrubber.openMember(key, first: &first, into: &w)
            w.writeString(s)
        case .int(let i):
            PiiScrubber.openMember(key, first: &first, into: &w)
            w.writeNumber(Double(i))
        case .bool(let b):
            PiiScrubber.openMember(key, first: &first, into: &w)
            w.writeBool(b)
        case .double(let d):
            guard d.isFinite else { return dropped.add(key) }
            PiiScrubber.openMember(key, first: &first, into: &w)
            w.writeNumber(d)
        case .object(let o):
            guard depth < PiiScrubber.maxDepth else { throw .tooDeep }
            PiiScrubber.openMember(key, first: &first, into: &w)
            try write(o, into: &w, depth: depth, dropped: &dropped)
        case .other:
            try writeGeneralMember(key, raw, first: &first, into: &w, depth: depth, dropped: &dropped)
        }
    }

    /// Any value: the scalar types and objects by dynamic cast, the rest through
    /// ``convert(_:size:depth:dropped:)`` (a value it refuses drops `key`).
    private func writeGeneralMember(
        _ key: String, _ raw: Any, first: inout Bool, into w: inout WireWriter, depth: Int, dropped: inout DroppedKeys
    ) throws(InvalidInput) {
        switch raw {
        case is any ScorePropertyConvertible:
            // First: on Apple platforms a `Decimal` also casts to `Bool` and `Int` (through
            // `NSDecimalNumber`), and `Decimal(1)` must not be sent as `true`.
            try writeConverted(key, raw, first: &first, into: &w, depth: depth, dropped: &dropped)
        case let s as String:
            PiiScrubber.openMember(key, first: &first, into: &w)
            w.writeString(s)
        case let b as Bool where !PiiScrubber.isBoxedNumber(raw):
            PiiScrubber.openMember(key, first: &first, into: &w)
            w.writeBool(b)
        case let i as Int:
            PiiScrubber.openMember(key, first: &first, into: &w)
            w.writeNumber(Double(i))
        case let d as Double:
            guard d.isFinite else { return dropped.add(key) }
            PiiScrubber.openMember(key, first: &first, into: &w)
            w.writeNumber(d)
        case let o as [String: Any]:
            guard depth < PiiScrubber.maxDepth else { throw .tooDeep }
            PiiScrubber.openMember(key, first: &first, into: &w)
            try write(o, into: &w, depth: depth, dropped: &dropped)
        default:
            try writeConverted(key, raw, first: &first, into: &w, depth: depth, dropped: &dropped)
        }
    }

    /// Writes `key: raw` through ``convert(_:size:depth:dropped:)``, or drops `key` when `raw`
    /// converts to no JSON value.
    private func writeConverted(
        _ key: String, _ raw: Any, first: inout Bool, into w: inout WireWriter, depth: Int, dropped: inout DroppedKeys
    ) throws(InvalidInput) {
        var ignored = 0
        let value: JSONValue
        do throws(InvalidInput) {
            value = try convert(raw, size: &ignored, depth: depth, dropped: &dropped)
        } catch {
            guard error == .unsupported else { throw error }
            return dropped.add(key)
        }
        PiiScrubber.openMember(key, first: &first, into: &w)
        w.write(value)
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

    /// Converts and scrubs one value. Throws ``InvalidInput/unsupported`` when it converts to no
    /// JSON value (a list holding such a value included: the list is not sent with a hole),
    /// ``InvalidInput/tooDeep`` for nesting deeper than ``maxDepth``.
    func convert(_ raw: Any, size: inout Int, depth: Int) throws(InvalidInput) -> JSONValue {
        var dropped = DroppedKeys()
        return try convert(raw, size: &size, depth: depth, dropped: &dropped)
    }

    /// ``convert(_:size:depth:)``, adding the keys dropped in nested objects to `dropped`.
    func convert(_ raw: Any, size: inout Int, depth: Int, dropped: inout DroppedKeys) throws(InvalidInput) -> JSONValue {
        guard depth < PiiScrubber.maxDepth else { throw .tooDeep }
        switch raw {
        case let v as any ScorePropertyConvertible:
            // First: on Apple platforms a `Decimal` also casts to `Bool` and `Int` (through
            // `NSDecimalNumber`), and `Decimal(1)` must not be sent as `true`.
            guard let value = v.scorePropertyValue else { throw .unsupported }
            return try scrubValue(value, size: &size, depth: depth, dropped: &dropped)
        case let s as String:
            size += s.utf8.count * 6 + 2
            return .string(s)
        case let b as Bool where !PiiScrubber.isBoxedNumber(raw):
            size += 5
            return .bool(b)
        case let i as Int:
            size += 24
            return .number(Double(i))
        case let d as Double:
            guard d.isFinite else { throw .unsupported }
            size += 25
            return .number(d)
        case let o as [String: Any]:
            size += 2
            return .object(try object(o, size: &size, depth: depth, dropped: &dropped))
        case let a as [Any]:
            size += 2
            var out: [JSONValue] = []
            out.reserveCapacity(a.count)
            for e in a {
                size += 1
                out.append(try convert(e, size: &size, depth: depth + 1, dropped: &dropped))
            }
            return .array(out)
        case _ where PiiScrubber.isBoxedNull(raw):
            size += 4
            return .null
        case let v as JSONValue:
            return try scrubValue(v, size: &size, depth: depth, dropped: &dropped)
        default:
            return try convertOther(raw, size: &size, depth: depth, dropped: &dropped)
        }
    }

    private func convertOther(_ raw: Any, size: inout Int, depth: Int, dropped: inout DroppedKeys) throws(InvalidInput) -> JSONValue {
        size += 25
        switch raw {
        case let v as Float:
            guard v.isFinite else { throw .unsupported }
            return .number(Double(v))
        case let v as Int8: return .number(Double(v))
        case let v as Int16: return .number(Double(v))
        case let v as Int32: return .number(Double(v))
        case let v as Int64: return .number(Double(v))
        case let v as UInt: return .number(Double(v))
        case let v as UInt8: return .number(Double(v))
        case let v as UInt16: return .number(Double(v))
        case let v as UInt32: return .number(Double(v))
        case let v as UInt64: return .number(Double(v))
        case let v as Substring:
            size += v.utf8.count * 6
            return .string(String(v))
        case let v as [String]:
            var s = 0
            return try convert(v.map { $0 as Any }, size: &s, depth: depth, dropped: &dropped)
        case let v as any Encodable:
            return try scrubValue(try PropertyEncoding.encode(v), size: &size, depth: depth, dropped: &dropped)
        default:
            throw .unsupported
        }
    }

    /// Scrubs an already-typed JSON value (keys re-sorted by code point).
    private func scrubValue(_ v: JSONValue, size: inout Int, depth: Int, dropped: inout DroppedKeys) throws(InvalidInput) -> JSONValue {
        guard depth < PiiScrubber.maxDepth else { throw .tooDeep }
        switch v {
        case .object(let o):
            var dict: [String: Any] = [:]
            for e in o.entries { dict[e.key] = e.value }
            return .object(try object(dict, size: &size, depth: depth, dropped: &dropped))
        case .array(let a):
            var out: [JSONValue] = []
            for e in a { out.append(try scrubValue(e, size: &size, depth: depth + 1, dropped: &dropped)) }
            return .array(out)
        case .number(let n):
            guard n.isFinite else { throw .unsupported }
            size += 25
            return v
        case .string(let s):
            size += s.utf8.count * 6 + 2
            return v
        default:
            size += 5
            return v
        }
    }
}

// MARK: - Foundation's boxed values

extension PiiScrubber {
    /// Whether `raw` is one of Foundation's boxed numbers (`NSNumber`, as `JSONSerialization`
    /// returns them) other than a boolean. Such a number also casts to `Bool` when it is 0 or 1,
    /// yet it is a JSON number: `1` must not be sent as `true`.
    static func isBoxedNumber(_ raw: Any) -> Bool {
        guard type(of: raw) is AnyClass else { return false }  // a Swift `Bool` is no class
        #if canImport(Darwin)
            guard let n = raw as? NSNumber else { return false }
            return CFGetTypeID(n) != CFBooleanGetTypeID()
        #else
            // On Linux the tracker links no Foundation (see `NativeThread`): known by class name.
            switch _typeName(type(of: raw), qualified: false) {
            case "NSNumber", "__NSCFNumber": return true
            default: return false
            }
        #endif
    }

    /// Whether `raw` is Foundation's `NSNull` (a JSON `null`).
    static func isBoxedNull(_ raw: Any) -> Bool {
        guard type(of: raw) is AnyClass else { return false }
        #if canImport(Darwin)
            return raw is NSNull
        #else
            return _typeName(type(of: raw), qualified: false) == "NSNull"
        #endif
    }
}

// MARK: - The common exact types

/// A value of one of the common exact types, taken out of its `Any` box without a dynamic cast
/// (see ``classifyCommon(_:)``).
private enum CommonValue {
    case string(String)
    case int(Int)
    case double(Double)
    case bool(Bool)
    case object([String: Any])
    case other
}

/// What `value` is when its type is exactly one of ``CommonValue``'s (compared by metadata, then
/// reinterpreted: the types are the same). Called through `_openExistential`, which hands over a
/// boxed value with its dynamic type: no `as?` cast, each of which walks the runtime's casting
/// rules (a failed one the furthest).
private func classifyCommon<T>(_ value: T) -> CommonValue {
    if T.self == String.self { return .string(unsafeBitCast(value, to: String.self)) }
    if T.self == Int.self { return .int(unsafeBitCast(value, to: Int.self)) }
    if T.self == Bool.self { return .bool(unsafeBitCast(value, to: Bool.self)) }
    if T.self == Double.self { return .double(unsafeBitCast(value, to: Double.self)) }
    if T.self == [String: Any].self { return .object(unsafeBitCast(value, to: [String: Any].self)) }
    return .other
}
