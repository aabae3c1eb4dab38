import Testing
import TrackerCore
import TrackerCoreTestKit
@testable import OnboardingTracker

// The shared fixture of onboarding-tracker.md §12.0.

let T0: Int64 = 1_768_032_000_000
let DESTINATION = "memory://test-collector"
let STAGING = "https://staging.example.com/v1/onboarding-runs"
let PRODUCTION = "https://collector.example.com/v1/onboarding-runs"

let CONTEXT = RunContextInput(appVersion: "2.4.0", build: "412", platform: .ios, osVersion: "18.1", locale: "en-US", timezone: "America/New_York")
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
    let n = uuidCounter.withLock { $0 += 1; return $0 }
    let digits = String(n)
    return "00000000-0000-4000-8000-" + String(repeating: "0", count: 12 - digits.count) + digits
}

/// The harness sink: records every body, answers through a replaceable `respond(body, attempt)`.
final class HarnessSink: OnboardingSink, @unchecked Sendable {
    enum Answer: Sendable {
        case result(SinkResult)
        case fail
        case hang
        case after(Int64, SinkResult)
    }

    let destination: String?
    private let state = Locked<(bodies: [OnboardingRunPayload], killed: Bool)>(([], false))
    let respond: Locked<@Sendable (OnboardingRunPayload, Int) -> Answer>
    let clock: ManualClock
    private let hung = Locked<[CheckedContinuation<Void, Never>]>([])

    init(destination: String?, clock: ManualClock, respond: @escaping @Sendable (OnboardingRunPayload, Int) -> Answer = { _, _ in .result(.accepted) }) {
        self.destination = destination
        self.clock = clock
        self.respond = Locked(respond)
    }

    func answer(_ r: @escaping @Sendable (OnboardingRunPayload, Int) -> Answer) { respond.withLock { $0 = r } }
    func always(_ r: SinkResult) { answer { _, _ in .result(r) } }

    var payloads: [OnboardingRunPayload] { state.value.bodies }
    var bodies: [JSONValue] { payloads.map(\.json) }
    var statuses: [String] { bodies.map { $0["status"]!.stringValue! } }
    var seqs: [Int] { bodies.map { $0["seq"]!.intValue! } }
    var last: JSONValue? { bodies.last }
    func kill() { state.withLock { $0.killed = true } }

    func send(_ payload: OnboardingRunPayload) async throws -> SinkResult {
        let (killed, n) = state.withLock { s -> (Bool, Int) in
            if s.killed { return (true, 0) }
            s.bodies.append(payload)
            return (false, s.bodies.count)
        }
        if killed { await hang(); return .transient }
        Conformance.check(payload)
        switch respond.value(payload, n) {
        case let .result(r): return r
        case .fail: throw HarnessSinkError()
        case .hang: await hang(); return .transient
        case let .after(ms, r):
            await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in clock.schedule(afterMs: ms) { c.resume() } }
            return r
        }
    }

    private func hang() async {
        await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in hung.withLock { $0.append(c) } }
    }
}

/// One test's world: the manual clock, the backing store and the current "process" registry.
final class World: @unchecked Sendable {
    let clock = ManualClock()
    let backing = InMemoryKeyValueStorage()
    var registry = HandoffRegistry()
    /// The harnesses of the current process.
    private let live = Locked<[Harness]>([])

    func adopt(_ h: Harness) { live.withLock { $0.append(h) } }

    /// kill() of the app process (§12.0): every harness created in it stops at once — storage
    /// calls and sink sends never complete, a write already under way never lands.
    func killProcess() {
        let all = live.withLock { l -> [Harness] in defer { l = [] }; return l }
        for h in all { h.kill() }
    }

    /// A new process: the old one was killed, the registry is empty, the clock moved forward.
    func nextLaunch(afterMs: Int64 = 60_000) async {
        killProcess()
        registry = HandoffRegistry()
        await clock.advance(byMs: afterMs)
    }

