import Foundation
import Testing
import TrackerCore
import TrackerCoreTestKit

@testable import ScoreTracker

/// The lazy launch (issue 35 item 3): a launch over many sealed segments reads the oldest ones
/// (the head) and the newest, leaves the sealed ones between unloaded (the tail, known by their
/// seals' summaries) and splices them in a background step.
///
///   SC313 — the plan, decided without I/O from the summaries: the head holds the events the
///           first batches need (adds less those removed in the same segment), the tail the
///           later sealed segments; every segment is read (fallback) for a segment without a
///           summary, consent withdrawn before the load, a critical or notice add in the tail,
///           a tail event past retention, a queue that could reach its cap, nothing to defer.
///   SC314 — through the client over many segments: only the head's and the newest segment's
///           events are read before the first request (counted by the store, and the first
///           request seen before the tail is read), which holds the oldest events; every event
///           is then sent once, in order.
///   SC315 — a removal record in a tail segment of an event of the head: the event is never
///           sent again (seen sent twice by a launch that did not apply the tail's removals).
///   SC316 — events recorded and a flush selected while the tail is unloaded: the tail is
///           spliced at its place (FIFO: the tail's events go before the newest segment's and
///           before those recorded in this run); consent withdrawn meanwhile removes the tail's
///           events requiring it; `inspect()` then waits for the splice (SC323; a load that `inspect()` runs
///           itself leaves the tail unloaded too, and answers from its count).
///   SC317 — each fallback rule through the client, beside a launch that leaves the tail
///           unloaded (a `SQI1` seal, a seal cut off by a kill
///           between a roll and its seal, a critical event in the tail, a `delivery_failed`
///           notice in the tail, consent withdrawn before
///           the load, an event past retention, a cap the queue could reach): every segment is
///           read and every event is sent once, as before.
///   SC318 — a tail seal damaged in its adds (its summary intact): the splice reads that
///           segment's frames; nothing lost or duplicated.
///   SC319 — the queue reaches its cap (counting the tail) while the tail is unloaded: the cap
///           is applied at the splice, the oldest best-effort events shed, as a full load would.
///   SC320 — rules found true only once the head and the newest segment are read make the launch
///           read every segment again before the merge: head events past retention (the tail's
///           not), and a cap the newest segment's events would reach (the sealed ones alone not).
@Suite struct LazyLaunchTests {
    typealias L = LaunchSealTests

    static func store(_ dir: String, head: Int = 50, beforeSplice: (@Sendable () async -> Void)? = nil) -> FileScoreStore {
        FileScoreStore(directory: dir, sync: false, segmentBytes: L.segmentBytes, launchHeadEvents: head, beforeSplice: beforeSplice)
    }

    static func summary(adds: Int, critical: Int = 0, notices: Int = 0, oldest: Int64 = 6_000, removedHere: Int = 0)
        -> SegmentSeal.Summary
    {
        var m = SegmentSeal.Summary()
        m.adds = adds
        m.critical = critical
        m.notices = notices
        m.oldestMs = oldest
        m.newestMs = oldest + 10
        m.removedHere = removedHere
        return m
    }

