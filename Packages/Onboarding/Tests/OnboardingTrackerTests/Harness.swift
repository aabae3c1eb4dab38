import Foundation
import Testing
import TrackerCore
import TrackerCoreTestKit

@testable import OnboardingTracker

// The shared fixture of onboarding-tracker.md §12.0.

let T0: Int64 = 1_768_032_000_000
let DESTINATION = "memory://test-collector"
let STAGING = "https://staging.example.com/v1/onboarding-runs"
let PRODUCTION = "https://collector.example.com/v1/onboarding-runs"

let CONTEXT = RunContextInput(
    appVersion: "2.4.0", build: "412", platform: .ios, osVersion: "18.1", locale: "en-US", timezone: "America/New_York")
let MANIFEST: [ManifestStepInput] = [
    .init(stepKey: "welcome"), .init(stepKey: "goal"), .init(stepKey: "experience"),
    .init(stepKey: "plan_quick", slot: "plan"), .init(stepKey: "plan_detailed", slot: "plan"),
    .init(stepKey: "permissions"), .init(stepKey: "summary"),
]
let IDENTITY = OnboardingInput(key: "main", version: "3")
let OPTIONS = StartOptions(onboarding: IDENTITY, manifest: MANIFEST)

/// `uuid` of every harness: `00000000-0000-4000-8000-` + a 12-digit counter shared by all.
let uuidCounter = Locked(0)
@Sendable func harnessUUID() -> String {
    let n = uuidCounter.withLock {
        $0 += 1
        return $0
    }
    let digits = String(n)
    return "00000000-0000-4000-8000-" + String(repeating: "0", count: 12 - digits.count) + digits
}

/// One snapshot a sink was handed, with its wire forms.
struct SentPayload: Sendable, Equatable {
    /// The snapshot itself (Core's generated contract type).
    let snapshot: OnboardingRunSnapshot
    /// Its compact wire bytes (`wireBytes()`), what `HTTPSink` posts.
    let bytes: [UInt8]
    /// Its ordered JSON (`wireJSON()`).
    let json: JSONValue

    init(_ snapshot: OnboardingRunSnapshot) {
        self.snapshot = snapshot
        bytes = snapshot.wireBytes()
        json = snapshot.wireJSON()
    }

    var runId: String { snapshot.runId }
    var seq: Int { snapshot.seq }
    var isCompleted: Bool { snapshot.isCompleted }
    var text: String { String(decoding: bytes, as: UTF8.self) }
}

/// The harness sink: the test kit's `RecordingSink` (it records, answers, holds and dies), with
/// every body checked for conformance as it arrives and scripted by `(body, attempt)`.
final class HarnessSink: OnboardingSink, Sendable {
    enum Answer: Sendable {
        case result(SinkResult)
        case fail
        case hang
        case after(Int64, SinkResult)

        var behavior: SinkBehavior {
            switch self {
            case .result(let r): .result(r)
            case .fail: .fail("the harness sink failed")
            case .hang: .never
            case .after(let ms, let r): .after(ms, .result(r))
            }
        }
    }

    let recorder: RecordingSink<OnboardingRunSnapshot>
    var destination: String? { recorder.destination }

    init(
        destination: String?, clock: ManualClock, respond: @escaping @Sendable (SentPayload, Int) -> Answer = { _, _ in .result(.accepted) }
    ) {
        recorder = RecordingSink(
            destination: destination, clock: clock, behavior: { n, s in respond(SentPayload(s), n).behavior },
            onSend: { Conformance.check(SentPayload($0)) })
    }

    func answer(_ r: @escaping @Sendable (SentPayload, Int) -> Answer) { recorder.respond { n, s in r(SentPayload(s), n).behavior } }
    func always(_ r: SinkResult) { recorder.respond(always: r) }

    var payloads: [SentPayload] { recorder.received.map(SentPayload.init) }
    var bodies: [JSONValue] { recorder.received.map { $0.wireJSON() } }
    var statuses: [String] { recorder.received.map(\.status.rawValue) }
    var seqs: [Int] { recorder.received.map(\.seq) }
    var last: JSONValue? { recorder.received.last?.wireJSON() }
    func kill() { recorder.kill() }

    func send(_ snapshot: OnboardingRunSnapshot) async throws -> SinkResult { try await recorder.send(snapshot) }
}

