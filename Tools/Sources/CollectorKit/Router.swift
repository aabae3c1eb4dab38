import Foundation
import TrackerCore

/// Maps HTTP requests to the collector and prints one verdict line per request (never headers,
/// tokens or bodies).
public struct CollectorRouter: Sendable {
    /// The routes, for `--help`: method, path, what it takes.
    public static let routes: [(method: String, path: String, what: String)] = [
        ("POST", "/v1/onboarding-runs", "onboarding run snapshot, contract v1 (generic HTTP sink)"),
        ("POST", "/v1/paywall-presentations", "paywall presentation snapshot, v1 or v1.1 (generic HTTP sink)"),
        ("POST", "/functions/v1/onboarding-response", "Rocalytics onboarding sink (v1 snapshot + pre-v1 keys) or pre-v1 trackOnboarding"),
        ("POST", "/functions/v1/paywall-presentations", "Rocalytics paywall sink"),
        ("POST", "/functions/v1/identify", "Rocalytics identify (200)"),
        ("POST", "/functions/v1/track", "Rocalytics track (200; unknown names without custom_event: 400)"),
        ("POST", "/functions/v1/demand-score", "Rocalytics demand score (200 with a demand-score body)"),
        ("POST", "/install", "Rocalytics install ping (attribution base; 200)"),
        ("GET", "/functions/v1/status", "Rocalytics ingestion status of ?app=BUNDLE_ID: count and latest time per event name"),
        ("POST", "/api/events", "Score batch (200; > 512 KiB: 413; invalid: 400)"),
        ("POST", "/api/identity/link-anonymous", "Score identity link (200)"),
        ("GET", "/", "the web debugger (live requests, payloads, funnels, paywalls, Score, Rocalytics)"),
        ("GET", "/api/funnels", "the onboarding funnels as JSON (the figures of `collector report`)"),
        ("GET", "/api/paywalls", "presentations per moment/paywall with outcome counts, conversion and timelines"),
        ("GET", "/api/score", "Score events by name, scrubbed fields, duplicates after acknowledgement, identity links"),
        ("GET", "/api/rocalytics", "Rocalytics requests per roca id, completed runs and their onboarding_completed"),
        ("GET", "/api/requests", "the request log with verdicts, newest first (?after=ID&before=ID&limit=N&kind=K&outcome=O)"),
        ("GET", "/api/requests/ID", "one logged request with its body as received"),
        ("GET", "/api/report", "the onboarding funnels as `collector report` prints them (text)"),
        ("GET", "/health", "liveness"),
    ]

    /// The collector that decides.
    public let collector: Collector
    /// Where verdict lines go (stdout in `collector serve`).
    public let log: @Sendable (String) -> Void
    /// Where the Rocalytics API requests and their answers are written, when set (``RequestCapture``).
    public let capture: RequestCapture?

    /// Creates a router; `capture` writes every Rocalytics API request it answers.
    public init(collector: Collector, capture: RequestCapture? = nil, log: @escaping @Sendable (String) -> Void) {
        self.collector = collector
        self.capture = capture
        self.log = log
    }

    /// The sender identity of a request (contract section 11): the Rocalytics identity headers
    /// when present, otherwise one anonymous sender. Stored, never printed.
    static func sender(of request: HTTPServerRequest) -> String {
        let roca = request.header("X-Roca-ID") ?? ""
        let app = request.header("X-Application-ID") ?? ""
        return roca.isEmpty && app.isEmpty ? "anonymous" : "\(app)/\(roca)"
    }

    /// Prints the line of a request the server refused before routing (e.g. 413 over the cap).
    public func refused(path: String, status: Int, reason: String) {
        collector.recordRequest(
            RequestRecord(
                receivedAtMs: collector.nowMs(), method: "POST", route: path, kind: "http", outcome: Outcome.rejected.rawValue,
                status: status,
                reason: reason, violations: [VerdictViolation(rule: "http", path: "", message: reason)]
            ))
        log("path=\(path) kind=http outcome=rejected status=\(status) reason=\(Self.quoted(reason))")
    }

    /// Handles one request. A request the server received (``HTTPServerRequest/localPort`` set)
    /// is first checked by ``HostPolicy``: another `Host`, or a browser `Origin` other than the
    /// collector's page on a data route, gets 403 and is neither routed nor logged with its body.
    public func handle(_ request: HTTPServerRequest) -> HTTPServerResponse {
        let path = request.path
        if let port = request.localPort {
            let isPageFile = request.method == "GET" && Self.webAsset(path) != nil
            if let reason = HostPolicy.refusal(of: request, port: port, checkOrigin: !isPageFile) {
                log("path=\(path) kind=http outcome=rejected status=403 reason=\(Self.quoted(reason))")
                return HTTPServerResponse(status: 403, body: WireJSON.encode(["error": .string(reason)]))
            }
        }
        let response = route(request)
        if let capture, RequestCapture.isRocalyticsRoute(path) { capture.record(request, response: response) }
        return response
    }

