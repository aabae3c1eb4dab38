import CTrackerCurlShim

#if canImport(Darwin)
    import Foundation
#elseif canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// The default ``HTTPTransport``: libcurl's multi interface driven by one dedicated thread.
///
/// - Every transfer runs on a single `curl_multi` loop on its own thread, so no cooperative-pool
///   thread ever blocks on I/O. Requests are handed to the loop under a lock and the loop is
///   woken with `curl_multi_wakeup`.
/// - Connections are kept in the multi handle's cache and reused across requests; easy handles
///   are pooled.
/// - Cancelling the calling task removes the transfer from the loop at once and throws
///   ``HTTPError/Code/cancelled``.
/// - Only `http` and `https` are spoken (checked before any I/O, and enforced in libcurl too);
///   plain `http` only to loopback addresses unless ``Options/plainHTTP`` names the host (App
///   Transport Security does not cover libcurl's sockets, so this rule holds on every
///   platform); redirects are never followed; TLS peers and host names are always verified.
/// - Trust: on Apple platforms libcurl (our XCFramework) verifies peers with Apple SecTrust,
///   the same system trust store as Apple's own URL loading system; on Linux, the system CA bundle libcurl was built
///   with. ``Options/trustAnchorsPEM`` replaces either with the given CA certificates (the
///   fallback for a store that cannot be used, and for pinning a private CA).
/// - At start-up the transport checks the linked libcurl (``LibcurlRequirements``); one that
///   falls short fails every request with ``HTTPError/Code/libcurlUnsupported``.
/// - A response body larger than ``HTTPRequest/maxResponseBytes`` aborts the transfer with
///   ``HTTPError/Code/responseTooLarge``.
/// - The loop thread doubles as a task executor (``taskExecutor``): a sending loop run under
///   `withTaskExecutorPreference(transport.taskExecutor)` skips the hand-over between the
///   caller's thread and the loop thread on every request.
///
/// Nothing about requests or responses is ever logged.
public final class CurlTransport: HTTPTransport {
    /// Tuning knobs for a transport.
    public struct Options: Sendable, Equatable {
        /// Most connections open at once, all hosts together; further transfers wait for one.
        public var maxConnections: Int
        /// Most connections open at once to one host.
        public var maxConnectionsPerHost: Int
        /// Idle easy handles kept for reuse.
        public var pooledHandles: Int
        /// `User-Agent` sent when the request carries none; `nil` sends no such header.
        public var userAgent: String?
        /// After the last transfer in flight finishes, how long (in microseconds) the loop
        /// thread keeps looking for a next request before it goes to sleep. This saves a thread
        /// wake-up per request for back-to-back senders; 0 turns it off.
        public var idleSpinMicroseconds: Int
        /// Where plain `http://` may go: loopback only unless hosts are named explicitly.
        public var plainHTTP: PlainHTTPPolicy
        /// CA certificates (PEM) to verify peers against instead of the platform's store
        /// (`CURLOPT_CAINFO_BLOB`); `nil` uses the store: Apple SecTrust on Apple platforms, the
        /// system CA bundle on Linux. Verification itself is never off.
        public var trustAnchorsPEM: [UInt8]?

        /// Creates options.
        public init(
            maxConnections: Int = 16, maxConnectionsPerHost: Int = 8, pooledHandles: Int = 16, userAgent: String? = nil,
            idleSpinMicroseconds: Int = 100, plainHTTP: PlainHTTPPolicy = .loopbackOnly, trustAnchorsPEM: [UInt8]? = nil
        ) {
            self.maxConnections = maxConnections
            self.maxConnectionsPerHost = maxConnectionsPerHost
            self.pooledHandles = pooledHandles
            self.userAgent = userAgent
            self.idleSpinMicroseconds = idleSpinMicroseconds
            self.plainHTTP = plainHTTP
            self.trustAnchorsPEM = trustAnchorsPEM
        }
    }

    /// The process-wide transport (default options); it is never shut down.
    public static let shared = CurlTransport()

    /// The options this transport was created with.
    public let options: Options
    private let engine: CurlEngine

    /// Why this transport refuses every request: the linked libcurl falls short of
    /// ``LibcurlRequirements/current``; `nil` when it is fine.
    public let libcurlProblem: HTTPError?

    /// Creates a transport with its own connection cache and loop thread, after checking the
    /// linked libcurl.
    public convenience init(options: Options = Options()) {
        self.init(options: options, libcurl: .linked, requirements: .current)
    }

    /// Creates a transport checking `libcurl` against `requirements` (tests describe other
    /// builds with it); a transport that fails the check starts no thread.
    init(options: Options, libcurl: LibcurlInfo, requirements: LibcurlRequirements) {
        self.options = options
        let problem = requirements.check(libcurl)
        self.libcurlProblem = problem
        self.engine = CurlEngine(options: options, start: problem == nil)
    }

    deinit {
        engine.shutdown()
    }

    /// Stops the loop thread: transfers in flight and later requests fail with
    /// ``HTTPError/Code/shutdown``; connections and handles are released. Idempotent.
    public func shutdown() {
        engine.shutdown()
    }