    /// relaunch(s): next launch with the clock at T0 + s seconds.
    func relaunch(atSeconds s: Int64) async {
        killProcess()
        registry = HandoffRegistry()
        await clock.set(ms: T0 + s * 1000)
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
    let diagnostics = Locked<[Diagnostic]>([])

    init(_ world: World, storage useStorage: Bool = true, faults: FaultInjectingStorage.Faults = .init(),
         destination: String? = DESTINATION, sink givenSink: HarnessSink? = nil,
         configure: (inout OnboardingRunConfiguration) -> Void = { _ in })
    {
        self.world = world
        let sink = givenSink ?? HarnessSink(destination: destination, clock: world.clock)
        self.sink = sink
        let storage = useStorage ? FaultInjectingStorage(backing: world.backing, clock: world.clock, faults: faults) : nil
        self.storage = storage
        adapter = storage.map { HarnessStorage($0, clock: world.clock) }
        let diags = diagnostics
        var config = OnboardingRunConfiguration(
            sink: sink, context: .value(CONTEXT), storage: adapter, debounceMs: 0,
            retry: RetryPolicy(initialDelayMs: 1000, factor: 2, maxDelayMs: 8000),
            onDiagnostic: { d in diags.withLock { $0.append(d) } },
            clock: world.clock, scheduler: world.clock, uuid: harnessUUID, registry: world.registry
        )
        configure(&config)
        tracker = OnboardingRunTracker(configuration: config)
        world.adopt(self)
    }

    var codes: [String] { diagnostics.value.map(\.code) }
    func count(_ code: String) -> Int { codes.filter { $0 == code }.count }
    func diags(_ code: String) -> [Diagnostic] { diagnostics.value.filter { $0.code == code } }

    @discardableResult
    func start(_ options: StartOptions = OPTIONS) -> OnboardingRun { tracker.start(options) }
    func tick(_ ms: Int64 = 10_000) async { await world.clock.advance(byMs: ms) }

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

/// Every payload a test captures is recorded for schema validation and checked against the
/// contract's single-snapshot rules (onboarding-run-contract.md §8) and the size limit.
enum Conformance {
    static func check(_ p: OnboardingRunPayload) {
        PayloadCapture.record(p.bytes, schema: .onboardingRunV1)
        let problems = ContractRules.problems(p.json, size: p.bytes.count)
        #expect(problems.isEmpty, "non-conformant snapshot: \(problems)")
    }
}

enum ContractRules {
    static func problems(_ b: JSONValue, size: Int) -> [String] {
        var out: [String] = []
        if size > 262_144 { out.append("size \(size)") }
        guard let o = b.objectValue else { return ["not an object"] }
        let order = ["schema_version", "run_id", "seq", "status", "started_at", "completed_at", "sent_at", "onboarding", "studio",
                     "context", "manifest", "properties", "truncated", "steps"]
        let ks = o.keys
        if ks != order.filter({ ks.contains($0) }) || ks.contains(where: { !order.contains($0) }) { out.append("keys \(ks)") }
        if o["schema_version"] != 1 { out.append("schema_version") }
        guard let runId = o["run_id"]?.stringValue, IDs.isLowercaseUUID(runId) else { return out + ["run_id"] }
        guard let seq = o["seq"]?.intValue, seq >= 1 else { return out + ["seq"] }
        let status = o["status"]?.stringValue
        let truncated = o["truncated"] == .bool(true)
        if let t = o["truncated"], t != .bool(true) { out.append("truncated false") }
        let completedAt = o["completed_at"]?.stringValue
        if status == "completed" { if completedAt == nil { out.append("completed_at missing") } }
        else if status == "in_progress" { if o["completed_at"] != .null { out.append("completed_at set") } }
        else { out.append("status") }
        guard let man = o["manifest"]?["steps"]?.arrayValue, !man.isEmpty, man.count <= 200 else { return out + ["manifest"] }
        var mkeys = Set<String>()
        var closed = Set<String>()
        for (i, m) in man.enumerated() {
            guard let k = m["step_key"]?.stringValue, Patterns.isKey(k) else { out.append("manifest key"); continue }
            if !mkeys.insert(k).inserted { out.append("rule 2 duplicate") }
            if let slot = m["slot"]?.stringValue {
                if closed.contains(slot) { out.append("rule 2 slot") }
                if i + 1 >= man.count || man[i + 1]["slot"]?.stringValue != slot { closed.insert(slot) }
            }
        }
        guard let steps = o["steps"]?.arrayValue, !steps.isEmpty, steps.count <= 500 else { return out + ["steps count"] }
        if o["started_at"] != steps[0]["entered_at"] { out.append("rule 4") }
        for (i, e) in steps.enumerated() {
            guard let k = e["step_key"]?.stringValue, let en = e["entered_at"]?.stringValue, Timestamp.matchesPattern(en) else {
                out.append("entry \(i)"); continue
            }
            if !mkeys.contains(k) { out.append("rule 1") }
            if i > 0, let prev = steps[i - 1]["entered_at"]?.stringValue, en < prev { out.append("rule 3") }
            let ex = e["exited_at"]?.stringValue
            if let ex, ex < en { out.append("rule 5") }
            if ex == nil && i < steps.count - 1 { out.append("rule 6 (\(i))") }
            let answers = e["answers"]?.arrayValue ?? []
            if answers.count > 50 { out.append("answers > 50") }
            let qk = answers.compactMap { $0["question_key"]?.stringValue }
            if Set(qk).count != qk.count { out.append("rule 8") }
        }
        let lastExit = steps.last?["exited_at"]?.stringValue
        if status == "in_progress" && !truncated && lastExit != nil { out.append("rule 6 last") }
        if status == "completed" {
            if truncated { if lastExit == nil || lastExit! > completedAt! { out.append("rule 7 truncated") } }
            else if lastExit != completedAt { out.append("rule 7") }
        }
        if let p = o["properties"]?.objectValue, p.count > 20 || p.isEmpty { out.append("properties") }
        return out
    }
}
struct HarnessSinkError: Error {}

/// `resume()` while the manual clock moves in 100 ms steps until it resolves (bounded waits on a
/// predecessor's drain run on the clock).
func resumeT(_ h: Harness, expected: StartOptions? = nil) async -> OnboardingRun? {
    let box = Locked<OnboardingRun??>(nil)
    let tracker = h.tracker
    h.world.clock.spawn { let r = await tracker.resume(expected: expected); box.withLock { $0 = .some(r) } }
    for _ in 0..<600 {
        await h.world.clock.settle()
        if let v = box.value { return v }
        await h.tick(100)
    }
    Issue.record("resume() did not resolve")
    return nil
}