    private func route(_ request: HTTPServerRequest) -> HTTPServerResponse {
        let path = request.path
        if path == CollectorAPI.statusPath {
            guard request.method == "GET" else {
                return HTTPServerResponse(status: 405, body: Array(#"{"error":"method not allowed"}"#.utf8))
            }
            return CollectorAPI(collector: collector).status(request)
        }
        if request.method == "GET", path == "/health" {
            return HTTPServerResponse(status: 200, body: Array(#"{"status":"ok"}"#.utf8))
        }
        if request.method == "GET", let asset = Self.webAsset(path) {
            return HTTPServerResponse(
                status: 200, body: Array(asset.text.utf8), contentType: asset.type,
                extraHeaders: ["Content-Security-Policy: \(WebAssets.contentSecurityPolicy)", "Referrer-Policy: no-referrer"])
        }
        if request.method == "GET", path.hasPrefix("/api/"), let answer = CollectorAPI(collector: collector).answer(request) {
            return answer
        }
        guard Self.routes.contains(where: { $0.path == path && $0.method == "POST" }) else {
            log("path=\(path) kind=unknown outcome=- status=404")
            record(request, kind: "unknown", outcome: "-", status: 404)
            return HTTPServerResponse(status: 404, body: Array(#"{"error":"not found"}"#.utf8))
        }
        guard request.method == "POST" else {
            log("path=\(path) kind=unknown outcome=- status=405")
            record(request, kind: "unknown", outcome: "-", status: 405)
            return HTTPServerResponse(status: 405, body: Array(#"{"error":"method not allowed"}"#.utf8))
        }
        let body = request.body
        let verdict: Verdict
        switch path {
        case "/v1/onboarding-runs":
            verdict = collector.ingestOnboardingRun(body: body, sender: Self.sender(of: request), path: path)
        case "/v1/paywall-presentations", "/functions/v1/paywall-presentations":
            verdict = collector.ingestPaywallPresentation(body: body, sender: Self.sender(of: request), path: path)
        case "/functions/v1/onboarding-response":
            if let value = try? WireJSON.decode(body), value["schema_version"] != nil {
                verdict = collector.ingestOnboardingRun(
                    body: body, sender: Self.sender(of: request), path: path, stripping: ["responses", "onboarding_metadata"]
                )
            } else {
                verdict = collector.ingestRocalytics(endpoint: "onboarding-response", body: body, path: path)
            }
        case "/functions/v1/identify":
            verdict = collector.ingestRocalytics(endpoint: "identify", body: body, path: path)
        case "/functions/v1/track":
            verdict = collector.ingestRocalytics(
                endpoint: "track", body: body, path: path, application: request.header("X-Application-ID"))
        case "/functions/v1/demand-score":
            verdict = collector.ingestRocalytics(endpoint: "demand-score", body: body, path: path)
        case "/install":
            verdict = collector.ingestRocalytics(endpoint: "install-ping", body: [], path: path)
        case "/api/events":
            verdict = collector.ingestScoreBatch(body: body, path: path)
        default:
            verdict = collector.ingestScoreLink(body: body, path: path)
        }
        log(Self.line(path: path, verdict: verdict))
        collector.recordRequest(
            RequestRecord(
                receivedAtMs: collector.nowMs(), method: request.method, route: path, kind: verdict.kind, subject: verdict.subject,
                seq: verdict.seq, outcome: verdict.outcome.rawValue, status: verdict.httpStatus, reason: verdict.reason, note: verdict.note,
                violations: verdict.violations, rocaId: request.header("X-Roca-ID"), body: body
            ))
        return HTTPServerResponse(status: verdict.httpStatus, body: verdict.responseBody)
    }

    /// The web debugger's files: `/` (and `/index.html`), `/app.css`, `/app.js`.
    static func webAsset(_ path: String) -> (text: String, type: String)? {
        switch path {
        case "/", "/index.html": (WebAssets.html, "text/html; charset=utf-8")
        case "/app.css": (WebAssets.css, "text/css; charset=utf-8")
        case "/app.js": (WebAssets.js, "text/javascript; charset=utf-8")
        default: nil
        }
    }

    private func record(_ request: HTTPServerRequest, kind: String, outcome: String, status: Int) {
        collector.recordRequest(
            RequestRecord(
                receivedAtMs: collector.nowMs(), method: request.method, route: request.path, kind: kind, outcome: outcome, status: status,
                body: request.body
            ))
    }

    /// The printed verdict line: `path=… kind=… id=… seq=… outcome=… status=… [reason="…"] [note="…"]`.
    public static func line(path: String, verdict: Verdict) -> String {
        var parts = ["path=\(path)", "kind=\(verdict.kind)"]
        parts.append("id=\(verdict.subject.map { $0.replacingSpaces() } ?? "-")")
        parts.append("seq=\(verdict.seq.map(String.init) ?? "-")")
        parts.append("outcome=\(verdict.outcome.rawValue)")
        parts.append("status=\(verdict.httpStatus)")
        if let reason = verdict.reason { parts.append("reason=\(quoted(reason))") }
        if let note = verdict.note { parts.append("note=\(quoted(note))") }
        return parts.joined(separator: " ")
    }

    static func quoted(_ text: String) -> String {
        "\""
            + text.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"").replacingOccurrences(
                of: "\n", with: " ") + "\""
    }
}

extension String {
    fileprivate func replacingSpaces() -> String { replacingOccurrences(of: " ", with: "_") }
}
