import Foundation
import TrackerCore

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

// The spellings that differ between Glibc and Darwin (issue 17: the test kit compiles on both).
#if canImport(Glibc)
    /// `SOCK_STREAM` is an enum on Glibc, an `Int32` macro on Darwin.
    private let streamSocketType = Int32(SOCK_STREAM.rawValue)
    /// Glibc turns SIGPIPE off per call; Darwin has no `MSG_NOSIGNAL` and sets `SO_NOSIGPIPE` on
    /// each socket instead (see ``noSigPipe(_:)``).
    private let sendFlags = Int32(MSG_NOSIGNAL)
    private typealias SocketLinger = Glibc.linger
    private func noSigPipe(_ fd: Int32) {}
#else
    private let streamSocketType = SOCK_STREAM
    private let sendFlags: Int32 = 0
    private typealias SocketLinger = linger
    private func noSigPipe(_ fd: Int32) {
        var one: Int32 = 1
        _ = setsockopt(fd, SOL_SOCKET, SO_NOSIGPIPE, &one, socklen_t(MemoryLayout<Int32>.size))
    }
#endif

/// One request as the ``LoopbackHTTPServer`` received it.
public struct RecordedRequest: Sendable, Equatable {
    /// Method, e.g. `POST`.
    public var method: String
    /// Request target as sent, e.g. `/v1/runs?x=1`.
    public var path: String
    /// Header fields in the order received.
    public var headers: [HTTPHeader]
    /// Body (`Content-Length` bytes; empty when none).
    public var body: [UInt8]
    /// Which accepted connection carried it (1 for the first connection).
    public var connection: Int

    /// Creates a recorded request.
    public init(method: String, path: String, headers: [HTTPHeader], body: [UInt8], connection: Int) {
        self.method = method
        self.path = path
        self.headers = headers
        self.body = body
        self.connection = connection
    }

    /// The first header named `name`, compared case-insensitively.
    public func header(_ name: String) -> String? {
        let lower = name.lowercased()
        return headers.first { $0.name.lowercased() == lower }?.value
    }

    /// The body decoded as UTF-8.
    public var bodyText: String { String(decoding: body, as: UTF8.self) }
}

/// A scripted HTTP/1.1 server on `127.0.0.1` for tests and benchmarks.
///
/// It listens on an ephemeral port, keeps connections alive, parses request lines, headers and
/// `Content-Length` bodies, records every request and answers each one as the handler says
/// (see ``Action``). Each connection is served by its own thread. ``stop()`` closes everything,
/// including connections told to ``Action/hang``.
///
/// ```swift
/// let server = try LoopbackHTTPServer { _ in .respond(status: 200, body: #"{"outcome":"accepted"}"#) }
/// defer { server.stop() }
/// // ... send to server.baseURL + "/collect" ...
/// let requests = await server.waitForRequests(count: 1)
/// ```
public final class LoopbackHTTPServer: Sendable {
    /// How to answer one request.
    public enum Action: Sendable {
        /// Answers with `status`, `headers` and `body`, after waiting `delayMs` milliseconds. A
        /// `Content-Length` header is added unless `headers` has one or a `Transfer-Encoding`
        /// (then `body` must already be framed, chunked for instance). A `HEAD` request gets the
        /// head only.
        case respond(status: Int, headers: [HTTPHeader] = [], body: [UInt8] = [], delayMs: Int = 0)
        /// Never answers; the connection stays open until the client closes it or the server stops.
        case hang
        /// Closes the connection without answering.
        case close
        /// Sends the status line, the headers (with the full `Content-Length`) and the first
        /// `bodyBytesSent` bytes of `body`, then closes the connection.
        case closeMidResponse(status: Int, headers: [HTTPHeader] = [], body: [UInt8], bodyBytesSent: Int)
        /// Resets the connection (`SO_LINGER` 0, so the client sees a TCP RST) without answering.
        case reset
        /// Sends the whole answer one byte at a time, `intervalMs` milliseconds apart.
        case drip(status: Int, headers: [HTTPHeader] = [], body: [UInt8] = [], intervalMs: Int)