    @Test func SC313_thePlanIsDecidedFromTheSummaries() {
        let inputs = LaunchTailPlan.Inputs(nowMs: 10_000, retentionMs: 5_000, maxQueueSize: 10_000, headEvents: 50)
        func plan(_ ms: [SegmentSeal.Summary?], _ i: LaunchTailPlan.Inputs = inputs) -> Result<LaunchTailPlan, LaunchTailPlan.Fallback> {
            LaunchTailPlan.plan(sealed: ms.enumerated().map { (segment: $0.offset, summary: $0.element) }, i)
        }
        let s = Self.summary(adds: 40)
        #expect(plan([s, s, s, s, s]) == .success(LaunchTailPlan(head: [0, 1], tail: [2, 3, 4], tailAdds: 120)))
        // Adds removed in their own segment do not count for the head.
        let spent = Self.summary(adds: 40, removedHere: 35)
        #expect(plan([spent, s, s, s]) == .success(LaunchTailPlan(head: [0, 1, 2], tail: [3], tailAdds: 40)))
        #expect(plan([s, s]) == .failure(.nothingToDefer))
        #expect(plan([s, nil, s, s]) == .failure(.noSummary(segment: 1)))
        #expect(plan([s, s, s, nil]) == .failure(.noSummary(segment: 3)))
        var withdrawn = inputs
        withdrawn.withdrawnBeforeLoad = ConsentCategory.analytics.bit
        #expect(plan([s, s, s], withdrawn) == .failure(.consentWithdrawn))
        #expect(plan([s, s, Self.summary(adds: 40, critical: 1)]) == .failure(.critical(segment: 2)))
        // A critical event in the head is read at launch: no fallback.
        #expect(plan([Self.summary(adds: 40, critical: 3), s, s]) == .success(LaunchTailPlan(head: [0, 1], tail: [2], tailAdds: 40)))
        #expect(plan([s, s, s, Self.summary(adds: 40, notices: 1)]) == .failure(.notices(segment: 3)))
        #expect(plan([s, s, Self.summary(adds: 40, oldest: 4_999)]) == .failure(.retention(segment: 2)))
        #expect(plan([s, s, Self.summary(adds: 40, oldest: 5_000)]) == .success(LaunchTailPlan(head: [0, 1], tail: [2], tailAdds: 40)))
        var small = inputs
        small.maxQueueSize = 1_119
        #expect(plan([s, s, s], small) == .failure(.cap))
        small.maxQueueSize = 1_120
        #expect(plan([s, s, s], small) == .success(LaunchTailPlan(head: [0, 1], tail: [2], tailAdds: 40)))
        small.recorded = 1
        #expect(plan([s, s, s], small) == .failure(.cap))
    }

    /// A flush with the harness holding outside work (its steps run as the test's own call).
    static func flushHeld(_ h: Harness, _ c: ScoreClient) async {
        let t = await h.startFlush(c)
        _ = await bounded(t, "flush()")
        await h.settle()
    }

    /// Waits (boundedly, yielding to the clock's executor) until `h` saw an events request, and
    /// keeps the batches seen then.
    static func awaitFirstRequest(_ h: Locked<Harness?>, _ seen: Locked<[[String]]?>) async {
        guard let harness = h.withLock({ $0 }) else { return }
        var waited = 0
        while harness.tx.records.isEmpty && waited < 10_000 {
            await Task.yield()
            waited += 1
        }
        seen.withLock { $0 = harness.tx.batches }
    }

    /// A relaunch over `dir` whose flush is asked for before the load; the batches seen when the
    /// tail began to be read, and everything sent.
    static func relaunchFlushingFirst(_ dir: String, head: Int = 50, maxQueueSize: Int = 10_000) async -> (
        store: FileScoreStore, atSplice: [[String]]?, sent: [String], h: Harness
    ) {
        let ref = Locked<Harness?>(nil)
        let seen = Locked<[[String]]?>(nil)
        let store = Self.store(dir, head: head) { await Self.awaitFirstRequest(ref, seen) }
        let h = Harness(store: store, holdsOutsideWork: true)
        ref.withLock { $0 = h }
        let c = h.client(maxQueueSize: maxQueueSize, granted: true)
        let t = await h.startFlush(c)
        _ = await bounded(t, "flush()")
        await h.settle()
        return (store, seen.withLock { $0 }, h.tx.batches.flatMap { $0 }, h)
    }

    @Test func SC314_onlyTheHeadIsReadBeforeTheFirstRequest() async throws {
        let dir = L.tempDir("sc314")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let queued = try await L.chain(dir, events: 300)
        let segments = SegmentedQueueLog.listSegments(dir)
        try #require(segments.count >= 6)
        let (store, atSplice, sent, _) = await Self.relaunchFlushingFirst(dir)
        let read = store.segments.launchRead
        #expect(read.fromSeals == Array(segments.prefix(2)))
        #expect(read.deferred == Array(segments.dropLast().dropFirst(2)))
        #expect(read.followed == [segments.last!])
        // The first request went before the tail was read, with the oldest events.
        let first = try #require(atSplice?.first)
        #expect(!first.isEmpty && first == Array(queued.prefix(first.count)))
        #expect(sent == queued)
    }

