import Testing
import TrackerCore
import TrackerCoreTestKit

@testable import PaywallTracker

/// Sending and storing side by side (paywall spec 10.2, issue 36; before, issue 14 item 4 had a
/// snapshot wait for its write): a snapshot goes to delivery when it is recorded and its write
/// starts at the same moment; writes are coalesced (latest state wins, one write running); never
/// an older seq after a newer one of the same presentation. Storages here hold, slow down, fail or
/// hang their writes on the manual clock.
///
/// Scenario ids: P60–P66; issue 29 (item 1): P72–P74; issue 34: P76; issue 36: P77, P78. Issue 36 changed what P60,
/// P61, P62, P65, P66, P72, P73 and P76 expect of when a snapshot is sent (at once, no longer
/// after its write).
@Suite struct PersistBeforeSendTests {
    /// What a sink saw at each receipt: whether the storage already held that snapshot (its seq or
    /// a newer one, the state a relaunch after a kill at that instant would find), and whether a
    /// presentation ever got an older seq after a newer one.
    final class ReceiptCheck: Sendable {
        let backing: InMemoryKeyValueStorage
        let unstored = Locked<[String]>([])
        let reordered = Locked<[String]>([])
        let highest = Locked<[String: Int]>([:])
        /// The stored text at each receipt (the disk of a process killed at that moment).
        let disks = Locked<[(snapshot: PaywallSnapshot, stored: String?)]>([])

        init(_ backing: InMemoryKeyValueStorage) { self.backing = backing }

        func check(_ s: PaywallSnapshot) {
            let raw = backing.snapshot[STORAGE_KEY]
            disks.withLock { $0.append((s, raw)) }
            let entry = raw.flatMap { try? WireJSON.decode($0) }?[s.presentationId]
            let storedSeq = entry?["seq"]?.intValue ?? 0
            if storedSeq < s.seq { unstored.withLock { $0.append("\(s.presentationId) seq \(s.seq) (stored \(storedSeq))") } }
            highest.withLock { h in
                if let top = h[s.presentationId], top > s.seq {
                    reordered.withLock { $0.append("\(s.presentationId) seq \(s.seq) after \(top)") }
                }
                h[s.presentationId] = max(h[s.presentationId] ?? 0, s.seq)
            }
        }
    }

    /// A manual clock at T0 and a fault-injecting storage over it, with the faults `configure` sets.
    private func faultyStorage(_ configure: (inout FaultInjectingStorage.Faults) -> Void) -> (ManualClock, FaultInjectingStorage) {
        let clock = ManualClock(startMs: T0)
        var faults = FaultInjectingStorage.Faults()
        configure(&faults)
        return (clock, FaultInjectingStorage(clock: clock, faults: faults))
    }

    /// A fixture over `storage` whose sink checks each snapshot against the disk at receipt
    /// (``ReceiptCheck``), then gives `answer` for the call's number.
    private func checkedFixture(
        _ storage: FaultInjectingStorage, _ clock: ManualClock,
        answer: @escaping @Sendable (Int) -> SinkBehavior
    ) -> (PaywallFixture, ReceiptCheck) {
        let receipts = ReceiptCheck(storage.backing)
        let h = PaywallFixture(
            storage: storage, clock: clock,
            behavior: { n, s in
                receipts.check(s)
                return answer(n)
            })
        return (h, receipts)
    }

    /// A held write holds no send: the snapshot reaches the sink at once, unstored; the write
    /// lands later, and the settled entry is then removed. (Before issue 36 it waited for its write.)
    @Test func P60_aSnapshotIsSentWhenRecordedWhileItsWriteIsHeld() async throws {
        let (clock, storage) = faultyStorage { $0.holdWrites = true }
        let (h, receipts) = checkedFixture(storage, clock) { _ in .result(.accepted) }
        let p = try #require(h.tracker.start(INFO) as? PaywallPresentation)
        await h.advance(60_000)
        #expect(h.received.map(\.seq) == [1], "held behind its write")
        #expect(h.sink.callTimes.value == [T0])
        #expect(storage.stored(STORAGE_KEY) == nil)
        #expect(receipts.unstored.value.count == 1, "sent before its write landed: \(receipts.unstored.value)")
        storage.releaseWrites()
        await h.settle()
        storage.releaseWrites()
        await h.settle()
        // Settled: the entry is removed.
        #expect(storage.stored(STORAGE_KEY) == nil)
        p.end(.dismissed)
        await h.settle()
        #expect(h.received.map(\.seq) == [1, 2])
        storage.releaseWrites()
        await h.settle()
        #expect(h.log.all.isEmpty, "\(h.log.codes)")
    }