/// One test's world: the manual clock, the backing store and the current "process" registry.
///
/// Every tracker of a test uses the manual clock as its scheduler, holding outside work: a step
/// spawned by the test's own code (a recording call, a tracker's initialiser) waits until the
/// test next lets time pass or awaits the world (``open(_:)``), and held steps are then started
/// in order from the clock's executor itself. Without holding, the background work of one
/// recording call (a write landing, the snapshot handed to the sink) could run between two calls
/// the test makes back to back, and "enter welcome; complete()" would sometimes send the welcome
/// snapshot first. With it, calls made in one go behave as in the reference (which runs to
/// completion before any background step), and a test's outcome is a function of its inputs
/// (decision 13).
final class World: @unchecked Sendable {
    let clock = ManualClock(holdsOutsideWork: true)
    var scheduler: ManualClock { clock }
    let backing = InMemoryKeyValueStorage()
    var registry = HandoffRegistry()
    /// The harnesses of the current process.
    private let live = Locked<[Harness]>([])

    init() {}

    /// tick(ms): time moves on, due timers fire in order, work settles.
    func advance(_ ms: Int64) async { await clock.withOutsideWorkReleased { await clock.advance(byMs: ms) } }
    /// tick(0): pending work settles.
    func settle() async { await clock.withOutsideWorkReleased { await clock.settle() } }
    /// Awaits `body` (e.g. `idle()`) while background steps may run.
    func open<T: Sendable>(_ body: () async -> T) async -> T { await clock.withOutsideWorkReleased(body) }

    func adopt(_ h: Harness) { live.withLock { $0.append(h) } }

    /// kill() of the app process (§12.0): every harness created in it stops at once — storage
    /// calls and sink sends never complete, a write already under way never lands.
    func killProcess() {
        let all = live.withLock { l -> [Harness] in
            defer { l = [] }
            return l
        }
        for h in all { h.kill() }
    }

    /// A new process: the old one was killed, the registry is empty, the clock moved forward.
    func nextLaunch(afterMs: Int64 = 60_000) async {
        killProcess()
        registry = HandoffRegistry()
        await advance(afterMs)
    }

    /// relaunch(s): next launch with the clock at T0 + s seconds.
    func relaunch(atSeconds s: Int64) async {
        killProcess()
        registry = HandoffRegistry()
        await clock.withOutsideWorkReleased { await clock.set(ms: T0 + s * 1000) }
    }
}

/// The storage adapter a harness hands its tracker: the fault-injecting storage over the world's
/// backing store, plus "slow writes" and the process kill. Slow writes wait here, before reaching
/// the backing store, so that a kill during the wait means the write never lands.
final class HarnessStorage: KeyValueStorage {
    let faults: FaultInjectingStorage
    let clock: ManualClock
    private let state = Locked<(killed: Bool, writeDelayMs: Int64)>((false, 0))
    private let parked = Locked<[CheckedContinuation<Void, Never>]>([])

    init(_ faults: FaultInjectingStorage, clock: ManualClock) {
        self.faults = faults
        self.clock = clock
    }

    func slowWrites(_ ms: Int64) { state.withLock { $0.writeDelayMs = ms } }
    func kill() { state.withLock { $0.killed = true } }
    var killed: Bool { state.value.killed }

    func getItem(_ key: String) async throws -> String? {
        if killed { await never() }
        let v = try await faults.getItem(key)
        if killed { await never() }
        return v
    }

    func setItem(_ key: String, _ value: String) async throws {
        try await beforeWrite()
        try await faults.setItem(key, value)
    }

    func removeItem(_ key: String) async throws {
        try await beforeWrite()
        try await faults.removeItem(key)
    }

    private func beforeWrite() async throws {
        if killed { await never() }
        let delay = state.value.writeDelayMs
        if delay > 0 {
            await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in clock.schedule(afterMs: delay) { c.resume() } }
        }
        if killed { await never() }
    }

    private func never() async {
        await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in parked.withLock { $0.append(c) } }
    }
}

/// A harness tracker (§12.0).
final class Harness: @unchecked Sendable {
    let world: World
    let sink: HarnessSink
    /// The fault script of this harness's storage (nil: no storage).
    let storage: FaultInjectingStorage?
    let adapter: HarnessStorage?
    let tracker: OnboardingRunTracker
    let log = DiagnosticLog()

    init(
        _ world: World, storage useStorage: Bool = true, faults: FaultInjectingStorage.Faults = .init(),
        destination: String? = DESTINATION, sink givenSink: HarnessSink? = nil,
        configure: (inout OnboardingRunConfiguration) -> Void = { _ in }
    ) {
        self.world = world
        let sink = givenSink ?? HarnessSink(destination: destination, clock: world.clock)
        self.sink = sink
        let storage = useStorage ? FaultInjectingStorage(backing: world.backing, clock: world.clock, faults: faults) : nil
        self.storage = storage
        adapter = storage.map { HarnessStorage($0, clock: world.clock) }
        var config = OnboardingRunConfiguration(
            sink: sink, context: .value(CONTEXT), storage: adapter, debounceMs: 0,
            retry: RetryPolicy(initialDelay: 1, factor: 2, maxDelay: 8),
            onDiagnostic: log.handler,
            clock: world.clock, scheduler: world.scheduler, uuid: harnessUUID, registry: world.registry
        )
        configure(&config)
        tracker = OnboardingRunTracker(configuration: config)
        world.adopt(self)
    }

