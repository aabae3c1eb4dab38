import TrackerCore

/// An ``HTTPTransport`` for tests: records every request (URL, method, headers, body, and the
/// clock reading when a clock is given) and answers as scripted.
///
/// The script is given each request and its 0-based index among every request this transport
/// ever received, and returns a ``Reply``: a response, a transport failure, an answer after some
/// time of the clock, a request held open until the test releases it, or one that never answers
/// until its task is cancelled. A handler closure (`async throws -> HTTPResponse`) may answer
/// instead; what it throws, the transport throws.
///
/// ```swift
/// let transport = RecordingTransport(clock: clock) { _, index in index == 0 ? .status(503) : .status(200) }
/// ```
public final class RecordingTransport: HTTPTransport, @unchecked Sendable {
    /// How the transport answers one request.
    public indirect enum Reply: Sendable {
        /// Answer with this response.
        case response(HTTPResponse)
        /// Throw this error (no response arrived).
        case failure(HTTPError)
        /// Answer with `reply` once `ms` of the transport's clock have passed (needs a clock).
        case after(Int64, Reply)
        /// Hold the request open until ``RecordingTransport/releaseHung(with:)`` answers it.
        case hang
        /// Never answer; the request ends only when its task is cancelled (it then throws
        /// ``HTTPError/Code/cancelled``), as a custom transport that ignores timeouts would.
        case untilCancelled

        /// A response with `status`, no headers, and `body` (none when `nil`).
        public static func status(_ status: Int, body: String? = nil) -> Reply {
            .response(HTTPResponse(status: status, body: body.map { Array($0.utf8) } ?? []))
        }

        /// A connection failure (``HTTPError/Code/connectionFailed``).
        public static var error: Reply { .failure(HTTPError(.connectionFailed, "scripted connection error")) }

        /// A response with `status` once `ms` of the clock have passed.
        public static func delayed(_ ms: Int64, _ status: Int) -> Reply { .after(ms, .status(status)) }
    }

    /// One request as received.
    public struct Recorded: Sendable, Equatable {
        /// The request.
        public let request: HTTPRequest
        /// Its 0-based index among every request the transport received.
        public let index: Int
        /// The clock's reading when it arrived (`nil` when the transport has no clock).
        public let atMs: Int64?

        /// Creates a record.
        public init(request: HTTPRequest, index: Int, atMs: Int64?) {
            self.request = request
            self.index = index
            self.atMs = atMs
        }

        /// The clock's reading when it arrived, 0 when the transport has no clock.
        public var at: Int64 { atMs ?? 0 }
        /// The request's URL.
        public var url: String { request.url }
        /// The request's method.
        public var method: String { request.method }
        /// The request's header fields, in order.
        public var headers: [HTTPHeader] { request.headers }
        /// The request's body (`nil` when none was sent).
        public var body: [UInt8]? { request.body }
        /// The URL's path, without the query (`/functions/v1/track`).
        public var path: String { RecordingTransport.path(of: request.url) }
        /// The body as UTF-8 text (empty when none was sent).
        public var bodyText: String { String(decoding: request.body ?? [], as: UTF8.self) }
        /// The body parsed as wire JSON (`null` when it is absent or not JSON).
        public var json: JSONValue { (try? WireJSON.decode(request.body ?? [])) ?? .null }
        /// The first header named `name` (compared case-insensitively).
        public func header(_ name: String) -> String? {
            let lower = name.lowercased()
            return request.headers.first { $0.name.lowercased() == lower }?.value
        }
    }

    /// Decides the answer to a request; throwing makes the transport throw.
    public typealias Handler = @Sendable (HTTPRequest) async throws -> HTTPResponse
    /// Decides the reply to a request, given its 0-based index among every request received.
    public typealias Script = @Sendable (HTTPRequest, Int) -> Reply

    private enum Answerer: Sendable {
        case script(Script)
        case handler(Handler)
    }

    private struct Waiter {
        let count: Int
        let once: OnceContinuation<Bool>
    }

    private struct State {
        var records: [Recorded] = []
        var answerer: Answerer
        var hung: [CheckedContinuation<Reply, Never>] = []
        var waiters: [Waiter] = []
    }

    private let state: Locked<State>
    private let clock: (any TrackerClock)?
    private let scheduler: (any TrackerScheduler)?

    /// A transport that answers by `script` (by default every request with 200 and no body).
    /// With a `clock`, records carry its reading and ``Reply/after(_:_:)`` waits on it.
    public init(clock: ManualClock? = nil, script: @escaping Script = { _, _ in .status(200) }) {
        self.clock = clock
        scheduler = clock
        state = Locked(State(answerer: .script(script)))
    }

    /// A transport on any clock and scheduler (``init(clock:script:)`` takes the manual clock).
    public init(clock: any TrackerClock, scheduler: any TrackerScheduler, script: @escaping Script = { _, _ in .status(200) }) {
        self.clock = clock
        self.scheduler = scheduler
        state = Locked(State(answerer: .script(script)))
    }

    /// A transport answering with `handler`.
    public init(clock: ManualClock? = nil, _ handler: @escaping Handler) {
        self.clock = clock
        scheduler = clock
        state = Locked(State(answerer: .handler(handler)))
    }

