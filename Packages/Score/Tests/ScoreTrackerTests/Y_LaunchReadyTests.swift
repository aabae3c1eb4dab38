import Foundation
import Testing
import TrackerCore
import TrackerCoreTestKit

@testable import ScoreTracker

/// "Ready" at a lazy launch (issue 35): once the head is checked, the launch counts the tail's
/// events from its seals (`TailCount`) and `inspect()` answers from that count while the tail is
/// still unloaded, so that the first `inspect()` no longer waits for the splice.
///
///   SC322 — `inspect()` called while the tail is unloaded (from the splice's hook, before the
///           splice) answers without splicing, with the queue figures the splice then gives and a
///           launch that reads every segment gives: over a plain chain; with removals of tail
///           events in a tail segment and in the newest one, and of an id no segment holds; with
///           tail events added again in the newest segment (a rewrite killed before deleting the
///           older segments), which count once.
///   SC323 — when the count cannot say what the splice will queue (consent withdrawn meanwhile,
///           or a tail seal that no longer reads), `inspect()` runs the splice itself and the
///           background step, finding it taken, does not splice again: every event is sent once.
///   SC324 — the count itself, without I/O: adds and removals in order (a removal applies to the
///           adds before it, an id removed then added again counts), the removals of the later
///           segments, the ids the launch's load queued already left out, the oldest timestamp
///           and the categories of the events counted; `nil` for a seal missing or an id added
///           twice while queued.
///   SC325 — the tail's seals taken beside the load (`TailCountJob`): on a thread of the lowest
///           priority, by the launch itself when no thread started, or before the launch asks,
///           the count is the same; a seal that does not read gives none. Through a client on the
///           system scheduler (where the thread runs), `inspect()` — whether it runs the load
///           itself or waits for the constructor's step — shows the depth a launch reading every
///           segment shows, and every event is spliced once.
///   SC329 — a job dropped is cancelled (`TailCountJob.cancel()`): a thread that starts on it
///           afterwards reads no file, and its result is none; a job already done keeps its count.
///           A quick load that chose a tail and then finds the cap could be reached (it reads
///           every segment instead) cancels the job it started: its thread reads nothing.
@Suite struct LaunchReadyTests {
    typealias L = LaunchSealTests
    typealias LZ = LazyLaunchTests

    /// What the splice's hook saw: `inspect()`'s queue figures, and whether the tail was still
    /// unloaded (and counted) once it answered.
    struct Seen: Sendable {
        var queue: InspectSnapshot.Queue
        var unloaded: Bool
        var counted: Bool
    }

    /// Relaunches over `dir` (head 50) with `during` run in the splice's hook, then `inspect()`
    /// called there; what the hook saw, the client and its harness (settled).
    static func relaunchInspectingBeforeSplice(
        _ dir: String, startMs: Int64 = T0 + 120_000, during: @escaping @Sendable (ScoreClient) -> Void = { _ in }
    ) async -> (seen: Seen?, store: FileScoreStore, c: ScoreClient, h: Harness) {
        let ref = Locked<ScoreClient?>(nil)
        let seen = Locked<Seen?>(nil)
        let store = LZ.store(dir) {
            guard let c = ref.withLock({ $0 }) else { return }
            during(c)
            let q = c.inspect().queue
            let (unloaded, counted) = c.state.withLock { s in (s.tail != nil, s.tail?.counted != nil) }
            seen.withLock { $0 = Seen(queue: q, unloaded: unloaded, counted: counted) }
        }
        let h = Harness(store: store, startMs: startMs, holdsOutsideWork: true)
        for _ in 0..<1_000 { _ = h.ids.newEventId(nowMs: 0) }
        let c = h.client(maxQueueSize: 10_000, granted: true)
        ref.withLock { $0 = c }
        await h.settle()
        return (seen.withLock { $0 }, store, c, h)
    }

