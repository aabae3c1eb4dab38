import Foundation
import RocalyticsClient
import TrackerCore

/// An ``HTTPTransport`` that records every request and answers from a handler (by default: by
/// URL path, identify 200 `{}`, everything else 204 with no body).
public final class RecordingTransport: HTTPTransport {
    /// Decides the answer to a request; throwing makes the transport throw.
    public typealias Handler = @Sendable (HTTPRequest) async throws -> HTTPResponse

    private let handler: Locked<HandlerBox>
    private let recorded = Locked<[HTTPRequest]>([])

    private struct HandlerBox: Sendable { var handler: Handler }

    /// A transport answering with `handler`.
    public init(_ handler: @escaping Handler = RecordingTransport.defaultReplies) {
        self.handler = Locked(HandlerBox(handler: handler))
    }

    /// The default replies of rocalytics-client.md §18: identify 200 `{}`, every other path 204.
    public static let defaultReplies: Handler = { request in
        if RecordingTransport.path(of: request.url) == "/functions/v1/identify" {
            return HTTPResponse(status: 200, body: Array("{}".utf8))
        }
        return HTTPResponse(status: 204)
    }

    /// Replaces the handler.
    public func setHandler(_ handler: @escaping Handler) { self.handler.withLock { $0.handler = handler } }

    /// Every request received, in order.
    public var requests: [HTTPRequest] { recorded.value }
    /// The URL paths of the requests, in order.
    public var paths: [String] { requests.map { RecordingTransport.path(of: $0.url) } }

    public func send(_ request: HTTPRequest) async throws -> HTTPResponse {
        recorded.withLock { $0.append(request) }
        let h = handler.withLock { $0.handler }
        return try await h(request)
    }

    /// The path of an absolute URL (`/functions/v1/track`).
    public static func path(of url: String) -> String {
        guard let scheme = url.range(of: "://") else { return url }
        let rest = url[scheme.upperBound...]
        guard let slash = rest.firstIndex(of: "/") else { return "/" }
        let path = rest[slash...]
        if let q = path.firstIndex(of: "?") { return String(path[..<q]) }
        return String(path)
    }
}