    @Test func SC315_aTailRemovalOfAHeadEventIsNeverSentAgain() async throws {
        let dir = L.tempDir("sc315")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let queued = try await L.chain(dir, events: 200)
        // Run 2 (killed before deleting anything): events 0-19 of the head sent, their removal
        // written to the segment that is the newest then; then 200 more events roll past it, so
        // the removal ends in a sealed segment of the tail.
        let log = SegmentedQueueLog(directory: dir, sync: false, segmentBytes: L.segmentBytes)
        _ = try log.open()
        let removalSegment = try log.submit([QueueRecord.remove(Array(queued.prefix(20)))]).locations[0].generation
        let h2 = Harness(store: L.store(dir))
        for _ in 0..<200 { _ = h2.ids.newEventId(nowMs: 0) }
        let c2 = h2.client(maxQueueSize: 10_000, granted: true)
        _ = c2.inspect()
        var more: [String] = []
        for i in 0..<200 {
            c2.pv()
            if i % 10 == 9 { await h2.settle() }
        }
        try await LaunchReadyTests.syncAndAwaitSealed(dir, h2)
        more = try queuedIdsOnDisk(dir).suffix(200)
        let segments = SegmentedQueueLog.listSegments(dir)
        #expect(L.sealed(dir).contains(removalSegment))
        let (store, _, sent, _) = await Self.relaunchFlushingFirst(dir)
        // The removal's segment was left unloaded: its removals were applied to the head.
        #expect(store.segments.launchRead.deferred.contains(removalSegment))
        #expect(store.segments.launchRead.fromSeals == Array(segments.prefix(2)))
        #expect(sent == Array(queued.dropFirst(20)) + more)
        #expect(Set(sent).isDisjoint(with: queued.prefix(20)))
    }

    @Test func SC316_theTailIsSplicedAtItsPlace() async throws {
        let dir = L.tempDir("sc316")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let queued = try await L.chain(dir, events: 300)
        let segments = SegmentedQueueLog.listSegments(dir)
        // While the tail is unloaded: a flush is selected (asked for before the load), an event
        // is recorded, and consent to analytics is withdrawn then granted again; `inspect()`
        // waits for the splice.
        let ref = Locked<ScoreClient?>(nil)
        let during = Locked<(depthAtInspect: Int, batchesBefore: Int)?>(nil)
        let hRef = Locked<Harness?>(nil)
        let store = Self.store(dir) {
            await Self.awaitFirstRequest(hRef, Locked(nil))
            guard let c = ref.withLock({ $0 }), let h = hRef.withLock({ $0 }) else { return }
            c.pv()
            during.withLock { $0 = (0, h.tx.batches.count) }
        }
        let h = Harness(store: store, holdsOutsideWork: true)
        hRef.withLock { $0 = h }
        for _ in 0..<300 { _ = h.ids.newEventId(nowMs: 0) }
        let c = h.client(maxQueueSize: 10_000, granted: true)
        ref.withLock { $0 = c }
        c.pv()  // recorded before the load: E301
        let t = await h.startFlush(c)
        _ = await bounded(t, "flush()")
        await h.settle()
        #expect(store.segments.launchRead.deferred == Array(segments.dropLast().dropFirst(2)))
        let firstFlush = h.tx.batches.flatMap { $0 }
        // The stored events in order (the tail at its place), then the one recorded before
        // the load; the one recorded during the splice's wait was not selected by this flush.
        #expect(firstFlush == queued + [E(301)])
        #expect((during.withLock { $0 }?.batchesBefore ?? 0) >= 1)
        #expect(c.inspect().queue.depth == 1)
        await Self.flushHeld(h, c)
        #expect(h.tx.batches.flatMap { $0 } == queued + [E(301), E(302)])

        // Consent withdrawn while the tail is unloaded: its events leave at the splice.
        let dir2 = L.tempDir("sc316b")
        defer { try? FileManager.default.removeItem(atPath: dir2) }
        _ = try await L.chain(dir2, events: 300)
        let ref2 = Locked<ScoreClient?>(nil)
        let store2 = Self.store(dir2) {
            ref2.withLock { $0 }?.setConsent(.none)
        }
        // A load `inspect()` runs itself leaves the tail unloaded too, and answers from its count.
        let inlineStore = Self.store(dir2)
        let hi = Harness(store: inlineStore, holdsOutsideWork: true)
        let ci = hi.client(maxQueueSize: 10_000, granted: true)
        #expect(ci.inspect().queue.depth == 300)
        #expect(!inlineStore.segments.launchRead.deferred.isEmpty)
        await hi.settle()
        #expect(ci.inspect().queue.depth == 300)
        let h2 = Harness(store: store2, holdsOutsideWork: true)
        let c2 = h2.client(maxQueueSize: 10_000, granted: true)
        ref2.withLock { $0 = c2 }
        await h2.settle()
        #expect(!store2.segments.launchRead.deferred.isEmpty)
        #expect(c2.inspect().queue.depth == 0)
        c2.grantAllConsent()
        await Self.flushHeld(h2, c2)
        #expect(h2.tx.batches.isEmpty)
    }

