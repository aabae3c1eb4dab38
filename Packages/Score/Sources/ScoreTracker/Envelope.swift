import TrackerCore

/// The fields of one envelope as built by a recording call (a class, so that a queued event
/// holds one reference until the writer has encoded it).
final class EnvelopeFields: Sendable {
    let type: String
    let name: String
    let eventId: String
    let timestampMs: Int64
    let anonymousId: String
    let sessionId: String
    let userId: String?
    let siteId: String
    let props: JSONObject
    let traits: JSONObject?
    let context: JSONObject
    let sdkName: String
    let sdkVersion: String

    init(type: String, name: String, eventId: String, timestampMs: Int64, anonymousId: String, sessionId: String,
         userId: String?, siteId: String, props: JSONObject, traits: JSONObject?, context: JSONObject,
         sdkName: String, sdkVersion: String) {
        self.type = type
        self.name = name
        self.eventId = eventId
        self.timestampMs = timestampMs
        self.anonymousId = anonymousId
        self.sessionId = sessionId
        self.userId = userId
        self.siteId = siteId
        self.props = props
        self.traits = traits
        self.context = context
        self.sdkName = sdkName
        self.sdkVersion = sdkVersion
    }

    /// The wire bytes (section 2 key order).
    func encode() -> [UInt8] {
        var out = [UInt8]()
        out.reserveCapacity(512)
        EnvelopeWriter.head(type: type, name: name, eventId: eventId, timestampMs: timestampMs, into: &out)
        EnvelopeWriter.identity(anonymousId: anonymousId, sessionId: sessionId, userId: userId, siteId: siteId, into: &out)
        WireJSON.write(.object(props), into: &out)
        if let traits {
            out.append(contentsOf: #","traits":"#.utf8)
            WireJSON.write(.object(traits), into: &out)
        }
        EnvelopeWriter.tail(context: context, sdkName: sdkName, sdkVersion: sdkVersion, into: &out)
        return EnvelopeWriter.exact(out)
    }
}

/// The parts of an envelope, in section 2 key order: head (`type` … `timestamp`), identity
/// (`anonymousId` … `siteId`, then the `props` key), the props object, `traits` when present,
/// and the tail (`context`, `sdk`). The identity and the tail are constant over many events, so a
/// recording call reuses them pre-encoded.
enum EnvelopeWriter {
    /// `{"type":…,"name":…,"eventId":…,"timestamp":"…"`
    static func head(type: String, name: String, eventId: String, timestampMs: Int64, into out: inout [UInt8]) {
        out.append(contentsOf: #"{"type":"#.utf8)
        WireJSON.writeString(type, into: &out)
        out.append(contentsOf: #","name":"#.utf8)
        WireJSON.writeString(name, into: &out)
        out.append(contentsOf: #","eventId":"#.utf8)
        WireJSON.writeString(eventId, into: &out)
        out.append(contentsOf: #","timestamp":""#.utf8)
        Timestamp.write(ms: timestampMs, into: &out)
        out.append(34)
    }

    /// `,"anonymousId":…,"sessionId":…(,"userId":…),"siteId":…,"props":`
    static func identity(anonymousId: String, sessionId: String, userId: String?, siteId: String, into out: inout [UInt8]) {
        out.append(contentsOf: #","anonymousId":"#.utf8)
        WireJSON.writeString(anonymousId, into: &out)
        out.append(contentsOf: #","sessionId":"#.utf8)
        WireJSON.writeString(sessionId, into: &out)
        if let userId {
            out.append(contentsOf: #","userId":"#.utf8)
            WireJSON.writeString(userId, into: &out)
        }
        out.append(contentsOf: #","siteId":"#.utf8)
        WireJSON.writeString(siteId, into: &out)
        out.append(contentsOf: #","props":"#.utf8)
    }

    /// `,"context":{…},"sdk":{"name":…,"version":…}}`
    static func tail(context: JSONObject, sdkName: String, sdkVersion: String, into out: inout [UInt8]) {
        out.append(contentsOf: #","context":"#.utf8)
        WireJSON.write(.object(context), into: &out)
        out.append(contentsOf: #","sdk":{"name":"#.utf8)
        WireJSON.writeString(sdkName, into: &out)
        out.append(contentsOf: #","version":"#.utf8)
        WireJSON.writeString(sdkVersion, into: &out)
        out.append(contentsOf: "}}".utf8)
    }

    /// An exact-size copy (the bytes may stay in memory while the event is queued).
    static func exact(_ parts: [UInt8]...) -> [UInt8] {
        let total = parts.reduce(0) { $0 + $1.count }
        return [UInt8](unsafeUninitializedCapacity: total) { buf, n in
            var at = 0
            for p in parts {
                p.withUnsafeBufferPointer { src in
                    if let base = src.baseAddress, !src.isEmpty {
                        (buf.baseAddress! + at).initialize(from: base, count: src.count)
                    }
                }
                at += p.count
            }
            n = total
        }
    }
}

/// Byte-level edits of an encoded envelope. The first `,"siteId":` of an envelope is its
/// top-level member: every earlier member is a string, and a JSON string cannot hold an
/// unescaped quote.
enum EnvelopeBytes {
    static let siteIdMarker: [UInt8] = Array(#","siteId":"#.utf8)
    static let eventIdMarker: [UInt8] = Array(#","eventId":""#.utf8)

    static func find(_ needle: [UInt8], in hay: [UInt8]) -> Int? {
        guard hay.count >= needle.count, let first = needle.first else { return nil }
        var i = 0
        let last = hay.count - needle.count
        while i <= last {
            if hay[i] == first {
                var j = 1
                while j < needle.count && hay[i + j] == needle[j] { j += 1 }
                if j == needle.count { return i }
            }
            i += 1
        }
        return nil
    }

    /// Inserts `"userId":…` before `siteId`.
    static func withUserId(_ bytes: [UInt8], _ userId: String) -> [UInt8] {
        guard let at = find(siteIdMarker, in: bytes) else { return bytes }
        var ins: [UInt8] = Array(#","userId":"#.utf8)
        WireJSON.writeString(userId, into: &ins)
        var out = bytes
        out.insert(contentsOf: ins, at: at)
        return out
    }

    /// A replay copy: new eventId, the fan's userId, `_backfill` and `_originalEventId`.
    static func replayCopy(_ bytes: [UInt8], originalEventId: String, newEventId: String, userId: String) -> [UInt8] {
        guard let at = find(eventIdMarker, in: bytes) else { return bytes }
        let start = at + eventIdMarker.count
        guard let endQuote = bytes[start...].firstIndex(of: 34) else { return bytes }
        var out = Array(bytes[..<start])
        out.append(contentsOf: newEventId.utf8)
        out.append(contentsOf: bytes[endQuote...])
        out = withUserId(out, userId)
        guard out.last == 125 else { return out }
        out.removeLast()
        out.append(contentsOf: #","_backfill":true,"_originalEventId":"#.utf8)
        WireJSON.writeString(originalEventId, into: &out)
        out.append(125)
        return out
    }
}

/// One queued event. Immutable but for `encoded`/`fields`, which the client's lock guards.
final class QueuedEvent: @unchecked Sendable {
    var seq: UInt64
    let eventId: String
    let name: String
    let timestampMs: Int64
    let anonymousId: String
    let hasUserId: Bool
    let critical: Bool
    let notice: Bool
    /// Required categories as a bit mask (see `ConsentCategory.bit`).
    let requires: UInt8
    /// Built by a recording call; released once encoded.
    var fields: EnvelopeFields?
    /// The first encoding (set by the writer, or loaded).
    var encoded: [UInt8]?
    /// Whether its add record is on disk.
    var persisted = false
    /// Whether it is still queued (cleared when it leaves the queue).
    var inQueue = true
    /// Where its add record lives, when the store reads records back; the bytes are then not
    /// kept in memory.
    var location: ScoreRecordLocation?

    init(seq: UInt64, eventId: String, name: String, timestampMs: Int64, anonymousId: String, hasUserId: Bool,
         critical: Bool, notice: Bool, requires: UInt8, fields: EnvelopeFields?, encoded: [UInt8]?) {
        self.seq = seq
        self.eventId = eventId
        self.name = name
        self.timestampMs = timestampMs
        self.anonymousId = anonymousId
        self.hasUserId = hasUserId
        self.critical = critical
        self.notice = notice
        self.requires = requires
        self.fields = fields
        self.encoded = encoded
    }

}

/// The queue log's record format.
///
/// Add: `A | flags | requires | envelope bytes` (flags: 1 critical, 2 notice, 4 has userId); the
/// event id, name, timestamp and anonymous id are read back from the envelope itself.
/// Remove: `R | eventId (len u8) …`.
enum QueueRecord {
    static func add(_ e: QueuedEvent, envelope: [UInt8]) -> [UInt8] {
        var out = [UInt8]()
        out.reserveCapacity(envelope.count + 3)
        out.append(65)
        out.append((e.critical ? 1 : 0) | (e.notice ? 2 : 0) | (e.hasUserId ? 4 : 0))
        out.append(e.requires)
        out.append(contentsOf: envelope)
        return out
    }

    static func remove(_ eventIds: [String]) -> [UInt8] {
        var out: [UInt8] = [82]
        for id in eventIds {
            let b = Array(id.utf8.prefix(255))
            out.append(UInt8(b.count)); out.append(contentsOf: b)
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

    /// The JSON string value following `marker` (searched from `from`), and where it ends.
    private static func stringAfter(_ marker: [UInt8], in b: UnsafeBufferPointer<UInt8>, from: Int) -> (String, Int)? {
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
            if b[k] == 92 { escaped = true; k += 1 }
            k += 1
        }
        guard k < b.count else { return nil }
        if escaped {
            let literal = Array(b[(start - 1)...k])
            guard let s = (try? WireJSON.decode(literal))?.stringValue else { return nil }
            return (s, k + 1)
        }
        return (String(decoding: UnsafeBufferPointer(rebasing: b[start..<k]), as: UTF8.self), k + 1)
    }

    static func parse(_ r: [UInt8]) -> Parsed? { parse(r, keepEnvelope: true) }

    /// Parses a record; an add's `envelope` is left empty unless `keepEnvelope`.
    static func parse(_ r: [UInt8], keepEnvelope: Bool) -> Parsed? {
        guard let kind = r.first else { return nil }
        if kind == 82 {
            var ids: [String] = []
            var at = 1
            while at < r.count {
                let len = Int(r[at]); at += 1
                guard at + len <= r.count else { return nil }
                ids.append(String(decoding: r[at..<(at + len)], as: UTF8.self))
                at += len
            }
            return .remove(ids)
        }
        guard kind == 65, r.count > 3 else { return nil }
        let fields: (String, String, String, String)? = r.withUnsafeBufferPointer { whole in
            let b = UnsafeBufferPointer(rebasing: whole[3...])
            guard let (name, a) = stringAfter(nameMarker, in: b, from: 0),
                  let (id, c) = stringAfter(eventIdMarker, in: b, from: a),
                  let (ts, d) = stringAfter(timestampMarker, in: b, from: c),
                  let (anon, _) = stringAfter(anonymousIdMarker, in: b, from: d) else { return nil }
            return (name, id, ts, anon)
        }
        guard let (name, id, ts, anon) = fields, let ms = Timestamp.parse(ts) else { return nil }
        return .add(Add(eventId: id, name: name, timestampMs: ms, anonymousId: anon, flags: r[1], requires: r[2],
                        envelope: keepEnvelope ? Array(r[3...]) : []))
    }
}
