import CollectorKit
import Foundation
import Testing
import TrackerCore
import TrackerCoreTestKit

#if canImport(Glibc)
    import Glibc
#endif

struct ClientError: Error { let message: String }

/// A blocking HTTP/1.1 client on one socket (keeps the connection open between requests).
final class RawClient {
    let fd: Int32
    let port: UInt16
    var buffer: [UInt8] = []

    init(port: UInt16) throws {
        self.port = port
        fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        address.sin_addr.s_addr = UInt32(0x7F00_0001).bigEndian
        let rc = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard rc == 0 else { throw ClientError(message: "connect failed") }
        var timeout = timeval(tv_sec: 10, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
    }

    deinit { close(fd) }

    /// Sends one request and reads one response: (status, headers text, body). `host` is the
    /// `Host` header (default `127.0.0.1:PORT`, as curl sends it); `omitHost` sends none.
    func send(
        _ method: String, _ path: String, query: String = "", body: [UInt8] = [], headers: [String] = [], host: String? = nil,
        omitHost: Bool = false
    ) throws -> (Int, String, [UInt8]) {
        let target = query.isEmpty ? path : path + "?" + query
        var head = "\(method) \(target) HTTP/1.1\r\n"
        if !omitHost { head += "Host: \(host ?? "127.0.0.1:\(port)")\r\n" }
        if !headers.contains(where: { $0.lowercased().hasPrefix("content-type:") }) { head += "Content-Type: application/json\r\n" }
        head += "Content-Length: \(body.count)\r\n"
        for h in headers { head += h + "\r\n" }
        let bytes = Array((head + "\r\n").utf8) + body
        var offset = 0
        while offset < bytes.count {
            let n = bytes.withUnsafeBytes { Glibc.send(fd, $0.baseAddress! + offset, bytes.count - offset, Int32(MSG_NOSIGNAL)) }
            // A server that refuses a body over its cap answers and closes before reading it all:
            // the rest of the send then fails, and the answer is already here.
            guard n > 0 else { return try readResponseAfterFailedSend() }
            offset += n
        }
        return try readResponse()
    }

    private func readResponseAfterFailedSend() throws -> (Int, String, [UInt8]) {
        do { return try readResponse() } catch { throw ClientError(message: "send failed, and no answer") }
    }

    func readResponse() throws -> (Int, String, [UInt8]) {
        while true {
            if let end = find() {
                let head = String(decoding: buffer[0..<end], as: UTF8.self)
                let length =
                    head.split(separator: "\r\n").compactMap { line -> Int? in
                        let parts = line.split(separator: ":", maxSplits: 1)
                        return parts.count == 2 && parts[0].lowercased() == "content-length"
                            ? Int(parts[1].trimmingCharacters(in: .whitespaces)) : nil
                    }.first ?? 0
                while buffer.count < end + 4 + length { try fill() }
                let body = Array(buffer[(end + 4)..<(end + 4 + length)])
                buffer.removeFirst(end + 4 + length)
                let status = Int(head.split(separator: " ")[1]) ?? 0
                return (status, head, body)
            }
            try fill()
        }
    }

    private func find() -> Int? {
        guard buffer.count >= 4 else { return nil }
        for i in 0...(buffer.count - 4) where buffer[i] == 13 && buffer[i + 1] == 10 && buffer[i + 2] == 13 && buffer[i + 3] == 10 {
            return i
        }
        return nil
    }

    private func fill() throws {
        var chunk = [UInt8](repeating: 0, count: 65536)
        let n = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
        guard n > 0 else { throw ClientError(message: "connection closed") }
        buffer.append(contentsOf: chunk[0..<n])
    }
}

@Suite struct HTTPRoundTripTests {
    @Test func loopbackRoundTripWithKeepAlive() throws {
        let collector = try Fixtures.collector()
        let lines = Locked<[String]>([])
        let router = CollectorRouter(collector: collector) { line in lines.withLock { $0.append(line) } }
        let server = LoopbackServer(port: 0, maxBodyBytes: 1_000_000, onRefusal: router.refused) { router.handle($0) }
        let port = try server.start()
        defer { server.stop() }
        #expect(port != 0)

        let mid = try Fixtures.example("onboarding-run/studio-1-mid-flow.json")
        let client = try RawClient(port: port)
        // Generic sink path, twice on one connection (keep-alive): accepted, then ignored (retry).
        var (status, head, body) = try client.send("POST", "/v1/onboarding-runs", body: Fixtures.bytes(mid))
        #expect(status == 200)
        #expect(head.contains("Connection: keep-alive"))
        #expect(String(decoding: body, as: UTF8.self) == #"{"outcome":"accepted"}"#)
        (status, _, body) = try client.send("POST", "/v1/onboarding-runs", body: Fixtures.bytes(mid))
        #expect(String(decoding: body, as: UTF8.self) == #"{"outcome":"ignored"}"#)
        // A rejection: 400 with the outcome and a reason in the body.
        (status, _, body) = try client.send("POST", "/v1/onboarding-runs", body: Fixtures.bytes(mid.with("seq", 4).with("status", "quit")))
        #expect(status == 400)
        let rejected = try WireJSON.decode(body)
        #expect(rejected["outcome"] == "rejected" && rejected["reason"]?.stringValue?.isEmpty == false)
        // Rocalytics onboarding sink body (snapshot + pre-v1 keys), identity in headers; 100-continue handled.
        let rocalytics = mid.with("responses", .array([])).with("onboarding_metadata", [:])
        (status, _, body) = try client.send(
            "POST", "/functions/v1/onboarding-response", body: Fixtures.bytes(rocalytics),
            headers: ["X-Roca-ID: secret-device", "X-Application-ID: com.example"]
        )
        #expect(status == 200 && String(decoding: body, as: UTF8.self) == #"{"outcome":"accepted"}"#)
        (status, _, body) = try client.send("POST", "/functions/v1/demand-score", body: Array(#"{"app_open_count":3}"#.utf8))
        #expect(status == 200)
        #expect(try WireJSON.decode(body)["demandScore"]?.intValue.map { (1...100).contains($0) } == true)
        (status, _, _) = try client.send("POST", "/nowhere")
        #expect(status == 404)
        (status, _, _) = try client.send("GET", "/health")
        #expect(status == 200)

        // Over the body cap: 413 with a rejected body, connection closed.
        let capped = try RawClient(port: port)
        (status, head, body) = try capped.send("POST", "/v1/onboarding-runs", body: [UInt8](repeating: 32, count: 1_000_001))
        #expect(status == 413)
        #expect(head.contains("Connection: close"))
        #expect(try WireJSON.decode(body)["outcome"] == "rejected")

        let printed = lines.withLock { $0 }
        #expect(
            printed.first
                == "path=/v1/onboarding-runs kind=onboarding-run id=00000000-0000-4000-8000-000000000001 seq=3 outcome=accepted status=200")
        #expect(printed.count == 7)
        #expect(
            printed.last == #"path=/v1/onboarding-runs kind=http outcome=rejected status=413 reason="body exceeds the 1000000-byte cap""#)
        #expect(!printed.joined().contains("secret-device"), "headers never printed")
        #expect(printed[3].hasPrefix("path=/functions/v1/onboarding-response kind=onboarding-run"))
        // The Rocalytics run is keyed by its sender, apart from the anonymous one.
        #expect(try collector.storedRuns().count == 2)
    }
}
