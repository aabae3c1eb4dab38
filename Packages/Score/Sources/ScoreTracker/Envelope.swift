import TrackerCore

/// The fields of one envelope as built by a recording call.
struct EnvelopeFields: Sendable {
    var type: String
    var name: String
    var eventId: String
    var timestampMs: Int64
    var anonymousId: String
    var sessionId: String
    var userId: String?
    var siteId: String
    var props: JSONObject
    var traits: JSONObject?
    var context: JSONObject
    var sdkName: String
    var sdkVersion: String

    /// The wire bytes (section 2 key order).
    func encode() -> [UInt8] {
        var out = [UInt8]()
        out.reserveCapacity(384)
        out.append(contentsOf: #"{"type":"#.utf8)
        WireJSON.writeString(type, into: &out)
        out.append(contentsOf: #","name":"#.utf8)
        WireJSON.writeString(name, into: &out)
        out.append(contentsOf: #","eventId":"#.utf8)
        WireJSON.writeString(eventId, into: &out)
        out.append(contentsOf: #","timestamp":""#.utf8)
        out.append(contentsOf: Timestamp.format(ms: timestampMs).utf8)
        out.append(contentsOf: #"","anonymousId":"#.utf8)
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
        WireJSON.write(.object(props), into: &out)
        if let traits {
            out.append(contentsOf: #","traits":"#.utf8)
            WireJSON.write(.object(traits), into: &out)
        }
        out.append(contentsOf: #","context":"#.utf8)
        WireJSON.write(.object(context), into: &out)
        out.append(contentsOf: #","sdk":{"name":"#.utf8)
        WireJSON.writeString(sdkName, into: &out)
        out.append(contentsOf: #","version":"#.utf8)
        WireJSON.writeString(sdkVersion, into: &out)
        out.append(contentsOf: "}}".utf8)
        return out
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
    let seq: UInt64
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

    /// The encoding, computing it when needed.
    func bytes() -> [UInt8] {
        if let encoded { return encoded }
        let e = fields?.encode() ?? []
        return e
    }
}

/// The queue log's record format.
///
/// Add: `A | flags | requires | timestamp (Int64 LE) | eventId (len u8) | name (len u16 LE) |
/// anonymousId (len u8) | envelope bytes`. flags: 1 critical, 2 notice, 4 has userId.
/// Remove: `R | eventId (len u8) …`.
enum QueueRecord {
    static func add(_ e: QueuedEvent, envelope: [UInt8]) -> [UInt8] {
        var out = [UInt8]()
        out.reserveCapacity(envelope.count + 64 + e.name.utf8.count)
        out.append(65)
        out.append((e.critical ? 1 : 0) | (e.notice ? 2 : 0) | (e.hasUserId ? 4 : 0))
        out.append(e.requires)
        var t = UInt64(bitPattern: e.timestampMs)
        for _ in 0..<8 { out.append(UInt8(truncatingIfNeeded: t)); t >>= 8 }
        let id = Array(e.eventId.utf8.prefix(255))
        out.append(UInt8(id.count)); out.append(contentsOf: id)
        let name = Array(e.name.utf8.prefix(65535))
        out.append(UInt8(truncatingIfNeeded: name.count)); out.append(UInt8(truncatingIfNeeded: name.count >> 8))
        out.append(contentsOf: name)
        let anon = Array(e.anonymousId.utf8.prefix(255))
        out.append(UInt8(anon.count)); out.append(contentsOf: anon)
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

    static func parse(_ r: [UInt8]) -> Parsed? {
        guard let kind = r.first else { return nil }
        var at = 1
        func str(_ len: Int) -> String? {
            guard at + len <= r.count else { return nil }
            defer { at += len }
            return String(decoding: r[at..<(at + len)], as: UTF8.self)
        }
        if kind == 82 {
            var ids: [String] = []
            while at < r.count {
                let len = Int(r[at]); at += 1
                guard let s = str(len) else { return nil }
                ids.append(s)
            }
            return .remove(ids)
        }
        guard kind == 65, r.count >= 11 + 4 else { return nil }
        let flags = r[1], requires = r[2]
        var t: UInt64 = 0
        for i in 0..<8 { t |= UInt64(r[3 + i]) << (8 * UInt64(i)) }
        at = 11
        guard at < r.count else { return nil }
        let idLen = Int(r[at]); at += 1
        guard let id = str(idLen), at + 2 <= r.count else { return nil }
        let nameLen = Int(r[at]) | Int(r[at + 1]) << 8; at += 2
        guard let name = str(nameLen), at < r.count else { return nil }
        let anonLen = Int(r[at]); at += 1
        guard let anon = str(anonLen) else { return nil }
        return .add(Add(eventId: id, name: name, timestampMs: Int64(bitPattern: t), anonymousId: anon,
                        flags: flags, requires: requires, envelope: Array(r[at...])))
    }
}
