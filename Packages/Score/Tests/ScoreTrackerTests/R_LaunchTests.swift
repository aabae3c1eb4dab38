import Foundation
import Testing
import TrackerCore
import TrackerCoreTestKit

@testable import ScoreTracker

// Launch and idle cost (issue 19): the constructor does no file I/O, the queue loads in the
// background, and calls made before the load finishes behave exactly as after it.
//
// New scenarios:
// SC129 the constructor returns while its store's first read is held (the read blocks its
//       thread until the test opens the gate); nothing is written or sent meanwhile.
// SC130 `track()` before the load: the stored events come first, the cap applies over stored
//       and new together, and the new events carry the stored anonymous id and userId.
// SC131 the critical tier before the load: a critical event recorded into a queue the stored
//       critical events fill loses the oldest stored one, with its `delivery_failed` notice.
// SC132 `flush()` before the load waits for it, then sends stored and new events once each.
// SC133 `inspect()` before the load waits for it and shows the stored events and identity.
// SC134 consent withdrawn before the load removes the stored events requiring it.
// SC135 `identify` before the load: its userId wins over the stored one, the stored anonymous
//       id is kept and linked; events before it carry the stored userId.
// SC136 `reset()` before the load: the events before it carry the stored identity, the ones
//       after it the new one; the stored identity file is never overwritten by a placeholder.
// SC137 a background flush before the load keeps its background task until the flush that
//       starts after the load ends.
// SC138 the periodic flush arms no timer when idle: none pending after the flush that empties
//       the queue; the next event arms it for the period's next tick.
// SC145 a periodic flush turned on before the load arms its timer at the load only when the
//       stored queue holds something to send.

/// A store whose first `load()` waits at a ``ReadGate``; every other call goes to `inner`.
final class GatedScoreStore: ScoreStore, @unchecked Sendable {
    let inner: InMemoryScoreStore
    let gate = ReadGate()
    init(_ inner: InMemoryScoreStore) { self.inner = inner }
    func load() throws -> ScoreStoreContents {
        gate.pass()
        return try inner.load()
    }
    func appendQueueRecords(_ records: [[UInt8]]) async throws -> [ScoreRecordLocation]? {
        try await inner.appendQueueRecords(records)
    }
    func syncQueue() async throws { try await inner.syncQueue() }
    func readQueueRecord(at location: ScoreRecordLocation) throws -> [UInt8]? { try inner.readQueueRecord(at: location) }
    func compactQueue(keeping: [ScoreRecordLocation]) async throws -> [ScoreRecordLocation?]? {
        try await inner.compactQueue(keeping: keeping)
    }
    func rewriteQueue(_ records: [[UInt8]]) async throws { try await inner.rewriteQueue(records) }
    func saveIdentity(_ bytes: [UInt8]) async throws { try await inner.saveIdentity(bytes) }
}

@Suite struct LaunchScenarios {
    /// Launch 1 on `store`: `record` runs on a granted client whose sends fail (everything stays
    /// queued), then the writes settle.
    func launch1(_ h: Harness, maxQueueSize: Int = 1_000, _ record: (ScoreClient) -> Void) async {
        h.tx.answerAll(.status(503))
        let c = h.client(maxQueueSize: maxQueueSize, granted: true)
        record(c)
        await h.settle()
        h.tx.answerAll(.status(200))
    }

    /// Launch 2 on a gated copy of the harness's store: returns the client (constructed while
    /// the read is held) and the store.
    func launch2(_ h: Harness, maxQueueSize: Int = 1_000) async -> (ScoreClient, GatedScoreStore) {
        let gated = GatedScoreStore(h.memoryStore)
        h.store = gated
        let c = h.client(maxQueueSize: maxQueueSize)
        #expect(await gated.gate.waitUntilEntered())
        return (c, gated)
    }

    func stored(_ s: InMemoryScoreStore) -> String? {
        (try? s.load().identity).flatMap { String(decoding: $0, as: UTF8.self) }
    }

