import Foundation
import Testing
import TrackerCore
import TrackerCoreTestKit

@testable import ScoreTracker

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

// The next-batch file (issue 19, `NextBatch.swift`): written by the idle queue writer in the
// background, read at launch so that a flush asked for before the load sends its first batch
// without waiting for the log's walk. Every case compares a relaunch with the file against one
// without it over the same stored files: the same requests, each event sent once.
//
// New scenarios:
// SC166 the file's bytes: a round trip, and any flipped byte, cut or extra byte is refused.
// SC167 a relaunch with the file sends its batch as its first request (critical events first),
//       then exactly the requests a relaunch without it sends.
// SC168 the file is not used when the log changed (a record appended, a record of the batch
//       damaged with the size and time kept, a compaction), when it is damaged, or when the
//       launch would select or merge otherwise (consent, a category withdrawn, a token
//       provider, the cap, retention, a critical event recorded before the load): the relaunch
//       sends what one without the file sends.
// SC169 the early request's answer, when it comes before the merge, waits for it: a 2xx
//       delivers its events (the next launch does not send them), a failure keeps them queued
//       and fails the flush.
// SC170 the early batch's envelopes carry the stored userId, or the one `identify` set before
//       the load; after a `reset` before the load, none.
// SC171 events recorded before the load go after the early batch, persisted before they are
//       sent; a relaunch killed while the early request was out sends the same batch again.
// SC175 a read-only directory at relaunch (the load keeps the events' bytes, no locations): the
//       early batch's events are still the loaded queue's own, each event is sent once.
// SC176 the background task of a background flush ends only once the file is written (the app
//       may be suspended as soon as it ends), also when there was nothing to send; when writing
//       fails it ends at once; the OS taking the time back ends a kept task at once.
// SC172 the file is written when the background flush fails and when nothing could be sent,
//       removed when the queue is empty, and not rewritten while nothing changes.
@Suite struct NextBatchTests {
    private func tempDir() -> String { NSTemporaryDirectory() + "score-next-\(UUID().uuidString)" }

    /// A store with `n` events queued (those at `critical` critical) after the app went to the
    /// background and its flush failed: the next-batch file is written.
    private func backgrounded(_ n: Int, critical: Set<Int> = [], userId: String? = nil) async throws -> String {
        let dir = tempDir()
        let h = Harness(store: FileScoreStore(directory: dir, sync: false))
        let c = h.client(granted: true)
        if let userId { c.identify(userId: userId) }
        for k in 0..<n { if critical.contains(k) { c.critical("c") } else { c.pv() } }
        await h.settle()
        h.tx.answerAll(.status(503))
        c.onBackground()
        await h.settle()
        #expect(FileManager.default.fileExists(atPath: dir + "/queue.next"))
        return dir
    }

    private func copy(_ dir: String, withFile: Bool = true) throws -> String {
        let to = tempDir()
        try FileManager.default.createDirectory(atPath: to, withIntermediateDirectories: true)
        for f in ["queue.log", "identity.json", "queue.next"] where withFile || f != "queue.next" {
            try copyKeepingTimes(dir + "/" + f, to + "/" + f)
        }
        return to
    }

    /// Copies a file with its modification time (a relaunch sees the same file).
    private func copyKeepingTimes(_ from: String, _ to: String) throws {
        try FileManager.default.copyItem(atPath: from, toPath: to)
        try keepTimes(of: from, on: to)
    }

    /// Gives `to` the times of `from`, its modification time `laterBySeconds` later (file times
    /// are coarse: a file written right after another may carry the same time).
    private func keepTimes(of from: String, on to: String, laterBySeconds: Int = 0) throws {
        var st = stat()
        #expect(stat(from, &st) == 0)
        #if canImport(Darwin)
            var times = [st.st_atimespec, st.st_mtimespec]
        #else
            var times = [st.st_atim, st.st_mtim]
        #endif
        times[1].tv_sec += laterBySeconds
        #expect(utimensat(AT_FDCWD, to, &times, 0) == 0)
    }

    private struct Relaunch {
        var early: Int
        var batches: [[String]]
        var sent: [String] { batches.flatMap { $0 } }
        var flushOk: Bool
        var depth: Int
    }