    @Test func SC317_eachFallbackRuleReadsEverySegment() async throws {
        // `lazy`: no rule applies (the tail is left unloaded), for comparison.
        enum Case: CaseIterable { case lazy, sqi1, cutSeal, criticalInTail, noticeInTail, withdrawn, retention, cap }
        for k in Case.allCases {
            let dir = L.tempDir("sc317")
            defer { try? FileManager.default.removeItem(atPath: dir) }
            var queued = try await L.chain(dir, events: 300)
            let segments = SegmentedQueueLog.listSegments(dir)
            let log = SegmentedQueueLog(directory: dir, sync: false)
            var startMs = T0
            var cap = 10_000
            switch k {
            case .lazy:
                break
            case .sqi1, .cutSeal:
                let path = log.path(segments[3])
                let seal = try #require(SegmentSeal.read(path: path))
                var bytes = try Array(Data(contentsOf: URL(fileURLWithPath: path)))
                bytes.removeSubrange(seal.end...)
                if k == .sqi1 { bytes += AppendLog.frame([seal.payload(legacy: true)]) }
                try Data(bytes).write(to: URL(fileURLWithPath: path))
            case .criticalInTail:
                // A critical event in a later segment: sent first.
                let h = Harness(store: L.store(dir))
                for _ in 0..<300 { _ = h.ids.newEventId(nowMs: 0) }
                let c = h.client(maxQueueSize: 10_000, granted: true)
                c.critical("c1")
                for i in 0..<60 {
                    c.pv()
                    if i % 10 == 9 { await h.settle() }
                }
                try await LaunchReadyTests.syncAndAwaitSealed(dir, h)
                let all = try queuedIdsOnDisk(dir)
                queued = [E(301)] + all.filter { $0 != E(301) }
            case .noticeInTail:
                // A `delivery_failed` notice (a copy of an event's record with the notice flag
                // and an id of its own) in a later segment, 60 events rolling past it.
                let nlog = SegmentedQueueLog(directory: dir, sync: false, segmentBytes: L.segmentBytes)
                _ = try nlog.open()
                let seal = try #require(SegmentSeal.read(path: log.path(segments[1])))
                guard case .add(let offset, _)? = seal.frames.first else { throw CancellationError() }
                var record = try #require(try nlog.read(at: ScoreRecordLocation(generation: segments[1], offset: offset)))
                record[1] |= 2
                let text = String(decoding: record[3...], as: UTF8.self)
                let idRange = try #require(text.range(of: #""eventId":""#))
                let oldId = String(text[idRange.upperBound...].prefix(36))
                record = Array(record[..<3]) + Array(text.replacingOccurrences(of: oldId, with: E(999)).utf8)
                _ = try nlog.submit([record])
                let h = Harness(store: L.store(dir))
                for _ in 0..<300 { _ = h.ids.newEventId(nowMs: 0) }
                let c = h.client(maxQueueSize: 10_000, granted: true)
                for i in 0..<60 {
                    c.pv()
                    if i % 10 == 9 { await h.settle() }
                }
                try await LaunchReadyTests.syncAndAwaitSealed(dir, h)
                queued = try queuedIdsOnDisk(dir)
                try #require(queued.contains(E(999)) && queued.count == 361)
                let plan = LaunchTailPlan.plan(
                    sealed: SegmentedQueueLog.listSegments(dir).dropLast().map { ($0, SegmentSeal.readSummary(path: log.path($0))) },
                    LaunchTailPlan.Inputs(nowMs: T0, retentionMs: 72 * 3_600_000, maxQueueSize: 10_000, headEvents: 50))
                if case .failure(.notices) = plan {} else { Issue.record("the plan leaves the notice's segment unloaded: \(plan)") }
            case .withdrawn:
                break
            case .retention:
                // The oldest events are past the 72 h retention, the newest not yet.
                startMs = T0 + 72 * 3_600_000 + 1
            case .cap:
                cap = 1_200
            }
            let store = Self.store(dir)
            let h = Harness(store: store, startMs: startMs, holdsOutsideWork: true)
            let c = h.client(maxQueueSize: cap, granted: true)
            // Withdrawn before the load (a step the harness holds until it settles).
            if k == .withdrawn { c.setConsent(.none) }
            await h.settle()
            let depth = c.inspect().queue.depth
            #expect(store.segments.launchRead.deferred.isEmpty == (k != .lazy), "\(k)")
            if k == .withdrawn { c.grantAllConsent() }
            await Self.flushHeld(h, c)
            let sent = h.tx.batches.flatMap { $0 }
            switch k {
            case .withdrawn:
                #expect(depth == 0 && sent.isEmpty, "\(k)")
            case .retention:
                #expect(sent.isEmpty && depth == 0, "\(k)")
            case .noticeInTail:
                // Every event once (the notice keeps its place among the stored events).
                #expect(Set(sent) == Set(queued) && sent.count == queued.count, "\(k)")
                #expect(depth == queued.count, "\(k)")
            default:
                #expect(sent == queued, "\(k)")
                #expect(depth == queued.count, "\(k)")
            }
        }
    }

