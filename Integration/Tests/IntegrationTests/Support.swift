import Foundation
import Testing
import TrackerCore
import TrackerCoreTestKit

/// A fresh private directory under the temporary directory, removed by `remove()`.
struct TempDirectory {
    let path: String

    init(_ name: String) throws {
        let template = NSTemporaryDirectory() + "integration-\(name)-XXXXXX"
        var bytes = Array(template.utf8CString)
        guard let made = mkdtemp(&bytes) else { throw CocoaError(.fileWriteUnknown) }
        path = String(cString: made)
    }

    func remove() { try? FileManager.default.removeItem(atPath: path) }
}

/// The app's storage as one app process sees it: a `FileKeyValueStorage`, whose writes the test
/// can wait for, and which stops for good when the process is killed (every later call never
/// returns, as in a process that no longer runs).
final class ProcessStorage: KeyValueStorage, @unchecked Sendable {
    private struct State {
        var killed = false
        var writes = 0
        var last: [String: String?] = [:]
        var waiters: [(predicate: @Sendable (Int, String??) -> Bool, key: String, continuation: CheckedContinuation<Void, Never>)] = []
        var frozen: [CheckedContinuation<Void, Never>] = []
    }

    let files: FileKeyValueStorage
    private let state = Locked(State())

    init(directory: String) { files = FileKeyValueStorage(directory: directory) }

    /// Every later call suspends forever.
    func kill() { state.withLock { $0.killed = true } }

    private func dead() async {
        await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
            state.withLock { $0.frozen.append(c) }
        }
    }

    private var isKilled: Bool { state.withLock { $0.killed } }

    func getItem(_ key: String) async throws -> String? {
        if isKilled { await dead() }
        return try await files.getItem(key)
    }

    func setItem(_ key: String, _ value: String) async throws {
        if isKilled { await dead() }
        try await files.setItem(key, value)
        landed(key, value)
    }

    func removeItem(_ key: String) async throws {
        if isKilled { await dead() }
        try await files.removeItem(key)
        landed(key, nil)
    }

    private func landed(_ key: String, _ value: String?) {
        let ready = state.withLock { s -> [CheckedContinuation<Void, Never>] in
            s.writes += 1
            s.last[key] = .some(value)
            let (n, last) = (s.writes, s.last[key])
            let ready = s.waiters.filter { $0.key == key && $0.predicate(n, last) }.map(\.continuation)
            s.waiters.removeAll { $0.key == key && $0.predicate(n, last) }
            return ready
        }
        for c in ready { c.resume() }
    }

    /// Resumes once a write of `key` by this process left it removed (the tracker has nothing
    /// left to store: its run is settled).
    func waitUntilRemoved(_ key: String) async {
        await waitFor(key) { writes, last in writes > 0 && last == .some(nil) }
    }

    private func waitFor(_ key: String, _ predicate: @escaping @Sendable (Int, String??) -> Bool) async {
        await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
            let now = state.withLock { s -> Bool in
                if predicate(s.writes, s.last[key]) { return true }
                s.waiters.append((predicate, key, c))
                return false
            }
            if now { c.resume() }
        }
    }
}

/// The real libcurl transport as one app process uses it; once the process is killed, no request
/// leaves it and no answer reaches it any more.
///
/// `waitForAnswer(_:)` resumes once an answer matching it came back. The caller's task is then
/// still running on its executor (a `ManualClock`'s, for a tracker's send), so settling that
/// clock afterwards waits for the caller to have handled the answer.
final class ProcessTransport: HTTPTransport, @unchecked Sendable {
    private struct Answer: Sendable {
        let url: String
        let status: Int
    }

    private let curl = CurlTransport()
    private let killed = Locked(false)
    private let frozen = Locked<[CheckedContinuation<Void, Never>]>([])
    private let answers = Locked<
        (seen: [Answer], waiters: [(predicate: @Sendable (String, Int) -> Bool, continuation: CheckedContinuation<Void, Never>)])
    >(([], []))

    func kill() { killed.withLock { $0 = true } }

    func send(_ request: HTTPRequest) async throws -> HTTPResponse {
        if killed.value { await dead() }
        let response = try await curl.send(request)
        if killed.value { await dead() }
        let ready = answers.withLock { a -> [CheckedContinuation<Void, Never>] in
            a.seen.append(Answer(url: request.url, status: response.status))
            let ready = a.waiters.filter { $0.predicate(request.url, response.status) }.map(\.continuation)
            a.waiters.removeAll { $0.predicate(request.url, response.status) }
            return ready
        }
        for c in ready { c.resume() }
        return response
    }

