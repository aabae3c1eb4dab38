import TrackerCore

/// `collector status`: asks a Rocalytics API (the real one, or this collector) which events an
/// application's requests delivered, through `GET {base}/functions/v1/status?app=BUNDLE_ID`, and
/// says it in words (issue 39, item 2).
public enum IngestionStatus {
    /// The events a developer checks after setup.
    public static let setupEvents = ["install", "onboarding_completed", "purchase"]

    /// One event name in a status answer.
    public struct Event: Sendable, Equatable {
        /// The event name.
        public var name: String
        /// How many were received.
        public var count: Int
        /// When the latest was received, as the API wrote it.
        public var latestReceivedAt: String

        /// Creates an event line.
        public init(name: String, count: Int, latestReceivedAt: String) {
            self.name = name
            self.count = count
            self.latestReceivedAt = latestReceivedAt
        }
    }

    /// What the API answered.
    public enum Answer: Sendable, Equatable {
        /// A status with at least one event.
        case events([Event])
        /// A status with no event: the application sent nothing this API counted.
        case noEvents
        /// No answer (connection refused, timeout, TLS failure, refused plain HTTP): the message says which.
        case unreachable(String)
        /// An answer that is not a status (another HTTP status, or a body of another shape).
        case unexpected(String)
    }

    /// The status URL of `app` at `base` (a trailing slash on `base` is dropped; `app` is
    /// percent-encoded).
    public static func url(base: String, app: String) -> String {
        var base = base
        while base.hasSuffix("/") { base.removeLast() }
        let allowed = Set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~".utf8)
        var encoded = ""
        for byte in app.utf8 {
            if allowed.contains(byte) {
                encoded.unicodeScalars.append(UnicodeScalar(byte))
            } else {
                let hex = String(byte, radix: 16, uppercase: true)
                encoded += "%" + (hex.count == 1 ? "0" + hex : hex)
            }
        }
        return base + CollectorAPI.statusPath + "?app=" + encoded
    }

    /// Asks `base` for the status of `app` through `transport` (at most `timeoutMs`).
    public static func fetch(base: String, app: String, transport: any HTTPTransport, timeoutMs: Int64 = 10_000) async -> Answer {
        let response: HTTPResponse
        do {
            response = try await transport.send(HTTPRequest(url: url(base: base, app: app), method: "GET", timeoutMs: timeoutMs))
        } catch {
            return .unreachable((error as? HTTPError)?.description ?? "\(error)")
        }
        return parse(status: response.status, body: response.body)
    }

    /// Reads a status answer (`status`, `body`).
    public static func parse(status: Int, body: [UInt8]) -> Answer {
        guard status == 200 else {
            let detail = (try? WireJSON.decode(body))?["error"]?.stringValue.map { ": \($0)" } ?? ""
            return .unexpected("HTTP \(status)\(detail)")
        }
        guard let value = try? WireJSON.decode(body), let list = value["events"]?.arrayValue else {
            return .unexpected("the answer is not a status (no events list)")
        }
        var events: [Event] = []
        for item in list {
            guard let name = item["name"]?.stringValue, let count = item["count"]?.intValue else {
                return .unexpected("an event without a name or a count")
            }
            events.append(Event(name: name, count: count, latestReceivedAt: item["latest_received_at"]?.stringValue ?? "-"))
        }
        return events.isEmpty ? .noEvents : .events(events)
    }

    /// The text `collector status` prints for `answer`, and its exit code: 0 when events arrived,
    /// 1 when the application sent none, 3 when the API was unreachable or answered something else.
    public static func report(_ answer: Answer, base: String, app: String) -> (text: String, exitCode: Int32) {
        let where_ = url(base: base, app: app)
        switch answer {
        case .unreachable(let message):
            return ("cannot reach \(where_): \(message)\nIs the API (or `make collector`) running at that base URL?", 3)
        case .unexpected(let message):
            return ("\(where_) did not answer a status (\(message)): is \(base) a Rocalytics API?", 3)
        case .noEvents:
            return (
                """
                no events received for \(app) at \(base).
                Check that the app sends to this base URL, that its bundle id (X-Application-ID) is \(app),
                and that it has sent at least its install (a first launch of a fresh install).
                """, 1
            )
        case .events(let events):
            let width = max(events.map(\.name.count).max() ?? 0, 5)
            var lines = ["events received for \(app) at \(base):"]
            for e in events {
                lines.append(
                    "  \(e.name.padding(toLength: width, withPad: " ", startingAt: 0))  \(String(e.count).leftPadded(to: 6))  latest \(e.latestReceivedAt)"
                )
            }
            let names = Set(events.map(\.name))
            let missing = setupEvents.filter { !names.contains($0) }
            lines.append(
                missing.isEmpty
                    ? "install, onboarding_completed and purchase are all arriving."
                    : "not received yet: \(missing.joined(separator: ", "))")
            return (lines.joined(separator: "\n"), 0)
        }
    }
}

extension String {
    fileprivate func leftPadded(to width: Int) -> String { count >= width ? self : String(repeating: " ", count: width - count) + self }
}