    var codes: [String] { log.codes }
    func count(_ code: String) -> Int { log.count(code) }
    func diags(_ code: String) -> [Diagnostic] { log.with(code) }

    @discardableResult
    func start(_ options: StartOptions = OPTIONS) -> OnboardingRun { tracker.start(options) }
    func tick(_ ms: Int64 = 10_000) async { await world.advance(ms) }
    /// `idle()` of the tracker.
    func idle() async { await world.open { await tracker.idle() } }

    /// From now on this harness's storage calls and sink sends never complete (a write still
    /// under way never lands). ``World/killProcess()`` kills every harness of the process.
    func kill() {
        sink.kill()
        adapter?.kill()
    }

    /// Writes from now on land `ms` after they start ("slow writes").
    func slowWrites(_ ms: Int64) { adapter?.slowWrites(ms) }

    var stored: String? { world.backing.snapshot[tracker.config.storageKey] }
    var storedJSON: JSONValue? { stored.flatMap { try? WireJSON.decode($0) } }
}

func keys(_ body: JSONValue?) -> [String] {
    body?["steps"]?.arrayValue?.map { $0["step_key"]!.stringValue! } ?? []
}

func steps(_ body: JSONValue?) -> [JSONValue] { body?["steps"]?.arrayValue ?? [] }

func ts(_ hms: String) -> String { "2026-01-10T\(hms)Z" }

/// Every payload a test captures is recorded for schema validation (`make validate-payloads`,
/// schema onboarding-run v1) and checked with Core's server verdict on a first snapshot
/// (`ContractChecker.onboardingRunVerdict`: the size limit, the §8 rules and the typed shape), and
/// the typed snapshot: decoding it and encoding
/// it again gives the very bytes sent (so key order is the contract's).
enum Conformance {
    static func check(_ p: SentPayload) {
        PayloadCapture.record(p.bytes, schema: .onboardingRunV1)
        let problems = problems(p)
        #expect(problems.isEmpty, "non-conformant snapshot: \(problems)")
    }

    static func problems(_ p: SentPayload) -> [String] {
        var out = verdictProblems(p.json, size: p.bytes.count)
        // The direct writer and the JSON tree give the same bytes, and the bytes decode back to
        // the very same typed value (so key order and number forms are the contract's).
        if WireJSON.encode(p.json) != p.bytes { out.append("the typed snapshot's writer and its JSON tree differ") }
        if (try? OnboardingRunSnapshot(json: WireJSON.decode(p.bytes))) != p.snapshot {
            out.append("the bytes sent do not decode back to the snapshot")
        }
        return out
    }

    /// Checks a body received from elsewhere (a collector, a stored outbox).
    static func check(json: JSONValue) {
        let bytes = WireJSON.encode(json)
        PayloadCapture.record(bytes, schema: .onboardingRunV1)
        let problems = verdictProblems(json, size: bytes.count)
        #expect(problems.isEmpty, "non-conformant snapshot: \(problems)")
    }

    /// Why the server would refuse `json` as the first snapshot of its run (none when it accepts).
    static func verdictProblems(_ json: JSONValue, size: Int) -> [String] {
        switch ContractChecker.onboardingRunVerdict(incoming: json, stored: nil, size: size) {
        case .rejectedTooLarge(let bytes): ["size \(bytes) > \(ContractChecker.onboardingRunMaxBytes)"]
        case .rejectedNonconformant(let problems): problems.map(\.description)
        case let other: other.outcome == .accepted ? [] : ["\(other)"]
        }
    }
}

/// `resume()` while the manual clock moves in 100 ms steps until it resolves (bounded waits on a
/// predecessor's drain run on the clock).
func resumeT(_ h: Harness, expected: StartOptions? = nil) async -> OnboardingRun? {
    let box = Locked<OnboardingRun??>(nil)
    let tracker = h.tracker
    h.world.clock.spawnAsCaller {
        let r = await tracker.resume(expected: expected)
        box.withLock { $0 = .some(r) }
    }
    for _ in 0..<600 {
        await h.world.settle()
        if let v = box.value { return v }
        await h.tick(100)
    }
    Issue.record("resume() did not resolve")
    return nil
}