    @Test func SC129_constructorReturnsWhileTheFirstReadIsHeld() async {
        let h = Harness()
        await launch1(h) { c in
            c.pv()
            c.pv()
        }
        let mem = h.memoryStore
        let written = mem.writtenBytes.count
        // A constructor that read on the caller's thread would never get past this line.
        let (c, gated) = await launch2(h)
        c.grantAllConsent()
        c.pv()
        #expect(gated.gate.entered == 1)
        #expect(mem.writtenBytes.count == written)
        #expect(h.tx.records.isEmpty)
        gated.gate.open()
        await h.settle()
        #expect(c.inspect().queue.depth == 3)
        #expect(gated.gate.entered == 1)
        await h.flush(c)
        #expect(h.tx.batches == [[E(1), E(2), E(3)]])
    }

    @Test func SC130_trackBeforeTheLoad() async {
        let h = Harness()
        await launch1(h, maxQueueSize: 4) { c in
            c.identify(userId: "u-1")
            c.pv()
            c.pv()
        }
        // E1 identify, E2 and E3 poll votes are stored, with A1 and u-1.
        let (c, gated) = await launch2(h, maxQueueSize: 4)
        c.grantAllConsent()
        c.pv()
        c.pv()  // E4, E5: the cap (4) sheds the oldest stored event
        gated.gate.open()
        await h.settle()
        let snap = c.inspect()
        #expect(snap.queue.depth == 4)
        #expect(snap.queue.shed == 1)
        #expect(snap.identity.anonymousId == A(1))
        #expect(snap.identity.userId == "u-1")
        await h.flush(c)
        #expect(h.tx.batches == [[E(2), E(3), E(4), E(5)]])
        let texts = h.tx.eventRequests[0].envelopeTexts
        #expect(texts[2] == pvEnvelope(4, anon: 1, session: 2, userId: "u-1"))
        #expect(texts[3] == pvEnvelope(5, anon: 1, session: 2, userId: "u-1"))
        #expect(!h.tx.bodies.joined().contains(ScoreClient.anonymousIdBeforeLoad))
    }

    @Test func SC131_criticalTierOverStoredAndNew() async {
        let h = Harness()
        await launch1(h, maxQueueSize: 2) { c in
            c.critical("c_one")
            c.critical("c_two")
        }
        let (c, gated) = await launch2(h, maxQueueSize: 2)
        c.grantAllConsent()
        c.critical("c_three")
        c.pv()  // best effort into a queue full of critical events: shed
        gated.gate.open()
        await h.settle()
        let snap = c.inspect()
        #expect(snap.queue.criticalLost == 1)
        #expect(snap.queue.shed == 1)
        #expect(snap.queue.critical == 2)
        await h.flush(c)
        #expect(h.tx.eventRequests.flatMap(\.names) == ["c_two", "c_three", "delivery_failed"])
        let notice = h.tx.eventRequests[0].events[2]
        #expect(notice["props"]?["originalEventId"]?.stringValue == E(1))
        #expect(notice["props"]?["reason"]?.stringValue == "queue_full")
        #expect(notice["anonymousId"]?.stringValue == A(1))
    }

    @Test func SC132_flushBeforeTheLoadWaitsForIt() async {
        let h = Harness()
        await launch1(h) { c in
            c.pv()
            c.pv()
        }
        let (c, gated) = await launch2(h)
        c.grantAllConsent()
        c.pv()
        let done = TimeLog()
        let flush = Task { [clock = h.clock] in
            let r: Result<Void, Error>
            do {
                try await c.flush()
                r = .success(())
            } catch { r = .failure(error) }
            done.add(clock.nowMs())
            return r
        }
        c.onNetworkAvailable()  // a second flush asked for meanwhile joins
        #expect(done.all.isEmpty)
        #expect(h.tx.records.isEmpty)
        gated.gate.open()
        await h.settle()
        let result = await bounded(flush, "the flush")
        #expect((try? result?.get()) != nil)
        #expect(h.tx.batches == [[E(1), E(2), E(3)]])
        await h.flush(c)
        #expect(h.tx.batches == [[E(1), E(2), E(3)]])
        #expect(c.inspect().queue.depth == 0)
    }

