import Foundation
import Testing
import TrackerCore
import TrackerCoreTestKit

@testable import PaywallTracker

// Fixtures of spec section 17.
let T0: Int64 = 1_768_032_000_000  // 2026-01-10T08:00:00.000Z
let T9: Int64 = 1_768_035_600_000  // 2026-01-10T09:00:00.000Z
let FIXED_ID = "0192f1a2-7c3d-7e4f-8a5b-6c7d8e9f0a1b"
let LIB = PaywallTrackerVersion.current
let CTX_IN = RunContextInput(
    appVersion: "2.4.0", build: "412", platform: .ios, osVersion: "18.1", locale: "en-US", timezone: "America/New_York")
let CTX =
    #"{"app_version":"2.4.0","build":"412","platform":"ios","os_version":"18.1","locale":"en-US","timezone":"America/New_York","library_version":"\#(LIB)"}"#
let INFO = PaywallPresentationInfo(
    moment: "settings_upgrade", paywallId: "pw-1", audienceId: nil, renderMode: .custom, billing: .store, surface: .present)
let PW = #"{"moment_key":"settings_upgrade","paywall_id":"pw-1","audience_id":null,"render_mode":"custom","billing":"store"}"#
var INFO_A: PaywallPresentationInfo {
    var i = INFO
    i.audienceId = "aud-1"
    return i
}
let STORAGE_KEY = PaywallPresentationTracker.defaultStorageKey