    /// Relaunches over `dir`: `before` runs before the load (held until the first settle), then a
    /// flush is asked for, then another one after it (everything is sent).
    private func relaunch(
        _ dir: String, maxQueueSize: Int = 1_000, startMs: Int64 = T0, consent: ConsentState = .all,
        answer: RecordingTransport.Reply = .status(200), before: (ScoreClient) -> Void = { _ in }
    ) async -> Relaunch {
        let h = Harness(store: FileScoreStore(directory: dir, sync: false), startMs: startMs, holdsOutsideWork: true)
        freshIds(h)
        let c = h.client(maxQueueSize: maxQueueSize)
        c.setConsent(consent)
        h.tx.answerAll(answer)
        before(c)
        let flushed = await h.startFlush(c)
        let first = await flushed.value
        await h.clock.withOutsideWorkReleased { await h.flush(c) }
        let early = c.state.withLock { $0.earlyFlights }
        return Relaunch(
            early: early, batches: h.tx.batches, flushOk: (try? first.get()) != nil, depth: c.inspect().queue.depth)
    }

    /// The relaunch's event ids after those of the stored events (the ids continue across launches).
    private func freshIds(_ h: Harness) {
        for _ in 0..<1_000 { _ = h.ids.newEventId(nowMs: 0) }
    }

    /// Relaunches over a copy of `dir` with the file and one without it.
    private func both(
        _ dir: String, maxQueueSize: Int = 1_000, startMs: Int64 = T0, consent: ConsentState = .all,
        before: @escaping (ScoreClient) -> Void = { _ in }
    ) async throws -> (with: Relaunch, without: Relaunch) {
        let a = try copy(dir)
        let b = try copy(dir, withFile: false)
        defer { for d in [a, b] { try? FileManager.default.removeItem(atPath: d) } }
        return (
            await relaunch(a, maxQueueSize: maxQueueSize, startMs: startMs, consent: consent, before: before),
            await relaunch(b, maxQueueSize: maxQueueSize, startMs: startMs, consent: consent, before: before)
        )
    }

