import Foundation
import Testing
import TrackerCore
import TrackerCoreTestKit

@testable import ScoreTracker

/// T0 = 2026-03-01T12:00:00.000Z.
let T0: Int64 = Timestamp.parse("2026-03-01T12:00:00.000Z")!
let SEC: Int64 = 1000
let HOUR: Int64 = 3_600_000

func pad12(_ n: Int) -> String {
    let s = String(n)
    return String(repeating: "0", count: max(0, 12 - s.count)) + s
}
func E(_ n: Int) -> String { "01900000-0000-7000-8000-" + pad12(n) }
func A(_ n: Int) -> String { "0000000a-0000-4000-8000-" + pad12(n) }
func S(_ n: Int) -> String { "00000005-0000-4000-8000-" + pad12(n) }

let CTX = #"{"os":"iOS 18.1","appVersion":"4.2.0","device":"iPhone","locale":"en-GB"}"#
let CTX2 = #"{"os":"iOS 18.1","appVersion":"4.2.0"}"#
var SDKJSON: String { #"{"name":"\#(ScoreClient.sdkName)","version":"\#(ScoreClient.sdkVersion)"}"# }
let PII4 = PiiOptions.classify([
    PiiRule(field: "email", action: .hash), PiiRule(field: "phone", action: .redact),
    PiiRule(field: "memberNumber", action: .tokenize), PiiRule(field: "dateOfBirth", action: .drop),
])

/// Fixed ids: E1, E2, … / A1, … / S1, …, continuing across relaunches.
final class TestIds: ScoreIdSource {
    private let n = Locked((e: 0, a: 0, s: 0))
    func newEventId(nowMs: Int64) -> String {
        E(
            n.withLock {
                $0.e += 1
                return $0.e
            })
    }
    func newAnonymousId() -> String {
        A(
            n.withLock {
                $0.a += 1
                return $0.a
            })
    }
    func newSessionId() -> String {
        S(
            n.withLock {
                $0.s += 1
                return $0.s
            })
    }
}

/// How long (real time) a test waits at most for a task that should finish on the manual clock:
/// far above any wait that succeeds (they take milliseconds), there only so that a broken wait
/// fails its test by name instead of hanging the suite (issue 34 item 2). Six times longer under
/// ThreadSanitizer, where a loaded machine kept flushes that did finish waiting past 10 s.
let testWaitBoundMs = underThreadSanitizer ? 60_000 : 10_000

/// The tests (by id) in which a bounded wait already gave up: their later bounded waits give up
/// at once, so a test that waits in a loop fails in one bound's time, not in one per turn.
private let testsThatGaveUp = Locked<Set<Test.ID?>>([])

/// `t`'s value, awaited for `timeoutMs` of real time at most; `nil` after recording an issue
/// naming `what` when the task has not finished by then (at once when an earlier bounded wait
/// of the same test gave up).
func bounded<T: Sendable>(
    _ t: Task<T, Never>, _ what: String, timeoutMs: Int = testWaitBoundMs,
    sourceLocation: SourceLocation = #_sourceLocation
) async -> T? {
    let test = Test.current?.id
    let bound = testsThatGaveUp.withLock { $0.contains(test) } ? 0 : timeoutMs
    let value: T? = await boundedWait(timeoutMs: bound, what: what, onTimeout: { nil }) { once in
        Task { once.resume(returning: .some(await t.value)) }
    }
    if value == nil {
        testsThatGaveUp.withLock { _ = $0.insert(test) }
        Issue.record("\(what) did not finish within \(bound) ms of real time (a wait that never ends)", sourceLocation: sourceLocation)
    }
    return value
}

/// `c.flush()`'s outcome, awaited for ``testWaitBoundMs`` of real time at most (`nil`, with a
/// recorded issue, when it never returned).
func flushed(_ c: ScoreClient, sourceLocation: SourceLocation = #_sourceLocation) async -> Result<Void, Error>? {
    let t = Task { () -> Result<Void, Error> in
        do {
            try await c.flush()
            return .success(())
        } catch { return .failure(error) }
    }
    return await bounded(t, "flush()", sourceLocation: sourceLocation)
}

/// Waits `ms` of manual time.
func clockSleep(_ clock: ManualClock, _ ms: Int64) async {
    await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
        clock.schedule(afterMs: ms) { c.resume() }
    }
}

/// The recording transport TX: Core's test kit's (`RecordingTransport`, answering on the
/// harness's manual clock), with Score's views of its requests below.
typealias TX = RecordingTransport
/// A recorded request.
typealias Recorded = RecordingTransport.Recorded

extension RecordingTransport.Recorded {
    var isEvents: Bool { url.hasSuffix("/api/events") }
    var isLink: Bool { url.hasSuffix("/api/identity/link-anonymous") }
    var events: [JSONValue] { json["events"]?.arrayValue ?? [] }
    var names: [String] { events.compactMap { $0["name"]?.stringValue } }
    var ids: [String] { events.compactMap { $0["eventId"]?.stringValue } }
    /// The encoded envelopes as written in the body.
    var envelopeTexts: [String] { events.map { WireJSON.encodeString($0) } }
}

extension RecordingTransport {
    var eventRequests: [Recorded] { records.filter(\.isEvents) }
    var linkRequests: [Recorded] { records.filter(\.isLink) }
    var batches: [[String]] { eventRequests.map(\.ids) }
}