    /// An executor that runs tasks on this transport's I/O thread, the `curl_multi` loop.
    ///
    /// Run a sending loop under `withTaskExecutorPreference(transport.taskExecutor)` to save the
    /// thread hops: each request is handed to the loop without waking it, and its completion
    /// resumes the task right on the loop thread instead of on the global pool: two thread
    /// wake-ups fewer per request. Keep the work there short, it runs on the transport's I/O
    /// thread: every transfer of this transport waits while it runs (timeouts fire late), and a
    /// blocking wait there for one of them deadlocks.
    ///
    /// ```swift
    /// try await withTaskExecutorPreference(transport.taskExecutor) {
    ///     for request in requests { _ = try await transport.send(request) }
    /// }
    /// ```
    ///
    /// Child tasks inherit the preference. Cancellation and timeouts behave as anywhere else.
    /// After ``shutdown()`` the executor hands its jobs to the global concurrent executor, so
    /// tasks preferring it still run to completion (their requests fail with
    /// ``HTTPError/Code/shutdown``). A single request gains nothing: entering and leaving the
    /// preference costs the two hops it saves.
    @available(macOS 15.0, iOS 18.0, watchOS 11.0, tvOS 18.0, visionOS 2.0, *)
    public var taskExecutor: any TaskExecutor { engine }

    /// Sends `request` and returns the complete response, whatever its status.
    ///
    /// Throws ``HTTPError`` when no complete response arrived: ``HTTPError/Code/unsupportedScheme``
    /// or ``HTTPError/Code/invalidURL`` before any I/O, ``HTTPError/Code/timeout`` once
    /// `timeoutMs` (or `connectTimeoutMs` for connecting) elapsed, ``HTTPError/Code/cancelled``
    /// when the calling task was cancelled, and the connection, TLS and size failures.
    public func send(_ request: HTTPRequest) async throws -> HTTPResponse {
        if let libcurlProblem { throw libcurlProblem }
        try CurlTransport.checkURL(request.url)
        try CurlTransport.checkPlainHTTP(request.url, options.plainHTTP)
        try CurlTransport.checkFields(request)
        if Task.isCancelled { throw HTTPError(.cancelled, "the task was cancelled before sending") }
        let transfer = try engine.prepare(request)
        let engine = self.engine
        return try await withTaskCancellationHandler {
            try await withUnsafeThrowingContinuation { (continuation: UnsafeContinuation<HTTPResponse, any Error>) in
                transfer.continuation = continuation
                engine.submit(transfer)
            }
        } onCancel: {
            engine.cancel(transfer)
        }
    }

    // MARK: - Checks done before any I/O

    /// Accepts only absolute `http`/`https` URLs with a host and no whitespace or control
    /// characters.
    static func checkURL(_ url: String) throws(HTTPError) {
        let bytes = Array(url.utf8)
        guard let colon = bytes.firstIndex(of: UInt8(ascii: ":")), colon > 0 else {
            throw HTTPError(.invalidURL, "the URL has no scheme")
        }
        for (i, b) in bytes[..<colon].enumerated() {
            let isAlpha = (b | 0x20) >= UInt8(ascii: "a") && (b | 0x20) <= UInt8(ascii: "z")
            let isOther =
                (b >= UInt8(ascii: "0") && b <= UInt8(ascii: "9")) || b == UInt8(ascii: "+") || b == UInt8(ascii: "-")
                || b == UInt8(ascii: ".")
            guard isAlpha || (i > 0 && isOther) else { throw HTTPError(.invalidURL, "the URL scheme is malformed") }
        }
        let scheme = String(decoding: bytes[..<colon], as: UTF8.self).lowercased()
        guard scheme == "http" || scheme == "https" else {
            throw HTTPError(.unsupportedScheme, "scheme '\(scheme)' is not http or https")
        }
        let rest = bytes[(colon + 1)...]
        guard rest.starts(with: [UInt8(ascii: "/"), UInt8(ascii: "/")]) else {
            throw HTTPError(.invalidURL, "the URL has no authority")
        }
        let afterSlashes = rest.dropFirst(2)
        guard let first = afterSlashes.first, first != UInt8(ascii: "/"), first != UInt8(ascii: "?"), first != UInt8(ascii: "#") else {
            throw HTTPError(.invalidURL, "the URL has no host")
        }
        guard !bytes.contains(where: { $0 <= 0x20 || $0 == 0x7F }) else {
            throw HTTPError(.invalidURL, "the URL contains whitespace or control characters")
        }
    }

    /// Refuses `http` to a host the policy does not allow (after ``checkURL(_:)``).
    static func checkPlainHTTP(_ url: String, _ policy: PlainHTTPPolicy) throws(HTTPError) {
        let bytes = url.utf8
        guard let colon = bytes.firstIndex(of: UInt8(ascii: ":")),
            String(decoding: bytes[..<colon], as: UTF8.self).lowercased() == "http"
        else { return }
        guard policy.allows(host: PlainHTTPPolicy.host(ofURL: url)) else {
            throw HTTPError(
                .insecureHTTP,
                "plain http is allowed only to loopback addresses or to hosts named in CurlTransport.Options.plainHTTP; use https")
        }
    }

    /// Refuses methods and header fields that would break the request framing.
    static func checkFields(_ request: HTTPRequest) throws(HTTPError) {
        let method = request.method.utf8
        guard !method.isEmpty, method.allSatisfy(isTokenByte) else {
            throw HTTPError(.other, "the method is not an HTTP token")
        }
        for header in request.headers {
            guard !header.name.isEmpty, header.name.utf8.allSatisfy(isTokenByte) else {
                throw HTTPError(.other, "a header name is not an HTTP token")
            }
            guard !header.value.utf8.contains(where: { $0 == 0x0D || $0 == 0x0A || $0 == 0 }) else {
                throw HTTPError(.other, "a header value contains CR, LF or NUL")
            }
        }
    }

    private static func isTokenByte(_ b: UInt8) -> Bool {
        switch b {
        case UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"):
            return true
        default:
            return "!#$%&'*+-.^_`|~".utf8.contains(b)
        }
    }
}
