import Foundation
import Testing
import TrackerCore
import TrackerCoreTestKit

@testable import ScoreTracker

@Suite struct QueueScenarios {
    @Test func SC62_queueSurvivesColdStart() async {
        let h = Harness()
        let c = h.client(granted: true)
        c.pv()
        await h.at(T0 + SEC)
        c.pv(delivery: .critical)
        await h.settle()
        await h.at(T0 + 60 * SEC)
        let c2 = h.client(initialConsent: .all)
        let i = c2.inspect()
        #expect(i.identity.anonymousId == A(1))
        #expect(i.identity.sessionId == S(2))
        #expect(i.queue.depth == 2 && i.queue.critical == 1 && i.queue.oldestAgeSeconds == 60)
        await h.flush(c2)
        #expect(h.tx.batches == [[E(2), E(1)]])
        #expect(h.tx.eventRequests[0].envelopeTexts == [pvEnvelope(2, ts: "2026-03-01T12:00:01.000Z"), pvEnvelope(1)])
        _ = c
    }

    @Test func SC63_fifoCapOldestDropped() async {
        let h = Harness()
        let c = h.client(maxQueueSize: 3, granted: true)
        for n in 1...4 { c.track("b\(n)") }
        let q = c.inspect().queue
        #expect(q.depth == 3 && q.maxSize == 3 && q.shed == 1)
        await h.flush(c)
        #expect(h.tx.batches == [[E(2), E(3), E(4)]])
    }

    @Test func SC64_criticalFirstTierStaysLocal() async {
        let h = Harness()
        let c = h.client(granted: true)
        c.track("b1")
        c.critical("c1")
        c.track("b2")
        c.critical("c2")
        await h.flush(c)
        #expect(h.tx.eventRequests[0].names == ["c1", "c2", "b1", "b2"])
        #expect(!h.tx.bodies.contains { $0.contains("critical") || $0.contains("delivery") || $0.contains("bestEffort") })
    }

    @Test func SC65_bestEffortShedFirstNewOnesIncluded() async {
        let h = Harness()
        let c = h.client(maxQueueSize: 3, granted: true)
        c.critical("c1")
        c.track("b1")
        c.critical("c2")
        c.critical("c3")
        var q = c.inspect().queue
        #expect(q.depth == 3 && q.critical == 3 && q.shed == 1 && q.criticalLost == 0)
        c.track("b2")
        q = c.inspect().queue
        #expect(q.shed == 2)
        await h.flush(c)
        #expect(h.tx.batches == [[E(1), E(3), E(4)]])
    }