        /// `respond` with a UTF-8 text body.
        public static func respond(status: Int, headers: [HTTPHeader] = [], body: String, delayMs: Int = 0) -> Action {
            .respond(status: status, headers: headers, body: Array(body.utf8), delayMs: delayMs)
        }
    }

    /// Decides the answer to each request; called on the connection's thread.
    public typealias Handler = @Sendable (RecordedRequest) -> Action

    /// Errors starting the server.
    public struct StartError: Error, Sendable, CustomStringConvertible {
        /// The failing call, e.g. `bind`.
        public var call: String
        /// `errno` after the call.
        public var errno: Int32
        /// The call and its `errno`.
        public var description: String { "\(call) failed: errno \(errno)" }
    }

    private struct Waiter {
        var count: Int
        var continuation: OnceContinuation<[RecordedRequest]>
    }

    private struct State {
        var requests: [RecordedRequest] = []
        var requestCount = 0
        var connections = 0
        var openSockets: Set<Int32> = []
        var waiters: [Waiter] = []
        var stopped = false
    }

    /// The port the server listens on.
    public let port: Int
    /// `http://127.0.0.1:<port>`, without a trailing slash.
    public var baseURL: String { "http://127.0.0.1:\(port)" }

    private let listenSocket: Int32
    private let stopPipe: (read: Int32, write: Int32)
    private let handler: Handler
    private let recordRequests: Bool
    private let state = Locked(State())
    private let allThreadsDone = DispatchGroup()

