// The collector's read API (issue 13 item 4, issue 20): the request log behind GET /api/requests.
//
// Scenarios (new ids):
//   API1  every request is logged with its verdict; GET /api/requests lists them newest first
//         with route, kind, id, seq, outcome, HTTP status and each violation's rule and JSON path.
//   API2  GET /api/requests/ID gives the body exactly as received and, for an onboarding
//         snapshot, the previous accepted body of the same run.
//   API3  after=ID returns only newer requests (the page's live stream polls with it); kind and
//         outcome filter; the API's own GET requests are not logged.
//   API5  the request log survives a collector restart (a new collector on the same file).
//   API6  GET / serves the page as HTML under a Content-Security-Policy that allows only the
//         collector's own script; the page has no inline script, and its script never turns text
//         into markup (no innerHTML, outerHTML, insertAdjacentHTML, document.write or eval).
//   API4  GET /api/report is the text `collector report` prints (one funnel computation), and
//         /api/funnels carries the same figures.
import CollectorKit
import Foundation
import Testing
import TrackerCore
import TrackerCoreTestKit

struct APITests {
    func get(_ router: CollectorRouter, _ target: String) throws -> JSONValue {
        let parts = target.split(separator: "?", maxSplits: 1).map(String.init)
        let response = router.handle(HTTPServerRequest(method: "GET", path: parts[0], query: parts.count > 1 ? parts[1] : ""))
        #expect(response.status == 200)
        return try WireJSON.decode(response.body)
    }

    func onboardingExample() throws -> JSONValue { try Fixtures.example("onboarding-run/studio-1-mid-flow.json") }

    @Test func API1_requestsAreListedNewestFirstWithViolationPaths() throws {
        let router = CollectorRouter(collector: try Fixtures.collector(), log: { _ in })
        let valid = try onboardingExample()
        _ = router.handle(HTTPServerRequest(method: "POST", path: "/v1/onboarding-runs", body: Fixtures.bytes(valid)))
        let broken = valid.with("seq", .string("two")).with("run_id", .string("<script>x</script>"))
        _ = router.handle(HTTPServerRequest(method: "POST", path: "/v1/onboarding-runs", body: Fixtures.bytes(broken)))
        _ = router.handle(HTTPServerRequest(method: "POST", path: "/nowhere", body: []))

        let list = try #require(try get(router, "/api/requests")["requests"]?.arrayValue)
        #expect(list.map { $0["route"]?.stringValue } == ["/nowhere", "/v1/onboarding-runs", "/v1/onboarding-runs"])
        #expect(list.map { $0["status"]?.intValue } == [404, 400, 200])
        #expect(list[2]["outcome"]?.stringValue == "accepted")
        #expect(list[2]["kind"]?.stringValue == "onboarding-run")
        #expect(list[2]["subject"]?.stringValue == valid["run_id"]?.stringValue)
        #expect(list[2]["seq"]?.intValue == valid["seq"]?.intValue)
        let rejected = list[1]
        #expect(rejected["outcome"]?.stringValue == "rejected")
        let violations = rejected["violations"]?.arrayValue ?? []
        #expect(violations.contains { $0["rule"]?.stringValue == "schema" && $0["path"]?.stringValue == "/seq" })
        #expect(violations.contains { $0["path"]?.stringValue == "/run_id" })
        #expect(list[0]["body"] == nil)  // listings leave bodies out
    }

    @Test func API2_oneRequestHasItsExactBodyAndThePreviousSnapshot() throws {
        let router = CollectorRouter(collector: try Fixtures.collector(), log: { _ in })
        let first = try onboardingExample()
        let firstBytes = Array("{ \"pretty\" :1}".utf8)  // not JSON of a snapshot: kept byte for byte
        _ = router.handle(HTTPServerRequest(method: "POST", path: "/v1/onboarding-runs", body: firstBytes))
        _ = router.handle(HTTPServerRequest(method: "POST", path: "/v1/onboarding-runs", body: Fixtures.bytes(first)))
        let second = first.with("seq", .number(Double((first["seq"]?.intValue ?? 0) + 1)))
        _ = router.handle(HTTPServerRequest(method: "POST", path: "/v1/onboarding-runs", body: Fixtures.bytes(second)))

        let list = try #require(try get(router, "/api/requests")["requests"]?.arrayValue)
        let oldest = try get(router, "/api/requests/\(list[2]["id"]?.intValue ?? 0)")
        #expect(oldest["body"]?.stringValue == "{ \"pretty\" :1}")
        let newest = try get(router, "/api/requests/\(list[0]["id"]?.intValue ?? 0)")
        #expect(newest["body"]?.stringValue == WireJSON.encodeString(second))
        #expect(newest["previous"]?["body"]?.stringValue == WireJSON.encodeString(first))
        #expect(newest["previous"]?["seq"]?.intValue == first["seq"]?.intValue)
        let missing = router.handle(HTTPServerRequest(method: "GET", path: "/api/requests/999"))
        #expect(missing.status == 404)
    }