    /// A transport answering every request with `reply`.
    public convenience init(clock: ManualClock? = nil, always reply: Reply) {
        self.init(clock: clock) { _, _ in reply }
    }

    /// A transport answering each request with the status `answer` gives for its index; a
    /// status of 0 is a connection failure.
    public convenience init(clock: ManualClock? = nil, statuses answer: @escaping @Sendable (Int) -> Int) {
        self.init(clock: clock) { _, index in
            let status = answer(index)
            return status == 0 ? .failure(HTTPError(.connectionFailed, "scripted")) : .status(status)
        }
    }

    /// Replaces the script for the following requests (indexes keep counting every request).
    public func script(_ script: @escaping Script) { state.withLock { $0.answerer = .script(script) } }
    /// Answers every following request with `reply`.
    public func answerAll(_ reply: Reply) { script { _, _ in reply } }
    /// Answers the following requests with `handler`.
    public func setHandler(_ handler: @escaping Handler) { state.withLock { $0.answerer = .handler(handler) } }

    /// Every request received, in order.
    public var requests: [HTTPRequest] { state.withLock { $0.records.map(\.request) } }
    /// Every request received with its index and arrival time, in order.
    public var records: [Recorded] { state.withLock { $0.records } }
    /// Number of requests received.
    public var count: Int { state.withLock { $0.records.count } }
    /// The URL paths of the requests, in order.
    public var paths: [String] { requests.map { RecordingTransport.path(of: $0.url) } }
    /// The request bodies as UTF-8 text (empty for none), in order.
    public var bodies: [String] { records.map(\.bodyText) }
    /// Number of requests currently held open by ``Reply/hang``.
    public var hungCount: Int { state.withLock { $0.hung.count } }

    /// Forgets the requests recorded so far: ``requests`` is empty again and the script's
    /// indexes start again at 0. Held requests stay held.
    public func clear() { state.withLock { $0.records = [] } }

    /// Answers every request held by ``Reply/hang`` with `reply` (200 by default). A held
    /// request answered `.hang` again stays held.
    public func releaseHung(with reply: Reply = .status(200)) {
        let hung = state.withLock { s -> [CheckedContinuation<Reply, Never>] in
            defer { s.hung = [] }
            return s.hung
        }
        for c in hung { c.resume(returning: reply) }
    }

    /// Answers every held request with a response of `status`.
    public func releaseHung(status: Int) { releaseHung(with: .status(status)) }

    /// Resolves once at least `count` requests were received, or after `timeoutMs` of real time
    /// (a regression then fails the test instead of hanging it). Returns whether they were.
    @discardableResult
    public func waitForRequests(_ count: Int, timeoutMs: Int = defaultWaitBoundMs) async -> Bool {
        await boundedWait(timeoutMs: timeoutMs, what: "RecordingTransport.waitForRequests(\(count))", onTimeout: { false }) { once in
            let ready = state.withLock { s -> Bool in
                if s.records.count >= count { return true }
                s.waiters.append(Waiter(count: count, once: once))
                return false
            }
            if ready { once.resume(returning: true) }
        }
    }

    public func send(_ request: HTTPRequest) async throws -> HTTPResponse {
        let now = clock?.nowMs()
        let (answerer, index, ready) = state.withLock { s -> (Answerer, Int, [OnceContinuation<Bool>]) in
            let index = s.records.count
            s.records.append(Recorded(request: request, index: index, atMs: now))
            var ready: [OnceContinuation<Bool>] = []
            s.waiters.removeAll { w in
                if w.count <= index + 1 {
                    ready.append(w.once)
                    return true
                }
                return false
            }
            return (s.answerer, index, ready)
        }
        for once in ready { once.resume(returning: true) }
        switch answerer {
        case .handler(let handler): return try await handler(request)
        case .script(let script): return try await perform(script(request, index))
        }
    }

    private func perform(_ first: Reply) async throws -> HTTPResponse {
        var reply = first
        while true {
            switch reply {
            case .response(let response): return response
            case .failure(let error): throw error
            case .after(let ms, let next):
                guard let scheduler else {
                    throw HTTPError(.other, "RecordingTransport: a delayed reply needs a clock (init(clock:))")
                }
                await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
                    scheduler.schedule(afterMs: ms) { c.resume() }
                }
                reply = next
            case .hang:
                reply = await withCheckedContinuation { c in state.withLock { $0.hung.append(c) } }
            case .untilCancelled:
                let stream = AsyncStream<Never> { _ in }
                for await _ in stream {}
                throw HTTPError(.cancelled, "cancelled")
            }
        }
    }

    /// The path of an absolute URL, without its query (`/functions/v1/track`); `/` when it has
    /// none, the text itself when it is not absolute.
    public static func path(of url: String) -> String {
        guard let scheme = url.range(of: "://") else { return url }
        let rest = url[scheme.upperBound...]
        guard let slash = rest.firstIndex(of: "/") else { return "/" }
        let path = rest[slash...]
        if let q = path.firstIndex(of: "?") { return String(path[..<q]) }
        return String(path)
    }
}