    @Test func SC66_queueFull() async {
        let h = Harness()
        let c = h.client(maxQueueSize: 3, granted: true)
        c.critical("c1")
        c.critical("c2")
        c.critical("c3")
        await h.at(T0 + SEC)
        c.critical("c4")
        let q = c.inspect().queue
        #expect(q.depth == 4 && q.critical == 3 && q.criticalLost == 1)
        await h.flush(c)
        #expect(h.tx.batches == [[E(2), E(3), E(4), E(5)]])
        #expect(
            h.tx.eventRequests[0].envelopeTexts[3]
                == #"{"type":"track","name":"delivery_failed","eventId":"\#(E(5))","timestamp":"2026-03-01T12:00:01.000Z","anonymousId":"\#(A(1))","sessionId":"\#(S(1))","siteId":"urc-ios","props":{"originalEventId":"\#(E(1))","originalEventName":"c1","reason":"queue_full"},"context":\#(CTX),"sdk":\#(SDKJSON)}"#
        )
    }

    @Test func SC67_noticesOutsideTheCap() async {
        let h = Harness()
        let c = h.client(maxQueueSize: 1, granted: true)
        for n in 1...102 { c.critical("c\(n)") }
        let q = c.inspect().queue
        #expect(q.criticalLost == 101 && q.depth == 101)
        await h.flush(c)
        let b = h.tx.eventRequests
        #expect(b.count == 2)
        #expect(b[0].names.first == "c102")
        let named = b[0].events.dropFirst().compactMap { $0["props"]?["originalEventName"]?.stringValue }
        #expect(named == (2...100).map { "c\($0)" })
        #expect(b[0].events.count == 100)
        #expect(b[1].events.compactMap { $0["props"]?["originalEventName"]?.stringValue } == ["c101"])
        #expect(!h.tx.bodies.contains { $0.contains(#""originalEventName":"c1""#) })

        let h2 = Harness()
        let d = h2.client(maxQueueSize: 2, granted: true)
        d.critical("c1")
        d.critical("c2")
        d.critical("c3")
        d.track("b1")
        let q2 = d.inspect().queue
        #expect(q2.depth == 3 && q2.shed == 1)
        await h2.flush(d)
        #expect(h2.tx.eventRequests[0].events.last?["props"]?["originalEventName"] == "c1")
    }

    @Test func SC68_ageEvictedAtFlush() async {
        let h = Harness()
        let c = h.client(privacy: PrivacyOptions(mode: .off), granted: true)
        c.critical("c1")
        c.track("b1")
        await h.at(T0 + 72 * HOUR + 1)
        await h.flush(c)
        #expect(h.tx.eventRequests.count == 1)
        #expect(h.tx.eventRequests[0].events.count == 1)
        let e = h.tx.eventRequests[0].events[0]
        #expect(e["eventId"] == .string(E(3)))
        #expect(e["name"] == "delivery_failed")
        #expect(e["timestamp"] == "2026-03-04T12:00:00.001Z")
        #expect(WireJSON.encodeString(e["props"]!) == #"{"originalEventId":"\#(E(1))","originalEventName":"c1","reason":"age_evicted"}"#)
        #expect(c.inspect().queue.expired == 2 && c.inspect().queue.criticalLost == 1)
    }

    @Test func SC69_ageEvictedAtStartupUnderPolicy() async {
        let h = Harness()
        let c = h.client(privacy: PrivacyOptions(mode: .gdpr), initialConsent: .all)
        c.critical("c1")
        await h.settle()
        let snapshot = h.memoryStore.queueRecords
        let identity = try? h.memoryStore.load().identity
        await h.at(T0 + 25 * HOUR)
        let c2 = h.client(privacy: PrivacyOptions(mode: .gdpr), initialConsent: .all)
        let q = c2.inspect().queue
        #expect(q.depth == 1 && q.expired == 1 && q.criticalLost == 1)
        await h.flush(c2)
        let e = h.tx.eventRequests[0].events[0]
        #expect(e["name"] == "delivery_failed" && e["props"]?["reason"] == "age_evicted")
        #expect(e["timestamp"] == "2026-03-02T13:00:00.000Z")
        // Relaunching without initialConsent instead: the notice is dropped by consent.
        let store2 = InMemoryScoreStore()
        try? await store2.rewriteQueue(snapshot)
        if let identity { try? await store2.saveIdentity(identity) }
        let h2 = Harness(store: store2, startMs: T0 + 25 * HOUR)
        let d = h2.client(privacy: PrivacyOptions(mode: .gdpr))
        let q2 = d.inspect()
        #expect(q2.queue.depth == 0 && q2.queue.criticalLost == 1 && q2.consent.droppedByConsent == 1)
        _ = c
    }

    @Test func SC70_persistedBeforeSent() async {
        let clockBox = ClockBox()
        let store = InMemoryScoreStore(delayEachWrite: { await clockBox.waitOnClock(1_000) })
        let h = Harness(store: store)
        clockBox.clock = h.clock
        let c = h.client(granted: true)
        c.pv()
        let f = await h.startFlush(c)
        #expect(h.tx.records.isEmpty)
        await h.advance(999)
        #expect(h.tx.records.isEmpty)
        await h.advance(1)
        #expect(h.tx.eventRequests.count == 1)
        #expect(h.tx.eventRequests[0].at == T0 + 1_000)
        // The flush returns once the delivered event's removal is written, 1 s later (SC177).
        await h.advance(1_000)
        _ = await bounded(f, "the flush")
    }

    @Test func SC71_cutAtAnyByte() async throws {
        let base = NSTemporaryDirectory() + "score-sc71-\(UUID().uuidString)"
        let dir = base + "/orig"
        let ids = TestIds()
        let clock = ManualClock(startMs: T0)
        func launch(_ d: String, _ tx: TX) -> ScoreClient {
            ScoreClient(
                configuration: ScoreConfiguration(
                    publishableKey: "pk_test_1", siteId: "urc-ios", endpoint: "https://score.test", appVersion: "4.2.0",
                    os: "iOS 18.1", device: "iPhone", locale: "en-GB", initialConsent: .all,
                    store: FileScoreStore(directory: d, sync: d == dir), transport: tx, clock: clock, scheduler: clock, idSource: ids,
                    onDiagnostic: { _ in }))
        }
        let tx0 = TX(clock: clock)
        let c = launch(dir, tx0)
        let queuePath = dir + "/queue.log"
        func length(_ p: String) -> Int { (try? FileManager.default.attributesOfItem(atPath: p)[.size] as? Int) ?? 0 }
        var L = [length(queuePath)]
        for _ in 1...4 {
            c.pv()
            await clock.settle()
            L.append(length(queuePath))
        }
        let full = try Array(Data(contentsOf: URL(fileURLWithPath: queuePath)))
        #expect(full.count == L[4])
        // The first encodings.
        let original = AppendLog.parse(full).records.compactMap { r -> String? in
            if case .add(let a)? = QueueRecord.parse(r) { return String(decoding: a.envelope, as: UTF8.self) }
            return nil
        }
        #expect(original.count == 4)
        for k in 0...L[4] {
            let copy = base + "/cut-\(k)"
            try FileManager.default.copyItem(atPath: dir, toPath: copy)
            let f = try FileHandle(forWritingTo: URL(fileURLWithPath: copy + "/queue.log"))
            try f.truncate(atOffset: UInt64(k))
            try f.close()
            let tx = TX(clock: clock)
            let a = launch(copy, tx)
            a.track("after")
            await clock.settle()
            let b = launch(copy, tx)
            _ = await flushed(b)
            await clock.settle()
            let i = L.lastIndex { $0 <= k }!
            let sent = tx.eventRequests.flatMap(\.envelopeTexts)
            #expect(sent.count == i + 1, "cut at \(k)")
            #expect(Array(sent.prefix(i)) == Array(original.prefix(i)), "cut at \(k)")
            #expect(tx.eventRequests.flatMap(\.names).last == "after")
            try? FileManager.default.removeItem(atPath: copy)
        }
        // A cut removal record brings E1…E4 back whole, or nothing.
        try #require(await flushed(c)).get()
        await clock.settle()
        let afterRemoval = try Array(Data(contentsOf: URL(fileURLWithPath: queuePath)))
        #expect(afterRemoval.count > L[4])
        for k in L[4]...afterRemoval.count {
            let copy = base + "/rm-\(k)"
            try FileManager.default.copyItem(atPath: dir, toPath: copy)
            let f = try FileHandle(forWritingTo: URL(fileURLWithPath: copy + "/queue.log"))
            try f.truncate(atOffset: UInt64(k))
            try f.close()
            let tx = TX(clock: clock)
            let b = launch(copy, tx)
            _ = await flushed(b)
            await clock.settle()
            let sent = tx.eventRequests.flatMap(\.envelopeTexts)
            #expect(sent == original || sent.isEmpty, "removal cut at \(k)")
            #expect(sent.isEmpty == (k == afterRemoval.count), "removal cut at \(k)")
            try? FileManager.default.removeItem(atPath: copy)
        }
        // Owner-only files.
        let perms = try FileManager.default.attributesOfItem(atPath: queuePath)[.posixPermissions] as? NSNumber
        #expect(perms?.intValue == 0o600)
        let idPerms = try FileManager.default.attributesOfItem(atPath: dir + "/identity.json")[.posixPermissions] as? NSNumber
        #expect(idPerms?.intValue == 0o600)
        try? FileManager.default.removeItem(atPath: base)
    }
}

