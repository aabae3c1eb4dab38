import TrackerCore

/// The transport of a client built in Xcode Previews (issue 37 item 7): sends nothing and answers
/// every request with 200, so that the preview's queue drains as if delivered.
struct PreviewTransport: HTTPTransport {
    func send(_ request: HTTPRequest) async throws -> HTTPResponse { HTTPResponse(status: 200) }
}