    @Test func SC166_theFilesBytesRoundTripAndAnyDamageIsRefused() {
        let hint = NextBatchHint(
            log: AppendLog.Fingerprint(
                bytes: 123_456, modifiedSeconds: 1_790_000_000, modifiedNanoseconds: 987_654_321, tailChecksum: 0xDEAD_BEEF),
            queued: 250, notices: 2, oldestMs: T0 - 5_000, consentMask: 5, offsets: [0, 480, 960, 99_000])
        let bytes = hint.encode()
        #expect(bytes.count == NextBatchHint.fixedBytes + 8 * 4)
        #expect(NextBatchHint.decode(bytes) == hint)
        for i in 0..<bytes.count {
            for bit in [0, 3, 7] {
                var damaged = bytes
                damaged[i] ^= UInt8(1 << bit)
                #expect(NextBatchHint.decode(damaged) == nil, "byte \(i) bit \(bit)")
            }
        }
        for n in 0..<bytes.count { #expect(NextBatchHint.decode(Array(bytes[0..<n])) == nil, "cut at \(n)") }
        #expect(NextBatchHint.decode(bytes + [0]) == nil)
        // An offset past the log, no offset, more than a batch: refused even with a good checksum.
        for bad in [[200_000], [], Array(repeating: 0, count: ScoreClient.maxBatchEvents + 1)] {
            var h = hint
            h.offsets = bad
            h.queued = 1_000
            #expect(NextBatchHint.decode(h.encode()) == nil)
        }
    }

    @Test func SC167_aRelaunchSendsTheFilesBatchFirstThenWhatARelaunchWithoutItSends() async throws {
        let dir = try await backgrounded(250, critical: [120, 200, 249])
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let (with, without) = try await both(dir)
        #expect(with.early == 1 && without.early == 0)
        #expect(with.batches == without.batches)
        #expect(with.sent.count == 250 && Set(with.sent).count == 250)
        #expect(Array(with.batches[0].prefix(3)) == [E(121), E(201), E(250)])
        #expect(with.flushOk && with.depth == 0)
    }

    @Test func SC168_aStaleOrUnusableFileIsNotUsed() async throws {
        let dir = try await backgrounded(150, critical: [40])
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let log = dir + "/queue.log"
        let bytes = try Array(Data(contentsOf: URL(fileURLWithPath: log)))
        let offsets = AppendLog.parseWithOffsets(bytes).offsets

        // The log changed since the file: each variant in a copy of its own.
        var changed: [(String, (String) throws -> Void)] = []
        changed.append(
            (
                "a removal appended (the first event was delivered)",
                { d in
                    try Data(bytes + AppendLog.frame([QueueRecord.remove([E(1)])])).write(to: URL(fileURLWithPath: d + "/queue.log"))
                }
            ))
        changed.append(
            (
                "a record of the batch damaged, size and time kept",
                { d in
                    var damaged = bytes
                    damaged[offsets[5] + 8 + 280] ^= 0x01
                    try Data(damaged).write(to: URL(fileURLWithPath: d + "/queue.log"))
                    try keepTimes(of: log, on: d + "/queue.log")
                }
            ))
        changed.append(
            (
                "compacted (the same records, a new file written later)",
                { d in
                    try Data(bytes).write(to: URL(fileURLWithPath: d + "/queue.log"))
                    try keepTimes(of: log, on: d + "/queue.log", laterBySeconds: 1)
                }
            ))
        changed.append(
            (
                "the file damaged",
                { d in
                    guard FileManager.default.fileExists(atPath: d + "/queue.next") else { return }
                    var next = try Array(Data(contentsOf: URL(fileURLWithPath: d + "/queue.next")))
                    next[20] ^= 0x10
                    try Data(next).write(to: URL(fileURLWithPath: d + "/queue.next"))
                }
            ))
        for (name, change) in changed {
            let a = try copy(dir)
            let b = try copy(dir, withFile: false)
            defer { for d in [a, b] { try? FileManager.default.removeItem(atPath: d) } }
            try change(a)
            try change(b)
            let with = await relaunch(a)
            let without = await relaunch(b)
            #expect(with.early == 0, "\(name)")
            #expect(with.batches == without.batches, "\(name)")
            #expect(Set(with.sent).count == with.sent.count, "\(name): an event sent twice")
        }
        // The removal appended: the delivered event is not sent again.
        do {
            let a = try copy(dir)
            defer { try? FileManager.default.removeItem(atPath: a) }
            try changed[0].1(a)
            let r = await relaunch(a)
            #expect(r.sent.count == 149 && !r.sent.contains(E(1)))
        }

        // The launch would select or merge otherwise.
        let launches: [(String, Int, Int64, ConsentState, (ScoreClient) -> Void)] = [
            ("another consent", 1_000, T0, ConsentState(analytics: true, personalization: true, advertising: false), { _ in }),
            (
                "a category withdrawn before the load", 1_000, T0, .all,
                { c in
                    c.setConsent(ConsentState(analytics: true, personalization: false, advertising: true))
                    c.setConsent(.all)
                }
            ),
            ("a token provider", 1_000, T0, .all, { c in c.setTokenProvider { "tok" } }),
            ("the cap", 150, T0, .all, { _ in }),
            ("retention", 1_000, T0 + 14 * 24 * 3_600_000, .all, { _ in }),
            ("a critical event recorded before the load", 1_000, T0, .all, { c in c.critical("k") }),
        ]
        for (name, cap, startMs, consent, before) in launches {
            let (with, without) = try await both(dir, maxQueueSize: cap, startMs: startMs, consent: consent, before: before)
            #expect(with.early == 0, "\(name)")
            #expect(with.batches == without.batches, "\(name)")
            #expect(Set(with.sent).count == with.sent.count, "\(name): an event sent twice")
        }
        // And the same launch with none of those: the file is used.
        let (with, _) = try await both(dir)
        #expect(with.early == 1)
    }

    /// Holds the walk's first read of the log until `release` is signalled: the first read after
    /// the quick load opens the log for writing (the early batch is read before, read-only).
    final class HoldTheWalk: FileFaultPolicy, @unchecked Sendable {
        let lock = NSLock()
        var armed = false
        var held = false
        let blocked = DispatchSemaphore(value: 0)
        let release = DispatchSemaphore(value: 0)
        func fault(_ call: FileCall, path: String, bytes: Int) -> Int32? {
            let hold: Bool = lock.withLock {
                if call == .openForWriting && path.hasSuffix("/queue.log") { armed = true }
                guard call == .read, path.hasSuffix("/queue.log"), armed, !held else { return false }
                held = true
                return true
            }
            if hold {
                blocked.signal()
                release.wait()
            }
            return nil
        }
    }

    /// A relaunch whose early request is answered `status` while the load is held in its walk.
    private func answeredBeforeTheMerge(_ dir: String, status: Int) async -> (Relaunch, parked: Int) {
        let policy = HoldTheWalk()
        let installed = FileFaults.install(policy, under: dir)
        defer { installed.remove() }
        let h = Harness(store: FileScoreStore(directory: dir, sync: false), holdsOutsideWork: true)
        let c = h.client(granted: true)
        h.tx.answerAll(.status(status))
        // The load on a thread of its own (the constructor's step is held), held in its walk.
        let loaded = DispatchSemaphore(value: 0)
        Thread {
            _ = c.inspect()
            loaded.signal()
        }.start()
        await waitOffPool(policy.blocked)
        let flushed = await h.startFlush(c)
        // The early request went and was answered: the answer waits for the merge.
        let parked = c.state.withLock { s in s.loaded ? -1 : s.parkedAnswers.count }
        #expect(h.tx.batches.count == 1)
        policy.release.signal()
        await waitOffPool(loaded)
        let first = await h.clock.withOutsideWorkReleased { await flushed.value }
        await h.settle()
        return (
            Relaunch(
                early: c.state.withLock { $0.earlyFlights }, batches: h.tx.batches, flushOk: (try? first.get()) != nil,
                depth: c.inspect().queue.depth),
            parked
        )
    }

    @Test func SC169_anEarlyAnswerBeforeTheMergeIsHandledAfterIt() async throws {
        let dir = try await backgrounded(250)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        // A 2xx: the batch is delivered; the rest goes after the merge.
        let a = try copy(dir)
        defer { try? FileManager.default.removeItem(atPath: a) }
        let (ok, parkedOk) = await answeredBeforeTheMerge(a, status: 200)
        #expect(parkedOk == 1 && ok.early == 1 && ok.flushOk && ok.depth == 0)
        #expect(ok.sent == (1...250).map { E($0) })
        // A failure: the events stay queued and the flush fails; nothing more is sent.
        let b = try copy(dir)
        defer { try? FileManager.default.removeItem(atPath: b) }
        let (failed, parkedFailed) = await answeredBeforeTheMerge(b, status: 503)
        #expect(parkedFailed == 1 && failed.early == 1 && !failed.flushOk)
        #expect(failed.batches.count == 1 && failed.depth == 250)

        // The delivered batch's removal reached the log: a later launch does not send it again.
        let again = await relaunch(a)
        #expect(again.sent.isEmpty)
        // Nor the refused batch twice: the next launch sends all 250 once.
        try? FileManager.default.removeItem(atPath: b + "/queue.next")
        let retried = await relaunch(b)
        #expect(retried.sent.count == 250 && Set(retried.sent).count == 250)
    }

    @Test func SC170_theEarlyBatchCarriesTheUserIdTheMergeWouldGive() async throws {
        // Recorded anonymously, with a userId stored: each event carries none.
        let dir = tempDir()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        do {
            let h = Harness(store: FileScoreStore(directory: dir, sync: false))
            let c = h.client(granted: true)
            for _ in 0..<120 { c.pv() }
            await h.settle()
            h.tx.answerAll(.status(503))
            c.identify(userId: "fan-7")
            await h.settle()
            c.onBackground()
            await h.settle()
        }
        for (name, before, expected) in [
            ("stored", { (_: ScoreClient) in }, "fan-7" as String?),
            ("identify before the load", { (c: ScoreClient) in c.identify(userId: "fan-9") }, "fan-9"),
            ("reset before the load", { (c: ScoreClient) in c.reset() }, nil),
        ] {
            let a = try copy(dir)
            let b = try copy(dir, withFile: false)
            defer { for d in [a, b] { try? FileManager.default.removeItem(atPath: d) } }
            var seen: [[String?]] = []
            var early: [Int] = []
            for d in [a, b] {
                let h = Harness(store: FileScoreStore(directory: d, sync: false), holdsOutsideWork: true)
                let c = h.client(granted: true)
                before(c)
                let flushed = await h.startFlush(c)
                _ = await flushed.value
                await h.clock.withOutsideWorkReleased { await h.flush(c) }
                early.append(c.state.withLock { $0.earlyFlights })
                let first = try #require(h.tx.eventRequests.first, "\(name)")
                seen.append(first.events.map { $0["userId"]?.stringValue })
            }
            #expect(early == [1, 0], "\(name)")
            #expect(seen[0] == seen[1], "\(name)")
            #expect(seen[0].count == 100 && seen[0].allSatisfy { $0 == expected }, "\(name)")
        }
    }

    @Test func SC171_eventsRecordedBeforeTheLoadFollowPersistedAndAKilledRelaunchSendsTheBatchAgain() async throws {
        let dir = try await backgrounded(130)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let (with, without) = try await both(dir) { c in
            c.pv()
            c.pv()
        }
        #expect(with.early == 1)
        #expect(with.batches == without.batches)
        #expect(with.sent.count == 132 && Set(with.sent).count == 132)

        // Persist before send: the batch after the early one waits until the events recorded
        // before the load are written. Each append of the log looks for an event in a request
        // whose add record is not written yet.
        final class WatchAppends: FileFaultPolicy, @unchecked Sendable {
            let onAppend = Locked<(@Sendable () -> Void)?>(nil)
            func fault(_ call: FileCall, path: String, bytes: Int) -> Int32? {
                if call == .write, path.hasSuffix("/queue.log") { onAppend.withLock { $0 }?() }
                return nil
            }
        }
        let a = try copy(dir)
        defer { try? FileManager.default.removeItem(atPath: a) }
        let watch = WatchAppends()
        let installed = FileFaults.install(watch, under: a)
        defer { installed.remove() }
        let h = Harness(store: FileScoreStore(directory: a, sync: false), holdsOutsideWork: true)
        freshIds(h)
        let c = h.client(granted: true)
        let sentUnwritten = Locked(0)
        let appends = Locked(0)
        watch.onAppend.withLock {
            $0 = { [c] in
                appends.withLock { $0 += 1 }
                if c.state.withLock({ s in s.queue.contains { $0.sending && !$0.persisted } }) { sentUnwritten.withLock { $0 += 1 } }
            }
        }
        c.pv()
        let flushed = await h.startFlush(c)
        _ = await h.clock.withOutsideWorkReleased { await flushed.value }
        #expect(c.state.withLock { $0.earlyFlights } == 1)
        #expect(h.tx.batches.count == 2 && h.tx.batches[1].count == 31)
        #expect(appends.withLock { $0 } > 0 && sentUnwritten.withLock { $0 } == 0)

        // Killed while the early request was out (it never answered): the log is unchanged, so
        // the next launch starts with the same batch (delivery is at least once).
        let k = try copy(dir)
        defer { try? FileManager.default.removeItem(atPath: k) }
        let first: [String]
        do {
            let h = Harness(store: FileScoreStore(directory: k, sync: false), holdsOutsideWork: true)
            let c = h.client(granted: true)
            h.tx.answerAll(.hang)
            _ = await h.startFlush(c)
            await h.clock.withOutsideWorkReleased { await h.settle() }
            #expect(c.state.withLock { $0.earlyFlights } == 1)
            first = try #require(h.tx.batches.first)
        }
        let next = await relaunch(k)
        #expect(next.early == 1 && next.batches.first == first && next.sent.count == 130)
    }

    @Test func SC172_theFileIsWrittenInTheBackgroundAndRemovedWhenTheQueueIsEmpty() async throws {
        let dir = tempDir()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let next = dir + "/queue.next"
        let h = Harness(store: FileScoreStore(directory: dir, sync: false))
        let c = h.client(granted: true)
        h.tx.answerAll(.status(503))
        // Nothing queued: no file.
        c.onBackground()
        await h.settle()
        #expect(!FileManager.default.fileExists(atPath: next))
        // In the foreground: none either.
        c.onForeground()
        for _ in 0..<3 { c.pv() }
        await h.settle()
        #expect(!FileManager.default.fileExists(atPath: next))
        // The background flush fails: written.
        c.onBackground()
        await h.settle()
        let written = try #require(NextBatchHint.decode(Array(try Data(contentsOf: URL(fileURLWithPath: next)))))
        #expect(written.offsets.count == 3 && written.queued == 3)
        // Private to the app, as every stored file.
        #expect((try FileManager.default.attributesOfItem(atPath: next)[.posixPermissions] as? Int) == 0o600)
        // Each write renames a new file over it: a new inode (file times may be too coarse to tell).
        let inode = try FileManager.default.attributesOfItem(atPath: next)[.systemFileNumber] as? Int
        // Nothing changed: a second background does not write it again.
        c.onForeground()
        await h.settle()
        c.onBackground()
        await h.settle()
        let inodeAfter = try FileManager.default.attributesOfItem(atPath: next)[.systemFileNumber] as? Int
        #expect(inode != nil && inodeAfter == inode)
        #expect(c.state.withLock { $0.nextBatchCurrent })
        // Delivered in the background: the queue is empty, the file removed.
        c.onForeground()
        h.tx.answerAll(.status(200))
        await h.settle()
        c.onBackground()
        await h.settle()
        #expect(c.inspect().queue.depth == 0)
        #expect(!FileManager.default.fileExists(atPath: next))
    }

    @Test func SC175_aReadOnlyRelaunchAdoptsTheEarlyBatchByEventId() async throws {
        let dir = try await backgrounded(150)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        var runs: [Relaunch] = []
        for withFile in [true, false] {
            let d = try copy(dir, withFile: withFile)
            defer { try? FileManager.default.removeItem(atPath: d) }
            let fs = FaultyFileSystem(directory: d, condition: .readOnly)
            defer { fs.uninstall() }
            runs.append(await relaunch(d))
        }
        #expect(runs[0].early == 1 && runs[1].early == 0)
        #expect(runs[0].batches == runs[1].batches)
        #expect(runs[0].sent.count == 150 && Set(runs[0].sent).count == 150)
        #expect(runs[0].depth == 0)
    }

    /// A lifecycle source that notes, at each background task's end, whether the directory's
    /// next-batch file exists.
    final class WatchingSource: AppLifecycleSource, @unchecked Sendable {
        let next: String
        let lock = NSLock()
        var handler: (@Sendable (AppLifecycleEvent) -> Void)?
        var begun = 0
        var fileAtEnd: [Bool] = []
        init(next: String) { self.next = next }
        var currentState: AppLifecycleState { .foreground }
        func startObserving(_ handler: @escaping @Sendable (AppLifecycleEvent) -> Void) { lock.withLock { self.handler = handler } }
        func stopObserving() { lock.withLock { handler = nil } }
        func beginBackgroundTask() -> BackgroundTaskID {
            lock.withLock {
                begun += 1
                return BackgroundTaskID(rawValue: begun)
            }
        }
        func endBackgroundTask(_ id: BackgroundTaskID) {
            let exists = FileManager.default.fileExists(atPath: next)
            lock.withLock { fileAtEnd.append(exists) }
        }
        func emit(_ e: AppLifecycleEvent) { lock.withLock { handler }?(e) }
    }

    /// A bound client over a new file store with `events` queued, sent to the background with the
    /// collector answering 503; the source that watched its background task.
    private func backgroundWatched(events: Int) async -> (WatchingSource, ScoreClient) {
        let dir = tempDir()
        let h = Harness(store: FileScoreStore(directory: dir, sync: false))
        let c = h.client(granted: true)
        let source = WatchingSource(next: dir + "/queue.next")
        h.tx.answerAll(.status(503))
        c.bindToAppLifecycle(source: source, autoFlushEverySeconds: nil)
        for _ in 0..<events { c.pv() }
        await h.settle()
        source.emit(.background)
        await h.settle()
        try? FileManager.default.removeItem(atPath: dir)
        return (source, c)
    }

    @Test func SC176_theBackgroundTaskEndsOnceTheFileIsWritten() async throws {
        // A failed background flush: the task ends after the file is written.
        let (failed, _) = await backgroundWatched(events: 5)
        #expect(failed.begun == 1 && failed.fileAtEnd == [true], "\(failed.fileAtEnd)")
        // Nothing to send: the task is kept until the file is written (here: removed).
        let (empty, c) = await backgroundWatched(events: 0)
        #expect(empty.begun == 1 && empty.fileAtEnd == [false])
        #expect(c.state.withLock { $0.nextBatchCurrent && $0.nextBatchTasks.isEmpty })
        // Writing fails (a full disk): no file is due, the task ends with the flush.
        do {
            let dir = tempDir()
            defer { try? FileManager.default.removeItem(atPath: dir) }
            let h = Harness(store: FileScoreStore(directory: dir, sync: false))
            let c = h.client(granted: true)
            await h.settle()
            let fs = FaultyFileSystem(directory: dir, condition: .diskFull)
            defer { fs.uninstall() }
            let source = WatchingSource(next: dir + "/queue.next")
            h.tx.answerAll(.status(503))
            c.bindToAppLifecycle(source: source, autoFlushEverySeconds: nil)
            c.pv()
            await h.settle()
            #expect(c.state.withLock { $0.storeFailing })
            source.emit(.background)
            await h.settle()
            #expect(source.begun == 1 && source.fileAtEnd == [false])
        }
        // A kept task when the OS takes the background time back: ended at once.
        do {
            let h = Harness(store: FileScoreStore(directory: tempDir(), sync: false))
            let c = h.client(granted: true)
            await h.settle()
            let source = WatchingSource(next: "/nonexistent/queue.next")
            c.state.withLock { $0.nextBatchTasks = [(source, source.beginBackgroundTask())] }
            c.backgroundTimeExpired()
            #expect(source.fileAtEnd == [false] && c.state.withLock { $0.nextBatchTasks.isEmpty })
        }
    }
}