    @Test func API3_afterKindAndOutcomeFilter_andAPIReadsAreNotLogged() throws {
        let collector = try Fixtures.collector()
        let router = CollectorRouter(collector: collector, log: { _ in })
        _ = router.handle(HTTPServerRequest(method: "POST", path: "/v1/onboarding-runs", body: Fixtures.bytes(try onboardingExample())))
        let firstId = try #require(try get(router, "/api/requests")["requests"]?.arrayValue?.first?["id"]?.intValue)
        _ = router.handle(HTTPServerRequest(method: "POST", path: "/v1/onboarding-runs", body: Array("[]".utf8)))
        _ = router.handle(HTTPServerRequest(method: "POST", path: "/functions/v1/identify", body: Array("{}".utf8)))
        let newer = try get(router, "/api/requests?after=\(firstId)")["requests"]?.arrayValue ?? []
        #expect(newer.count == 2)
        #expect(
            (try get(router, "/api/requests?kind=rocalytics")["requests"]?.arrayValue ?? []).map { $0["kind"]?.stringValue } == [
                "rocalytics-identify"
            ])
        #expect((try get(router, "/api/requests?outcome=rejected")["requests"]?.arrayValue ?? []).count == 1)
        #expect(try collector.requests().count == 3)
    }

    @Test func API4_reportAndFunnelsAreTheSameComputationAsCollectorReport() throws {
        let collector = try Fixtures.collector()
        let router = CollectorRouter(collector: collector, log: { _ in })
        for name in ["r1", "r2", "r3", "r4", "r5"] {
            let body = Fixtures.bytes(try Fixtures.example("onboarding-run/funnel-alternative-screens-\(name).json"))
            _ = router.handle(HTTPServerRequest(method: "POST", path: "/v1/onboarding-runs", body: body))
        }
        let funnels = try collector.funnels()
        #expect(!funnels.isEmpty)
        let report = router.handle(HTTPServerRequest(method: "GET", path: "/api/report"))
        #expect(String(decoding: report.body, as: UTF8.self) == funnels.map { $0.rendered() }.joined(separator: "\n\n") + "\n")
        let json = try get(router, "/api/funnels")["funnels"]?.arrayValue ?? []
        #expect(json.count == funnels.count)
        for (f, j) in zip(funnels, json) {
            #expect(j["started"]?.intValue == f.started)
            #expect(j["completed"]?.intValue == f.completed)
            #expect((j["positions"]?.arrayValue ?? []).map { $0["saw_it"]?.intValue ?? -1 } == f.positions.map(\.sawIt))
            #expect((j["positions"]?.arrayValue ?? []).map { $0["quit_here"]?.intValue ?? -1 } == f.positions.map(\.quitHere))
        }
    }

    @Test func API5_requestLogSurvivesARestart() throws {
        let folder = NSTemporaryDirectory() + "collector-api-\(IDs.uuidV4())"
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let path = folder + "/collector.sqlite"
        do {
            let router = CollectorRouter(
                collector: try Collector(databasePath: path, contractsDirectory: Fixtures.contracts), log: { _ in })
            _ = router.handle(HTTPServerRequest(method: "POST", path: "/v1/onboarding-runs", body: Fixtures.bytes(try onboardingExample())))
            _ = router.handle(HTTPServerRequest(method: "POST", path: "/v1/onboarding-runs", body: Array("{}".utf8)))
        }
        let reopened = CollectorRouter(collector: try Collector(databasePath: path, contractsDirectory: Fixtures.contracts), log: { _ in })
        let list = try get(reopened, "/api/requests")["requests"]?.arrayValue ?? []
        #expect(list.map { $0["outcome"]?.stringValue } == ["rejected", "accepted"])
        #expect(
            try get(reopened, "/api/requests/\(list[1]["id"]?.intValue ?? 0)")["body"]?.stringValue
                == WireJSON.encodeString(try onboardingExample()))
    }

    @Test func API6_pageIsServedUnderAStrictPolicyAndItsScriptNeverWritesMarkup() throws {
        let router = CollectorRouter(collector: try Fixtures.collector(), log: { _ in })
        let page = router.handle(HTTPServerRequest(method: "GET", path: "/"))
        #expect(page.status == 200)
        #expect(page.contentType.hasPrefix("text/html"))
        let policy = page.extraHeaders.first { $0.hasPrefix("Content-Security-Policy:") } ?? ""
        #expect(policy.contains("script-src 'self'") && !policy.contains("unsafe-inline") && policy.contains("default-src 'none'"))
        let html = String(decoding: page.body, as: UTF8.self)
        #expect(html.contains(#"<script src="/app.js" defer></script>"#))
        #expect(html.components(separatedBy: "<script").count == 2)  // the one external script only
        let js = router.handle(HTTPServerRequest(method: "GET", path: "/app.js"))
        #expect(js.contentType.hasPrefix("text/javascript"))
        let code = String(decoding: js.body, as: UTF8.self)
        for sink in ["innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "eval(", "new Function"] {
            #expect(!code.contains(sink), "app.js uses \(sink)")
        }
        #expect(router.handle(HTTPServerRequest(method: "GET", path: "/app.css")).contentType.hasPrefix("text/css"))
    }
}
