import CTrackerCurlShim

/// What a linked libcurl is, as `curl_version_info` reports it.
public struct LibcurlInfo: Sendable, Equatable {
    /// `0xXXYYZZ` (major, minor, patch), like `LIBCURL_VERSION_NUM`.
    public var versionNumber: UInt32
    /// The version text, e.g. `8.20.0`.
    public var version: String
    /// The TLS library, e.g. `OpenSSL/3.5.7`; `nil` without TLS.
    public var sslVersion: String?
    /// `CURL_VERSION_SSL` is set.
    public var hasSSL: Bool
    /// `CURL_VERSION_HTTP2` is set.
    public var hasHTTP2: Bool
    /// Protocols the build speaks (`http`, `https`, ...), lowercase.
    public var protocols: [String]
    /// Feature names (`SSL`, `HTTP2`, `AppleSecTrust`, ...); empty before curl 7.87.
    public var featureNames: [String]

    /// Creates an info value (tests describe hypothetical builds with it).
    public init(
        versionNumber: UInt32, version: String, sslVersion: String?, hasSSL: Bool, hasHTTP2: Bool,
        protocols: [String], featureNames: [String]
    ) {
        self.versionNumber = versionNumber
        self.version = version
        self.sslVersion = sslVersion
        self.hasSSL = hasSSL
        self.hasHTTP2 = hasHTTP2
        self.protocols = protocols
        self.featureNames = featureNames
    }

    /// The libcurl this process linked.
    public static var linked: LibcurlInfo {
        let raw = ctracker_curl_version_info()
        func strings(_ list: UnsafePointer<UnsafePointer<CChar>?>?) -> [String] {
            guard let list else { return [] }
            var out: [String] = []
            var i = 0
            while let item = list[i] {
                out.append(String(cString: item))
                i += 1
            }
            return out
        }
        return LibcurlInfo(
            versionNumber: UInt32(raw.version_num),
            version: raw.version.map { String(cString: $0) } ?? "unknown",
            sslVersion: raw.ssl_version.map { String(cString: $0) },
            hasSSL: raw.has_ssl != 0,
            hasHTTP2: raw.has_http2 != 0,
            protocols: strings(raw.protocols).map { $0.lowercased() },
            featureNames: strings(raw.feature_names)
        )
    }
}

/// What ``CurlTransport`` needs from libcurl, checked once when a transport starts.
///
/// A transport whose libcurl falls short makes no handle and fails every request with
/// ``HTTPError/Code/libcurlUnsupported`` and a message naming what is missing (never a crash).
public struct LibcurlRequirements: Sendable, Equatable {
    /// Lowest acceptable `0xXXYYZZ` version.
    public var minimumVersion: UInt32
    /// TLS must be built in (`CURL_VERSION_SSL`).
    public var requiresSSL: Bool
    /// HTTP/2 must be built in (`CURL_VERSION_HTTP2`): HTTPS requests then negotiate it by ALPN.
    public var requiresHTTP2: Bool
    /// Feature names that must be listed, e.g. `AppleSecTrust` (peer verification through the
    /// system trust store) on Apple platforms.
    public var requiredFeatureNames: [String]

    /// Creates requirements.
    public init(minimumVersion: UInt32, requiresSSL: Bool, requiresHTTP2: Bool, requiredFeatureNames: [String] = []) {
        self.minimumVersion = minimumVersion
        self.requiresSSL = requiresSSL
        self.requiresHTTP2 = requiresHTTP2
        self.requiredFeatureNames = requiredFeatureNames
    }

    /// 7.85.0: `CURLOPT_PROTOCOLS_STR` (7.85), `curl_multi_wakeup` (7.68), `CURLOPT_CAINFO_BLOB`
    /// (7.77). Every system libcurl of a supported Linux distribution meets it (Debian 12: 7.88).
    public static let linux = LibcurlRequirements(minimumVersion: 0x07_55_00, requiresSSL: true, requiresHTTP2: false)

    /// Our `CTrackerLibcurl.xcframework` (see `Tools/curl-apple`): curl 8.22.0 or later, TLS
    /// (OpenSSL 3), HTTP/2 (nghttp2) and peer verification through Apple SecTrust. SecTrust
    /// verification for OpenSSL builds arrived in 8.17.0; SecTrust problems were reported
    /// against 8.17 and 8.18 (curl issues 19636 and 20435), so the floor is the release the
    /// build script pins.
    public static let apple = LibcurlRequirements(
        minimumVersion: 0x08_16_00, requiresSSL: true, requiresHTTP2: true, requiredFeatureNames: ["AppleSecTrust"]
    )

    /// The requirements of the platform this code was built for.
    public static var current: LibcurlRequirements {
        #if canImport(Darwin)
            return .apple
        #else
            return .linux
        #endif
    }

    /// Every way `info` falls short, in a fixed order; empty when it is acceptable.
    public func problems(_ info: LibcurlInfo) -> [String] {
        var out: [String] = []
        if info.versionNumber < minimumVersion {
            out.append("libcurl \(info.version) is older than \(Self.text(minimumVersion))")
        }
        if requiresSSL && !info.hasSSL { out.append("libcurl was built without TLS") }
        if requiresHTTP2 && !info.hasHTTP2 { out.append("libcurl was built without HTTP/2 (nghttp2)") }
        for proto in ["http", "https"] where !info.protocols.contains(proto) {
            out.append("libcurl does not speak \(proto)")
        }
        for name in requiredFeatureNames where !info.featureNames.contains(name) {
            out.append("libcurl lacks the \(name) feature")
        }
        return out
    }

    /// The error a transport reports for `info`, or `nil` when it is acceptable.
    public func check(_ info: LibcurlInfo) -> HTTPError? {
        let found = problems(info)
        guard !found.isEmpty else { return nil }
        return HTTPError(.libcurlUnsupported, found.joined(separator: "; "))
    }

    static func text(_ v: UInt32) -> String { "\(v >> 16).\((v >> 8) & 0xFF).\(v & 0xFF)" }
}