    /// Resumes once an answer to a request whose URL and status match came back (at once if one
    /// already did).
    func waitForAnswer(_ predicate: @escaping @Sendable (_ url: String, _ status: Int) -> Bool) async {
        await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
            let now = answers.withLock { a -> Bool in
                if a.seen.contains(where: { predicate($0.url, $0.status) }) { return true }
                a.waiters.append((predicate, c))
                return false
            }
            if now { c.resume() }
        }
    }

    private func dead() async {
        await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in frozen.withLock { $0.append(c) } }
    }
}

/// One request the collector received, with its JSON body.
struct Received: Sendable {
    let request: RecordedRequest
    var path: String { request.path }
    var json: JSONValue { (try? WireJSON.decode(request.body)) ?? .null }
    /// The event name of a Rocalytics `/track` body.
    var eventName: String? { json["name"]?.stringValue }
}

/// A local stand-in for the three backends (Rocalytics API and attribution worker, paywall ingest,
/// Score) on a loopback port, answering as the specs say: Rocalytics `identify` and `track` 200,
/// `onboarding-response` 2xx without a body, `paywall-presentations` `{"outcome":"accepted"}`,
/// Score `events` 200 and `link-anonymous` 204, unless the test's `override` answers. Rocalytics
/// events answered 200 are stored once per deduplication id, as the server deduplicates them.
final class Collector: @unchecked Sendable {
    private struct State {
        var received: [Received] = []
        var storedEvents: [String: JSONValue] = [:]
        var waiters: [(predicate: @Sendable ([Received]) -> Bool, continuation: CheckedContinuation<[Received], Never>)] = []
    }

    private let state = Locked(State())
    /// Called with each request before it is answered; the test's hook (a kill, say).
    let onRequest = Locked<@Sendable (Received) -> Void>({ _ in })
    /// An answer that replaces the stock one when it returns one (a fault, say).
    let override = Locked<@Sendable (Received) -> LoopbackHTTPServer.Action?>({ _ in nil })
    private var server: LoopbackHTTPServer!

    init() throws {
        server = try LoopbackHTTPServer { [weak self] request in
            guard let self else { return .close }
            return self.answer(request)
        }
    }

    var baseURL: String { server.baseURL }
    var received: [Received] { state.value.received }
    /// Rocalytics events as the server stores them: one per deduplication id.
    var storedEvents: [String: JSONValue] { state.value.storedEvents }

    func stop() { server.stop() }

    private func answer(_ request: RecordedRequest) -> LoopbackHTTPServer.Action {
        let r = Received(request: request)
        onRequest.value(r)
        let action = override.value(r) ?? stockAnswer(r)
        let ready = state.withLock { s -> [(CheckedContinuation<[Received], Never>, [Received])] in
            s.received.append(r)
            let all = s.received
            let ready = s.waiters.filter { $0.predicate(all) }.map { ($0.continuation, all) }
            s.waiters.removeAll { $0.predicate(all) }
            return ready
        }
        for (c, all) in ready { c.resume(returning: all) }
        return action
    }

    /// The backends' answer; a Rocalytics event answered 200 is stored (once per deduplication id).
    private func stockAnswer(_ r: Received) -> LoopbackHTTPServer.Action {
        switch r.path {
        case "/functions/v1/track":
            if let id = r.json["deduplication_id"]?.stringValue {
                state.withLock { s in if s.storedEvents[id] == nil { s.storedEvents[id] = r.json } }
            }
            return .respond(status: 200, body: "{}")
        case "/functions/v1/identify": return .respond(status: 200, body: "{}")
        case "/functions/v1/onboarding-response", "/install": return .respond(status: 204, body: [UInt8]())
        case "/functions/v1/paywall-presentations": return .respond(status: 200, body: #"{"outcome":"accepted"}"#)
        case "/api/events": return .respond(status: 200, body: "{}")
        case "/api/identity/link-anonymous": return .respond(status: 204, body: [UInt8]())
        default: return .respond(status: 404, body: "{}")
        }
    }

    /// Resumes with every request so far once `predicate` holds for them. The request that made
    /// it hold may still be being answered.
    @discardableResult
    func waitFor(_ predicate: @escaping @Sendable ([Received]) -> Bool) async -> [Received] {
        await withCheckedContinuation { (c: CheckedContinuation<[Received], Never>) in
            let now = state.withLock { s -> [Received]? in
                if predicate(s.received) { return s.received }
                s.waiters.append((predicate, c))
                return nil
            }
            if let now { c.resume(returning: now) }
        }
    }

    func requests(_ path: String) -> [Received] { received.filter { $0.path == path } }
}
