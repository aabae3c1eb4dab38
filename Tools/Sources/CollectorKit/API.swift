import Foundation
import TrackerCore

/// The collector's read-only JSON API under `/api/` (loopback only, like every route): what the
/// web debugger and scripts such as the demo read. Nothing here changes the store.
public struct CollectorAPI: Sendable {
    /// The collector read.
    public let collector: Collector

    /// Creates the API over `collector`.
    public init(collector: Collector) { self.collector = collector }

    /// The Rocalytics API's status route, served in the published description's shape.
    public static let statusPath = "/functions/v1/status"

    /// `GET /functions/v1/status?app=BUNDLE_ID`, as the Rocalytics API's published description
    /// gives it: `{"application_id":…,"events":[{"name":…,"count":…,"latest_received_at":…}]}`
    /// from the accepted track events that application sent (its `X-Application-ID`), by name;
    /// `events` is empty when it sent none. A missing or empty `app` gets 400.
    public func status(_ request: HTTPServerRequest) -> HTTPServerResponse {
        guard let app = request.queryValue("app"), !app.isEmpty else {
            return HTTPServerResponse(status: 400, body: WireJSON.encode(["error": "missing or empty app query parameter"]))
        }
        do {
            let events = try collector.ingestionStatus(application: app).map { e -> JSONValue in
                [
                    "name": .string(e.name), "count": .number(Double(e.count)),
                    "latest_received_at": .string(Timestamp.format(ms: e.latestReceivedAtMs)),
                ]
            }
            return json(["application_id": .string(app), "events": .array(events)])
        } catch {
            return HTTPServerResponse(status: 500, body: WireJSON.encode(["error": .string("\(error)")]))
        }
    }

    /// The answer to a `GET /api/…` request, or `nil` when no API route matches.
    public func answer(_ request: HTTPServerRequest) -> HTTPServerResponse? {
        do {
            switch request.path {
            case "/api/requests":
                let after = request.queryValue("after").flatMap { Int64($0) } ?? 0
                let before = request.queryValue("before").flatMap { Int64($0) }
                let limit = min(max(request.queryValue("limit").flatMap { Int($0) } ?? 200, 1), 5000)
                let kind = request.queryValue("kind").flatMap { $0.isEmpty ? nil : $0 }
                let outcome = request.queryValue("outcome").flatMap { $0.isEmpty ? nil : $0 }
                let records = try collector.requests(afterId: after, beforeId: before, limit: limit, kind: kind, outcome: outcome)
                return json(["requests": .array(records.map { $0.json() })])
            case "/api/funnels":
                return json(CollectorViews.funnels(try collector.funnels(includeDrafts: request.queryValue("drafts") == "1")))
            case "/api/paywalls":
                return json(
                    CollectorViews.paywalls(
                        presentations: try collector.storedPresentations(),
                        requests: try collector.requests(kind: "paywall-presentation")))
            case "/api/score":
                return json(
                    CollectorViews.score(
                        events: try collector.storedScoreEvents(),
                        requests: try collector.requests(kind: "score-batch") + collector.requests(kind: "score-link")))
            case "/api/rocalytics":
                let kinds = [
                    "rocalytics-identify", "rocalytics-track", "rocalytics-demand-score", "rocalytics-install-ping",
                    "rocalytics-onboarding-response", "onboarding-run",
                ]
                var records: [RequestRecord] = []
                for kind in kinds { records += try collector.requests(kind: kind) }
                records.sort { $0.id < $1.id }
                var view = CollectorViews.rocalytics(runs: try collector.storedRuns(), requests: records).objectValue ?? JSONObject()
                // The applications whose track events the status route counts (the page asks it for each).
                view["applications"] = .array(try collector.rocalyticsApplications().map(JSONValue.string))
                return json(.object(view))
            case "/api/report":
                let funnels = try collector.funnels()
                let text = funnels.isEmpty ? "no onboarding runs stored" : funnels.map { $0.rendered() }.joined(separator: "\n\n")
                return HTTPServerResponse(status: 200, body: Array((text + "\n").utf8), contentType: "text/plain; charset=utf-8")
            default:
                if request.path.hasPrefix("/api/requests/"), let id = Int64(request.path.dropFirst("/api/requests/".count)) {
                    guard let record = try collector.request(id: id) else { return notFound() }
                    var o = record.json(includeBody: true).objectValue ?? JSONObject()
                    if record.kind == "onboarding-run", let subject = record.subject,
                        let previous = try collector.previousAccepted(kind: record.kind, subject: subject, beforeId: record.id)
                    {
                        o["previous"] = [
                            "id": .number(Double(previous.id)), "seq": previous.seq.map { .number(Double($0)) } ?? .null,
                            "body": .string(String(decoding: previous.body, as: UTF8.self)),
                        ]
                    }
                    return json(.object(o))
                }
                return nil
            }
        } catch {
            return HTTPServerResponse(status: 500, body: WireJSON.encode(["error": .string("\(error)")]))
        }
    }

    private func json(_ value: JSONValue) -> HTTPServerResponse {
        HTTPServerResponse(status: 200, body: WireJSON.encode(value), contentType: "application/json; charset=utf-8")
    }

    private func notFound() -> HTTPServerResponse {
        HTTPServerResponse(status: 404, body: Array(#"{"error":"not found"}"#.utf8))
    }
}
