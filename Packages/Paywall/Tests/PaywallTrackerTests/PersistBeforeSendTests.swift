import Testing
import TrackerCore
import TrackerCoreTestKit

@testable import PaywallTracker

/// Persist-before-send (issue 14 item 4): a snapshot reaches the sink only after the write that
/// records it has finished; writes are coalesced (latest state wins, one write running); never an
/// older seq after a newer one of the same presentation. Storages here hold, slow down, fail or
/// hang their writes on the manual clock.
///
/// New scenario ids: P60–P66; issue 29 (item 1): P72–P74; issue 34: P76.
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
        _ storage: FaultInjectingStorage, _ clock: ManualClock, persistTimeoutMs: Int64 = 1000,
        answer: @escaping @Sendable (Int) -> SinkBehavior
    ) -> (PaywallFixture, ReceiptCheck) {
        let receipts = ReceiptCheck(storage.backing)
        let h = PaywallFixture(
            storage: storage, clock: clock,
            behavior: { n, s in
                receipts.check(s)
                return answer(n)
            }, persistTimeoutMs: persistTimeoutMs)
        return (h, receipts)
    }

    @Test func P60_aSnapshotIsSentOnlyAfterItsWriteLanded() async throws {
        let (clock, storage) = faultyStorage { $0.holdWrites = true }
        let (h, receipts) = checkedFixture(storage, clock, persistTimeoutMs: 0) { _ in .result(.accepted) }
        let p = try #require(h.tracker.start(INFO) as? PaywallPresentation)
        await h.advance(60_000)
        #expect(h.received.isEmpty, "sent before its write landed")
        #expect(storage.stored(STORAGE_KEY) == nil)
        storage.releaseWrites()
        await h.settle()
        #expect(h.received.map(\.seq) == [1])
        #expect(receipts.unstored.value.isEmpty, "\(receipts.unstored.value)")
        // Settled: the entry is removed.
        await h.settle()
        #expect(storage.stored(STORAGE_KEY) == nil)
        p.end(.dismissed)
        await h.settle()
        #expect(h.received.map(\.seq) == [1, 2])
        #expect(receipts.unstored.value.isEmpty, "\(receipts.unstored.value)")
        #expect(h.log.all.isEmpty, "\(h.log.codes)")
    }

    @Test func P61_writesAreCoalescedAndTheLatestSnapshotWins() async throws {
        let (clock, storage) = faultyStorage { $0.holdWrites = true }
        let (h, receipts) = checkedFixture(storage, clock, persistTimeoutMs: 0) { _ in .hold }
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
        // Every staged snapshot is handed over at its write (issue 29 item 1): seq 1 goes out once
        // its write landed, though seq 3 was built meanwhile; seq 2 and seq 3, handed over at the
        // coalesced write while seq 1 is in flight, replace each other (latest wins in delivery),
        // so seq 2 is never sent and seq 3 follows seq 1.
        #expect(h.received.filter { $0.presentationId == p.id }.map(\.seq) == [1])
        h.sink.recorder.respond(always: .accepted)
        h.sink.recorder.releaseHeld(with: .result(.accepted))
        await h.settle()
        #expect(h.received.filter { $0.presentationId == p.id }.map(\.seq) == [1, 3])
        #expect(h.received.count == 7)
        #expect(Set(h.received.map(\.presentationId)) == Set([p.id] + others.map(\.id)))
        #expect(receipts.unstored.value.isEmpty, "\(receipts.unstored.value)")
        #expect(receipts.reordered.value.isEmpty, "\(receipts.reordered.value)")
        await h.tracker.idle()
        #expect(storage.stored(STORAGE_KEY) == nil, "every settled entry is removed")
    }

    @Test func P62_slowWritesNeverLetAnUnstoredOrOlderSnapshotOut() async throws {
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
        #expect(receipts.unstored.value.isEmpty, "sent before stored: \(receipts.unstored.value.prefix(5))")
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
        let h = PaywallFixture(storage: storage, clock: clock, behavior: { _, _ in .result(.transient) })
        let p = try #require(h.tracker.start(INFO) as? PaywallPresentation)
        await h.settle()
        #expect(h.received.map(\.seq) == [1])
        #expect(h.log.codes == ["storage"])
        #expect(h.log.all.first?.message.contains("injected write failure") == true)
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

    @Test func P65_aHungWriteSendsAfterThePersistTimeout() async throws {
        let (clock, storage) = faultyStorage { $0.writesNeverFinish = true }
        let h = PaywallFixture(storage: storage, clock: clock)
        let p = try #require(h.tracker.start(INFO) as? PaywallPresentation)
        await h.advance(999)
        #expect(h.received.isEmpty)
        await h.advance(1)
        #expect(h.received.map(\.seq) == [1])
        #expect(h.sink.callTimes.value == [T0 + 1000])
        p.end(.dismissed)
        await h.advance(999)
        #expect(h.received.map(\.seq) == [1])
        await h.advance(1)
        #expect(h.received.map(\.seq) == [1, 2])

        // With no bound, a hung write holds its snapshot back for good.
        let clock2 = ManualClock(startMs: T0)
        let hung = FaultInjectingStorage(
            clock: clock2,
            faults: {
                var f = FaultInjectingStorage.Faults()
                f.writesNeverFinish = true
                return f
            }())
        let h2 = PaywallFixture(storage: hung, clock: clock2, persistTimeoutMs: 0)
        _ = try #require(h2.tracker.start(INFO))
        await h2.advance(600_000)
        #expect(h2.received.isEmpty)
        #expect(clock2.pendingTimerCount == 0)
    }

    /// The case, on the manual clock: a process killed the moment the server receives a
    /// snapshot leaves a disk that already holds it, and the next launch resends it unchanged.
    @Test func P66_aKillAtReceiptLeavesTheSnapshotForTheNextLaunch() async throws {
        let (clock, storage) = faultyStorage { $0.writeDelayMs = 50 }
        let (h, receipts) = checkedFixture(storage, clock) { _ in .result(.accepted) }
        for _ in 0..<6 {
            let p = try #require(h.tracker.start(INFO) as? PaywallPresentation)
            await h.advance(10)
            p.shown()
            p.end(.purchased(PaywallTransactionInfo(originalTransactionIdentifier: "2000000123", productId: "pro")))
            await h.advance(10)
        }
        await h.advance(10_000)
        #expect(receipts.unstored.value.isEmpty, "\(receipts.unstored.value)")
        let ends = receipts.disks.value.filter { $0.snapshot.status == .ended }
        #expect(ends.count == 6)
        // Relaunch on the disk left by a kill at the receipt of each ended snapshot.
        for (snapshot, stored) in ends {
            let disk = InMemoryKeyValueStorage(stored.map { [STORAGE_KEY: $0] } ?? [:])
            let next = PaywallFixture(storage: disk) { _, _ in .result(.accepted) }
            await next.settle()
            let resent = next.received.filter { $0.presentationId == snapshot.presentationId }
            #expect(
                resent.map { $0.wireBytes() } == [snapshot.wireBytes()], "the relaunch did not resend \(snapshot.presentationId) unchanged")
        }
    }
    // MARK: Issue 29 item 1: no presentation lost behind a pending write (P72-P74)

    /// The differential run's case: a presentation started, shown and ended just before
    /// `dispose()`, while its writes were still under way. The reference had sent it at once; here
    /// each staged snapshot is handed to delivery once its write finished (or `persistTimeoutMs`
    /// passed), dispose or not, and gets that one attempt (no retry after dispose), so the
    /// presentation's latest snapshot reaches the sink and stays stored for the next launch.
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
        #expect(receipts.unstored.value.isEmpty, "\(receipts.unstored.value)")
        #expect(storedMap(storage.backing)?[p.id]?["seq"]?.intValue == 3)
        #expect(clock.pendingTimerCount == 0)
        #expect(h.log.all.isEmpty, "\(h.log.codes)")
    }

    /// A snapshot replaced while its write ran is still handed over when that write lands (the
    /// reference had sent it at once): the sink sees the presentation as soon as its first write
    /// stored it, not only once the write of the newest snapshot landed; the newest one follows.
    @Test func P73_aReplacedSnapshotIsSentOnceItsWriteLanded() async throws {
        let (clock, storage) = faultyStorage { $0.writeDelayMs = 300 }
        let (h, receipts) = checkedFixture(storage, clock) { _ in .result(.accepted) }
        let p = try #require(h.tracker.start(INFO) as? PaywallPresentation)
        await h.advance(100)  // seq 1's write lands at 300
        p.shown()  // seq 2: its write waits behind seq 1's
        await h.advance(100)
        p.end(.dismissed)  // seq 3 joins seq 2's write (lands at 600)
        await h.advance(100)
        #expect(h.received.map(\.seq) == [1], "seq 1 was stored at 300 ms but held back for seq 3's write")
        await h.advance(300)
        #expect(h.received.map(\.seq).last == 3)
        #expect(receipts.unstored.value.isEmpty, "\(receipts.unstored.value)")
        #expect(receipts.reordered.value.isEmpty, "\(receipts.reordered.value)")
        await h.advance(1000)  // the removal, once seq 3 settled
        #expect(storage.stored(STORAGE_KEY) == nil)
        #expect(h.log.all.isEmpty, "\(h.log.codes)")
    }

    /// A write that failed is not left for a later change: it is written again at each transient
    /// answer of its presentation until a write lands, so a kill then leaves the snapshot the
    /// sink did not take for the next launch, which resends it unchanged.
    @Test func P74_aFailedWriteIsRetriedSoAKillLeavesTheSnapshotStored() async throws {
        let (clock, storage) = faultyStorage { $0.failNextWrites = 2 }
        let h = PaywallFixture(storage: storage, clock: clock, behavior: { _, _ in .result(.transient) })
        let p = try #require(h.tracker.start(INFO) as? PaywallPresentation)
        await h.settle()
        #expect(h.received.map(\.seq) == [1], "sent although its write failed")
        await h.advance(1000)  // the first retry of the send, and of the write
        #expect(h.received.map(\.seq) == [1, 1])
        #expect(h.log.codes == ["storage", "storage"])
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

    /// A slow (not hung) write: seq 1 is handed over at the persist timeout (1 s), before its
    /// write lands (1.5 s); seq 2, staged at 1.1 s, waits behind that write. The late landing of
    /// seq 1's write must not count as a second hand-over: `handedOver()` (what the background
    /// send waits for) resolves only once seq 2 was handed over (its timeout, at 2.1 s).
    @Test func P76_aLateWriteOfAnAlreadyHandedOverSnapshotDoesNotEndTheWaitForALaterOne() async throws {
        let (clock, storage) = faultyStorage { $0.writeDelayMs = 1500 }
        let h = PaywallFixture(storage: storage, clock: clock)
        let p = try #require(h.tracker.start(INFO) as? PaywallPresentation)
        await h.advance(1000)
        #expect(h.received.map(\.seq) == [1], "seq 1 is handed over at the persist timeout")
        await h.advance(100)
        p.shown()
        let resolved = Locked(false)
        clock.spawn {
            await h.tracker.handedOver()
            resolved.withLock { $0 = true }
        }
        await h.advance(500)  // 1.6 s: seq 1's write landed, seq 2's runs until 3 s
        #expect(!resolved.value, "handedOver() resolved while seq 2 still waited for its hand-over")
        await h.advance(500)  // 2.1 s: seq 2's hand-over at its timeout
        #expect(resolved.value)
        #expect(h.received.map(\.seq) == [1, 2])
        await h.advance(2000)
        #expect(h.log.all.isEmpty, "\(h.log.codes)")
    }
}
