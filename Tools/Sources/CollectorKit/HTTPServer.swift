import Foundation
import Synchronization

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// One HTTP request as the collector's server read it.
public struct HTTPServerRequest: Sendable {
    /// `GET`, `POST`, …
    public var method: String
    /// The path without the query string.
    public var path: String
    /// The query string without its `?` (empty when there is none).
    public var query: String
    /// Header fields in arrival order (names as sent).
    public var headers: [(name: String, value: String)]
    /// The body (Content-Length bytes).
    public var body: [UInt8]
    /// The port the request arrived on (set by ``LoopbackServer``; `nil` for a request a test
    /// builds, which ``CollectorRouter`` then answers without the ``HostPolicy`` check).
    public var localPort: UInt16?

    /// Creates a request (tests build them directly).
    public init(
        method: String, path: String, query: String = "", headers: [(name: String, value: String)] = [], body: [UInt8] = [],
        localPort: UInt16? = nil
    ) {
        self.method = method
        self.path = path
        self.query = query
        self.headers = headers
        self.body = body
        self.localPort = localPort
    }

    /// The first value of header `name` (case-insensitive).
    public func header(_ name: String) -> String? {
        headers.first { $0.name.caseInsensitiveCompare(name) == .orderedSame }?.value
    }

    /// The decoded value of query parameter `name` (`?after=12&kind=score-batch`).
    public func queryValue(_ name: String) -> String? {
        for pair in query.split(separator: "&") {
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            if parts.first.map(String.init) == name {
                let raw = parts.count > 1 ? String(parts[1]) : ""
                return raw.replacingOccurrences(of: "+", with: " ").removingPercentEncoding ?? raw
            }
        }
        return nil
    }
}

/// One HTTP response.
public struct HTTPServerResponse: Sendable {
    /// Status code.
    public var status: Int
    /// Body bytes.
    public var body: [UInt8]
    /// The `Content-Type` header.
    public var contentType: String
    /// Further header lines (`Name: value`), e.g. the web page's Content-Security-Policy.
    public var extraHeaders: [String]

    /// Creates a response (JSON unless told otherwise).
    public init(status: Int, body: [UInt8], contentType: String = "application/json", extraHeaders: [String] = []) {
        self.status = status
        self.body = body
        self.contentType = contentType
        self.extraHeaders = extraHeaders
    }
}

/// Errors of ``LoopbackServer/start()``.
public struct ServerError: Error, Sendable, CustomStringConvertible {
    /// What failed.
    public let message: String
    public var description: String { message }
}

/// A small HTTP/1.1 server on POSIX sockets, bound to 127.0.0.1 only: persistent connections,
/// `Content-Length` bodies (chunked bodies are refused with 411), a body size cap (413), and
/// `Expect: 100-continue`. One thread per connection; the handler must be thread-safe.
public final class LoopbackServer: Sendable {
    /// Largest accepted body.
    public let maxBodyBytes: Int
    private let requestedPort: UInt16
    private let handler: @Sendable (HTTPServerRequest) -> HTTPServerResponse
    private let onRefusal: @Sendable (_ path: String, _ status: Int, _ reason: String) -> Void
    private let state = Mutex(State())
    private static let maxHeadBytes = 64 * 1024
    private static let idleTimeoutSeconds = 120

    private struct State {
        var listenFD: Int32 = -1
        var port: UInt16 = 0
        var stopped = false
        var connections: Set<Int32> = []
    }

    /// A server for `port` (0 = any free port) calling `handler` for every request, and
    /// `onRefusal` for a request refused before it reached the handler (body over the cap,
    /// chunked body, bad Content-Length).
    public init(
        port: UInt16, maxBodyBytes: Int = 4 * 1024 * 1024,
        onRefusal: @escaping @Sendable (_ path: String, _ status: Int, _ reason: String) -> Void = { _, _, _ in },
        handler: @escaping @Sendable (HTTPServerRequest) -> HTTPServerResponse
    ) {
        requestedPort = port
        self.maxBodyBytes = maxBodyBytes
        self.onRefusal = onRefusal
        self.handler = handler
    }

    /// The bound port (valid after ``start()``).
    public var port: UInt16 { state.withLock { $0.port } }