    /// The queue a launch that reads every segment shows (its head, 1,000 events, holds them
    /// all), over a copy of `dir` (the launch reclaims the space of the events removed).
    static func readingEverySegment(_ dir: String) async throws -> InspectSnapshot.Queue {
        let copy = dir + "-copy"
        try FileManager.default.copyItem(atPath: dir, toPath: copy)
        defer { try? FileManager.default.removeItem(atPath: copy) }
        let store = L.store(copy)
        let h = Harness(store: store, startMs: T0 + 120_000, holdsOutsideWork: true)
        let queue = h.client(maxQueueSize: 10_000, granted: true).inspect().queue
        #expect(store.segments.launchRead.deferred.isEmpty)
        await h.settle()
        return queue
    }

    /// Waits (boundedly, settling `h`) until every segment of `dir` but the newest has a seal
    /// with a summary, and no compaction's temporary file is left.
    /// The queue log's sync (the client's timer), then ``awaitSealed(_:_:)``.
    static func syncAndAwaitSealed(_ dir: String, _ h: Harness) async throws {
        await h.advance(ScoreClient.queueSyncIntervalMs + 1)
        await h.settle()
        try await awaitSealed(dir, h)
    }

    static func awaitSealed(_ dir: String, _ h: Harness) async throws {
        let log = SegmentedQueueLog(directory: dir, sync: false)
        func done() -> Bool {
            let listing = SegmentedQueueLog.listDirectory(dir)
            return listing.temporaries.isEmpty
                && listing.segments.dropLast().allSatisfy { SegmentSeal.readSummary(path: log.path($0)) != nil }
        }
        var rounds = 0
        while !done() && rounds < 1_000 {
            await h.settle()
            await Task.yield()
            rounds += 1
        }
        try #require(done(), "every sealed segment has its summary")
    }

    /// The location of the add record of each of `ids` in the sealed segments of `dir`.
    static func locations(of ids: [String], in dir: String) -> [ScoreRecordLocation] {
        let log = SegmentedQueueLog(directory: dir, sync: false)
        var found: [String: ScoreRecordLocation] = [:]
        for n in SegmentedQueueLog.listSegments(dir) {
            guard let seal = SegmentSeal.read(path: log.path(n)) else { continue }
            for case .add(let offset, let a) in seal.frames {
                let id = CompactEventId.uuid(a.hi, a.lo).string
                if ids.contains(id) { found[id] = ScoreRecordLocation(generation: n, offset: offset) }
            }
        }
        return ids.compactMap { found[$0] }
    }

