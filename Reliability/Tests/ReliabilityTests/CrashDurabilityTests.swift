import Foundation
import Synchronization
import Testing
import TrackerCore
import TrackerCoreTestKit

/// Crash durability (issue 8, part 1): the `crashworker` child records through one tracker into
/// durable storage and sends to a loopback server run here; it is killed with SIGKILL after a
/// seeded number of progress lines (so at a random point of the following step), then restarted
/// on the same directory. No real sleeps: the harness blocks on the child's output and on the
/// server's condition variable.
@Suite(.serialized) struct CrashDurabilityTests {
    @Test func crashOnboardingRunsSurviveSIGKILL() throws {
        let report = try CrashHarness(kind: .onboarding, kills: Soak.scale(80, soak: 1_000)).run()
        print("[reliability] onboarding: \(report)")
    }

    @Test func crashPaywallPresentationsSurviveSIGKILL() throws {
        let report = try CrashHarness(kind: .paywall, kills: Soak.scale(70, soak: 1_000)).run()
        print("[reliability] paywall: \(report)")
    }

    @Test func crashScoreEventsSurviveSIGKILL() throws {
        let report = try CrashHarness(kind: .score, kills: Soak.scale(70, soak: 1_000)).run()
        print("[reliability] score: \(report)")
    }
}

/// Totals across the crash tests (printed in the report lines).
struct CrashReport: CustomStringConvertible {
    var kills = 0
    var obligations = 0
    var requests = 0
    var resumes = 0
    var description: String {
        "\(kills) SIGKILLs survived, \(obligations) persisted snapshots/events checked delivered, \(resumes) resumes, \(requests) requests"
    }
}

final class CrashHarness {
    enum Kind: String { case onboarding, paywall, score }

    let kind: Kind
    let kills: Int
    let stepsPerLife = 12

    init(kind: Kind, kills: Int) {
        self.kind = kind
        self.kills = kills
    }

    /// A stored snapshot that must reach the server after the kill that left it in storage.
    struct Obligation {
        var id: String
        var seq: Int
        var body: JSONValue
        var afterIndex: Int
    }

