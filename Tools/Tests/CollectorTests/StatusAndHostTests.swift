// The collector's status route and its Host/Origin guard (issue 39, items 2 to 4).
//
// Scenarios (new ids, after API6):
//   API7   a request whose Host is not 127.0.0.1, localhost or [::1] with the collector's port
//          (another name, another port, none) gets 403 on every route, the page included, with
//          no captured data in the answer and nothing stored; the three own names get through.
//   API8   a browser Origin other than the collector's own page is refused (403) on the API and
//          ingest routes, a text/plain post included, and nothing is stored; no Origin (the
//          SDKs) and the page's own origin are answered; the page's files ignore Origin.
//   API9   GET /functions/v1/status?app=ID answers the published shape: application_id, then
//          events by name with count (distinct deduplication ids) and the latest receive time,
//          from accepted track events of that X-Application-ID only; an app with no events
//          gets an empty list; no app gets 400, POST gets 405.
//   API10  a database written before the status route (no application_id column) opens, keeps
//          its rows, and counts what arrives after.
//   API11  IngestionStatus (what `collector status` runs) against a live collector: events
//          (exit 0, the setup events named), an app with none (exit 1), an unreachable URL
//          and a server that is not a status API (exit 3).
//   API12  with a RequestCapture (what TRACKER_CAPTURE_DIR turns on in `collector serve`), every
//          Rocalytics API request the router answers is written for `make validate-openapi`:
//          method, URL with its query, headers without Host and Content-Length, the body as JSON
//          (a body that is not JSON as text), and the answer; other routes are not written.
import Foundation
import Testing
import TrackerCore
import TrackerCoreTestKit

@testable import CollectorKit

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

