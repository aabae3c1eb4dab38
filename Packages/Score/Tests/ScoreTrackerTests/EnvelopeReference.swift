import TrackerCore

@testable import ScoreTracker

/// The tests' reference envelope: its members written out one by one in the key order of
/// <doc:Envelope#The-envelope>, apart from the SDK's `EnvelopeWriter` (which builds every envelope
/// the SDK sends, issue 35 item 6: the SDK has no second event form). The byte-for-byte tests
/// compare the SDK's envelopes with these.
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

    init(
        type: String, name: String, eventId: String, timestampMs: Int64, anonymousId: String, sessionId: String,
        userId: String?, siteId: String, props: JSONObject, traits: JSONObject?, context: JSONObject,
        sdkName: String, sdkVersion: String
    ) {
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

    /// The wire bytes.
    func encode() -> [UInt8] {
        var out = [UInt8]()
        func member(_ key: String, _ value: String, first: Bool = false) {
            out.append(contentsOf: ((first ? "{" : ",") + "\"\(key)\":").utf8)
            WireJSON.writeString(value, into: &out)
        }
        member("type", type, first: true)
        member("name", name)
        member("eventId", eventId)
        member("timestamp", Timestamp.format(ms: timestampMs))
        member("anonymousId", anonymousId)
        member("sessionId", sessionId)
        if let userId { member("userId", userId) }
        member("siteId", siteId)
        out.append(contentsOf: #","props":"#.utf8)
        WireJSON.write(.object(props), into: &out)
        if let traits {
            out.append(contentsOf: #","traits":"#.utf8)
            WireJSON.write(.object(traits), into: &out)
        }
        out.append(contentsOf: #","context":"#.utf8)
        WireJSON.write(.object(context), into: &out)
        out.append(contentsOf: #","sdk":"#.utf8)
        var sdk = JSONObject()
        sdk.appendUnchecked("name", .string(sdkName))
        sdk.appendUnchecked("version", .string(sdkVersion))
        WireJSON.write(.object(sdk), into: &out)
        out.append(125)
        return out
    }
}

extension QueuedEvent {
    /// A queued event of the reference envelope `fields` (or of `encoded`).
    convenience init(
        eventId: String, name: String, timestampMs: Int64, anonymousEpoch: UInt32, hasUserId: Bool,
        critical: Bool, notice: Bool, requires: UInt8, fields: EnvelopeFields?, encoded: [UInt8]?
    ) {
        self.init(
            eventId: eventId, name: name, timestampMs: timestampMs, anonymousEpoch: anonymousEpoch,
            hasUserId: hasUserId, critical: critical, notice: notice, requires: requires,
            encoded: encoded ?? fields?.encode())
    }
}