    @Test func SC133_inspectBeforeTheLoadWaitsForIt() async {
        let h = Harness()
        await launch1(h) { c in
            c.identify(userId: "u-1")
            c.pv()
        }
        let (c, gated) = await launch2(h)
        c.grantAllConsent()
        c.pv()
        let returned = Locked(false)
        let inspecting = Task.detached { () -> InspectSnapshot in
            let snap = c.inspect()
            returned.withLock { $0 = true }
            return snap
        }
        // It waits at the held read: nothing is shown yet.
        for _ in 0..<50 { await Task.yield() }
        #expect(!returned.value)
        gated.gate.open()
        guard let s = await bounded(inspecting, "inspect()") else { return }
        #expect(s.queue.depth == 3)
        #expect(s.identity.anonymousId == A(1))
        #expect(s.identity.userId == "u-1")
    }

    @Test func SC134_consentWithdrawnBeforeTheLoad() async {
        let h = Harness()
        await launch1(h) { c in
            c.pv()
            c.ad()
            c.pv()
        }
        let (c, gated) = await launch2(h)
        c.grantAllConsent()
        c.setConsent(analytics: true, personalization: true, advertising: false)
        c.ad()  // dropped by consent
        c.grantAllConsent()
        c.ad()  // E4: granted again, recorded
        gated.gate.open()
        await h.settle()
        #expect(c.inspect().queue.depth == 3)
        #expect(c.inspect().consent.droppedByConsent == 1)
        await h.flush(c)
        #expect(h.tx.batches == [[E(1), E(3), E(4)]])
        // The stored ad impression's removal is in the log: a relaunch does not bring it back.
        let h3 = Harness(store: gated.inner)
        let c3 = h3.client(granted: true)
        #expect(c3.inspect().queue.depth == 0)
    }

    @Test func SC135_identifyBeforeTheLoad() async {
        let h = Harness()
        await launch1(h) { c in c.identify(userId: "u-1") }
        let (c, gated) = await launch2(h)
        c.grantAllConsent()
        c.setToken("tok")
        c.pv()  // E2: before identify, the stored userId
        c.identify(userId: "u-2")  // E3
        c.pv()  // E4
        gated.gate.open()
        await h.settle()
        let snap = c.inspect()
        #expect(snap.identity.anonymousId == A(1))
        #expect(snap.identity.userId == "u-2")
        #expect(snap.identity.link.state == "pending")
        await h.flush(c)
        #expect(h.tx.batches == [[E(1), E(2), E(3), E(4)]])
        let events = h.tx.eventRequests[0].events
        #expect(events.map { $0["anonymousId"]?.stringValue } == [A(1), A(1), A(1), A(1)])
        #expect(events.map { $0["userId"]?.stringValue } == ["u-1", "u-1", "u-2", "u-2"])
        let link = try! #require(h.tx.linkRequests.first)
        #expect(link.json["anonymousId"]?.stringValue == A(1))
        #expect(link.json["userId"]?.stringValue == "u-2")
        #expect(stored(gated.inner)?.contains(#""userId":"u-2""#) == true)
    }

