import Foundation
import Testing
import TrackerCore
import TrackerCoreTestKit

#if canImport(Glibc)
    import Glibc
#endif

/// R37 (issue 37, item 2): a purchase recorded with `RocalyticsClient.recordPurchase`, the process
/// SIGKILLed by the loopback server the moment the purchase reaches it (before any answer), is
/// delivered by the next launch: the same body, the same deduplication id, accepted exactly once,
/// and nothing stays stored.
@Suite(.serialized) struct ClientPurchaseKillTests {
    @Test func R37_aRecordedPurchaseKilledBeforeTheAnswerIsDeliveredOnceAfterRelaunch() throws {
        let dir = TempDir("client-purchase-kill")
        let logs = TempDir("client-purchase-kill-logs")
        defer {
            dir.remove()
            logs.remove()
        }
        let file = FileKeyValueStorage(directory: dir.path).path(for: "rocalytics-recorded-requests")
        let received = Received()
        let victim = Locked<pid_t>(0)
        let server = try LoopbackHTTPServer(recordRequests: false) { req in
            if req.path.hasSuffix("/identify") {
                received.add(path: req.path, body: req.body, status: 200)
                return .respond(status: 200, body: "{}")
            }
            let pid = victim.withLock { p -> pid_t in
                defer { p = 0 }
                return p
            }
            if pid > 0 {
                _ = Glibc.kill(pid, SIGKILL)  // the purchase is here; the process dies before the answer
                received.add(path: req.path, body: req.body, status: 0)
                return .close
            }
            received.add(path: req.path, body: req.body, status: 204)
            return .respond(status: 204, body: "")
        }
        defer { server.stop() }
        let stderrPath = logs.path + "/stderr.log"
        var diagnostics: [String] = []

        // Life 1: records the purchase; killed at its receipt.
        let first = try Child(WorkerBinary.path, ["client-purchase", dir.path, server.baseURL, "1", "1"], stderrPath: stderrPath)
        victim.withLock { $0 = first.pid }
        // Bounded: a life whose purchase never reaches the server is killed after 30 s (the test then fails).
        let firstPid = first.pid
        DispatchQueue.global().asyncAfter(deadline: .now() + 30) {
            if victim.withLock({ p -> Bool in
                defer { if p == firstPid { p = 0 } }
                return p == firstPid
            }) {
                _ = Glibc.kill(firstPid, SIGKILL)
            }
        }
        while let line = first.readLine() {
            if line.hasPrefix("D ") { diagnostics.append(String(line.dropFirst(2))) }
        }
        for line in first.kill() where line.hasPrefix("D ") { diagnostics.append(String(line.dropFirst(2))) }
        let tracks = { received.all.filter { $0.path.hasSuffix("/track") } }
        try #require(tracks().count == 1, "the first life never sent its purchase")
        #expect(tracks()[0].status == 0)
        #expect(FileManager.default.fileExists(atPath: file), "the recorded purchase was not stored before it was sent")

        // Life 2: records nothing; delivers what is stored.
        let second = try Child(
            WorkerBinary.path, ["client-purchase", dir.path, server.baseURL, "2", "1", "drain"], stderrPath: stderrPath)
        let delivered = received.wait(until: Date().addingTimeInterval(20)) { e in
            e.contains { $0.path.hasSuffix("/track") && $0.status == 204 }
        }
        // Its removal is written after the answer: look for it (another process's file) for at most 10 s.
        let deadline = Date().addingTimeInterval(10)
        while FileManager.default.fileExists(atPath: file) && Date() < deadline {
            _ = received.wait(until: Date().addingTimeInterval(0.2)) { _ in false }
        }
        // Anything sent again would arrive within the first retry's backoff (1 s): wait 2 s more.
        _ = received.wait(until: Date().addingTimeInterval(2)) { _ in false }
        for line in second.kill() where line.hasPrefix("D ") { diagnostics.append(String(line.dropFirst(2))) }

        #expect(delivered, "the stored purchase was not delivered after the relaunch")
        let all = tracks()
        #expect(all.count == 2, "\(all.count) purchase requests")
        #expect(all.filter { $0.status == 204 }.count == 1)
        let bodies = Set(all.map(\.body))
        #expect(bodies.count == 1, "the relaunch sent different bytes")
        let body = try #require(all.first.flatMap { try? WireJSON.decode($0.body) })
        #expect(body["deduplication_id"]?.stringValue == "6f1c2a4e-8b3d-4c5e-9f70-1a2b3c4d5e6f-purchase-2000000999")
        #expect(body["properties"]?["original_transaction_identifier"]?.stringValue == "2000000999")
        #expect(!FileManager.default.fileExists(atPath: file), "the delivered purchase is still stored")
        #expect(diagnostics.isEmpty, "\(diagnostics)")
    }
}