    func run() throws -> CrashReport {
        let seed = Soak.seed("crash-\(kind.rawValue)")
        var rng = SplitMix64(seed: seed)
        let dir = TempDir("crash-\(kind.rawValue)")
        let logs = TempDir("crash-\(kind.rawValue)-logs")
        defer {
            dir.remove()
            logs.remove()
        }
        let stderrPath = logs.path + "/stderr.log"

        let received = Received()
        let faults = Locked((on: true, rng: SplitMix64(seed: seed ^ 0x5EED)))
        let kind = self.kind
        let server = try LoopbackHTTPServer(recordRequests: false) { req in
            let fail = faults.withLock { f in f.on && f.rng.chance(10) }
            let status = fail ? 503 : 200
            received.add(path: req.path, body: req.body, status: status)
            if fail { return .respond(status: 503, body: "unavailable") }
            return .respond(status: 200, body: kind == .score ? "{}" : #"{"outcome":"accepted"}"#)
        }
        defer { server.stop() }

        var report = CrashReport()
        var obligations: [Obligation] = []
        var resumeChecks: [(runId: String, lastSeq: Int, afterIndex: Int)] = []
        var storedCurrent: (runId: String, lastSeq: Int, hasSteps: Bool)?
        // Score bookkeeping.
        var persisted = Set<String>()
        var removalDurableAt: [String: Int] = [:]
        var problems: [String] = []

        func handle(_ line: String) {
            let parts = line.split(separator: " ", maxSplits: 2).map(String.init)
            guard let tag = parts.first else { return }
            switch tag {
            case "D":
                problems.append("diagnostic \(parts.dropFirst().joined(separator: " ")) reported")
            case "R":
                report.resumes += 1
                let runId = parts.count > 1 ? parts[1] : ""
                if let c = storedCurrent {
                    if c.runId != runId { problems.append("resumed \(runId) but storage held \(c.runId)") }
                    if c.hasSteps { resumeChecks.append((runId, c.lastSeq, received.count)) }
                } else {
                    problems.append("resumed \(runId) with no stored run")
                }
            case "SP":
                for id in (parts.count > 1 ? parts[1] : "").split(separator: ",") { persisted.insert(String(id)) }
            case "SX":
                let at = received.count
                for id in (parts.count > 1 ? parts[1] : "").split(separator: ",") where removalDurableAt[String(id)] == nil {
                    removalDurableAt[String(id)] = at
                }
            case "SC":
                let kept = Set((parts.count > 1 ? parts[1] : "").split(separator: ",").map(String.init))
                let at = received.count
                for id in persisted where !kept.contains(id) && removalDurableAt[id] == nil { removalDurableAt[id] = at }
            default:
                break
            }
        }

        /// Reads the tracker's storage file after a kill: it must still parse; its unsent
        /// snapshots become obligations.
        func inspectStorage(afterIndex: Int) {
            storedCurrent = nil
            let file: String
            switch kind {
            case .onboarding: file = FileKeyValueStorage(directory: dir.path).path(for: "rocalytics-sdk:onboarding-run")
            case .paywall: file = FileKeyValueStorage(directory: dir.path).path(for: "rocalytics-sdk:paywall-presentations")
            case .score: return
            }
            guard let data = FileManager.default.contents(atPath: file) else { return }
            guard let value = try? WireJSON.decode([UInt8](data)) else {
                problems.append("storage file is not JSON after a kill")
                return
            }
            switch kind {
            case .onboarding:
                if value["format"]?.numberValue != 1 { problems.append("stored format is not 1") }
                if let cur = value["current"], let runId = cur["runId"]?.stringValue,
                    cur["status"]?.stringValue == "in_progress"
                {
                    storedCurrent = (runId, Int(cur["lastSeq"]?.numberValue ?? 0), !(cur["steps"]?.arrayValue ?? []).isEmpty)
                }
                for (runId, item) in value["outboxes"]?.objectValue?.entries ?? [] {
                    guard let seq = item["seq"]?.numberValue, let body = item["body"] else {
                        problems.append("malformed outbox \(runId)")
                        continue
                    }
                    obligations.append(Obligation(id: runId, seq: Int(seq), body: body, afterIndex: afterIndex))
                }
            case .paywall:
                for (id, item) in value.objectValue?.entries ?? [] {
                    guard let seq = item["seq"]?.numberValue, let body = item["body"] else {
                        problems.append("malformed stored presentation \(id)")
                        continue
                    }
                    obligations.append(Obligation(id: id, seq: Int(seq), body: body, afterIndex: afterIndex))
                }
            case .score:
                break
            }
        }

        func spawn(_ generation: Int, drain: Bool) throws -> Child {
            received.setGeneration(generation)
            var args = [kind.rawValue, dir.path, server.baseURL, String(seed &+ UInt64(generation)), String(stepsPerLife)]
            if drain { args.append("drain") }
            return try Child(WorkerBinary.path, args, stderrPath: stderrPath)
        }

        for generation in 0..<kills {
            let child = try spawn(generation, drain: false)
            // Kill before anything (during launch and the stored-state read), right after READY,
            // or after the n-th persist point.
            let roll = rng.below(100)
            let target = roll < 5 ? 0 : roll < 15 ? 1 : 1 + 1 + rng.below(stepsPerLife)
            var seen = 0
            var sawEnd = false
            while seen < target, let line = child.readLine() {
                handle(line)
                if line == "READY" || line.hasPrefix("P ") { seen += 1 }
                if line == "END" {
                    sawEnd = true
                    break
                }
            }
            if seen < target && !sawEnd { problems.append("worker \(generation) ended early (after \(seen) progress lines)") }
            for line in child.kill() { handle(line) }
            report.kills += 1
            inspectStorage(afterIndex: received.count)
            if !problems.isEmpty { break }
        }

        // The last launch delivers what is left; every fault is off.
        faults.withLock { $0.on = false }
        let last = try spawn(kills, drain: true)
        var sawReady = false
        while let line = last.readLine() {
            handle(line)
            if line == "READY" {
                sawReady = true
                break
            }
        }
        if !sawReady { problems.append("the drain launch never became ready") }
        let settled = received.wait(until: Date().addingTimeInterval(Soak.enabled ? 300 : 90)) { entries in
            unmet(entries, obligations: obligations, resumeChecks: resumeChecks, persisted: persisted).isEmpty
        }
        for line in last.kill() { handle(line) }
        let entries = received.all
        report.requests = entries.count
        report.obligations = kind == .score ? persisted.count : obligations.count

        if !settled {
            problems += unmet(entries, obligations: obligations, resumeChecks: resumeChecks, persisted: persisted).prefix(10)
        }
        problems += checkOneBody(entries)
        if kind == .score { problems += checkNoResendAfter2xx(entries, removalDurableAt: removalDurableAt) }
        problems += checkContracts(entries)
        if let err = FileManager.default.contents(atPath: stderrPath) {
            let text = String(decoding: err, as: UTF8.self)
            for secret in [CrashSecrets.publishableKey, CrashSecrets.token, CrashSecrets.email] where text.contains(secret) {
                problems.append("a secret was printed on standard error")
            }
        }
        for p in problems.prefix(20) { Issue.record("\(kind.rawValue) seed=\(seed): \(p)") }
        if !problems.isEmpty, let err = FileManager.default.contents(atPath: stderrPath) {
            // The children's diagnostics (messages, never secrets: checked above), for the failure.
            let tail = String(decoding: err, as: UTF8.self).split(separator: "\n").suffix(20)
            print("[reliability] \(kind.rawValue) seed=\(seed): the children's standard error ends with:\n" + tail.joined(separator: "\n"))
        }
        #expect(report.kills == kills)
        return report
    }

    // MARK: Checks

    func identity(_ json: JSONValue) -> (id: String, seq: Int)? {
        let idKey = kind == .onboarding ? "run_id" : "presentation_id"
        guard let id = json[idKey]?.stringValue, let seq = json["seq"]?.numberValue else { return nil }
        return (id, Int(seq))
    }

    func scoreIds(_ e: Received.Entry) -> [String] {
        ((try? WireJSON.decode(e.body))?["events"]?.arrayValue ?? []).compactMap { $0["eventId"]?.stringValue }
    }

    func unmet(
        _ entries: [Received.Entry], obligations: [Obligation],
        resumeChecks: [(runId: String, lastSeq: Int, afterIndex: Int)], persisted: Set<String>
    ) -> [String] {
        var out: [String] = []
        if kind == .score {
            var delivered = Set<String>()
            for e in entries where e.status == 200 && e.path.hasSuffix("/api/events") { delivered.formUnion(scoreIds(e)) }
            for id in persisted where !delivered.contains(id) { out.append("persisted event \(id) never delivered") }
            return out
        }
        // Best delivered seq per id, per index.
        var decoded: [(index: Int, id: String, seq: Int, status: Int)] = []
        for (i, e) in entries.enumerated() {
            if let json = try? WireJSON.decode(e.body), let k = identity(json) { decoded.append((i, k.id, k.seq, e.status)) }
        }
        for o in obligations {
            let ok = decoded.contains { $0.index >= o.afterIndex && $0.id == o.id && $0.seq >= o.seq && $0.status == 200 }
            if !ok { out.append("stored \(o.id) seq \(o.seq) never delivered after its kill") }
        }
        for r in resumeChecks {
            let ok = decoded.contains { $0.index >= r.afterIndex && $0.id == r.runId && $0.seq > r.lastSeq && $0.status == 200 }
            if !ok { out.append("resumed run \(r.runId) did not continue after seq \(r.lastSeq)") }
        }
        return out
    }

    /// Each (id, seq) goes out with one body only.
    func checkOneBody(_ entries: [Received.Entry]) -> [String] {
        guard kind != .score else { return [] }
        var bodies: [String: [UInt8]] = [:]
        var out: [String] = []
        for e in entries {
            guard let json = try? WireJSON.decode(e.body), let k = identity(json) else {
                out.append("unreadable request body on \(e.path)")
                continue
            }
            let key = "\(k.id)#\(k.seq)"
            if let b = bodies[key], b != e.body { out.append("\(k.id) seq \(k.seq) was sent with two different bodies") }
            bodies[key] = e.body
        }
        return out
    }

    /// A Score event is sent again after a 2xx only when that 2xx reached a process that was
    /// killed before its removal record was durable.
    func checkNoResendAfter2xx(_ entries: [Received.Entry], removalDurableAt: [String: Int]) -> [String] {
        var firstOK: [String: (index: Int, generation: Int)] = [:]
        var out: [String] = []
        for (i, e) in entries.enumerated() where e.path.hasSuffix("/api/events") {
            for id in scoreIds(e) {
                if let first = firstOK[id] {
                    if first.generation == e.generation {
                        out.append("event \(id) sent again by the same process after a 2xx")
                    } else if let at = removalDurableAt[id], i >= at {
                        out.append("event \(id) sent again after its removal was durable")
                    }
                } else if e.status == 200 {
                    firstOK[id] = (i, e.generation)
                }
            }
        }
        return out
    }

    /// Every delivered payload conforms (Core's ContractChecker); the last snapshot of each id is
    /// captured for `make validate-payloads`.
    func checkContracts(_ entries: [Received.Entry]) -> [String] {
        guard kind != .score else { return [] }
        var out: [String] = []
        var lastBody: [String: [UInt8]] = [:]
        var previous: [String: JSONValue] = [:]
        for e in entries {
            guard let json = try? WireJSON.decode(e.body), let k = identity(json) else { continue }
            let violations =
                kind == .onboarding
                ? ContractChecker.onboardingRun(json)
                : ContractChecker.paywallPresentation(json, previous: nil)
            if !violations.isEmpty { out.append("\(k.id) seq \(k.seq): \(violations.first!)") }
            lastBody[k.id] = e.body
            previous[k.id] = json
        }
        for (_, body) in lastBody.sorted(by: { $0.key < $1.key }).prefix(60) {
            PayloadCapture.record(body, schema: kind == .onboarding ? .onboardingRunV1 : .paywallPresentationV1_1)
        }
        return out
    }
}

/// The worker's known test secrets (the worker's `Secrets`).
enum CrashSecrets {
    static let publishableKey = "pk_SECRET_crashworker_7f3a"
    static let token = "tok_SECRET_crashworker_91bd"
    static let email = "fan@example.com"
}
