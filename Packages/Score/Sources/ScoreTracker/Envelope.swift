import TrackerCore

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// The parts of an envelope, in the key order of <doc:Envelope#The-envelope>: head (`type` …
/// `timestamp`), identity (`anonymousId` … `siteId`, then the `props` key), the props object,
/// `traits` when present, and the tail (`context`, `sdk`). The identity and the tail are constant
/// over many events, so a recording call reuses them pre-encoded.
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

    /// A whole envelope (<doc:Envelope#The-envelope> key order) of the given parts, `identity`
    /// and `tail` pre-encoded (see ``identity(anonymousId:sessionId:userId:siteId:into:)`` and
    /// ``tail(context:sdkName:sdkVersion:into:)``), with where its identity sits.
    static func envelope(
        type: String, name: String, eventId: String, timestampMs: Int64, identity: [UInt8], props: JSONObject,
        traits: JSONObject?, tail: [UInt8]
    ) -> ([UInt8], EnvelopeLayout?) {
        var out = [UInt8]()
        out.reserveCapacity(256 + identity.count + tail.count)
        head(type: type, name: name, eventId: eventId, timestampMs: timestampMs, into: &out)
        let layout = EnvelopeLayout(headCount: out.count, identity: identity)
        out.append(contentsOf: identity)
        WireJSON.write(.object(props), into: &out)
        if let traits {
            out.append(contentsOf: #","traits":"#.utf8)
            WireJSON.write(.object(traits), into: &out)
        }
        out.append(contentsOf: tail)
        return (exact(out), layout)
    }

    /// `{"type":…,"name":…,"eventId":…,"timestamp":"…"` into a writer: the same bytes as
    /// ``head(type:name:eventId:timestampMs:into:)-([UInt8])`` given `eventId.string`.
    static func head(type: String, name: String, eventId: CompactEventId, timestampMs: Int64, into w: inout WireWriter) {
        w.writeRaw(#"{"type":"#)
        w.writeString(type)
        w.writeRaw(#","name":"#)
        w.writeString(name)
        w.writeRaw(#","eventId":"#)
        eventId.writeQuoted(into: &w)
        w.writeRaw(#","timestamp":""#)
        Timestamp.write(ms: timestampMs, into: &w)
        w.writeByte(34)
    }

    /// The envelope of a recording call from a writer holding its props object (the first
    /// `propsCount` bytes) followed by its head: head, `identity`, props, `tail`, exact size.
    static func assemble(_ w: borrowing WireWriter, propsCount: Int, identity: [UInt8], tail: [UInt8]) -> [UInt8] {
        w.withUnsafeBytes { written in
            let props = UnsafeBufferPointer(rebasing: written[..<propsCount])
            let head = UnsafeBufferPointer(rebasing: written[propsCount...])
            let total = head.count + identity.count + props.count + tail.count
            return ByteArrays.make(count: total) { buf, n in
                var at = buf.baseAddress!
                func put(_ part: UnsafeBufferPointer<UInt8>) {
                    guard let src = part.baseAddress, part.count > 0 else { return }
                    at.initialize(from: src, count: part.count)
                    at += part.count
                }
                put(head)
                identity.withUnsafeBufferPointer { put($0) }
                put(props)
                tail.withUnsafeBufferPointer { put($0) }
                n = total
            }
        }
    }

    /// `bytes` (an envelope whose identity part, `oldIdentityCount` bytes long, follows a head of
    /// `headCount` bytes) with `identity` in place of that part.
    static func restamp(_ bytes: [UInt8], headCount: Int, oldIdentityCount: Int, identity: [UInt8]) -> [UInt8] {
        var out = [UInt8]()
        out.reserveCapacity(bytes.count - oldIdentityCount + identity.count)
        out.append(contentsOf: bytes[..<headCount])
        out.append(contentsOf: identity)
        out.append(contentsOf: bytes[(headCount + oldIdentityCount)...])
        return out
    }

    /// An exact-size copy (the bytes may stay in memory while the event is queued).
    static func exact(_ parts: [UInt8]...) -> [UInt8] {
        let total = parts.reduce(0) { $0 + $1.count }
        return ByteArrays.make(count: total) { buf, n in
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

/// Where an envelope's identity members sit in its bytes: every identity edit is one
/// replacement at these offsets, never a search for a marker.
///
/// An envelope is `head` (`{"type":…,"name":…,"eventId":…,"timestamp":"…"`), then
/// `,"anonymousId":…,"sessionId":…`, then `,"userId":…` when it has one, then `,"siteId":…`
/// and the rest (see ``EnvelopeWriter``).
struct EnvelopeLayout: Equatable, Sendable {
    /// Where `,"anonymousId":` starts (the head's length).
    var identityAt: Int
    /// Where `,"userId":…` sits, or would be inserted (right before `,"siteId":`).
    var userIdAt: Int

    static let anonymousIdKey: [UInt8] = Array(#","anonymousId":"#.utf8)
    static let sessionIdKey: [UInt8] = Array(#","sessionId":"#.utf8)
    static let userIdKey: [UInt8] = Array(#","userId":"#.utf8)
    private static let headKeys: [[UInt8]] = [
        Array(#"{"type":"#.utf8), Array(#","name":"#.utf8), Array(#","eventId":"#.utf8),
        Array(#","timestamp":"#.utf8),
    ]

    init(identityAt: Int, userIdAt: Int) {
        self.identityAt = identityAt
        self.userIdAt = userIdAt
    }

    /// The layout of an envelope whose head is `headCount` bytes long, followed by `identity`
    /// (an ``EnvelopeWriter/identity(anonymousId:sessionId:userId:siteId:into:)`` part).
    init?(headCount: Int, identity: [UInt8]) {
        guard let at = identity.withUnsafeBufferPointer({ EnvelopeLayout.userIdOffset(inIdentity: $0) }) else { return nil }
        self.init(identityAt: headCount, userIdAt: headCount + at)
    }

    /// Reads the layout of an envelope this SDK wrote (a record loaded from the log): walks its
    /// members in their fixed order; `nil` when they are not in that order.
    init?(parsing bytes: [UInt8]) {
        let found: EnvelopeLayout? = bytes.withUnsafeBufferPointer { b in
            var at = 0
            for key in EnvelopeLayout.headKeys {
                guard let end = EnvelopeLayout.member(key, b, at: at) else { return nil }
                at = end
            }
            guard let userIdAt = EnvelopeLayout.userIdOffset(inIdentity: UnsafeBufferPointer(rebasing: b[at...])) else {
                return nil
            }
            return EnvelopeLayout(identityAt: at, userIdAt: at + userIdAt)
        }
        guard let found else { return nil }
        self = found
    }

    /// The layout of `bytes` as stored with its event (`known`), or read from them.
    static func of(_ bytes: [UInt8], known: EnvelopeLayout?) -> EnvelopeLayout? {
        known ?? EnvelopeLayout(parsing: bytes)
    }

    /// Whether the envelope holds a `userId` member.
    func hasUserId(_ bytes: [UInt8]) -> Bool {
        bytes.withUnsafeBufferPointer { EnvelopeLayout.matches(EnvelopeLayout.userIdKey, $0, at: userIdAt) }
    }

    /// Where the `anonymousId` and `sessionId` members of an identity part end (the userId's
    /// place).
    static func userIdOffset(inIdentity b: UnsafeBufferPointer<UInt8>) -> Int? {
        guard let anonEnd = member(anonymousIdKey, b, at: 0), let sessionEnd = member(sessionIdKey, b, at: anonEnd) else {
            return nil
        }
        return sessionEnd
    }

    /// Where the string member `key` (followed by a JSON string) starting at `at` ends.
    static func member(_ key: [UInt8], _ b: UnsafeBufferPointer<UInt8>, at: Int) -> Int? {
        guard matches(key, b, at: at) else { return nil }
        return stringEnd(b, at: at + key.count)
    }

    /// Where the JSON string starting (with its quote) at `at` ends, after its closing quote.
    static func stringEnd(_ b: UnsafeBufferPointer<UInt8>, at: Int) -> Int? {
        guard at < b.count, b[at] == 34 else { return nil }
        var k = at + 1
        while k < b.count {
            if b[k] == 34 { return k + 1 }
            k += b[k] == 92 ? 2 : 1
        }
        return nil
    }

    static func matches(_ key: [UInt8], _ b: UnsafeBufferPointer<UInt8>, at: Int) -> Bool {
        guard at >= 0, b.count - at >= key.count else { return false }
        for (i, k) in key.enumerated() where b[at + i] != k { return false }
        return true
    }
}

/// Identity edits of an encoded envelope: replacements at the offsets of its
/// ``EnvelopeLayout``; the envelope is returned unchanged when its layout is unknown.
enum EnvelopeBytes {
    /// Inserts `"userId":…` at the layout's userId place; returns the bytes and their layout.
    static func withUserId(_ bytes: [UInt8], _ layout: EnvelopeLayout, _ userId: String) -> [UInt8] {
        guard layout.userIdAt <= bytes.count, !layout.hasUserId(bytes) else { return bytes }
        var ins: [UInt8] = EnvelopeLayout.userIdKey
        WireJSON.writeString(userId, into: &ins)
        var out = [UInt8]()
        out.reserveCapacity(bytes.count + ins.count)
        out.append(contentsOf: bytes[..<layout.userIdAt])
        out.append(contentsOf: ins)
        out.append(contentsOf: bytes[layout.userIdAt...])
        return out
    }

    /// ``withUserId(_:_:_:)`` for an envelope whose layout is read from its bytes.
    static func withUserId(_ bytes: [UInt8], _ userId: String) -> [UInt8] {
        guard let layout = EnvelopeLayout(parsing: bytes) else { return bytes }
        return withUserId(bytes, layout, userId)
    }

    /// Replaces the value of the envelope's `anonymousId`; returns the bytes and their layout.
    static func replacingAnonymousId(_ bytes: [UInt8], _ layout: EnvelopeLayout, with anonymousId: String)
        -> ([UInt8], EnvelopeLayout)
    {
        let valueAt = layout.identityAt + EnvelopeLayout.anonymousIdKey.count
        guard let end = bytes.withUnsafeBufferPointer({ EnvelopeLayout.member(EnvelopeLayout.anonymousIdKey, $0, at: layout.identityAt) })
        else { return (bytes, layout) }
        var value = [UInt8]()
        WireJSON.writeString(anonymousId, into: &value)
        var out = [UInt8]()
        out.reserveCapacity(bytes.count - (end - valueAt) + value.count)
        out.append(contentsOf: bytes[..<valueAt])
        out.append(contentsOf: value)
        out.append(contentsOf: bytes[end...])
        var moved = layout
        moved.userIdAt += value.count - (end - valueAt)
        return (out, moved)
    }

    /// A replay copy: new eventId, the fan's userId, `_backfill` and `_originalEventId`.
    static func replayCopy(
        _ bytes: [UInt8], _ layout: EnvelopeLayout, originalEventId: String, newEventId: String, userId: String
    ) -> [UInt8] {
        // The eventId is the head's third member; its value ends before `,"timestamp":`.
        let range: Range<Int>? = bytes.withUnsafeBufferPointer { b in
            guard let typeEnd = EnvelopeLayout.member(Array(#"{"type":"#.utf8), b, at: 0),
                let nameEnd = EnvelopeLayout.member(Array(#","name":"#.utf8), b, at: typeEnd),
                let idEnd = EnvelopeLayout.member(EnvelopeLayout.eventIdKey, b, at: nameEnd)
            else { return nil }
            return (nameEnd + EnvelopeLayout.eventIdKey.count + 1)..<(idEnd - 1)
        }
        guard let range, layout.userIdAt <= bytes.count else { return bytes }
        var out = Array(bytes[..<range.lowerBound])
        out.append(contentsOf: newEventId.utf8)
        out.append(contentsOf: bytes[range.upperBound...])
        var moved = layout
        let delta = newEventId.utf8.count - range.count
        moved.identityAt += delta
        moved.userIdAt += delta
        out = withUserId(out, moved, userId)
        guard out.last == 125 else { return out }
        out.removeLast()
        out.append(contentsOf: #","_backfill":true,"_originalEventId":"#.utf8)
        WireJSON.writeString(originalEventId, into: &out)
        out.append(125)
        return out
    }

    /// ``replayCopy(_:_:originalEventId:newEventId:userId:)`` for an envelope whose layout is
    /// read from its bytes.
    static func replayCopy(_ bytes: [UInt8], originalEventId: String, newEventId: String, userId: String) -> [UInt8] {
        guard let layout = EnvelopeLayout(parsing: bytes) else { return bytes }
        return replayCopy(bytes, layout, originalEventId: originalEventId, newEventId: newEventId, userId: userId)
    }
}

extension EnvelopeLayout {
    static let eventIdKey: [UInt8] = Array(#","eventId":"#.utf8)
}

/// An event id as a queued event keeps it: a lowercase canonical UUID (what the SDK mints) packed
/// into 16 bytes, anything else as given. `string` gives back the exact text.
enum CompactEventId: Sendable, Hashable {
    case uuid(UInt64, UInt64)
    case text(String)

    init(_ id: String) {
        if let packed = id.utf8.withContiguousStorageIfAvailable(CompactEventId.pack), let (hi, lo) = packed {
            self = .uuid(hi, lo)
        } else {
            self = .text(id)
        }
    }

    /// The id whose UTF-8 bytes are `b` (no string is built for a canonical UUID).
    init(utf8 b: UnsafeBufferPointer<UInt8>) {
        if let (hi, lo) = CompactEventId.pack(b) {
            self = .uuid(hi, lo)
        } else {
            self = .text(String(decoding: b, as: UTF8.self))
        }
    }

    /// Each byte's value as a lowercase hex digit; `0xFF` for any other byte.
    private static let hexValue: [UInt8] = {
        var t = [UInt8](repeating: 0xFF, count: 256)
        for c in 48...57 { t[c] = UInt8(c - 48) }
        for c in 97...102 { t[c] = UInt8(c - 87) }
        return t
    }()

    /// The two halves of `xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx` (lowercase hex only).
    static func pack(_ b: UnsafeBufferPointer<UInt8>) -> (UInt64, UInt64)? {
        guard b.count == 36, b[8] == 45, b[13] == 45, b[18] == 45, b[23] == 45 else { return nil }
        return hexValue.withUnsafeBufferPointer { t -> (UInt64, UInt64)? in
            // `seen` collects every value's bits: a non-digit (0xFF) sets its high ones.
            var seen: UInt8 = 0
            @inline(__always) func digits(_ range: Range<Int>, into v: inout UInt64) {
                for i in range {
                    let d = t[Int(b[i])]
                    seen |= d
                    v = v << 4 | UInt64(d & 15)
                }
            }
            var hi: UInt64 = 0
            var lo: UInt64 = 0
            digits(0..<8, into: &hi)
            digits(9..<13, into: &hi)
            digits(14..<18, into: &hi)
            digits(19..<23, into: &lo)
            digits(24..<36, into: &lo)
            return seen & 0xF0 == 0 ? (hi, lo) : nil
        }
    }

    /// Appends the id's UTF-8 bytes.
    func write(into out: inout [UInt8]) {
        switch self {
        case .text(let s): out.append(contentsOf: s.utf8)
        case .uuid(let hi, let lo):
            withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 36) { text in
                CompactEventId.fillUUID(hi, lo, text.baseAddress!)
                out.append(contentsOf: UnsafeBufferPointer(text))
            }
        }
    }

    /// Writes the id as a JSON string: a canonical UUID's 36 characters need no escaping.
    func writeQuoted(into w: inout WireWriter) {
        switch self {
        case .text(let s): w.writeString(s)
        case .uuid(let hi, let lo):
            withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 38) { out in
                out[0] = 34
                CompactEventId.fillUUID(hi, lo, out.baseAddress! + 1)
                out[37] = 34
                w.writeRaw(UnsafeRawBufferPointer(out))
            }
        }
    }

    /// Writes the 36 characters of the canonical UUID with halves `hi` and `lo` at `out`:
    /// `xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx`, lowercase hex.
    private static func fillUUID(_ hi: UInt64, _ lo: UInt64, _ out: UnsafeMutablePointer<UInt8>) {
        /// Writes nibbles `from..<to` of `word` (0: the most significant) from `at` on.
        @inline(__always) func hex(_ word: UInt64, _ from: Int, _ to: Int, at: Int) {
            for k in from..<to {
                let v = UInt8(truncatingIfNeeded: word >> UInt64(60 - 4 * k)) & 0xF
                out[at + k - from] = v < 10 ? 48 + v : 87 + v
            }
        }
        hex(hi, 0, 8, at: 0)
        out[8] = 45
        hex(hi, 8, 12, at: 9)
        out[13] = 45
        hex(hi, 12, 16, at: 14)
        out[18] = 45
        hex(lo, 0, 4, at: 19)
        out[23] = 45
        hex(lo, 4, 16, at: 24)
    }

    var string: String {
        switch self {
        case .text(let s): return s
        case .uuid:
            var out = [UInt8]()
            out.reserveCapacity(36)
            write(into: &out)
            return String(decoding: out, as: UTF8.self)
        }
    }
}

/// One queued event, kept small: the queue may hold many (its bytes live on disk once located).
/// Immutable but for its bytes, the flags and the location, which the client's lock guards.
final class QueuedEvent: @unchecked Sendable {
    /// Fixed at creation (read without the lock, by the writer): a byte of its own.
    private struct Traits: OptionSet {
        let rawValue: UInt8
        static let hasUserId = Traits(rawValue: 1)
        static let critical = Traits(rawValue: 2)
        static let notice = Traits(rawValue: 4)
    }

    /// Changed under the client's lock: a byte apart from ``Traits``.
    private struct Flags: OptionSet {
        let rawValue: UInt8
        static let persisted = Flags(rawValue: 1)
        static let inQueue = Flags(rawValue: 2)
        static let sending = Flags(rawValue: 4)
        /// Two bits: how many flushes answered 413 to a request holding this event alone.
        static let rejectedLow = Flags(rawValue: 8)
        static let rejectedHigh = Flags(rawValue: 16)
    }

    /// See ``anonymousEpoch``.
    static let otherAnonymous = UInt32.max

    // Declared in an order that packs the instance into 80 bytes (glibc's 96-byte size class).
    let id: CompactEventId
    private let traits: Traits
    /// Required categories as a bit mask (see `ConsentCategory.bit`).
    let requires: UInt8
    private var flags: Flags
    private var locationGeneration: Int32 = 0
    /// The client's `anonymousEpoch` when it was recorded (``otherAnonymous``: another
    /// `anonymousId` than the current one, for events loaded at start-up).
    let anonymousEpoch: UInt32
    /// Where its envelope's identity sits (``EnvelopeLayout``), when built here and small
    /// enough; 0: read it from the bytes when needed (a loaded record).
    private let identityAt: UInt16
    private let userIdAt: UInt16
    let name: String
    let timestampMs: Int64
    /// The envelope's bytes while they are in memory (set by a recording call or loaded; released
    /// once the record is located on disk).
    var encoded: [UInt8]?
    /// -1: no location.
    private var locationOffset: Int64 = -1

    var eventId: String { id.string }
    var hasUserId: Bool { traits.contains(.hasUserId) }
    var critical: Bool { traits.contains(.critical) }
    var notice: Bool { traits.contains(.notice) }
    /// Whether its add record is on disk.
    var persisted: Bool {
        get { flags.contains(.persisted) }
        set { if newValue { flags.insert(.persisted) } else { flags.remove(.persisted) } }
    }
    /// Whether it is still queued (cleared when it leaves the queue).
    var inQueue: Bool {
        get { flags.contains(.inQueue) }
        set { if newValue { flags.insert(.inQueue) } else { flags.remove(.inQueue) } }
    }
    /// Whether it is in a request that has not been answered yet (possibly of an abandoned
    /// flush): no other flush sends it meanwhile, and that request's answer settles it.
    var sending: Bool {
        get { flags.contains(.sending) }
        set { if newValue { flags.insert(.sending) } else { flags.remove(.sending) } }
    }
    /// How many flushes answered 413 to a request holding only this event (0–3).
    var rejectedAlone: Int {
        get { (flags.contains(.rejectedLow) ? 1 : 0) + (flags.contains(.rejectedHigh) ? 2 : 0) }
        set {
            let n = min(3, max(0, newValue))
            if n & 1 != 0 { flags.insert(.rejectedLow) } else { flags.remove(.rejectedLow) }
            if n & 2 != 0 { flags.insert(.rejectedHigh) } else { flags.remove(.rejectedHigh) }
        }
    }
    /// Where its envelope's identity sits, when known without reading the bytes.
    var layout: EnvelopeLayout? {
        identityAt == 0 ? nil : EnvelopeLayout(identityAt: Int(identityAt), userIdAt: Int(userIdAt))
    }
    /// Where its add record lives, when the store reads records back; the bytes are then not
    /// kept in memory.
    var location: ScoreRecordLocation? {
        get {
            locationOffset < 0 ? nil : ScoreRecordLocation(generation: Int(locationGeneration), offset: Int(locationOffset))
        }
        set {
            // A generation beyond Int32 (two billion compactions) is not kept: the bytes stay.
            if let newValue, newValue.offset >= 0, let g = Int32(exactly: newValue.generation) {
                locationGeneration = g
                locationOffset = Int64(newValue.offset)
            } else {
                locationOffset = -1
            }
        }
    }

    convenience init(
        eventId: String, name: String, timestampMs: Int64, anonymousEpoch: UInt32, hasUserId: Bool,
        critical: Bool, notice: Bool, requires: UInt8, encoded: [UInt8]?, layout: EnvelopeLayout? = nil
    ) {
        self.init(
            id: CompactEventId(eventId), name: name, timestampMs: timestampMs, anonymousEpoch: anonymousEpoch,
            hasUserId: hasUserId, critical: critical, notice: notice, requires: requires, encoded: encoded,
            layout: layout)
    }

    init(
        id: CompactEventId, name: String, timestampMs: Int64, anonymousEpoch: UInt32, hasUserId: Bool,
        critical: Bool, notice: Bool, requires: UInt8, encoded: [UInt8]?, layout: EnvelopeLayout? = nil
    ) {
        self.id = id
        var t: Traits = []
        if hasUserId { t.insert(.hasUserId) }
        if critical { t.insert(.critical) }
        if notice { t.insert(.notice) }
        self.traits = t
        self.flags = [.inQueue]
        self.requires = requires
        self.name = name
        self.anonymousEpoch = anonymousEpoch
        self.timestampMs = timestampMs
        self.encoded = encoded
        if let layout, let i = UInt16(exactly: layout.identityAt), i > 0, let u = UInt16(exactly: layout.userIdAt) {
            (identityAt, userIdAt) = (i, u)
        } else {
            (identityAt, userIdAt) = (0, 0)
        }
    }
}
