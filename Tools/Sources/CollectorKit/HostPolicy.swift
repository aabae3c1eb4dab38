/// Which requests the collector answers at all: the DNS-rebinding and cross-site guard of a local
/// development server (issue 39, item 3).
///
/// The collector listens on 127.0.0.1 only, but a web page the developer visits can still reach
/// it: through a name it rebinds to 127.0.0.1 (the browser then sends that name as `Host`), or by
/// posting a `text/plain` body from its own origin. So every request must name the collector
/// itself in `Host` (`127.0.0.1`, `localhost` or `[::1]`, with the collector's port), and a
/// request that carries a browser `Origin` must come from the collector's own page (the origin of
/// that `Host`). The SDKs, curl and scripts send no `Origin`; the page's own requests send either
/// none (same-origin GET) or its own.
public enum HostPolicy {
    /// The host names the collector answers to (with its port).
    public static let allowedHosts = ["127.0.0.1", "localhost", "[::1]"]

    /// Why `request`, received on `port`, is refused, or `nil` when it is allowed. `checkOrigin`
    /// is false for the page's own files (`/`, `/app.css`, `/app.js`), which carry no data.
    public static func refusal(of request: HTTPServerRequest, port: UInt16, checkOrigin: Bool) -> String? {
        guard let host = request.header("Host")?.lowercased(), isAllowed(host: host, port: port) else {
            return "Host is not the collector's own address (127.0.0.1, localhost or [::1] with port \(port))"
        }
        if checkOrigin, let origin = request.header("Origin"), origin.lowercased() != "http://" + host {
            return "Origin is not the collector's own page"
        }
        return nil
    }

    /// Whether a `Host` value names this collector: an allowed name with `port` (the port may be
    /// left out only when it is 80, as HTTP allows).
    public static func isAllowed(host: String, port: UInt16) -> Bool {
        let host = host.lowercased()
        for name in allowedHosts {
            if host == "\(name):\(port)" { return true }
            if port == 80, host == name { return true }
        }
        return false
    }
}
