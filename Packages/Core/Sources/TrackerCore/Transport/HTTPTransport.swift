/// One HTTP request for an ``HTTPTransport``.
public struct HTTPRequest: Sendable, Equatable {
    /// Absolute `http` or `https` URL. Any other scheme is refused before any I/O.
    public var url: String
    /// Method, e.g. `POST`.
    public var method: String
    /// Header fields in order (names as given; HTTP treats them case-insensitively).
    public var headers: [HTTPHeader]
    /// Request body; `nil` sends none.
    public var body: [UInt8]?
    /// Bound on the whole exchange, connection included, in milliseconds.
    public var timeoutMs: Int64
    /// Bound on establishing the connection (TCP and TLS), in milliseconds; `nil` uses `timeoutMs`.
    public var connectTimeoutMs: Int64?
    /// Largest response body accepted; a larger answer fails with ``HTTPError/Code/responseTooLarge``.
    public var maxResponseBytes: Int

    /// ``timeoutMs`` in seconds, for a custom transport that hands it to an API counting in
    /// seconds (`URLRequest.timeoutInterval`, say). Setting it rounds to whole milliseconds
    /// (``Milliseconds/from(seconds:)``).
    public var timeout: TimeInterval {
        get { Milliseconds.seconds(timeoutMs) }
        set { timeoutMs = Milliseconds.from(seconds: newValue) }
    }
    /// ``connectTimeoutMs`` in seconds; `nil` uses ``timeout``.
    public var connectTimeout: TimeInterval? {
        get { connectTimeoutMs.map(Milliseconds.seconds) }
        set { connectTimeoutMs = newValue.map { Milliseconds.from(seconds: $0) } }
    }

    /// Default response-size cap: 1 MiB.
    public static let defaultMaxResponseBytes = 1 << 20

    /// Creates a request.
    public init(
        url: String, method: String = "GET", headers: [HTTPHeader] = [], body: [UInt8]? = nil,
        timeoutMs: Int64 = 15_000, connectTimeoutMs: Int64? = nil,
        maxResponseBytes: Int = HTTPRequest.defaultMaxResponseBytes
    ) {
        self.url = url
        self.method = method
        self.headers = headers
        self.body = body
        self.timeoutMs = timeoutMs
        self.connectTimeoutMs = connectTimeoutMs
        self.maxResponseBytes = maxResponseBytes
    }
}

/// One header field.
public struct HTTPHeader: Sendable, Equatable, Hashable {
    /// Field name.
    public var name: String
    /// Field value.
    public var value: String
    /// Creates a header field.
    public init(_ name: String, _ value: String) {
        self.name = name
        self.value = value
    }
}

/// A complete HTTP response.
public struct HTTPResponse: Sendable, Equatable {
    /// Status code, e.g. 200.
    public var status: Int
    /// Response header fields in order.
    public var headers: [HTTPHeader]
    /// Response body.
    public var body: [UInt8]

    /// Creates a response.
    public init(status: Int, headers: [HTTPHeader] = [], body: [UInt8] = []) {
        self.status = status
        self.headers = headers
        self.body = body
    }

    /// The first header with `name`, compared case-insensitively.
    public func header(_ name: String) -> String? {
        let lower = name.lowercased()
        return headers.first { $0.name.lowercased() == lower }?.value
    }
}

/// Why a request produced no response.
public struct HTTPError: Error, Sendable, Hashable, CustomStringConvertible {
    /// A stable failure kind: a struct with static members, not an enum, so that a kind added
    /// later never breaks a client's `switch` (which needs a `default`), as in async-http-client.
    public struct Code: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
        /// The stable spelling, e.g. `connection-failed`.
        public let rawValue: String

        /// Creates a code from its spelling.
        public init(rawValue: String) { self.rawValue = rawValue }

        /// The URL could not be parsed.
        public static let invalidURL = Code(rawValue: "invalid-url")
        /// The scheme is neither `http` nor `https`.
        public static let unsupportedScheme = Code(rawValue: "unsupported-scheme")
        /// A plain `http` URL to a host that is neither loopback nor allowed by the transport's
        /// ``PlainHTTPPolicy``; refused before any I/O.
        public static let insecureHTTP = Code(rawValue: "insecure-http")
        /// The linked libcurl lacks a version or feature the transport relies on (checked when
        /// the transport starts; see ``LibcurlRequirements``).
        public static let libcurlUnsupported = Code(rawValue: "libcurl-unsupported")
        /// The total or connect timeout elapsed.
        public static let timeout = Code(rawValue: "timeout")
        /// The calling task was cancelled; the transfer was aborted.
        public static let cancelled = Code(rawValue: "cancelled")
        /// Connecting failed (refused, unreachable, DNS).
        public static let connectionFailed = Code(rawValue: "connection-failed")
        /// The connection broke before a complete response arrived.
        public static let connectionLost = Code(rawValue: "connection-lost")
        /// The response body exceeded `maxResponseBytes`.
        public static let responseTooLarge = Code(rawValue: "response-too-large")
        /// TLS failed (including a certificate that does not verify).
        public static let tls = Code(rawValue: "tls")
        /// The transport was shut down.
        public static let shutdown = Code(rawValue: "shutdown")
        /// Anything else.
        public static let other = Code(rawValue: "other")

        public var description: String { rawValue }
    }

    /// The failure kind.
    public let code: Code
    /// Detail for developers (never contains headers or bodies).
    public let message: String

    /// Creates an error.
    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { "\(code.rawValue): \(message)" }
}

/// Sends HTTP requests. ``CurlTransport`` is the default; a host may inject its own (the
/// "custom fetch" case, marked on sink destinations).
public protocol HTTPTransport: Sendable {
    /// Sends `request` and returns the complete response, whatever its status. Throws
    /// ``HTTPError`` when no complete response arrived. Cancelling the calling task aborts
    /// the transfer promptly.
    func send(_ request: HTTPRequest) async throws -> HTTPResponse
}
