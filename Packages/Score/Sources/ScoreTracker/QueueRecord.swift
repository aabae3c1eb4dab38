import TrackerCore

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// The queue log's record format.
///
/// Add: `A | flags | requires | envelope bytes` (flags: 1 critical, 2 notice, 4 has userId); the
/// event id, name, timestamp and anonymous id are read back from the envelope itself.
/// Remove: `R | eventId (len u8) …`.
enum QueueRecord {
    static func add(_ e: QueuedEvent, envelope: [UInt8]) -> [UInt8] {
        let flags: UInt8 = (e.critical ? 1 : 0) | (e.notice ? 2 : 0) | (e.hasUserId ? 4 : 0)
        let requires = e.requires
        // Written in place: one exact-size allocation and one copy of the envelope.
        return envelope.withUnsafeBufferPointer { env in
            ByteArrays.make(count: env.count + 3) { out, n in
                out[0] = 65
                out[1] = flags
                out[2] = requires
                if let from = env.baseAddress, env.count > 0 { (out.baseAddress! + 3).initialize(from: from, count: env.count) }
                n = env.count + 3
            }
        }
    }

    static func remove(_ eventIds: [String]) -> [UInt8] { remove(eventIds.map(CompactEventId.init)) }

    static func remove(_ eventIds: [CompactEventId]) -> [UInt8] {
        var out: [UInt8] = [82]
        var id: [UInt8] = []
        for e in eventIds {
            id.removeAll(keepingCapacity: true)
            e.write(into: &id)
            let b = id.prefix(255)
            out.append(UInt8(b.count))
            out.append(contentsOf: b)
        }
        return out
    }

    struct Add {
        var eventId: String
        var name: String
        var timestampMs: Int64
        var anonymousId: String
        var flags: UInt8
        var requires: UInt8
        var envelope: [UInt8]
    }

    enum Parsed {
        case add(Add)
        case remove([String])
    }

