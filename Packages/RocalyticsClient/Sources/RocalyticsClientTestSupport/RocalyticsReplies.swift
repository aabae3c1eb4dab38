import TrackerCore
@_exported import TrackerCoreTestKit

// The recording transport is Core's test kit's (`TrackerCoreTestKit.RecordingTransport`,
// re-exported here); this module adds the Rocalytics backend's stock answers.
extension RecordingTransport {
    /// The stock replies of the Rocalytics backend in the reference client's tests
    /// (RocalyticsClient's Testing article): identify 200 `{}`, every other path 204 with no body.
    public static let rocalyticsReplies: Handler = { request in
        if RecordingTransport.path(of: request.url) == "/functions/v1/identify" {
            return HTTPResponse(status: 200, body: Array("{}".utf8))
        }
        return HTTPResponse(status: 204)
    }

    /// The stock replies (``rocalyticsReplies``).
    @available(*, deprecated, renamed: "rocalyticsReplies")
    public static var defaultReplies: Handler { rocalyticsReplies }

    /// A transport answering with ``rocalyticsReplies`` (what `RecordingTransport()` of this
    /// module answered before it moved to the test kit).
    public static func rocalytics() -> RecordingTransport { RecordingTransport(rocalyticsReplies) }
}