    @Test func SC322_inspectAnswersFromTheTailsCountBeforeTheSplice() async throws {
        enum Case: CaseIterable { case plain, removals, addedAgain }
        for k in Case.allCases {
            let dir = L.tempDir("sc322")
            defer { try? FileManager.default.removeItem(atPath: dir) }
            var queued = try await L.chain(dir, events: 300)
            switch k {
            case .plain:
                break
            case .removals:
                // A removal record that ends in a tail segment: ten tail events and an id no
                // segment holds; 200 more events, a minute later, roll past it.
                let log = SegmentedQueueLog(directory: dir, sync: false, segmentBytes: L.segmentBytes)
                _ = try log.open()
                _ = try log.submit([QueueRecord.remove(Array(queued[100..<110]) + [E(99_999)])])
                let h2 = Harness(store: L.store(dir))
                for _ in 0..<300 { _ = h2.ids.newEventId(nowMs: 0) }
                let c2 = h2.client(maxQueueSize: 10_000, granted: true)
                _ = c2.inspect()
                await h2.advance(60_000)
                for i in 0..<200 {
                    c2.pv()
                    if i % 10 == 9 { await h2.settle() }
                }
                // Its background work (seals, space reclamation) runs outside the harness's
                // hold: done once every segment but the newest has a summary again.
                try await Self.syncAndAwaitSealed(dir, h2)
                // Then a removal in the newest segment: ten more tail events, and every event of
                // the two oldest segments, the launch's head (the oldest events still queued are
                // then the tail's).
                let log3 = SegmentedQueueLog(directory: dir, sync: false, segmentBytes: L.segmentBytes)
                _ = try log3.open()
                let head = SegmentedQueueLog.listSegments(dir).prefix(2).flatMap { n in
                    (SegmentSeal.read(path: log3.path(n))?.frames ?? []).compactMap { f -> String? in
                        guard case .add(_, let a) = f else { return nil }
                        return CompactEventId.uuid(a.hi, a.lo).string
                    }
                }
                try #require(head.count >= 50 && Set(head).isDisjoint(with: queued[200..<210]))
                _ = try log3.submit([QueueRecord.remove(Array(queued[200..<210]) + head)])
                // (When the record did not fit, the segment it rolled past is sealed, as the
                // SDK's sync would: whether it fits depends on how the client batched its appends.)
                log3.sealPending()
                queued = try queuedIdsOnDisk(dir)
                try #require(queued.count == 480 - head.count)
            case .addedAgain:
                // Five tail events added again in the newest segment, as a rewrite killed before
                // deleting the older segments leaves them.
                let again = Array(queued[150..<155])
                let spots = Self.locations(of: again, in: dir)
                try #require(spots.count == 5)
                let log = SegmentedQueueLog(directory: dir, sync: false, segmentBytes: L.segmentBytes)
                _ = try log.open()
                let records = try spots.map { try #require(try log.read(at: $0)) }
                let at = try log.submit(records).locations
                log.sealPending()
                try #require(at.allSatisfy { $0.generation == SegmentedQueueLog.listSegments(dir).last })
            }
            let expected = Set(queued).count
            let everySegment = try await Self.readingEverySegment(dir)
            let (seen, store, c, _) = await Self.relaunchInspectingBeforeSplice(dir)
            #expect(!store.segments.launchRead.deferred.isEmpty, "\(k)")
            let during = try #require(seen, "\(k)")
            #expect(during.unloaded && during.counted, "\(k): answered before the splice, from the count")
            #expect(c.state.withLock { $0.tail == nil }, "\(k): spliced since")
            let after = c.inspect().queue
            #expect(during.queue == after, "\(k)")
            #expect(after == everySegment, "\(k)")
            #expect(after.depth == expected, "\(k)")
            // The chain's events, two minutes old, are the oldest (the tail's, in `removals`).
            #expect(after.oldestAgeSeconds == 120, "\(k)")
        }
    }

    @Test func SC323_anInspectThatCannotUseTheCountSplicesItselfOnce() async throws {
        // Consent withdrawn while the tail is unloaded: its events leave at the splice, which the
        // `inspect()` runs.
        let dir = L.tempDir("sc323")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        _ = try await L.chain(dir, events: 300)
        let (seen, store, c, h) = await Self.relaunchInspectingBeforeSplice(dir) { $0.setConsent(.none) }
        #expect(!store.segments.launchRead.deferred.isEmpty)
        let during = try #require(seen)
        #expect(!during.unloaded && during.queue.depth == 0)
        #expect(c.inspect().queue.depth == 0)
        c.grantAllConsent()
        c.pv()
        await LZ.flushHeld(h, c)
        #expect(h.tx.batches.flatMap { $0 }.count == 1)

        // A tail seal damaged in its adds (its summary intact): not counted; the `inspect()`
        // splices, reading that segment's frames; every event is sent once, in order.
        let dir2 = L.tempDir("sc323b")
        defer { try? FileManager.default.removeItem(atPath: dir2) }
        let queued = try await L.chain(dir2, events: 300)
        let log = SegmentedQueueLog(directory: dir2, sync: false)
        let victim = SegmentedQueueLog.listSegments(dir2)[3]
        let path = log.path(victim)
        let seal = try #require(SegmentSeal.read(path: path))
        var bytes = try Array(Data(contentsOf: URL(fileURLWithPath: path)))
        bytes[seal.end + AppendLog.frameOverhead + 30] ^= 0x5A
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        try #require(SegmentSeal.read(path: path) == nil && SegmentSeal.readSummary(path: path) != nil)
        let (seen2, store2, c2, h2) = await Self.relaunchInspectingBeforeSplice(dir2)
        #expect(store2.segments.launchRead.deferred.contains(victim))
        let during2 = try #require(seen2)
        #expect(!during2.unloaded && during2.queue.depth == 300)
        await LZ.flushHeld(h2, c2)
        #expect(h2.tx.batches.flatMap { $0 } == queued)
    }

    @Test func SC324_theTailIsCountedFromItsSealsAlone() {
        func id(_ n: Int) -> (UInt64, UInt64) {
            guard case .uuid(let hi, let lo) = CompactEventId(E(n)) else { return (0, 0) }
            return (hi, lo)
        }
        func add(_ n: Int, ms: Int64, requires: UInt8 = 1) -> SegmentSeal.Frame {
            let (hi, lo) = id(n)
            return .add(
                offset: n * 100, SegmentSeal.Add(hi: hi, lo: lo, timestampMs: ms, flags: 0, requires: requires, name: 0, anonymousId: 0))
        }
        func seal(_ frames: [SegmentSeal.Frame]) -> SegmentSeal {
            var s = SegmentSeal()
            s.frames = frames
            return s
        }
        func tail(adds: Int, later: [Int] = [], loaded: [Int] = []) -> LazyTail {
            var t = LazyTail(segments: [5, 6], adds: adds, storedAnonymousId: A(1), laterRemovals: later.map(id))
            for n in loaded { _ = t.loaded.insert(id(n).0, id(n).1) }
            return t
        }
        let one = seal([add(1, ms: 500), add(2, ms: 100), add(3, ms: 300), .empty(offset: 350), add(4, ms: 400, requires: 2)])
        // E2 removed in the next segment, E3 by a later one (and an id no segment holds), E4
        // queued by the load already; E1 removed then added again counts once.
        let two = seal([.remove(offset: 0, ids: [id(2), id(1)]), add(1, ms: 700), add(5, ms: 200, requires: 4)])
        let counted = TailCount.of(tail(adds: 7, later: [3, 42], loaded: [4]), seals: [one, two])
        #expect(counted == TailCount(live: 2, oldestMs: 200, requires: 5))
        // Without the later removals and the load's ids.
        #expect(TailCount.of(tail(adds: 7), seals: [one, two]) == TailCount(live: 4, oldestMs: 200, requires: 7))
        // A removal applies to the adds before it only.
        let removedFirst = seal([.remove(offset: 0, ids: [id(9)]), add(9, ms: 50)])
        var single = tail(adds: 1)
        single.segments = [5]
        #expect(TailCount.of(single, seals: [removedFirst]) == TailCount(live: 1, oldestMs: 50, requires: 1))
        // Not counted: a seal that did not read, an id added twice while queued.
        #expect(TailCount.of(tail(adds: 7), seals: [one, nil]) == nil)
        #expect(TailCount.of(tail(adds: 7), seals: [one, seal([add(3, ms: 1)])]) == nil)
        #expect(TailCount.of(tail(adds: 7), seals: [one]) == nil)
    }

    @Test func SC325_theTailsSealsAreTakenBesideTheLoadAlike() async throws {
        let dir = L.tempDir("sc325")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let queued = try await L.chain(dir, events: 300)
        let log = SegmentedQueueLog(directory: dir, sync: false, segmentBytes: L.segmentBytes)
        let segments = SegmentedQueueLog.listSegments(dir)
        let tailSegments = Array(segments.dropLast().dropFirst(2))
        let adds = tailSegments.compactMap { SegmentSeal.readSummary(path: log.path($0))?.adds }.reduce(0, +)
        try #require(tailSegments.count >= 2 && adds > 0)
        let tail = LazyTail(segments: tailSegments, adds: adds, storedAnonymousId: A(1), laterRemovals: [])
        let expected = try #require(TailCount.read(tail) { log.path($0) })
        #expect(expected.live == adds)
        let path: @Sendable (Int) -> String = { log.path($0) }
        let onThread = TailCountJob(segments: tailSegments, adds: adds, path: path) { IdleThread.run(named: "test.count", $0) }
        let taken = TailCountJob(segments: tailSegments, adds: adds, path: path) { _ in }
        let before = TailCountJob(segments: tailSegments, adds: adds, path: path) { $0() }
        for job in [onThread, taken, before] {
            var counter = try #require(job.result())
            #expect(counter.finish(tail) == expected)
        }
        let missing = TailCountJob(segments: tailSegments + [9_999], adds: adds, path: path) { IdleThread.run(named: "test.count", $0) }
        #expect(missing.result() == nil)

        // Through clients on the system scheduler: `inspect()` at once (it may run the load
        // itself), and after the constructor's step had time to start.
        for atOnce in [true, false] {
            let copy = dir + "-\(atOnce)"
            try FileManager.default.copyItem(atPath: dir, toPath: copy)
            defer { try? FileManager.default.removeItem(atPath: copy) }
            let h = Harness()
            let store = LZ.store(copy)
            var config = ScoreConfiguration(publishableKey: "pk", siteId: "site", endpoint: "https://score.test")
            config.store = store
            config.transport = h.tx
            config.clock = h.clock
            config.maxQueueSize = 10_000
            let c = ScoreClient(configuration: config)
            if !atOnce {
                let started: Bool = await boundedWait(what: "the launch's step", onTimeout: { false }) { done in
                    DispatchQueue.global().async {
                        c.loadDone.wait()
                        done.resume(returning: true)
                    }
                }
                #expect(started)
            }
            #expect(c.inspect().queue.depth == queued.count, "\(atOnce)")
            #expect(store.segments.launchRead.deferred == tailSegments, "\(atOnce)")
            // The splice (on the sync thread), then whatever it queued there, done.
            let spliced: Bool = await boundedWait(what: "the splice", onTimeout: { false }) { done in
                DispatchQueue.global().async {
                    c.tailDone.wait()
                    ScoreClient.syncThread.run { done.resume(returning: true) }
                }
            }
            #expect(spliced)
            #expect(c.state.withLock { $0.tail == nil && $0.queue.map(\.id.string) == queued }, "\(atOnce)")
        }
    }

    @Test func SC329_aDroppedJobIsCancelledAndItsThreadReadsNothing() async throws {
        let dir = L.tempDir("sc329")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        _ = try await L.chain(dir, events: 300)
        let log = SegmentedQueueLog(directory: dir, sync: false, segmentBytes: L.segmentBytes)
        let segments = SegmentedQueueLog.listSegments(dir)
        let tailSegments = Array(segments.dropLast().dropFirst(2))
        let sealedAdds = segments.dropLast().compactMap { SegmentSeal.readSummary(path: log.path($0))?.adds }.reduce(0, +)
        let path: @Sendable (Int) -> String = { log.path($0) }
        // Healthy: it only counts the calls (the files a count's thread opens).
        let files = FaultyFileSystem(directory: dir)
        defer { files.uninstall() }
        func opens() -> Int { files.calls(.openForReading) }

        // The job's closure held until after `cancel()`, then run: nothing read, no result.
        let held = Locked<[@Sendable () -> Void]>([])
        let cancelled = TailCountJob(segments: tailSegments, adds: 1, path: path) { run in held.withLock { $0.append(run) } }
        cancelled.cancel()
        for run in held.withLock({ $0 }) { run() }
        #expect(opens() == 0)
        #expect(cancelled.result() == nil)
        // Done before: cancelling changes nothing.
        let done = TailCountJob(segments: tailSegments, adds: 1, path: path) { $0() }
        #expect(opens() == tailSegments.count)
        done.cancel()
        #expect(done.result() != nil)

        // A quick load that chose a tail, then found that the cap could be reached (the newest
        // segment's events are not in the sealed segments' adds the plan counted): it reads
        // every segment, and the job it started reads nothing once its thread runs.
        held.withLock { $0 = [] }
        let store = LZ.store(dir)
        let inputs = LaunchTailPlan.Inputs(
            nowMs: T0 + 120_000, retentionMs: 30 * 86_400_000, maxQueueSize: sealedAdds + LaunchTailPlan.capMargin,
            headEvents: 50)
        let loaded = ScoreClient.loadQuickly(store, fallbackAnonymousId: { A(1) }, lazy: inputs) { run in held.withLock { $0.append(run) } }
        let started = held.withLock { $0 }
        try #require(started.count == 1, "the plan chose a tail and started its job")
        #expect(loaded != nil && loaded?.tail == nil, "every segment read")
        #expect(store.segments.launchRead.deferred.isEmpty)
        let before = opens()
        started[0]()
        #expect(opens() == before)
    }
}