    @Test func SC318_aTailSealDamagedInItsAddsIsReadFromItsFrames() async throws {
        let dir = L.tempDir("sc318")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let queued = try await L.chain(dir, events: 300)
        let segments = SegmentedQueueLog.listSegments(dir)
        let log = SegmentedQueueLog(directory: dir, sync: false)
        let victim = segments[3]
        let path = log.path(victim)
        let seal = try #require(SegmentSeal.read(path: path))
        var bytes = try Array(Data(contentsOf: URL(fileURLWithPath: path)))
        bytes[seal.end + AppendLog.frameOverhead + 30] ^= 0x5A
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        #expect(SegmentSeal.read(path: path) == nil)
        #expect(SegmentSeal.readSummary(path: path) != nil)
        let (store, _, sent, _) = await Self.relaunchFlushingFirst(dir)
        #expect(store.segments.launchRead.deferred.contains(victim))
        #expect(sent == queued)
    }

    /// Fails every read of the lazy launch's tail segments once armed (an I/O error at the splice).
    final class UnreadableTail: FileFaultPolicy, @unchecked Sendable {
        let paths = Locked<Set<String>>([])
        func fault(_ call: FileCall, path: String, bytes: Int) -> Int32? {
            guard call == .openForReading || call == .read else { return nil }
            return paths.withLock { $0.contains(path) } ? EIO : nil
        }
    }

