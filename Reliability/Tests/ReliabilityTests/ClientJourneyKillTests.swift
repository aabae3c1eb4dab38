import Foundation
import Testing
import TrackerCore
import TrackerCoreTestKit

#if canImport(Glibc)
    import Glibc
#endif

/// R40 (issue 37, "done when"): the recording forms of identify and purchase survive a failing
/// server and a SIGKILL, each of them. Life 1 records `recordIdentify(userId:)` then
/// `recordPurchase`; the server answers the identify 503, and kills the process when its retry
/// arrives. Life 2 records nothing: the identify is accepted, the purchase answered 503, and the
/// process killed at the purchase's retry. Life 3 delivers the purchase. Each request is sent with
/// the same bytes at every attempt, is accepted exactly once, in record order, and nothing stays
/// stored.
@Suite(.serialized) struct ClientJourneyKillTests {
    @Test func R40_recordedIdentifyAndPurchaseSurviveAFailingServerAndAKillEach() throws {
        let dir = TempDir("client-journey-kill")
        let logs = TempDir("client-journey-kill-logs")
        defer {
            dir.remove()
            logs.remove()
        }
        let file = FileKeyValueStorage(directory: dir.path).path(for: "rocalytics-recorded-requests")
        let received = Received()
        let victim = Locked<pid_t>(0)
        let attempts = Locked<[String: Int]>([:])
        let server = try LoopbackHTTPServer(recordRequests: false) { req in
            let kind: String
            if req.path.hasSuffix("/identify") {
                guard String(decoding: req.body, as: UTF8.self).contains("fan-77") else {
                    received.add(path: req.path, body: req.body, status: 200)  // the start-up identify
                    return .respond(status: 200, body: "{}")
                }
                kind = "identify"
            } else if req.path.hasSuffix("/track"), String(decoding: req.body, as: UTF8.self).contains("2000000999") {
                kind = "purchase"
            } else {
                received.add(path: req.path, body: req.body, status: 204)
                return .respond(status: 204, body: "")
            }
            let n = attempts.withLock { a -> Int in
                a[kind, default: 0] += 1
                return a[kind]!
            }
            switch n {
            case 1:
                received.add(path: kind, body: req.body, status: 503)
                return .respond(status: 503, body: "")
            case 2:
                let pid = victim.withLock { p -> pid_t in
                    defer { p = 0 }
                    return p
                }
                if pid > 0 { _ = Glibc.kill(pid, SIGKILL) }  // the retry is here; the process dies first
                received.add(path: kind, body: req.body, status: 0)
                return .close
            default:
                received.add(path: kind, body: req.body, status: kind == "identify" ? 200 : 204)
                return kind == "identify" ? .respond(status: 200, body: "{}") : .respond(status: 204, body: "")
            }
        }
        defer { server.stop() }
        let stderrPath = logs.path + "/stderr.log"
        var diagnostics: [String] = []
        func live(_ args: [String], then: () -> Void = {}, until done: @escaping ([Received.Entry]) -> Bool) throws {
            let child = try Child(WorkerBinary.path, args, stderrPath: stderrPath)
            victim.withLock { $0 = child.pid }
            let ok = received.wait(until: Date().addingTimeInterval(30), done)
            if ok { then() }
            for line in child.kill() where line.hasPrefix("D ") { diagnostics.append(String(line.dropFirst(2))) }
            try #require(ok, "life \(args) did not reach its point; seen: \(received.all.map { "\($0.path) \($0.status)" })")
        }
        func of(_ kind: String) -> [Received.Entry] { received.all.filter { $0.path == kind } }

        // Life 1: identify fails (503), its retry is killed.
        try live(["client-journey", dir.path, server.baseURL, "1", "1"]) { e in e.contains { $0.path == "identify" && $0.status == 0 } }
        #expect(of("purchase").isEmpty, "the purchase went before the identify recorded ahead of it")
        // Life 2: the identify is accepted; the purchase fails (503), its retry is killed.
        try live(["client-journey", dir.path, server.baseURL, "2", "1", "drain"]) { e in
            e.contains { $0.path == "purchase" && $0.status == 0 }
        }
        // Life 3: the purchase is accepted, and its removal written (looked for, in another
        // process's file, for at most 10 s before the process is killed).
        let removed = Locked(false)
        let waitForRemoval = {
            let deadline = Date().addingTimeInterval(10)
            while FileManager.default.fileExists(atPath: file) && Date() < deadline {
                _ = received.wait(until: Date().addingTimeInterval(0.2)) { _ in false }
            }
            removed.withLock { $0 = !FileManager.default.fileExists(atPath: file) }
        }
        try live(["client-journey", dir.path, server.baseURL, "3", "1", "drain"], then: waitForRemoval) { e in
            e.contains { $0.path == "purchase" && $0.status == 204 }
        }

        let identify = of("identify")
        let purchase = of("purchase")
        #expect(identify.map(\.status) == [503, 0, 200])
        #expect(purchase.map(\.status) == [503, 0, 204])
        #expect(Set(identify.map(\.body)).count == 1, "the identify's bytes changed between attempts")
        #expect(Set(purchase.map(\.body)).count == 1, "the purchase's bytes changed between attempts")
        let body = try #require(purchase.first.flatMap { try? WireJSON.decode($0.body) })
        #expect(body["deduplication_id"]?.stringValue == "6f1c2a4e-8b3d-4c5e-9f70-1a2b3c4d5e6f-purchase-2000000999")
        let id = try #require(identify.first.flatMap { try? WireJSON.decode($0.body) })
        #expect(id["user_id"]?.stringValue == "fan-77" || String(decoding: identify[0].body, as: UTF8.self).contains("\"fan-77\""))
        #expect(diagnostics.isEmpty, "\(diagnostics)")
        #expect(removed.value, "the delivered requests are still stored")
    }
}
