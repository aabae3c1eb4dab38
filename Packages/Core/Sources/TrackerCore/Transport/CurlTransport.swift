import CTrackerCurlShim
#if canImport(Darwin)
import Foundation
#elseif canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
import Synchronization

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
///   redirects are never followed; TLS peers and host names are always verified.
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

        /// Creates options.
        public init(
            maxConnections: Int = 16, maxConnectionsPerHost: Int = 8, pooledHandles: Int = 16, userAgent: String? = nil,
            idleSpinMicroseconds: Int = 100
        ) {
            self.maxConnections = maxConnections
            self.maxConnectionsPerHost = maxConnectionsPerHost
            self.pooledHandles = pooledHandles
            self.userAgent = userAgent
            self.idleSpinMicroseconds = idleSpinMicroseconds
        }
    }

    /// The process-wide transport (default options); it is never shut down.
    public static let shared = CurlTransport()

    /// The options this transport was created with.
    public let options: Options
    private let engine: CurlEngine

    /// Creates a transport with its own connection cache and loop thread.
    public init(options: Options = Options()) {
        self.options = options
        self.engine = CurlEngine(options: options)
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
        try CurlTransport.checkURL(request.url)
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
            let isOther = (b >= UInt8(ascii: "0") && b <= UInt8(ascii: "9")) || b == UInt8(ascii: "+") || b == UInt8(ascii: "-") || b == UInt8(ascii: ".")
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