    /// Binds 127.0.0.1:port, listens, and starts accepting on a background thread. Returns the bound port.
    @discardableResult
    public func start() throws(ServerError) -> UInt16 {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw ServerError(message: "socket: \(String(cString: strerror(errno)))") }
        var yes: Int32 = 1
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &yes, socklen_t(MemoryLayout<Int32>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = requestedPort.bigEndian
        address.sin_addr.s_addr = UInt32(0x7F00_0001).bigEndian
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard bound == 0, listen(fd, 128) == 0 else {
            let message = String(cString: strerror(errno))
            close(fd)
            throw ServerError(message: "cannot listen on 127.0.0.1:\(requestedPort): \(message)")
        }
        var actual = sockaddr_in()
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &actual) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        let port = UInt16(bigEndian: actual.sin_port)
        state.withLock {
            $0.listenFD = fd
            $0.port = port
        }
        let thread = Thread { [self] in acceptLoop(fd) }
        thread.name = "collector-accept"
        thread.start()
        return port
    }

    /// Stops accepting and closes every open connection.
    public func stop() {
        let (fd, connections) = state.withLock { s -> (Int32, Set<Int32>) in
            s.stopped = true
            let result = (s.listenFD, s.connections)
            s.listenFD = -1
            return result
        }
        if fd >= 0 {
            shutdown(fd, Int32(SHUT_RDWR))
            close(fd)
        }
        for c in connections { shutdown(c, Int32(SHUT_RDWR)) }
    }

    private func acceptLoop(_ listenFD: Int32) {
        while true {
            let client = accept(listenFD, nil, nil)
            if client < 0 {
                if errno == EINTR || errno == ECONNABORTED { continue }
                return
            }
            let admitted = state.withLock { s -> Bool in
                if s.stopped { return false }
                s.connections.insert(client)
                return true
            }
            guard admitted else {
                close(client)
                return
            }
            var timeout = timeval(tv_sec: Self.idleTimeoutSeconds, tv_usec: 0)
            setsockopt(client, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
            var one: Int32 = 1
            setsockopt(client, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
            let thread = Thread { [self] in
                serve(client)
                state.withLock { _ = $0.connections.remove(client) }
                close(client)
            }
            thread.name = "collector-connection"
            thread.start()
        }
    }

    /// Serves requests on one connection until it closes, errs, or asks to close.
    private func serve(_ fd: Int32) {
        var buffer: [UInt8] = []
        while true {
            // Read the head.
            var headEnd: Int?
            while true {
                if let end = Self.find(crlfcrlf, in: buffer) {
                    headEnd = end
                    break
                }
                if buffer.count > Self.maxHeadBytes {
                    _ = write(fd, response(431, #"{"error":"request head too large"}"#, close: true))
                    return
                }
                guard readMore(fd, into: &buffer) else { return }
            }
            guard let headEnd else { return }
            let head = String(decoding: buffer[0..<headEnd], as: UTF8.self)
            buffer.removeFirst(headEnd + 4)
            var lines = head.components(separatedBy: "\r\n")
            let requestLine = lines.removeFirst().split(separator: " ", omittingEmptySubsequences: true)
            guard requestLine.count == 3 else {
                _ = write(fd, response(400, #"{"error":"bad request line"}"#, close: true))
                return
            }
            var headers: [(name: String, value: String)] = []
            for line in lines {
                guard let colon = line.firstIndex(of: ":") else { continue }
                headers.append(
                    (
                        String(line[..<colon]).trimmingCharacters(in: .whitespaces),
                        String(line[line.index(after: colon)...]).trimmingCharacters(in: .whitespaces)
                    ))
            }
            func header(_ name: String) -> String? {
                headers.first { $0.name.caseInsensitiveCompare(name) == .orderedSame }?.value
            }
            var target = String(requestLine[1])
            var query = ""
            if let q = target.firstIndex(of: "?") {
                query = String(target[target.index(after: q)...])
                target = String(target[..<q])
            }
            let version = String(requestLine[2])
            let connectionHeader = header("Connection")?.lowercased() ?? ""
            var keepAlive = version == "HTTP/1.1" ? !connectionHeader.contains("close") : connectionHeader.contains("keep-alive")
            // The Host/Origin check comes before the refusals below, which are recorded: a page on
            // another site must not get a row into the debugger's log either.
            let declaredLength = Int(header("Content-Length") ?? "0") ?? -1
            let refusedBelow = header("Transfer-Encoding") != nil || declaredLength < 0 || declaredLength > maxBodyBytes
            let requestHead = HTTPServerRequest(method: String(requestLine[0]), path: target, query: query, headers: headers)
            if refusedBelow, HostPolicy.refusal(of: requestHead, port: port, checkOrigin: true) != nil {
                _ = write(fd, response(403, #"{"error":"Host or Origin is not the collector's own"}"#, close: true))
                return
            }
            if header("Transfer-Encoding") != nil {
                onRefusal(target, 411, "chunked body")
                _ = write(fd, response(411, #"{"error":"chunked bodies are not supported: send Content-Length"}"#, close: true))
                return
            }
            let length = Int(header("Content-Length") ?? "0") ?? -1
            if length < 0 {
                onRefusal(target, 400, "bad Content-Length")
                _ = write(fd, response(400, #"{"error":"bad Content-Length"}"#, close: true))
                return
            }
            if length > maxBodyBytes {
                onRefusal(target, 413, "body exceeds the \(maxBodyBytes)-byte cap")
                _ = write(
                    fd,
                    response(413, #"{"outcome":"rejected","reason":"body exceeds the collector's \#(maxBodyBytes)-byte cap"}"#, close: true)
                )
                return
            }
            if header("Expect")?.lowercased() == "100-continue", buffer.count < length {
                guard write(fd, Array("HTTP/1.1 100 Continue\r\n\r\n".utf8)) else { return }
            }
            while buffer.count < length {
                guard readMore(fd, into: &buffer) else { return }
            }
            let body = Array(buffer[0..<length])
            buffer.removeFirst(length)
            let request = HTTPServerRequest(
                method: String(requestLine[0]), path: target, query: query, headers: headers, body: body, localPort: port)
            let answer = handler(request)
            if state.withLock({ $0.stopped }) { keepAlive = false }
            guard
                write(
                    fd,
                    response(
                        answer.status, answer.body, contentType: answer.contentType, extraHeaders: answer.extraHeaders, close: !keepAlive)),
                keepAlive
            else { return }
        }
    }

    private let crlfcrlf: [UInt8] = [13, 10, 13, 10]

    private static func find(_ needle: [UInt8], in haystack: [UInt8]) -> Int? {
        guard haystack.count >= needle.count else { return nil }
        for i in 0...(haystack.count - needle.count) where haystack[i] == needle[0] {
            if haystack[i + 1] == needle[1], haystack[i + 2] == needle[2], haystack[i + 3] == needle[3] { return i }
        }
        return nil
    }

    private func readMore(_ fd: Int32, into buffer: inout [UInt8]) -> Bool {
        var chunk = [UInt8](repeating: 0, count: 64 * 1024)
        while true {
            let n = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if n > 0 {
                buffer.append(contentsOf: chunk[0..<n])
                return true
            }
            if n < 0, errno == EINTR { continue }
            return false
        }
    }

    private func response(_ status: Int, _ body: String, close: Bool) -> [UInt8] {
        response(status, Array(body.utf8), close: close)
    }

    private func response(
        _ status: Int, _ body: [UInt8], contentType: String = "application/json", extraHeaders: [String] = [], close: Bool
    ) -> [UInt8] {
        var head = "HTTP/1.1 \(status) \(Self.reason(status))\r\n"
        head += "Content-Type: \(contentType)\r\n"
        head += "X-Content-Type-Options: nosniff\r\nCache-Control: no-store\r\n"
        for line in extraHeaders { head += line + "\r\n" }
        head += "Content-Length: \(body.count)\r\n"
        head += close ? "Connection: close\r\n\r\n" : "Connection: keep-alive\r\n\r\n"
        return Array(head.utf8) + body
    }

    private func write(_ fd: Int32, _ bytes: [UInt8]) -> Bool {
        var offset = 0
        while offset < bytes.count {
            let n = bytes.withUnsafeBytes { send(fd, $0.baseAddress! + offset, bytes.count - offset, Int32(MSG_NOSIGNAL)) }
            if n < 0, errno == EINTR { continue }
            guard n > 0 else { return false }
            offset += n
        }
        return true
    }

    static func reason(_ status: Int) -> String {
        switch status {
        case 100: "Continue"
        case 200: "OK"
        case 400: "Bad Request"
        case 403: "Forbidden"
        case 404: "Not Found"
        case 405: "Method Not Allowed"
        case 411: "Length Required"
        case 413: "Content Too Large"
        case 431: "Request Header Fields Too Large"
        case 500: "Internal Server Error"
        default: "Status"
        }
    }
}