    /// SC321: a tail segment that cannot be read at the splice (an I/O error) is reported and kept
    /// on disk: no reclamation runs in that launch (its events are not in memory, so nothing would
    /// keep its segment), and the next launch sends its events once. Before, the splice skipped
    /// it silently and the reclamation then deleted it with its events.
    @Test func SC321_aTailSegmentThatCannotBeReadIsReportedAndKept() async throws {
        let dir = L.tempDir("sc321")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let queued = try await L.chain(dir, events: 300)
        let policy = UnreadableTail()
        let installed = FileFaults.install(policy, under: dir)
        defer { installed.remove() }
        let storeRef = Locked<FileScoreStore?>(nil)
        let store = Self.store(dir) {
            guard let store = storeRef.withLock({ $0 }) else { return }
            let log = SegmentedQueueLog(directory: dir, sync: false)
            policy.paths.withLock { $0 = Set(store.segments.launchRead.deferred.map { log.path($0) }) }
        }
        storeRef.withLock { $0 = store }
        let h = Harness(store: store, holdsOutsideWork: true)
        let c = h.client(maxQueueSize: 10_000, granted: true)
        await h.settle()
        let deferred = store.segments.launchRead.deferred
        try #require(!deferred.isEmpty)
        h.tx.answerAll(.status(200))
        for _ in 0..<6 { await Self.flushHeld(h, c) }
        await h.advance(ScoreClient.queueSyncIntervalMs + 1)
        await h.settle()
        #expect(h.diagnostics.all.contains { $0.code == "storage" && $0.message.contains("could not be read") })
        let firstRun = h.tx.batches.flatMap { $0 }
        #expect(firstRun.count < queued.count && Set(firstRun).isSubset(of: Set(queued)))
        let log = SegmentedQueueLog(directory: dir, sync: false)
        for n in deferred { #expect(FileManager.default.fileExists(atPath: log.path(n)), "segment \(n) kept") }
        // The next launch, the disk readable again: the rest is sent, once.
        installed.remove()
        let h2 = Harness(store: Self.store(dir))
        let c2 = h2.client(maxQueueSize: 10_000, granted: true)
        h2.tx.answerAll(.status(200))
        for _ in 0..<6 { await h2.flush(c2) }
        let secondRun = h2.tx.batches.flatMap { $0 }
        #expect(Set(firstRun).isDisjoint(with: Set(secondRun)))
        #expect(Set(firstRun + secondRun) == Set(queued))
    }

    @Test func SC319_theCapReachedWhileTheTailIsUnloadedIsAppliedAtTheSplice() async throws {
        let dir = L.tempDir("sc319")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let queued = try await L.chain(dir, events: 300)
        // Cap 1,300: the launch leaves the tail unloaded (300 + 1,000 of margin); 1,001 events
        // recorded while it is: the queue holds 1,301, one over its cap: the oldest is shed.
        let ref = Locked<ScoreClient?>(nil)
        let store = Self.store(dir) {
            guard let c = ref.withLock({ $0 }) else { return }
            for _ in 0..<1_001 { c.pv() }
        }
        let h = Harness(store: store, holdsOutsideWork: true)
        for _ in 0..<300 { _ = h.ids.newEventId(nowMs: 0) }
        let c = h.client(maxQueueSize: 1_300, granted: true)
        ref.withLock { $0 = c }
        await h.settle()
        #expect(!store.segments.launchRead.deferred.isEmpty)
        let q = c.inspect().queue
        #expect(q.depth == 1_300 && q.shed == 1)
        await Self.flushHeld(h, c)
        let sent = h.tx.batches.flatMap { $0 }
        #expect(sent == Array(queued.dropFirst()) + (301...1_301).map { E($0) })
    }

    @Test func SC320_rulesFoundAfterTheHeadIsReadReadEverySegment() async throws {
        // Head events past retention, the tail's not: 100 events at T0, then 200 at T0 + 71 h.
        let dir = L.tempDir("sc320")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let h = Harness(store: L.store(dir))
        let c = h.client(maxQueueSize: 10_000, granted: true)
        for i in 0..<300 {
            if i == 100 { await h.advance(71 * 3_600_000) }
            c.pv()
            if i % 10 == 9 { await h.settle() }
        }
        try await LaunchReadyTests.syncAndAwaitSealed(dir, h)
        let queued = try queuedIdsOnDisk(dir)
        #expect(queued.count == 300)
        _ = c
        // The head (120 events) holds every expired event: the plan alone sees none in the tail.
        let store = Self.store(dir, head: 120)
        let h2 = Harness(store: store, startMs: T0 + 72 * 3_600_000 + 1, holdsOutsideWork: true)
        for _ in 0..<300 { _ = h2.ids.newEventId(nowMs: 0) }
        let c2 = h2.client(maxQueueSize: 10_000, granted: true)
        await h2.settle()
        #expect(store.segments.launchRead.deferred.isEmpty)
        let q = c2.inspect().queue
        #expect(q.depth == 200 && q.expired == 100)
        await Self.flushHeld(h2, c2)
        #expect(h2.tx.batches.flatMap { $0 } == Array(queued.dropFirst(100)))

        // A cap the sealed segments' adds leave room for (with the margin), the newest's not.
        let dir3 = L.tempDir("sc320b")
        defer { try? FileManager.default.removeItem(atPath: dir3) }
        let queued3 = try await L.chain(dir3, events: 300)
        let log = SegmentedQueueLog(directory: dir3, sync: false)
        let sealedAdds = SegmentedQueueLog.listSegments(dir3).dropLast().reduce(0) { sum, n in
            sum + (SegmentSeal.readSummary(path: log.path(n))?.adds ?? 0)
        }
        try #require(sealedAdds < 300)
        let cap = sealedAdds + LaunchTailPlan.capMargin
        let store3 = Self.store(dir3, head: 50)
        let h3 = Harness(store: store3, holdsOutsideWork: true)
        let c3 = h3.client(maxQueueSize: cap, granted: true)
        await h3.settle()
        #expect(store3.segments.launchRead.deferred.isEmpty)
        #expect(c3.inspect().queue.depth == 300)
        await Self.flushHeld(h3, c3)
        #expect(h3.tx.batches.flatMap { $0 } == queued3)
    }
}