    /// Starts a server.
    /// - Parameters:
    ///   - recordRequests: whether to keep every request for ``requests`` (turn off for long
    ///     benchmarks; counts and ``waitForRequests(count:timeoutMs:)`` still work, returning an empty list).
    ///   - handler: decides the answer to each request.
    public init(recordRequests: Bool = true, handler: @escaping Handler) throws {
        self.handler = handler
        self.recordRequests = recordRequests
        var pipeFds: [Int32] = [0, 0]
        guard pipe(&pipeFds) == 0 else { throw StartError(call: "pipe", errno: errno) }
        stopPipe = (pipeFds[0], pipeFds[1])

        let fd = socket(AF_INET, streamSocketType, 0)
        guard fd >= 0 else {
            let e = errno
            close(pipeFds[0])
            close(pipeFds[1])
            throw StartError(call: "socket", errno: e)
        }
        // No SO_REUSEADDR on purpose: the kernel then never hands out a port that still has
        // TIME_WAIT connections of an earlier server, whose 4-tuples a client could hit again
        // (a refused connect).
        var address = sockaddr_in()
        #if canImport(Darwin)
            address.sin_len = UInt8(MemoryLayout<sockaddr_in>.size)
        #endif
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = 0
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) }
        }
        let listening = bound == 0 ? listen(fd, 512) : -1
        let named =
            listening == 0
            ? withUnsafeMutablePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
            } : -1
        guard named == 0 else {
            let e = errno
            close(fd)
            close(pipeFds[0])
            close(pipeFds[1])
            throw StartError(call: bound != 0 ? "bind" : (listening != 0 ? "listen" : "getsockname"), errno: e)
        }
        listenSocket = fd
        port = Int(UInt16(bigEndian: address.sin_port))
        startThread { [self] in acceptLoop() }
    }

    deinit {
        // Server threads keep the server alive, so by now it was stopped (or never got going).
        stop(waitForThreads: false)
        close(stopPipe.read)
        close(stopPipe.write)
    }

    /// Every request received so far, in arrival order (empty when not recording).
    public var requests: [RecordedRequest] { state.withLock { $0.requests } }
    /// How many requests arrived.
    public var requestCount: Int { state.withLock { $0.requestCount } }
    /// How many connections were accepted.
    public var connectionCount: Int { state.withLock { $0.connections } }

    /// Waits until at least `count` requests arrived (or the server stopped, or `timeoutMs` of
    /// real time passed: a regression then fails the test instead of hanging it) and returns
    /// the recorded requests. Event-driven: resumed by the connection thread that records the
    /// request, no polling.
    public func waitForRequests(count: Int, timeoutMs: Int = defaultWaitBoundMs) async -> [RecordedRequest] {
        await boundedWait(
            timeoutMs: timeoutMs, what: "LoopbackHTTPServer.waitForRequests(count: \(count))",
            onTimeout: { [state] in state.withLock { $0.requests } }
        ) { once in
            let ready: [RecordedRequest]? = state.withLock { s in
                if s.requestCount >= count || s.stopped { return s.requests }
                s.waiters.append(Waiter(count: count, continuation: once))
                return nil
            }
            if let ready { once.resume(returning: ready) }
        }
    }

    /// Stops accepting, closes every connection (hanging ones included), wakes every waiter
    /// and waits (up to 5 s) for the server threads to end. Idempotent. Call it when done: the
    /// server's threads keep it alive until then.
    public func stop() {
        stop(waitForThreads: true)
    }

    private func stop(waitForThreads: Bool) {
        let (sockets, waiters, first): ([Int32], [Waiter], Bool) = state.withLock { s in
            if s.stopped { return ([], [], false) }
            s.stopped = true
            let w = s.waiters
            s.waiters = []
            return (Array(s.openSockets), w, true)
        }
        guard first else {
            if waitForThreads { _ = allThreadsDone.wait(timeout: .now() + 5) }
            return
        }
        var byte: UInt8 = 1
        _ = write(stopPipe.write, &byte, 1)
        shutdown(listenSocket, Int32(SHUT_RDWR))
        for fd in sockets { shutdown(fd, Int32(SHUT_RDWR)) }
        let all = requests
        for waiter in waiters { waiter.continuation.resume(returning: all) }
        if waitForThreads { _ = allThreadsDone.wait(timeout: .now() + 5) }
    }

    // MARK: - Threads

    private func startThread(_ body: @escaping @Sendable () -> Void) {
        allThreadsDone.enter()
        let thread = Thread { [allThreadsDone] in
            body()
            allThreadsDone.leave()
        }
        thread.stackSize = 256 * 1024
        thread.start()
    }

    private func acceptLoop() {
        defer { close(listenSocket) }
        while true {
            let fd = accept(listenSocket, nil, nil)
            if fd < 0 {
                let error = errno
                if isStopped { return }
                // Transient failures (an aborted handshake, no free descriptor) must not end
                // the server; back off briefly when out of descriptors.
                if error == EMFILE || error == ENFILE || error == ENOBUFS || error == ENOMEM {
                    if waitForStop(ms: 5) { return }
                }
                continue
            }
            let serial: Int? = state.withLock { s in
                if s.stopped { return nil }
                s.connections += 1
                s.openSockets.insert(fd)
                return s.connections
            }
            guard let serial else {
                close(fd)
                return
            }
            var one: Int32 = 1
            setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
            startThread { [self] in serve(fd, connection: serial) }
        }
    }

    /// Serves one connection until it closes, the handler closes it or the server stops.
    private func serve(_ fd: Int32, connection: Int) {
        var resetOnClose = false
        noSigPipe(fd)
        defer {
            state.withLock { _ = $0.openSockets.remove(fd) }
            if resetOnClose {
                var linger = SocketLinger(l_onoff: 1, l_linger: 0)
                setsockopt(fd, SOL_SOCKET, SO_LINGER, &linger, socklen_t(MemoryLayout<SocketLinger>.size))
            }
            close(fd)
        }
        var buffer: [UInt8] = []
        buffer.reserveCapacity(16 * 1024)
        var chunk = [UInt8](repeating: 0, count: 64 * 1024)
        var scanFrom = 0

        while true {
            // Read until the end of the head.
            var headEnd: Int?
            while headEnd == nil {
                headEnd = Self.findHeadEnd(buffer, from: scanFrom)
                if headEnd != nil { break }
                scanFrom = max(0, buffer.count - 3)
                guard receive(fd, into: &buffer, chunk: &chunk) else { return }
            }
            guard let headEnd, let head = Self.parseHead(buffer[..<headEnd]) else { return }
            let contentLength = head.contentLength
            while buffer.count < headEnd + contentLength {
                guard receive(fd, into: &buffer, chunk: &chunk) else { return }
            }
            let body = Array(buffer[headEnd..<(headEnd + contentLength)])
            buffer.removeSubrange(0..<(headEnd + contentLength))
            scanFrom = 0

            let request = RecordedRequest(method: head.method, path: head.path, headers: head.headers, body: body, connection: connection)
            record(request)
            if isStopped { return }

            switch handler(request) {
            case .respond(let status, let headers, let body, let delayMs):
                if delayMs > 0, waitForStop(ms: delayMs) { return }
                var bytes = Self.responseBytes(status: status, headers: headers, body: body)
                if head.method == "HEAD" { bytes.removeLast(body.count) }  // HEAD answers carry no body
                guard sendAll(fd, bytes) else { return }
            case .hang:
                hang(fd)
                return
            case .close:
                return
            case .closeMidResponse(let status, let headers, let body, let sent):
                let full = Self.responseBytes(status: status, headers: headers, body: body)
                let cut = full.count - body.count + max(0, min(sent, body.count))
                _ = sendAll(fd, Array(full[..<cut]))
                return
            case .reset:
                resetOnClose = true
                return
            case .drip(let status, let headers, let body, let intervalMs):
                for byte in Self.responseBytes(status: status, headers: headers, body: body) {
                    guard sendAll(fd, [byte]) else { return }
                    if intervalMs > 0, waitForStop(ms: intervalMs) { return }
                }
            }
            if head.closeAfter { return }
        }
    }

    private var isStopped: Bool { state.withLock { $0.stopped } }

    private func record(_ request: RecordedRequest) {
        let (ready, all): ([Waiter], [RecordedRequest]) = state.withLock { s in
            s.requestCount += 1
            if recordRequests { s.requests.append(request) }
            guard !s.waiters.isEmpty else { return ([], []) }
            var ready: [Waiter] = []
            s.waiters.removeAll { w in
                if w.count <= s.requestCount {
                    ready.append(w)
                    return true
                }
                return false
            }
            return (ready, ready.isEmpty ? [] : s.requests)
        }
        for waiter in ready { waiter.continuation.resume(returning: all) }
    }

    /// Appends what `recv` returns; false on end of stream, error or stop.
    private func receive(_ fd: Int32, into buffer: inout [UInt8], chunk: inout [UInt8]) -> Bool {
        while true {
            let n = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if n > 0 {
                buffer.append(contentsOf: chunk[..<n])
                return true
            }
            if n < 0, errno == EINTR { continue }
            return false
        }
    }

    private func sendAll(_ fd: Int32, _ bytes: [UInt8]) -> Bool {
        var offset = 0
        while offset < bytes.count {
            let n = bytes.withUnsafeBytes { raw in
                send(fd, raw.baseAddress! + offset, raw.count - offset, sendFlags)
            }
            if n > 0 {
                offset += n
            } else if n < 0, errno == EINTR {
                continue
            } else {
                return false
            }
        }
        return true
    }

    /// Sleeps up to `ms` unless the server stops first; returns whether it stopped.
    private func waitForStop(ms: Int) -> Bool {
        var fds = [pollfd(fd: stopPipe.read, events: Int16(POLLIN), revents: 0)]
        let deadline = DispatchTime.now().uptimeNanoseconds + UInt64(ms) * 1_000_000
        while true {
            let now = DispatchTime.now().uptimeNanoseconds
            if now >= deadline { return false }
            let left = Int32(min(UInt64(Int32.max), (deadline - now + 999_999) / 1_000_000))
            let r = poll(&fds, 1, left)
            if r > 0 { return true }
            if r < 0, errno != EINTR { return isStopped }
        }
    }

    /// Holds the connection without answering until the client closes it or the server stops.
    private func hang(_ fd: Int32) {
        var fds = [pollfd(fd: fd, events: Int16(POLLIN), revents: 0), pollfd(fd: stopPipe.read, events: Int16(POLLIN), revents: 0)]
        var scratch = [UInt8](repeating: 0, count: 4096)
        while true {
            fds[0].revents = 0
            fds[1].revents = 0
            let r = poll(&fds, 2, -1)
            if r < 0 { if errno == EINTR { continue } else { return } }
            if fds[1].revents != 0 { return }
            if fds[0].revents != 0 {
                let n = scratch.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
                if n <= 0 { return }
            }
        }
    }

    // MARK: - HTTP/1.1 framing

    private struct Head {
        var method: String
        var path: String
        var headers: [HTTPHeader]
        var contentLength: Int
        var closeAfter: Bool
    }

    /// Index just past `\r\n\r\n`, if the buffer holds a complete head.
    private static func findHeadEnd(_ buffer: [UInt8], from start: Int) -> Int? {
        guard buffer.count >= 4 else { return nil }
        var i = max(0, start)
        while i + 3 < buffer.count {
            if buffer[i] == 0x0D, buffer[i + 1] == 0x0A, buffer[i + 2] == 0x0D, buffer[i + 3] == 0x0A { return i + 4 }
            i += 1
        }
        return nil
    }

    private static func parseHead(_ bytes: ArraySlice<UInt8>) -> Head? {
        let text = String(decoding: bytes, as: UTF8.self)
        var lines = text.split(separator: "\r\n", omittingEmptySubsequences: true)
        guard !lines.isEmpty else { return nil }
        let requestLine = lines.removeFirst().split(separator: " ")
        guard requestLine.count == 3 else { return nil }
        var headers: [HTTPHeader] = []
        var contentLength = 0
        var closeAfter = requestLine[2] == "HTTP/1.0"
        for line in lines {
            guard let colon = line.firstIndex(of: ":") else { return nil }
            let name = String(line[..<colon])
            let value = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
            headers.append(HTTPHeader(name, value))
            switch name.lowercased() {
            case "content-length":
                guard let n = Int(value), n >= 0 else { return nil }
                contentLength = n
            case "connection":
                let v = value.lowercased()
                if v == "close" { closeAfter = true } else if v == "keep-alive" { closeAfter = false }
            default: break
            }
        }
        return Head(
            method: String(requestLine[0]), path: String(requestLine[1]), headers: headers, contentLength: contentLength,
            closeAfter: closeAfter)
    }

    private static func responseBytes(status: Int, headers: [HTTPHeader], body: [UInt8]) -> [UInt8] {
        var head = "HTTP/1.1 \(status) \(reasonPhrase(status))\r\n"
        var hasLength = false
        for header in headers {
            let name = header.name.lowercased()
            if name == "content-length" || name == "transfer-encoding" { hasLength = true }
            head += "\(header.name): \(header.value)\r\n"
        }
        if !hasLength { head += "Content-Length: \(body.count)\r\n" }
        head += "\r\n"
        var bytes = Array(head.utf8)
        bytes.append(contentsOf: body)
        return bytes
    }

    private static func reasonPhrase(_ status: Int) -> String {
        switch status {
        case 200: "OK"
        case 201: "Created"
        case 204: "No Content"
        case 301: "Moved Permanently"
        case 302: "Found"
        case 400: "Bad Request"
        case 401: "Unauthorized"
        case 404: "Not Found"
        case 413: "Payload Too Large"
        case 500: "Internal Server Error"
        case 503: "Service Unavailable"
        default: "Status"
        }
    }
}