    @Test func SC136_resetBeforeTheLoad() async {
        let h = Harness()
        await launch1(h) { c in c.identify(userId: "u-1") }
        let (c, gated) = await launch2(h)
        c.grantAllConsent()
        c.pv()  // E2: the stored identity
        c.reset()  // mints A2 (for the events before it, had the store held no identity), then A3
        c.pv()  // E3: the new one (A3)
        // Nothing was written meanwhile: the stored identity is still launch 1's.
        #expect(stored(gated.inner)?.contains(A(1)) == true)
        gated.gate.open()
        await h.settle()
        let snap = c.inspect()
        #expect(snap.identity.anonymousId == A(3))
        #expect(snap.identity.userId == nil)
        await h.flush(c)
        let events = h.tx.eventRequests.flatMap(\.events)
        #expect(events.map { $0["eventId"]?.stringValue } == [E(1), E(2), E(3)])
        #expect(events.map { $0["anonymousId"]?.stringValue } == [A(1), A(1), A(3)])
        #expect(events.map { $0["userId"]?.stringValue } == ["u-1", "u-1", nil])
        let identity = try! #require(stored(gated.inner))
        #expect(identity.contains(A(3)) && !identity.contains(ScoreClient.anonymousIdBeforeLoad))
        #expect(!gated.inner.writtenBytes.contains { String(decoding: $0, as: UTF8.self).contains(ScoreClient.anonymousIdBeforeLoad) })
    }

    @Test func SC137_backgroundFlushBeforeTheLoad() async {
        let h = Harness()
        await launch1(h) { c in c.pv() }
        let (c, gated) = await launch2(h)
        c.grantAllConsent()
        let lc = LC(clock: h.clock, state: .background)
        c.bindToAppLifecycle(source: lc, autoFlushEverySeconds: nil)
        h.tx.answerAll(.delayed(1_000, 200))
        c.onBackground()
        #expect(lc.begins.count == 1)
        #expect(lc.ends.isEmpty)
        gated.gate.open()
        await h.settle()
        #expect(lc.ends.isEmpty)  // the flush runs, its task is still held
        await h.advance(1_000)
        #expect(h.tx.batches == [[E(1)]])
        #expect(lc.ends == [T0 + 1_000])
    }

    @Test func SC138_idleAutoFlushArmsNoTimer() async {
        let h = Harness()
        let c = h.client(granted: true)
        await h.settle()
        c.startAutoFlush(everySeconds: 10)
        #expect(h.clock.pendingTimerCount == 0)  // nothing queued: nothing armed
        await h.at(T0 + 3 * SEC)
        c.pv()
        #expect(h.clock.pendingTimerDueTimes == [T0 + 10 * SEC])  // the period's next tick
        await h.at(T0 + 10 * SEC)
        #expect(h.tx.batches == [[E(1)]])
        #expect(h.clock.pendingTimerCount == 0)  // the flush emptied the queue
        await h.advance(60 * SEC)
        #expect(h.tx.records.count == 1)
        await h.at(T0 + 75 * SEC)
        c.pv()
        #expect(h.clock.pendingTimerDueTimes == [T0 + 80 * SEC])
        // A failed flush keeps the events, and the timer.
        h.tx.answerAll(.status(503))
        await h.at(T0 + 80 * SEC)
        #expect(h.clock.pendingTimerDueTimes == [T0 + 90 * SEC])
        h.tx.answerAll(.status(200))
        await h.at(T0 + 90 * SEC)
        #expect(h.tx.batches.last == [E(2)])
        #expect(h.clock.pendingTimerCount == 0)
    }

    @Test func SC145_periodicFlushTurnedOnBeforeTheLoad() async {
        // Nothing stored: no timer after the load.
        let h = Harness()
        await launch1(h) { _ in }
        let (c, gated) = await launch2(h)
        c.grantAllConsent()
        c.startAutoFlush(everySeconds: 10)
        gated.gate.open()
        await h.settle()
        #expect(h.clock.pendingTimerCount == 0)
        // A stored event: the timer is armed by the load, for the period's next tick.
        let h2 = Harness()
        await launch1(h2) { c in c.pv() }
        let (c2, gated2) = await launch2(h2)
        c2.grantAllConsent()
        c2.startAutoFlush(everySeconds: 10)
        gated2.gate.open()
        await h2.settle()
        #expect(h2.clock.pendingTimerDueTimes == [T0 + 10 * SEC])
        await h2.at(T0 + 10 * SEC)
        #expect(h2.tx.batches == [[E(1)]])
        #expect(h2.clock.pendingTimerCount == 0)
    }
}