/// The expected v1 body of a presentation of INFO with CTX (spec 17, scenario 1).
func expectedBody(
    id: String, seq: Int, startedAt: String = "2026-01-10T08:00:00.000Z", shownAt: String?, sentAt: String,
    paywall: String = PW, ended: (at: String, outcome: String)? = nil
) -> String {
    let shown = shownAt.map { "\"\($0)\"" } ?? "null"
    let tail =
        ended.map { #""status":"ended","ended_at":"\#($0.at)","outcome":\#($0.outcome)"# }
        ?? #""status":"in_progress","ended_at":null,"outcome":null"#
    return
        #"{"schema_version":1,"presentation_id":"\#(id)","seq":\#(seq),"started_at":"\#(startedAt)","shown_at":\#(shown),"sent_at":"\#(sentAt)","paywall":\#(paywall),"surface":"present","context":\#(CTX),\#(tail)}"#
}

/// Records and contract-checks one snapshot: captured under the v1 schema (no provider) or the
/// v1.1 schema (provider) for `make validate-payloads`; returns the checker's problems.
@discardableResult
func captureAndCheck(_ snapshot: PaywallSnapshot) -> [String] {
    let bytes = snapshot.wireBytes()
    let v1 = snapshot.provider == nil
    PayloadCapture.record(bytes, schema: v1 ? .paywallPresentationV1 : .paywallPresentationV1_1)
    // Core's checker (shape and rules beyond the schema), then this package's (patterns, lengths, v1 vs v1.1).
    return ContractChecker.paywallPresentation(snapshot.wireJSON()).map(\.description)
        + PaywallContractChecker.problems(bytes: bytes, schema: v1 ? .v1 : .v1_1)
}

/// A sink that captures and checks every payload it is given, then answers as its
/// ``RecordingSink`` is scripted.
final class CheckedSink: Sink, Sendable {
    let recorder: RecordingSink<PaywallSnapshot>
    let problems = Locked<[String]>([])
    /// The clock reading of each call.
    let callTimes = Locked<[Int64]>([])
    let clock: ManualClock
    var destination: String? { nil }

    init(clock: ManualClock, recorder: RecordingSink<PaywallSnapshot> = RecordingSink()) {
        self.clock = clock
        self.recorder = recorder
    }

    func send(_ payload: PaywallSnapshot) async throws -> SinkResult {
        let p = captureAndCheck(payload)
        problems.withLock { $0 += p }
        let now = clock.nowMs()
        callTimes.withLock { $0.append(now) }
        return try await recorder.send(payload)
    }

    var received: [PaywallSnapshot] { recorder.received }
    var bodies: [String] { received.map(\.wireString) }
}

/// The test fixture: one tracker on a manual clock with a checked sink and a diagnostic log.
struct PaywallFixture {
    let clock: ManualClock
    let sink: CheckedSink
    let log = DiagnosticLog()
    let tracker: PaywallPresentationTracker

    init(
        startMs: Int64 = T0, context: ContextSource = .value(CTX_IN), storage: (any KeyValueStorage)? = nil,
        clock: ManualClock? = nil,
        behavior: @escaping @Sendable (Int, PaywallSnapshot) -> SinkBehavior = { _, _ in .result(.accepted) },
        uuid: (@Sendable () -> String)? = nil
    ) {
        let clock = clock ?? ManualClock(startMs: startMs)
        self.clock = clock
        sink = CheckedSink(clock: clock, recorder: RecordingSink(behavior: behavior))
        tracker = PaywallPresentationTracker(
            configuration: PaywallTrackerConfiguration(
                sink: sink, context: context, storage: storage, clock: clock, scheduler: clock, uuid: uuid,
                onDiagnostic: log.handler))
    }

    var bodies: [String] { sink.bodies }
    var received: [PaywallSnapshot] { sink.received }

    func settle() async { await clock.settle() }
    func advance(_ ms: Int64) async { await clock.advance(byMs: ms) }

    /// The sink saw spec 17's scenario 1 and nothing else: INFO presented at 08:00:00, shown at
    /// once, dismissed one second later (three snapshots). Returns the presentation id.
    @discardableResult
    func expectShownThenDismissedAfterOneSecond(sourceLocation: SourceLocation = #_sourceLocation) throws -> String {
        let p = try #require(received.first, sourceLocation: sourceLocation).presentationId
        #expect(
            bodies == [
                expectedBody(id: p, seq: 1, shownAt: nil, sentAt: "2026-01-10T08:00:00.000Z"),
                expectedBody(id: p, seq: 2, shownAt: "2026-01-10T08:00:00.000Z", sentAt: "2026-01-10T08:00:00.000Z"),
                expectedBody(
                    id: p, seq: 3, shownAt: "2026-01-10T08:00:00.000Z", sentAt: "2026-01-10T08:00:01.000Z",
                    ended: ("2026-01-10T08:00:01.000Z", #"{"status":"dismissed"}"#)),
            ], sourceLocation: sourceLocation)
        return p
    }

    /// Every snapshot the sink saw was conformant.
    func expectConformant(sourceLocation: SourceLocation = #_sourceLocation) {
        #expect(sink.problems.value.isEmpty, "\(sink.problems.value)", sourceLocation: sourceLocation)
        #expect(!sink.received.isEmpty, sourceLocation: sourceLocation)
    }
}

/// The stored map under the default key, parsed.
func storedMap(_ storage: InMemoryKeyValueStorage) -> JSONObject? {
    guard let raw = storage.snapshot[STORAGE_KEY] else { return nil }
    return (try? WireJSON.decode(raw))?.objectValue
}

func json(_ text: String) -> JSONValue {
    (try? WireJSON.decode(text)) ?? .null
}

extension InfoValidation {
    /// The untyped form of a typed info, for driving `start(json:)` with the same keys: without
    /// a provider a `nil` audience is an explicit `null`; with one it is left out.
    static func raw(_ info: PaywallPresentationInfo) -> JSONValue {
        var o = JSONObject()
        if let v = info.moment { o["moment"] = .string(v) }
        if let v = info.paywallId { o["paywallId"] = .string(v) }
        if let v = info.audienceId { o["audienceId"] = .string(v) } else if info.provider == nil { o["audienceId"] = .null }
        if let v = info.renderMode { o["renderMode"] = .string(v.rawValue) }
        if let v = info.billing { o["billing"] = .string(v.rawValue) }
        o["surface"] = .string(info.surface.rawValue)
        if let v = info.variantKey { o["variantKey"] = .string(v) }
        if let v = info.deploymentId { o["deploymentId"] = .string(v) }
        if let r = info.onboardingRun { o["onboardingRun"] = ["runId": .string(r.runId), "stepKey": .string(r.stepKey)] }
        if let v = info.provider { o["provider"] = .string(v.rawValue) }
        if let v = info.placement { o["placement"] = .string(v) }
        if let v = info.externalPaywallId { o["externalPaywallId"] = .string(v) }
        if let v = info.providerName { o["providerName"] = .string(v) }
        return .object(o)
    }
}