    private static let nameMarker = Array(#","name":""#.utf8)
    private static let eventIdMarker = Array(#","eventId":""#.utf8)
    private static let timestampMarker = Array(#","timestamp":""#.utf8)
    private static let anonymousIdMarker = Array(#","anonymousId":""#.utf8)

    /// Where the JSON string value following `marker` (searched from `from`) lies: its bytes
    /// between the quotes, and whether it holds an escape.
    private static func valueAfter(_ marker: [UInt8], in b: UnsafeBufferPointer<UInt8>, from: Int) -> (Range<Int>, escaped: Bool)? {
        let m = marker.count
        guard b.count >= m else { return nil }
        var i = from
        while i + m <= b.count {
            if b[i] == marker[0] {
                var j = 1
                while j < m && b[i + j] == marker[j] { j += 1 }
                if j == m { break }
            }
            i += 1
        }
        guard i + m <= b.count else { return nil }
        let start = i + m
        var k = start
        var escaped = false
        while k < b.count && b[k] != 34 {
            if b[k] == 92 {
                escaped = true
                k += 1
            }
            k += 1
        }
        guard k < b.count else { return nil }
        return (start..<k, escaped)
    }

    /// The string value at `v` (see ``valueAfter(_:in:from:)``).
    private static func string(_ b: UnsafeBufferPointer<UInt8>, _ v: (Range<Int>, escaped: Bool)) -> String? {
        let (r, escaped) = v
        if escaped {
            let literal = Array(b[(r.lowerBound - 1)...r.upperBound])
            return (try? WireJSON.decode(literal))?.stringValue
        }
        return String(decoding: UnsafeBufferPointer(rebasing: b[r]), as: UTF8.self)
    }

    /// The name, eventId, timestamp and anonymousId values of an add record's envelope, in order.
    private static func addValues(_ b: UnsafeBufferPointer<UInt8>) -> [(Range<Int>, escaped: Bool)]? {
        guard let name = valueAfter(nameMarker, in: b, from: 0),
            let id = valueAfter(eventIdMarker, in: b, from: name.0.upperBound + 1),
            let ts = valueAfter(timestampMarker, in: b, from: id.0.upperBound + 1),
            let anon = valueAfter(anonymousIdMarker, in: b, from: ts.0.upperBound + 1)
        else { return nil }
        return [name, id, ts, anon]
    }

    /// What start-up needs of a record, read without building strings it does not keep.
    enum Scanned {
        /// An add: `sameAnonymous` tells whether its anonymousId is the one given to ``scan(_:anonymousId:)``.
        case add(id: CompactEventId, name: String, timestampMs: Int64, sameAnonymous: Bool, flags: UInt8, requires: UInt8)
        case remove([CompactEventId])
    }

    /// Reads a record for start-up (see ``Scanned``); `nil` when it is not a valid record.
    static func scan(_ r: [UInt8], anonymousId: String) -> Scanned? {
        r.withUnsafeBufferPointer { scan($0, anonymousId: AnonymousIdBytes(anonymousId)) }
    }

    /// The anonymous id an add record's is compared with, as bytes (built once per load).
    struct AnonymousIdBytes {
        let text: String
        let utf8: [UInt8]
        /// Whether it holds no byte that JSON escapes (`"`, `\`, controls): then an unescaped
        /// value equals it exactly when their bytes are equal.
        let plain: Bool

        init(_ text: String) {
            self.text = text
            self.utf8 = Array(text.utf8)
            self.plain = !utf8.contains { $0 == 34 || $0 == 92 || $0 < 32 }
        }
    }

    /// ``scan(_:anonymousId:)`` over a record held in a larger buffer.
    static func scan(_ whole: UnsafeBufferPointer<UInt8>, anonymousId: AnonymousIdBytes) -> Scanned? {
        guard let kind = whole.first else { return nil }
        if kind == 82 {
            var ids: [CompactEventId] = []
            var at = 1
            while at < whole.count {
                let len = Int(whole[at])
                at += 1
                guard at + len <= whole.count else { return nil }
                ids.append(CompactEventId(utf8: UnsafeBufferPointer(rebasing: whole[at..<(at + len)])))
                at += len
            }
            return .remove(ids)
        }
        guard kind == 65, whole.count > 3 else { return nil }
        let b = UnsafeBufferPointer(rebasing: whole[3...])
        if let quick = scanCanonical(b, anonymousId: anonymousId) {
            return .add(
                id: quick.id, name: quick.name, timestampMs: quick.timestampMs, sameAnonymous: quick.sameAnonymous,
                flags: whole[1], requires: whole[2])
        }
        guard let v = addValues(b), let name = string(b, v[0]) else { return nil }
        let id: CompactEventId
        if v[1].escaped {
            guard let text = string(b, v[1]) else { return nil }
            id = CompactEventId(text)
        } else {
            id = CompactEventId(utf8: UnsafeBufferPointer(rebasing: b[v[1].0]))
        }
        guard let ts = string(b, v[2]), let ms = Timestamp.parse(ts) else { return nil }
        let same: Bool
        if v[3].escaped {
            same = string(b, v[3]) == anonymousId.text
        } else {
            same = anonymousId.utf8.elementsEqual(UnsafeBufferPointer(rebasing: b[v[3].0]))
        }
        return .add(id: id, name: name, timestampMs: ms, sameAnonymous: same, flags: whole[1], requires: whole[2])
    }

    private static let typePrefix = Array(#"{"type":""#.utf8)

    /// The add's values when its envelope starts the way this SDK writes it (`type`, `name`,
    /// `eventId`, `timestamp`, `anonymousId`, in that order, with no escape in the name, a
    /// canonical UUID eventId and a 24-character timestamp); `nil` otherwise, and the general
    /// search runs. Same values as the general search for those envelopes, without searching.
    static func scanCanonical(_ b: UnsafeBufferPointer<UInt8>, anonymousId: AnonymousIdBytes)
        -> (id: CompactEventId, name: String, timestampMs: Int64, sameAnonymous: Bool)?
    {
        guard let add = canonicalAdd(b, anonymousId: anonymousId) else { return nil }
        let name = String(decoding: UnsafeBufferPointer(rebasing: b[add.name]), as: UTF8.self)
        return (.uuid(add.hi, add.lo), name, add.timestampMs, add.sameAnonymous)
    }

    /// ``scanCanonical(_:anonymousId:)``'s values with the name left as its bytes' range in `b`
    /// (the start-up index builds no string for a name it has seen).
    struct CanonicalAdd {
        var hi: UInt64
        var lo: UInt64
        var name: Range<Int>
        var timestampMs: Int64
        var sameAnonymous: Bool
    }

    /// See ``CanonicalAdd``.
    static func canonicalAdd(_ b: UnsafeBufferPointer<UInt8>, anonymousId: AnonymousIdBytes) -> CanonicalAdd? {
        guard anonymousId.plain, !anonymousId.utf8.isEmpty, matches(typePrefix, b, at: 0) else { return nil }
        // The type's value: letters only.
        var at = typePrefix.count
        while at < b.count && b[at] != 34 {
            guard b[at] >= 97 && b[at] <= 122 else { return nil }
            at += 1
        }
        // Each marker (`,"name":"` …) follows the previous value's closing quote.
        guard quoteThen(nameMarker, b, at: at) else { return nil }
        at += 1 + nameMarker.count
        let nameStart = at
        while at < b.count && b[at] != 34 {
            if b[at] == 92 { return nil }
            at += 1
        }
        let nameEnd = at
        guard quoteThen(eventIdMarker, b, at: at) else { return nil }
        at += 1 + eventIdMarker.count
        let idStart = at
        at += 36
        guard quoteThen(timestampMarker, b, at: at) else { return nil }
        at += 1 + timestampMarker.count
        let tsStart = at
        at += 24
        guard quoteThen(anonymousIdMarker, b, at: at) else { return nil }
        at += 1 + anonymousIdMarker.count
        guard b.count - at > anonymousId.utf8.count,
            let (hi, lo) = CompactEventId.pack(UnsafeBufferPointer(rebasing: b[idStart..<(idStart + 36)])),
            let ms = Timestamp.parse(utf8: UnsafeBufferPointer(rebasing: b[tsStart..<(tsStart + 24)]))
        else { return nil }
        let same =
            b[at + anonymousId.utf8.count] == 34
            && anonymousId.utf8.withUnsafeBufferPointer { e in
                memcmp(e.baseAddress!, b.baseAddress! + at, e.count) == 0
            }
        return CanonicalAdd(hi: hi, lo: lo, name: nameStart..<nameEnd, timestampMs: ms, sameAnonymous: same)
    }

    /// Whether `b` holds a quote at `at`, then `marker`.
    @inline(__always)
    private static func quoteThen(_ marker: [UInt8], _ b: UnsafeBufferPointer<UInt8>, at: Int) -> Bool {
        at < b.count && b[at] == 34 && matches(marker, b, at: at + 1)
    }

    /// Whether `b` holds `marker` at `at`.
    @inline(__always)
    private static func matches(_ marker: [UInt8], _ b: UnsafeBufferPointer<UInt8>, at: Int) -> Bool {
        guard at >= 0, b.count - at >= marker.count else { return false }
        return marker.withUnsafeBufferPointer { m in memcmp(m.baseAddress!, b.baseAddress! + at, m.count) == 0 }
    }

    /// Reads a whole record: its strings and, for an add, its envelope (tests and tools read the
    /// log with it; start-up uses the lighter ``scan(_:anonymousId:)``).
    static func parse(_ r: [UInt8]) -> Parsed? {
        guard let kind = r.first else { return nil }
        if kind == 82 {
            guard case .remove(let ids)? = scan(r, anonymousId: "") else { return nil }
            return .remove(ids.map(\.string))
        }
        guard kind == 65, r.count > 3 else { return nil }
        let fields: (String, String, String, String)? = r.withUnsafeBufferPointer { whole in
            let b = UnsafeBufferPointer(rebasing: whole[3...])
            guard let v = addValues(b), let name = string(b, v[0]), let id = string(b, v[1]),
                let ts = string(b, v[2]), let anon = string(b, v[3])
            else { return nil }
            return (name, id, ts, anon)
        }
        guard let (name, id, ts, anon) = fields, let ms = Timestamp.parse(ts) else { return nil }
        return .add(
            Add(
                eventId: id, name: name, timestampMs: ms, anonymousId: anon, flags: r[1], requires: r[2],
                envelope: Array(r[3...])))
    }
}
