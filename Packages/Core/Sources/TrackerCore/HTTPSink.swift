/// Where an ``HTTPSink`` takes the host's request headers from.
public enum HTTPSinkHeaders: Sendable {
    /// The same headers on every request.
    case fixed([HTTPHeader])
    /// Headers computed for every request (for a fresh token, say); called on **every** send.
    /// When it throws, the send is transient and nothing is sent.
    case dynamic(@Sendable () async throws -> [HTTPHeader])
}

/// The stock HTTP sink (<doc:Delivery#Reading-a-sinks-answer>): `POST`s each snapshot as JSON to a
/// URL and takes the outcome from the response **body** only.
///
/// - Body: `payload.wireBytes()`; headers: the host's headers plus
///   `content-type: application/json`, which replaces any host header of that name (compared
///   case-insensitively).
/// - The response body is parsed as JSON and normalised with ``SinkResult/normalizing(_:)``:
///   `{"outcome":"accepted"|"ignored"|"rejected", "reason"?: …}` gives that outcome, anything
///   else is transient. **The HTTP status is never read.**
/// - Every failure (transport error, no complete answer within `timeoutMs`, a throwing headers
///   closure, an unparsable body) is ``SinkOutcome/transient`` with a reason. It never throws.
public final class HTTPSink<Payload: WireEncodable>: Sink {
    /// The URL snapshots are posted to.
    public let url: String
    /// `url`, or `"<url> (custom fetch)"` when a transport was injected. Headers are not part
    /// of it.
    public let destination: String?
    /// Bound on each request, in milliseconds; the request is aborted when it elapses.
    public let timeoutMs: Int64
    /// Bound on each request, in seconds: ``timeoutMs`` as a ``TimeInterval``.
    public var timeout: TimeInterval { Milliseconds.seconds(timeoutMs) }
    private let headers: HTTPSinkHeaders
    private let transport: any HTTPTransport
    private let transportInjected: Bool

    /// Creates a sink.
    /// - Parameters:
    ///   - url: `http` or `https` URL to post to.
    ///   - headers: the host's headers, fixed or computed on every send.
    ///   - timeout: bound on each request, in seconds (default 15 s), rounded to whole
    ///     milliseconds (``Milliseconds/from(seconds:)``).
    ///   - transport: a custom transport ("custom fetch"); `nil` uses ``CurlTransport/shared``.
    public convenience init(
        url: String, headers: HTTPSinkHeaders = .fixed([]), timeout: TimeInterval = 15, transport: (any HTTPTransport)? = nil
    ) {
        self.init(url: url, headers: headers, timeoutMs: Milliseconds.from(seconds: timeout), transport: transport)
    }

    /// Creates a sink with its bound in milliseconds: the TypeScript README's `createHttpSink({ url,
    /// headers?, timeoutMs? })`, kept for it (not deprecated); ``init(url:headers:timeout:transport:)``
    /// is the same sink with the bound in seconds.
    @_disfavoredOverload
    public init(url: String, headers: HTTPSinkHeaders = .fixed([]), timeoutMs: Int64 = 15_000, transport: (any HTTPTransport)? = nil) {
        self.url = url
        self.headers = headers
        self.timeoutMs = timeoutMs
        self.transport = transport ?? CurlTransport.shared
        self.transportInjected = transport != nil
        self.destination = transport == nil ? url : "\(url) (custom fetch)"
    }

    /// Posts `payload` and returns the outcome the response body names; never throws.
    public func send(_ payload: Payload) async -> SinkResult {
        let hostHeaders: [HTTPHeader]
        switch headers {
        case .fixed(let fixed):
            hostHeaders = fixed
        case .dynamic(let make):
            do {
                hostHeaders = try await make()
            } catch {
                return SinkResult(.transient, reason: "headers closure failed: \(error)")
            }
        }
        var requestHeaders = hostHeaders.filter { $0.name.lowercased() != "content-type" }
        requestHeaders.append(HTTPHeader("content-type", "application/json"))
        let request = HTTPRequest(url: url, method: "POST", headers: requestHeaders, body: payload.wireBytes(), timeoutMs: timeoutMs)

        let response: HTTPResponse
        do {
            response = try await exchange(request)
        } catch let error as HTTPError {
            return SinkResult(.transient, reason: "transport: \(error.code.rawValue)")
        } catch {
            return SinkResult(.transient, reason: "transport: \(error)")
        }
        guard !response.body.isEmpty, let answer = try? WireJSON.decode(response.body) else {
            return SinkResult(.transient, reason: response.body.isEmpty ? "empty response body" : "response body is not JSON")
        }
        return SinkResult.normalizing(answer)
    }

    /// Sends through the transport. ``CurlTransport`` enforces `timeoutMs` itself; an injected
    /// transport is raced against the deadline and cancelled when it passes.
    ///
    /// Deliberately not under ``CurlTransport/taskExecutor``: one request per call gains nothing
    /// (entering and leaving the preference costs the two hops it saves) and the caller's code
    /// would run on the I/O thread.
    private func exchange(_ request: HTTPRequest) async throws -> HTTPResponse {
        guard transportInjected else { return try await transport.send(request) }
        let transport = self.transport
        let timeoutMs = request.timeoutMs
        return try await withThrowingTaskGroup(of: HTTPResponse?.self) { group in
            group.addTask { try await transport.send(request) }
            group.addTask {
                // `Task.sleep(for:)` needs macOS 13 / iOS 16; nanoseconds deploy to every floor.
                try await Task.sleep(nanoseconds: UInt64(max(0, timeoutMs)) &* 1_000_000)
                return nil
            }
            defer { group.cancelAll() }
            guard let first = try await group.next(), let response = first else {
                throw HTTPError(.timeout, "no complete response within \(timeoutMs) ms")
            }
            return response
        }
    }
}