    @Test func P61_writesAreCoalescedAndTheLatestSnapshotWins() async throws {
        let (clock, storage) = faultyStorage { $0.holdWrites = true }
        let (h, receipts) = checkedFixture(storage, clock) { _ in .hold }
        let p = try #require(h.tracker.start(INFO) as? PaywallPresentation)
        await h.settle()  // its write is running, held by the storage
        p.shown()
        p.end(.dismissed)
        var others: [PaywallPresentation] = []
        for _ in 0..<5 { others.append(try #require(h.tracker.start(INFO) as? PaywallPresentation)) }
        await h.settle()
        #expect(storage.writeCount == 1)
        storage.releaseWrites()
        await h.settle()
        // One write for seq 1, one coalesced write for the seven changes made while it ran.
        #expect(storage.writeCount == 2)
        let stored = try #require(storedMap(storage.backing))
        #expect(stored.keys == [p.id] + others.map(\.id))
        #expect(stored[p.id]?["seq"]?.intValue == 3)
        // Every snapshot went to delivery when recorded (issue 36): seq 1 is in flight (the sink
        // holds it); seq 2 and seq 3, recorded meanwhile, replace each other (latest wins in
        // delivery), so seq 2 is never sent and seq 3 follows seq 1.
        #expect(h.received.filter { $0.presentationId == p.id }.map(\.seq) == [1])
        h.sink.recorder.respond(always: .accepted)
        h.sink.recorder.releaseHeld(with: .result(.accepted))
        await h.settle()
        #expect(h.received.filter { $0.presentationId == p.id }.map(\.seq) == [1, 3])
        #expect(h.received.count == 7)
        #expect(Set(h.received.map(\.presentationId)) == Set([p.id] + others.map(\.id)))
        #expect(receipts.reordered.value.isEmpty, "\(receipts.reordered.value)")
        await h.tracker.idle()
        #expect(storage.stored(STORAGE_KEY) == nil, "every settled entry is removed")
    }

    @Test func P62_slowWritesNeitherHoldNorReorderSnapshots() async throws {
        let (clock, storage) = faultyStorage { $0.writeDelayMs = 120 }
        // Every third call answers transient, so retries mix with new snapshots.
        let (h, receipts) = checkedFixture(storage, clock) { n in n % 3 == 0 ? .result(.transient) : .result(.accepted) }
        var live: [PaywallPresentation] = []
        var changes = 0
        for i in 0..<40 {
            switch i % 4 {
            case 0, 1: live.append(try #require(h.tracker.start(INFO) as? PaywallPresentation))
            case 2: live.first?.shown()
            default: live.removeFirst().end(.dismissed)
            }
            changes += 1
            await h.advance(30)
        }
        for p in live { p.end(.cancelled) }
        changes += live.count
        await h.advance(120_000)
        await h.tracker.idle()
        // Sent at once, so many before their write landed (issue 36): the writes only record them.
        #expect(!receipts.unstored.value.isEmpty, "every send waited for its write")
        #expect(receipts.reordered.value.isEmpty, "\(receipts.reordered.value.prefix(5))")
        // Every presentation's end arrived and nothing is left stored.
        let last = Dictionary(h.received.map { ($0.presentationId, $0) }, uniquingKeysWith: { $0.seq >= $1.seq ? $0 : $1 })
        #expect(last.count == 20)
        #expect(last.values.allSatisfy { $0.status == .ended })
        #expect(storage.stored(STORAGE_KEY) == nil)
        #expect(storage.writeCount < changes, "\(storage.writeCount) writes for \(changes) changes: not coalesced")
        #expect(h.log.all.isEmpty, "\(h.log.codes)")
    }

    /// Decision: a failed write is reported (`storage`, with the error text) and the snapshot is
    /// sent anyway, as the onboarding tracker does. Paywall never resumes a presentation after a
    /// relaunch (stored entries are resent unchanged, no later seq is built), so sending an
    /// unstored snapshot can never give a seq two bodies; holding it back would only lose it
    /// without storing it. The entry stays in the pending map, and it is written again at its
    /// presentation's next transient answer (issue 29 item 1, P74), or by the next write that
    /// comes first. The cost: killed before any later write lands, the next launch resends the
    /// older stored seq (or nothing), which the server ignores as not newer (spec 5.1 step 6).
    @Test func P63_aFailedWriteIsReportedTheSnapshotSentAndTheNextWriteRecordsIt() async throws {
        let (clock, storage) = faultyStorage { $0.failNextWrites = 1 }
        // The first answer is held until the first write failed: sent beside its write (issue 36),
        // an answer that came first would join that write, the one that fails, and the test would
        // depend on the order of two background steps.
        let h = PaywallFixture(storage: storage, clock: clock, behavior: { n, _ in n == 1 ? .hold : .result(.transient) })
        let p = try #require(h.tracker.start(INFO) as? PaywallPresentation)
        await h.settle()
        #expect(h.received.map(\.seq) == [1])
        #expect(h.log.codes == ["storage"])
        #expect(h.log.all.first?.message.contains("injected write failure") == true)
        h.sink.recorder.releaseHeld(with: .result(.transient))
        await h.settle()
        // Written again at the transient answer.
        #expect(storedMap(storage.backing)?[p.id]?["seq"]?.intValue == 1)
        p.shown()
        await h.settle()
        #expect(storedMap(storage.backing)?[p.id]?["seq"]?.intValue == 2)
        #expect(h.log.codes == ["storage"])
    }

    @Test func P64_aStorageThatAlwaysFailsStillDeliversEverySnapshot() async throws {
        let (clock, storage) = faultyStorage { $0.writesAlwaysFail = true }
        let h = PaywallFixture(storage: storage, clock: clock)
        let p = try #require(h.tracker.start(INFO) as? PaywallPresentation)
        await h.settle()
        p.shown()
        await h.settle()
        p.end(.dismissed)
        await h.advance(10_000)
        #expect(h.received.map(\.seq) == [1, 2, 3])
        #expect(!h.log.with("storage").isEmpty)
        #expect(Set(h.log.codes) == ["storage"])
        #expect(storage.stored(STORAGE_KEY) == nil)
    }

    /// A write that never completes holds no snapshot: each goes out when it is recorded (before
    /// issue 36, each waited `persistTimeoutMs` for its write, and for good with no bound).
    @Test func P65_aHungWriteHoldsNoSnapshot() async throws {
        let (clock, storage) = faultyStorage { $0.writesNeverFinish = true }
        let h = PaywallFixture(storage: storage, clock: clock)
        let p = try #require(h.tracker.start(INFO) as? PaywallPresentation)
        await h.settle()
        #expect(h.received.map(\.seq) == [1])
        p.end(.dismissed)
        await h.settle()
        #expect(h.received.map(\.seq) == [1, 2])
        #expect(h.sink.callTimes.value == [T0, T0])
        await h.advance(600_000)
        #expect(h.received.map(\.seq) == [1, 2])
        #expect(clock.pendingTimerCount == 0)
        #expect(h.log.all.isEmpty, "\(h.log.codes)")
    }

    /// A kill loses a snapshot only when neither its request reached the server nor its write
    /// landed (issue 36): each ended snapshot reaches the sink when it is recorded, before its
    /// write lands; the write still lands, so a kill once it did (the sink having taken nothing)
    /// leaves it for the next launch, which resends it unchanged.
    @Test func P66_theWriteRunsBesideTheSendAndAKillAfterItLeavesTheSnapshot() async throws {
        let (clock, storage) = faultyStorage { $0.writeDelayMs = 50 }
        // Ended snapshots answer transient (the sink never takes them); the others are accepted.
        let (h, receipts) = checkedFixture(storage, clock) { _ in .result(.accepted) }
        h.sink.recorder.respond { _, s in s.status == .ended ? .result(.transient) : .result(.accepted) }
        var ended: [PaywallPresentation] = []
        for _ in 0..<3 {
            let p = try #require(h.tracker.start(INFO) as? PaywallPresentation)
            await h.settle()
            p.shown()
            await h.settle()
            p.end(.purchased(PaywallTransactionInfo(originalTransactionIdentifier: "2000000123", productId: "pro")))
            await h.settle()
            ended.append(p)
        }
        // At once, before any write landed.
        let ends = h.received.filter { $0.status == .ended }
        #expect(Set(ends.map(\.presentationId)) == Set(ended.map(\.id)))
        #expect(h.sink.callTimes.value.allSatisfy { $0 == T0 })
        #expect(storage.stored(STORAGE_KEY) == nil)
        await h.advance(500)
        let map = try #require(storedMap(storage.backing))
        #expect(ended.allSatisfy { map[$0.id]?["seq"]?.intValue == 3 })
        // Relaunch on the disk a kill now leaves.
        let disk = try #require(storage.stored(STORAGE_KEY))
        let next = PaywallFixture(storage: InMemoryKeyValueStorage([STORAGE_KEY: disk])) { _, _ in .result(.accepted) }
        await next.settle()
        #expect(next.received.count == 3)
        let sentEnds = Dictionary(ends.map { ($0.presentationId, $0.wireBytes()) }, uniquingKeysWith: { a, _ in a })
        #expect(
            next.received.allSatisfy { sentEnds[$0.presentationId] == $0.wireBytes() }, "the relaunch did not resend the ends unchanged")
        #expect(receipts.reordered.value.isEmpty, "\(receipts.reordered.value)")
    }

    // MARK: Issue 29 item 1: no presentation lost behind a pending write (P72-P74)

    /// The differential run's case: a presentation started, shown and ended just before
    /// `dispose()`, while its writes were still under way. Each snapshot went to delivery when it
    /// was recorded (issue 36); the one queued behind the attempt in flight gets its one attempt
    /// (no retry after dispose), so the presentation's latest snapshot reaches the sink and stays
    /// stored for the next launch.
    @Test func P72_aSnapshotStagedBeforeDisposeStillReachesTheSink() async throws {
        let (clock, storage) = faultyStorage { $0.writeDelayMs = 50 }
        let (h, receipts) = checkedFixture(storage, clock) { _ in .result(.transient) }
        let p = try #require(h.tracker.start(INFO) as? PaywallPresentation)
        p.shown()
        p.end(.dismissed)
        h.tracker.dispose()  // before any of its writes landed
        await h.advance(300_000)
        let seqs = h.received.filter { $0.presentationId == p.id }.map(\.seq)
        #expect(seqs.last == 3, "the presentation's latest snapshot never reached the sink: \(seqs)")
        // Each at most once (no retry after dispose), never an older one after a newer one.
        #expect(seqs == Array(Set(seqs)).sorted(), "\(seqs)")
        #expect(receipts.reordered.value.isEmpty, "\(receipts.reordered.value)")
        #expect(storedMap(storage.backing)?[p.id]?["seq"]?.intValue == 3)
        #expect(clock.pendingTimerCount == 0)
        #expect(h.log.all.isEmpty, "\(h.log.codes)")
    }

    /// Slow writes (300 ms each) never hold a send: each snapshot reaches the sink when it is
    /// recorded, not when its (coalesced) write lands (before issue 36: seq 1 at 300 ms, seq 3 at
    /// 600 ms).
    @Test func P73_eachSnapshotIsSentWhenRecordedNotAtItsWrite() async throws {
        let (clock, storage) = faultyStorage { $0.writeDelayMs = 300 }
        let (h, receipts) = checkedFixture(storage, clock) { _ in .result(.accepted) }
        let p = try #require(h.tracker.start(INFO) as? PaywallPresentation)
        await h.advance(100)
        p.shown()  // its write waits behind seq 1's (lands at 300)
        await h.advance(100)
        p.end(.dismissed)  // joins seq 2's write
        await h.settle()
        #expect(h.received.map(\.seq) == [1, 2, 3])
        #expect(h.sink.callTimes.value == [T0, T0 + 100, T0 + 200])
        #expect(receipts.reordered.value.isEmpty, "\(receipts.reordered.value)")
        await h.advance(1000)  // the writes land; every entry settled, so the key is removed
        #expect(storage.stored(STORAGE_KEY) == nil)
        #expect(h.log.all.isEmpty, "\(h.log.codes)")
    }

    /// A write that failed is not left for a later change: it is written again at each transient
    /// answer of its presentation until a write lands, so a kill then leaves the snapshot the
    /// sink did not take for the next launch, which resends it unchanged.
    @Test func P74_aFailedWriteIsRetriedSoAKillLeavesTheSnapshotStored() async throws {
        let (clock, storage) = faultyStorage { $0.failNextWrites = 2 }
        // The first answer is held until the first write failed (as in P63).
        let h = PaywallFixture(storage: storage, clock: clock, behavior: { n, _ in n == 1 ? .hold : .result(.transient) })
        let p = try #require(h.tracker.start(INFO) as? PaywallPresentation)
        await h.settle()
        #expect(h.log.codes == ["storage"])
        h.sink.recorder.releaseHeld(with: .result(.transient))  // written again: fails again
        await h.settle()
        #expect(h.received.map(\.seq) == [1], "sent although its write failed")
        await h.advance(1000)  // the first retry of the send, and of the write
        #expect(h.received.map(\.seq) == [1, 1])
        // Two failed writes in a row: one run of failures, reported once (issue 36 item 2).
        #expect(h.log.codes == ["storage"])
        let disk = try #require(storage.stored(STORAGE_KEY), "a kill now loses the presentation: nothing is stored")
        #expect(storedMap(storage.backing)?[p.id]?["seq"]?.intValue == 1)
        // The next launch, on the disk a kill at this moment leaves.
        let next = PaywallFixture(storage: InMemoryKeyValueStorage([STORAGE_KEY: disk])) { _, _ in .result(.accepted) }
        await next.settle()
        #expect(next.received.map { $0.wireBytes() } == [h.received[0].wireBytes()])
        // Stored once: no more writes while the sink keeps answering transient.
        let writes = storage.writeCount
        await h.advance(10_000)
        #expect(storage.writeCount == writes)
    }

    // MARK: Issue 34: a planted bug the suite missed (P76)

    /// A slow (not hung) write: seq 1's write runs until 1.5 s and seq 2, recorded at 1.1 s, waits
    /// behind it. Issue 34's case was a hand-over counted twice, which let the background send
    /// stop waiting before seq 2 was handed over; since issue 36 nothing is handed over late: seq
    /// 2 reaches the sink when recorded, and the background task still waits for the writes.
    @Test func P76_aSnapshotRecordedBehindASlowWriteIsSentAtOnceAndTheBackgroundTaskWaitsForTheWrites() async throws {
        let (clock, storage) = faultyStorage { $0.writeDelayMs = 1500 }
        let h = PaywallFixture(storage: storage, clock: clock)
        let system = FakeLifecycleSystem()
        h.tracker.bindToAppLifecycle(monitor: AppLifecycleMonitor(system: system, hop: HeldMainHop()), backgroundBudgetSeconds: 10)
        let p = try #require(h.tracker.start(INFO) as? PaywallPresentation)
        await h.advance(1100)
        p.shown()
        await h.settle()
        #expect(h.received.map(\.seq) == [1, 2])
        #expect(h.sink.callTimes.value == [T0, T0 + 1100])
        system.post(.didEnterBackground)
        await h.settle()
        #expect(system.runningTasks == 1)
        // seq 2's write (started when seq 1's landed, at 1.5 s) lands at 3 s; the removal after it.
        await h.advance(1800)
        #expect(system.runningTasks == 1, "the task ended before the writes landed")
        await h.advance(10_000)
        #expect(system.runningTasks == 0)
        #expect(storage.stored(STORAGE_KEY) == nil)
        #expect(h.log.all.isEmpty, "\(h.log.codes)")
    }

    // MARK: Issue 36 item 2 (P77)

    /// Writes that always fail: one `storage` diagnostic for the whole run of failures, however
    /// many retries (the presentation's transient answers write again each time); a write that
    /// lands ends the run, so the next failure is reported again. (Before: one per failed write,
    /// 19 for one presentation in the differential run.)
    @Test func P77_aRunOfFailedWritesIsReportedOnce() async throws {
        let (clock, storage) = faultyStorage { $0.writesAlwaysFail = true }
        let h = PaywallFixture(storage: storage, clock: clock, behavior: { _, _ in .result(.transient) })
        let p = try #require(h.tracker.start(INFO) as? PaywallPresentation)
        await h.advance(30_000)  // retries at 1, 2, 4, 8 s...: each writes again, and fails
        #expect(storage.writeCount >= 4, "\(storage.writeCount) writes")
        #expect(h.log.codes == ["storage"], "\(h.log.codes)")
        // A write lands: the run of failures is over.
        storage.update { $0.writesAlwaysFail = false }
        p.shown()
        await h.settle()
        #expect(storedMap(storage.backing)?[p.id]?["seq"]?.intValue == 2)
        #expect(h.log.codes == ["storage"])
        // Failing again: reported again, once.
        storage.update { $0.writesAlwaysFail = true }
        p.end(.dismissed)
        await h.advance(30_000)
        #expect(h.log.codes == ["storage", "storage"], "\(h.log.codes)")
    }

    // MARK: Issue 36 item 3 (P78)

    /// A device updated with unsent presentations stored by an earlier version keeps them: the
    /// value the earlier version wrote (spec 10.1, its JSON tree encoded compact) is read, resent
    /// byte for byte, and kept byte for byte by the new outbox's writes, which splice each
    /// snapshot's wire bytes instead of re-encoding a JSON tree.
    @Test func P78_aValueStoredByAnEarlierVersionIsKeptAndResentUnchanged() async throws {
        let body = expectedBody(
            id: FIXED_ID, seq: 2, shownAt: "2026-01-10T08:00:00.000Z", sentAt: "2026-01-10T08:00:00.000Z")
        let entry = #""\#(FIXED_ID)":{"seq":2,"body":\#(body)}"#
        let old = "{" + entry + "}"
        let backing = InMemoryKeyValueStorage([STORAGE_KEY: old])
        // Launch 1 of the new version: the sink takes nothing; a new presentation is written beside it.
        let h = PaywallFixture(storage: backing, behavior: { _, _ in .result(.transient) })
        await h.settle()
        #expect(h.bodies == [body], "the stored snapshot was not resent unchanged")
        let p = try #require(h.tracker.start(INFO) as? PaywallPresentation)
        await h.settle()
        await h.tracker.idle()
        let stored = try #require(backing.snapshot[STORAGE_KEY])
        #expect(stored.hasPrefix("{" + entry + ","), "the earlier entry was not kept byte for byte: \(stored.prefix(120))")
        // The whole value is what the earlier version would have written for the same map.
        #expect(stored == WireJSON.encodeString(try WireJSON.decode(stored)))
        #expect(storedMap(backing)?.keys == [FIXED_ID, p.id])
        h.tracker.dispose()
        // Launch 2: both are resent unchanged and removed once accepted.
        let next = PaywallFixture(storage: backing) { _, _ in .result(.accepted) }
        await next.settle()
        await next.tracker.idle()
        #expect(next.bodies.first == body)
        #expect(Set(next.received.map(\.presentationId)) == [FIXED_ID, p.id])
        #expect(backing.snapshot[STORAGE_KEY] == nil)
        #expect(h.log.all.isEmpty && next.log.all.isEmpty, "\(h.log.codes) \(next.log.codes)")
    }
}
