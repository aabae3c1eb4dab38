// The collector's Host/Origin guard (issue 39, items 3 and 4).
//
// Scenarios (new ids, after API6):
//   API7   a request whose Host is not 127.0.0.1, localhost or [::1] with the collector's port
//          (another name, another port, none) gets 403 on every route, the page included, with
//          no captured data in the answer and nothing stored; the three own names get through.
//   API8   a browser Origin other than the collector's own page is refused (403) on the API and
//          ingest routes, a text/plain post included, and nothing is stored; no Origin (the
//          SDKs) and the page's own origin are answered; the page's files ignore Origin.
import CollectorKit
import Foundation
import Testing
import TrackerCore
import TrackerCoreTestKit

/// A collector served on a free loopback port, its verdict lines kept.
final class ServedCollector {
    let collector: Collector
    let server: LoopbackServer
    let port: UInt16
    let lines = Locked<[String]>([])

    init(collector: Collector? = nil) throws {
        let collector = try collector ?? Fixtures.collector()
        self.collector = collector
        let lines = self.lines
        let router = CollectorRouter(collector: collector) { line in lines.withLock { $0.append(line) } }
        server = LoopbackServer(port: 0, onRefusal: router.refused) { router.handle($0) }
        port = try server.start()
    }

    deinit { server.stop() }

    var base: String { "http://127.0.0.1:\(port)" }
}

/// A track request as the Rocalytics client sends it.
func trackBody(_ name: String, roca: String = "6f1c2a4e-8b3d-4c5e-9f70-1a2b3c4d5e6f", suffix: String = "") -> [UInt8] {
    var properties: JSONValue = [:]
    if name == "install" { properties = ["install_time": "2026-01-10T07:59:00.000Z"] }
    return WireJSON.encode(["name": .string(name), "deduplication_id": .string("\(roca)-\(name)\(suffix)"), "properties": properties])
}

@Suite struct StatusAndHostTests {
    @Test func API7_anotherHostIsRefusedOnEveryRoute() throws {
        let served = try ServedCollector()
        let port = served.port
        let client = try RawClient(port: port)
        // Something worth stealing: an accepted track event with a roca id.
        var (status, _, body) = try client.send(
            "POST", "/functions/v1/track", body: trackBody("install"),
            headers: ["X-Roca-ID: 6f1c2a4e-8b3d-4c5e-9f70-1a2b3c4d5e6f", "X-Application-ID: com.example.app"])
        #expect(status == 200)
        for host in ["127.0.0.1:\(port)", "localhost:\(port)", "[::1]:\(port)", "LOCALHOST:\(port)"] {
            (status, _, body) = try client.send("GET", "/api/requests", host: host)
            #expect(status == 200, "\(host)")
            #expect(String(decoding: body, as: UTF8.self).contains("6f1c2a4e"), "\(host) reads the log")
        }
        let refusedHosts = [
            "evil.example:\(port)", "evil.example", "127.0.0.1:\(port &+ 1)", "127.0.0.1", "localhost.evil.example:\(port)",
            "127.0.0.2:\(port)", "",
        ]
        for host in refusedHosts {
            for (method, path) in [
                ("GET", "/api/requests"), ("GET", "/"), ("GET", "/app.js"), ("GET", "/health"), ("GET", "/api/rocalytics"),
            ] {
                let fresh = try RawClient(port: port)
                (status, _, body) = try fresh.send(method, path, host: host)
                #expect(status == 403, "\(method) \(path) with Host \(host)")
                #expect(!String(decoding: body, as: UTF8.self).contains("6f1c2a4e"))
            }
            let fresh = try RawClient(port: port)
            (status, _, _) = try fresh.send("GET", "/functions/v1/status", query: "app=com.example.app", host: host)
            #expect(status == 403, "status with Host \(host)")
            (status, _, _) = try fresh.send(
                "POST", "/functions/v1/track", body: trackBody("purchase"), headers: ["X-Application-ID: com.example.app"], host: host)
            #expect(status == 403, "ingest with Host \(host)")
        }
        // No request without the Host header either.
        let bare = try RawClient(port: port)
        (status, _, _) = try bare.send("GET", "/api/requests", omitHost: true)
        #expect(status == 403)
        // Nothing refused reached the store; only the first track is counted.
        #expect(try served.collector.requests().count == 1)
        let printed = served.lines.withLock { $0 }
        #expect(printed.filter { $0.contains("status=403") }.count == refusedHosts.count * 7 + 1)
        #expect(!printed.joined().contains("evil.example"), "the refused Host is not printed")
    }

    @Test func API8_aForeignOriginIsRefusedOnDataRoutes() throws {
        let served = try ServedCollector()
        let port = served.port
        let client = try RawClient(port: port)
        let foreign = [
            "Origin: http://evil.example", "Origin: null", "Origin: http://localhost:\(port)", "Origin: https://127.0.0.1:\(port)",
        ]
        for origin in foreign {
            var (status, _, _) = try client.send("GET", "/api/requests", headers: [origin])
            #expect(status == 403, "\(origin) reads the log")
            (status, _, _) = try client.send("GET", "/functions/v1/status", query: "app=com.example.app", headers: [origin])
            #expect(status == 403, "\(origin) reads the status")
            // A simple cross-site post: text/plain, no preflight in a browser.
            (status, _, _) = try client.send(
                "POST", "/functions/v1/track", body: trackBody("install"), headers: [origin, "Content-Type: text/plain"])
            #expect(status == 403, "\(origin) posts an event")
            (status, _, _) = try client.send("POST", "/v1/onboarding-runs", body: Array("{}".utf8), headers: [origin])
            #expect(status == 403, "\(origin) posts a run")
            // The page's files carry no data: served whatever the Origin.
            (status, _, _) = try client.send("GET", "/app.js", headers: [origin])
            #expect(status == 200)
        }
        #expect(try served.collector.requests().isEmpty, "nothing a foreign origin sent was logged")
        // The page's own origin (the Host it was opened at) and no Origin at all are answered.
        var (status, _, _) = try client.send("GET", "/api/requests", headers: ["Origin: http://127.0.0.1:\(port)"])
        #expect(status == 200)
        (status, _, _) = try client.send(
            "GET", "/api/requests", headers: ["Origin: http://localhost:\(port)"], host: "localhost:\(port)")
        #expect(status == 200)
        (status, _, _) = try client.send(
            "POST", "/functions/v1/track", body: trackBody("install"), headers: ["X-Application-ID: com.example.app"])
        #expect(status == 200)
        #expect(try served.collector.requests().count == 1)
    }
}