/// A lifecycle source double LC.
final class LC: AppLifecycleSource, @unchecked Sendable {
    let clock: ManualClock
    private let lock = NSLock()
    private var handler: (@Sendable (AppLifecycleEvent) -> Void)?
    private var _state: AppLifecycleState
    private var begun: [Int64] = []
    private var ended: [Int64] = []
    private var next = 0
    /// When each background task began and ended (read under the lock: a client's thread may
    /// be adding to them).
    var begins: [Int64] { lock.withLock { begun } }
    var ends: [Int64] { lock.withLock { ended } }

    init(clock: ManualClock, state: AppLifecycleState) {
        self.clock = clock
        _state = state
    }

    var currentState: AppLifecycleState { lock.withLock { _state } }
    func startObserving(_ handler: @escaping @Sendable (AppLifecycleEvent) -> Void) { lock.withLock { self.handler = handler } }
    func stopObserving() { lock.withLock { handler = nil } }
    func beginBackgroundTask() -> BackgroundTaskID {
        lock.withLock {
            begun.append(clock.nowMs())
            next += 1
            return BackgroundTaskID(rawValue: next)
        }
    }
    func endBackgroundTask(_ id: BackgroundTaskID) { lock.withLock { ended.append(clock.nowMs()) } }

    func emit(_ e: AppLifecycleEvent) async {
        let h: (@Sendable (AppLifecycleEvent) -> Void)? = lock.withLock {
            if e == .foreground { _state = .foreground }
            if e == .background { _state = .background }
            return handler
        }
        h?(e)
        await clock.settle()
    }
}

/// The scenario fixture of section 12.0.
final class Harness: @unchecked Sendable {
    let clock: ManualClock
    let ids = TestIds()
    var store: any ScoreStore
    let tx: TX
    let diagnostics = DiagnosticLog()

    /// `holdsOutsideWork`: background work started by the test's own calls waits for the next
    /// settle (see `ManualClock`).
    init(store: (any ScoreStore)? = nil, startMs: Int64 = T0, holdsOutsideWork: Bool = false) {
        clock = ManualClock(startMs: startMs, holdsOutsideWork: holdsOutsideWork)
        self.store = store ?? InMemoryScoreStore()
        tx = TX(clock: clock)
    }

    var memoryStore: InMemoryScoreStore { store as! InMemoryScoreStore }

    func client(
        endpoint: String = "https://score.test", device: Bool = true, locale: String? = "en-GB",
        privacy: PrivacyOptions? = nil, pii: PiiOptions? = nil, initialConsent: ConsentState? = nil,
        replay: Int = 100, maxQueueSize: Int = 1_000, granted: Bool = false
    ) -> ScoreClient {
        let c = ScoreClient(
            configuration: ScoreConfiguration(
                publishableKey: "pk_test_1", siteId: "urc-ios", endpoint: endpoint, appVersion: "4.2.0", os: "iOS 18.1",
                device: device ? "iPhone" : nil, locale: locale, privacy: privacy, pii: pii, initialConsent: initialConsent,
                identifyReplayBufferSize: replay, maxQueueSize: maxQueueSize, store: store, transport: tx, clock: clock,
                scheduler: clock, idSource: ids, onDiagnostic: { [diagnostics] d in diagnostics.add(d) }))
        if granted { c.grantAllConsent() }
        return c
    }

    func at(_ ms: Int64) async { await clock.set(ms: ms) }
    func advance(_ ms: Int64) async { await clock.advance(byMs: ms) }
    func settle() async { await clock.settle() }

    /// `try? await flush()` with the clock settled afterwards. The flush is awaited for
    /// ``testWaitBoundMs`` of real time at most: a flush that never returns (a broken wait on the
    /// manual clock) fails the calling test with a message instead of hanging the suite.
    func flush(_ c: ScoreClient, sourceLocation: SourceLocation = #_sourceLocation) async {
        let t = Task { () -> Void in try? await c.flush() }
        _ = await bounded(t, "flush()", sourceLocation: sourceLocation)
        await clock.settle()
    }

    /// Starts a flush without awaiting it (for scenarios that move time meanwhile).
    /// The flush's task runs on the clock's executor and has started (and settled) on return.
    func startFlush(_ c: ScoreClient) async -> Task<Result<Void, Error>, Never> {
        let t = clock.executor.startTask { () -> Result<Void, Error> in
            do {
                try await c.flush()
                return .success(())
            } catch { return .failure(error) }
        }
        await clock.settle()
        return t
    }
}

extension ScoreClient {
    func pv(delivery: DeliveryMode = .bestEffort) {
        track(.pollVote, properties: ["pollId": "motm-r12", "choice": "player_7"], delivery: delivery)
    }
    func ad(delivery: DeliveryMode = .bestEffort) { track(.adImpression, delivery: delivery) }
    func critical(_ name: String) { track(name, delivery: .critical) }
}

/// The expected envelope text of a PV.
func pvEnvelope(
    _ e: Int, ts: String = "2026-03-01T12:00:00.000Z", anon: Int = 1, session: Int = 1, userId: String? = nil, ctx: String = CTX
) -> String {
    let uid = userId.map { #","userId":"\#($0)""# } ?? ""
    return
        #"{"type":"track","name":"poll_vote","eventId":"\#(E(e))","timestamp":"\#(ts)","anonymousId":"\#(A(anon))","sessionId":"\#(S(session))"\#(uid),"siteId":"urc-ios","props":{"choice":"player_7","pollId":"motm-r12"},"context":\#(ctx),"sdk":\#(SDKJSON)}"#
}
