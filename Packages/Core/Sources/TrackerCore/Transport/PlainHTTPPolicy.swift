#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// Where ``CurlTransport`` may send plain `http://` requests.
///
/// App Transport Security covers Apple's URL loading system, not the sockets libcurl opens, so the transport
/// applies its own rule on every platform (Linux included): `https` always; `http` only to a
/// loopback address (`localhost`, `127.0.0.0/8`, `::1`) unless the host app opts in for
/// named hosts. A refused request fails before any I/O with ``HTTPError/Code/insecureHTTP``.
public enum PlainHTTPPolicy: Sendable, Equatable {
    /// `http` only to loopback addresses (the default).
    case loopbackOnly
    /// `http` to loopback addresses and to these hosts (compared case-insensitively; IPv6
    /// literals without brackets), e.g. a staging collector on the LAN.
    case loopbackAnd(hosts: Set<String>)

    /// Whether a plain-HTTP request to `host` (as it appears in the URL) is allowed.
    public func allows(host: String) -> Bool {
        let normalized = PlainHTTPPolicy.normalize(host)
        if PlainHTTPPolicy.isLoopback(normalized) { return true }
        switch self {
        case .loopbackOnly:
            return false
        case .loopbackAnd(let hosts):
            return hosts.contains { PlainHTTPPolicy.normalize($0) == normalized }
        }
    }

    /// Lowercased, IPv6 brackets removed.
    static func normalize(_ host: String) -> String {
        var h = host.lowercased()
        if h.hasPrefix("["), h.hasSuffix("]") { h = String(h.dropFirst().dropLast()) }
        return h
    }

    /// `localhost` (libcurl resolves it to loopback itself, without DNS), an IPv4 literal in
    /// 127.0.0.0/8, `::1`, or `::ffff:127.x.y.z`. Anything else, including other spellings of
    /// 127.0.0.1 (`127.1`, `2130706433`), is not loopback here.
    public static func isLoopback(_ host: String) -> Bool {
        let h = normalize(host)
        if h == "localhost" { return true }
        var v4 = in_addr()
        if inet_pton(AF_INET, h, &v4) == 1 {
            return withUnsafeBytes(of: &v4) { $0[0] } == 127
        }
        var v6 = in6_addr()
        if inet_pton(AF_INET6, h, &v6) == 1 {
            return withUnsafeBytes(of: &v6) { b -> Bool in
                if b[0..<15].allSatisfy({ $0 == 0 }) && b[15] == 1 { return true }
                // IPv4-mapped ::ffff:127.x.y.z
                return b[0..<10].allSatisfy({ $0 == 0 }) && b[10] == 0xFF && b[11] == 0xFF && b[12] == 127
            }
        }
        return false
    }

    /// The host part of an absolute URL already accepted by ``CurlTransport``'s URL check:
    /// after `//`, without user info and port; IPv6 literals keep their brackets.
    static func host(ofURL url: String) -> String {
        let bytes = Array(url.utf8)
        guard let colon = bytes.firstIndex(of: UInt8(ascii: ":")) else { return "" }
        var start = colon + 1
        while start < bytes.count, bytes[start] == UInt8(ascii: "/") { start += 1 }
        var end = start
        while end < bytes.count, bytes[end] != UInt8(ascii: "/"), bytes[end] != UInt8(ascii: "?"), bytes[end] != UInt8(ascii: "#") {
            end += 1
        }
        var authority = bytes[start..<end]
        if let at = authority.lastIndex(of: UInt8(ascii: "@")) { authority = authority[(at + 1)...] }
        if authority.first == UInt8(ascii: "[") {
            if let close = authority.firstIndex(of: UInt8(ascii: "]")) {
                return String(decoding: authority[...close], as: UTF8.self)
            }
            return String(decoding: authority, as: UTF8.self)
        }
        if let portColon = authority.firstIndex(of: UInt8(ascii: ":")) { authority = authority[..<portColon] }
        return String(decoding: authority, as: UTF8.self)
    }
}