/// Lets a store delay run on a clock created later.
final class ClockBox: @unchecked Sendable {
    var clock: ManualClock?
    func waitOnClock(_ ms: Int64) async {
        guard let clock else { return }
        await clockSleep(clock, ms)
    }
}

@Suite struct RemovalRecordTests {
    /// Removals waiting to be written join into one record, wherever adds come between them; a
    /// relaunch replays the log to the same queue.
    @Test func removalsWaitingToBeWrittenShareOneRecord() async throws {
        let store = InMemoryScoreStore()
        let h = Harness(store: store, holdsOutsideWork: true)
        let c = h.client(maxQueueSize: 2, granted: true)
        c.track("a")
        c.track("b")
        await h.settle()
        // Each new event sheds a persisted one: removal, add, removal, add.
        c.track("c")
        c.track("d")
        await h.settle()
        let removals = store.queueRecords.filter { $0.first == 82 }
        #expect(removals.count == 1)
        guard case .remove(let ids)? = QueueRecord.parse(removals[0]) else {
            Issue.record("not a removal")
            return
        }
        #expect(ids == [E(1), E(2)])
        #expect(c.inspect().queue.shed == 2)
        let relaunched = h.client(maxQueueSize: 2, granted: true)
        #expect(relaunched.inspect().queue.depth == 2)
    }
}

@Suite struct RecordingViewTests {
    /// The first look of a recording call reads a published view; the hand-over re-checks it, so
    /// a view left behind by a change (white-box: the state changed without publishing) never
    /// drops an event consent allows, nor stamps an old identity.
    @Test func aStaleViewNeverDropsNorMisstampsAnEvent() async throws {
        let h = Harness()
        let c = h.client()
        c.state.withLock { $0.consent = .all }  // granted, the view still says denied
        c.track("after_grant")
        #expect(c.inspect().queue.depth == 1)
        c.state.withLock { s in
            s.userId = "fan-9"
            s.identityGeneration += 1
        }  // the view still has no userId
        c.track("after_identify")
        await h.settle()
        let records = h.memoryStore.queueRecords.compactMap { r -> QueueRecord.Add? in
            if case .add(let a)? = QueueRecord.parse(r) { a } else { nil }
        }
        #expect(records.map(\.name) == ["after_grant", "after_identify"])
        let last = try #require(records.last)
        #expect(String(decoding: last.envelope, as: UTF8.self).contains(#""userId":"fan-9""#))
        #expect(!String(decoding: records[0].envelope, as: UTF8.self).contains("userId"))
    }
}