func trackHeaders(app: String, roca: String = "6f1c2a4e-8b3d-4c5e-9f70-1a2b3c4d5e6f") -> [(name: String, value: String)] {
    [("X-Roca-ID", roca), ("X-Application-ID", app), ("X-Platform", "ios"), ("Content-Type", "application/json")]
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
        #expect(try served.collector.ingestionStatus(application: "com.example.app").map(\.name) == ["install"])
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
        // Refused before its body is read (a chunked body): 403 too, and not logged either.
        for origin in foreign {
            let (status, _, _) = try RawClient(port: port).send(
                "POST", "/functions/v1/track", headers: [origin, "Transfer-Encoding: chunked"])
            #expect(status == 403, "\(origin) gets a refusal logged")
        }
        let (chunked, _, _) = try RawClient(port: port).send(
            "POST", "/functions/v1/track", headers: ["Transfer-Encoding: chunked"], host: "evil.example:\(port)")
        #expect(chunked == 403, "another Host gets a refusal logged")
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

    @Test func API9_statusAnswersThePublishedShapeFromAcceptedTrackEvents() async throws {
        let clock = ManualClock(startMs: Fixtures.ms("2026-06-09T15:00:00.000Z"))
        let collector = try Collector(databasePath: ":memory:", contractsDirectory: Fixtures.contracts, clock: clock)
        let router = CollectorRouter(collector: collector, log: { _ in })
        func post(_ path: String, _ body: [UInt8], app: String) -> Int {
            router.handle(HTTPServerRequest(method: "POST", path: path, headers: trackHeaders(app: app), body: body)).status
        }
        #expect(post("/functions/v1/track", trackBody("install"), app: "com.example.app") == 200)
        await clock.advance(byMs: 1_500)
        #expect(post("/functions/v1/track", trackBody("purchase", suffix: "-1"), app: "com.example.app") == 200)
        await clock.advance(byMs: 1_000)
        #expect(post("/functions/v1/track", trackBody("purchase", suffix: "-2"), app: "com.example.app") == 200)
        await clock.advance(byMs: 1_000)
        // A retry of the same event (same deduplication id) counts once, its time is the latest.
        #expect(post("/functions/v1/track", trackBody("purchase", suffix: "-2"), app: "com.example.app") == 200)
        // Not counted: a rejected event, an identify, another application's event.
        #expect(post("/functions/v1/track", trackBody("made_up"), app: "com.example.app") == 400)
        #expect(post("/functions/v1/identify", Array(#"{"user_id":"u"}"#.utf8), app: "com.example.app") == 200)
        #expect(post("/functions/v1/track", trackBody("onboarding_completed"), app: "com.example.other") == 200)

        let answer = router.handle(HTTPServerRequest(method: "GET", path: "/functions/v1/status", query: "app=com.example.app"))
        #expect(answer.status == 200)
        #expect(answer.contentType.hasPrefix("application/json"))
        #expect(
            String(decoding: answer.body, as: UTF8.self)
                == #"{"application_id":"com.example.app","events":["#
                + #"{"name":"install","count":1,"latest_received_at":"2026-06-09T15:00:00.000Z"},"#
                + #"{"name":"purchase","count":2,"latest_received_at":"2026-06-09T15:00:03.500Z"}]}"#)
        // Percent-encoded app ids are decoded; another app sees only its own.
        let other = router.handle(HTTPServerRequest(method: "GET", path: "/functions/v1/status", query: "app=com%2Eexample%2Eother"))
        #expect(try WireJSON.decode(other.body)["events"]?.arrayValue?.map { $0["name"]?.stringValue } == ["onboarding_completed"])
        // An app that sent nothing: an empty list, still 200.
        let none = router.handle(HTTPServerRequest(method: "GET", path: "/functions/v1/status", query: "app=com.example.silent"))
        #expect(none.status == 200)
        #expect(String(decoding: none.body, as: UTF8.self) == #"{"application_id":"com.example.silent","events":[]}"#)
        // Missing or empty app: 400; another method: 405.
        #expect(router.handle(HTTPServerRequest(method: "GET", path: "/functions/v1/status")).status == 400)
        #expect(router.handle(HTTPServerRequest(method: "GET", path: "/functions/v1/status", query: "app=")).status == 400)
        #expect(router.handle(HTTPServerRequest(method: "POST", path: "/functions/v1/status", query: "app=x")).status == 405)
        // The page learns which applications to ask for from /api/rocalytics.
        let view = try WireJSON.decode(router.handle(HTTPServerRequest(method: "GET", path: "/api/rocalytics")).body)
        #expect(view["applications"] == ["com.example.app", "com.example.other"])
    }

    @Test func API10_aDatabaseFromBeforeTheStatusRouteIsMigrated() throws {
        let folder = NSTemporaryDirectory() + "collector-api10-\(IDs.uuidV4())"
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let path = folder + "/old.sqlite"
        do {
            // The table as the collector created it before issue 39, with one row.
            let old = try SQLiteDatabase(path: path)
            try old.execute(
                """
                CREATE TABLE rocalytics_events (
                    id INTEGER PRIMARY KEY AUTOINCREMENT, endpoint TEXT NOT NULL, name TEXT,
                    body TEXT, received_at INTEGER NOT NULL);
                INSERT INTO rocalytics_events (endpoint, name, body, received_at) VALUES ('track', 'install', '{}', 1);
                """)
        }
        let collector = try Collector(databasePath: path, contractsDirectory: Fixtures.contracts, clock: ManualClock())
        let router = CollectorRouter(collector: collector, log: { _ in })
        let posted = router.handle(
            HTTPServerRequest(
                method: "POST", path: "/functions/v1/track", headers: trackHeaders(app: "com.example.app"), body: trackBody("install")))
        #expect(posted.status == 200)
        #expect(try collector.ingestionStatus(application: "com.example.app").map(\.count) == [1])
        let rows = try SQLiteDatabase(path: path).query("SELECT count(*) FROM rocalytics_events")
        #expect(rows.first?.first?.int == 2)
    }

    @Test func API11_statusCommandAnswersEventsNoEventsAndUnreachable() async throws {
        let served = try ServedCollector()
        let transport = CurlTransport()
        let client = try RawClient(port: served.port)
        for name in ["install", "onboarding_completed"] {
            let (status, _, _) = try client.send(
                "POST", "/functions/v1/track", body: trackBody(name), headers: ["X-Application-ID: com.example.app"])
            #expect(status == 200)
        }
        let answer = await IngestionStatus.fetch(base: served.base + "/", app: "com.example.app", transport: transport)
        guard case .events(let events) = answer else {
            Issue.record("expected events, got \(answer)")
            return
        }
        #expect(events.map(\.name) == ["install", "onboarding_completed"])
        #expect(events.map(\.count) == [1, 1])
        let report = IngestionStatus.report(answer, base: served.base, app: "com.example.app")
        #expect(report.exitCode == 0)
        #expect(report.text.contains("not received yet: purchase"))
        #expect(report.text.split(separator: "\n").count == 4)

        let silent = await IngestionStatus.fetch(base: served.base, app: "com.example.silent", transport: transport)
        #expect(silent == .noEvents)
        let silentReport = IngestionStatus.report(silent, base: served.base, app: "com.example.silent")
        #expect(silentReport.exitCode == 1)
        #expect(silentReport.text.hasPrefix("no events received for com.example.silent at \(served.base)"))

        // Unreachable: a port nothing listens on any more.
        let gone = try ServedCollector()
        let goneBase = gone.base
        gone.server.stop()
        let unreachable = await IngestionStatus.fetch(base: goneBase, app: "com.example.app", transport: transport, timeoutMs: 5_000)
        guard case .unreachable = unreachable else {
            Issue.record("expected unreachable, got \(unreachable)")
            return
        }
        let unreachableReport = IngestionStatus.report(unreachable, base: goneBase, app: "com.example.app")
        #expect(unreachableReport.exitCode == 3)
        #expect(unreachableReport.text.hasPrefix("cannot reach \(goneBase)/functions/v1/status?app=com.example.app"))

        // A server that is not a status API: its 404 is said, not read as "no events".
        let notAnAPI = IngestionStatus.parse(status: 404, body: Array(#"{"error":"not found"}"#.utf8))
        #expect(notAnAPI == .unexpected("HTTP 404: not found"))
        #expect(IngestionStatus.report(notAnAPI, base: "http://x", app: "a").exitCode == 3)
        #expect(IngestionStatus.parse(status: 200, body: Array(#"{"status":"ok"}"#.utf8)) != .noEvents)
        #expect(IngestionStatus.url(base: "http://h/", app: "a b&c") == "http://h/functions/v1/status?app=a%20b%26c")
    }

    @Test func API12_captureWritesEveryRocalyticsRequestWithItsAnswer() throws {
        let folder = NSTemporaryDirectory() + "collector-api12-\(IDs.uuidV4())"
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let capture = RequestCapture(directory: folder)
        #expect(capture.folder == folder + "/rocalytics-openapi")
        let router = CollectorRouter(collector: try Fixtures.collector(), capture: capture, log: { _ in })
        var headers = trackHeaders(app: "com.example.app")
        headers += [("Host", "127.0.0.1:8787"), ("Content-Length", "99")]
        _ = router.handle(HTTPServerRequest(method: "POST", path: "/functions/v1/track", headers: headers, body: trackBody("install")))
        _ = router.handle(HTTPServerRequest(method: "GET", path: "/functions/v1/status", query: "app=com.example.app"))
        _ = router.handle(HTTPServerRequest(method: "POST", path: "/install", headers: headers))
        _ = router.handle(HTTPServerRequest(method: "POST", path: "/functions/v1/identify", body: Array("not json".utf8)))
        // Not Rocalytics API routes: not written.
        _ = router.handle(HTTPServerRequest(method: "POST", path: "/v1/onboarding-runs", body: Array("{}".utf8)))
        _ = router.handle(HTTPServerRequest(method: "GET", path: "/api/requests"))

        let files = try FileManager.default.contentsOfDirectory(atPath: capture.folder).sorted {
            $0.split(separator: "-").last.flatMap { Int($0.dropLast(5)) } ?? 0 < $1.split(separator: "-").last.flatMap {
                Int($0.dropLast(5))
            } ?? 0
        }
        #expect(files.count == 4)
        let captured = try files.map { try WireJSON.decode(ContractExamples.bytes(capture.folder + "/" + $0)) }
        #expect(
            captured.map { $0["url"]?.stringValue } == [
                "/functions/v1/track", "/functions/v1/status?app=com.example.app", "/install", "/functions/v1/identify",
            ])
        let track = try #require(captured.first)
        #expect(track["method"] == "POST")
        #expect(
            track["headers"]?.arrayValue?.compactMap { $0.arrayValue?.first?.stringValue } == [
                "X-Roca-ID", "X-Application-ID", "X-Platform", "Content-Type",
            ])
        #expect(track["body"] == (try WireJSON.decode(trackBody("install"))))
        #expect(track["response"]?["status"]?.intValue == 200)
        #expect(captured[1]["response"]?["body"]?["application_id"] == "com.example.app")
        #expect(captured[2]["body"] == .null)
        #expect(captured[3]["body"] == .null && captured[3]["body_text"] == "not json")
    }
}
