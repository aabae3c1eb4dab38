import Foundation
import Testing
import TrackerCore
import TrackerCoreTestKit

@testable import ScoreTracker

// Regression scenarios of issue 14 (Score), new ids:
//   SC120 — a late 2xx for a batch of an abandoned background flush removes its events; the next
//           flush does not send them again (no duplicate), and a late failure leaves them queued.
//   SC121 — an oversized `identify(userId:)` is dropped with one diagnostic and never stored.
//   SC122 — an oversized identity value already stored is discarded at load with a diagnostic.
//   SC123 — an event answered 413 alone by `maxRejectedAlone` flushes is dropped (not retried forever).
//   SC124 — events recorded while the disk is full stay pending and are written once space returns.
//   SC125 — appends continue while the queue log's fsync runs (sync outside the store's lock).
//   SC126 — a read-only queue directory: stored events are held (their removal could not be
//           recorded; issue 35 item 4 changed this from "still sent"), new ones sent from memory,
//           one diagnostic; once writable again the held events go, once.
//   SC127 — one diagnostic per call, with the count, for every per-key validation path.
//   SC128 — the envelope and body fields derived from the spec's table (not from golden files).
//   SC174 — a flush waiting for its events to be persisted goes on when one of them leaves the
//           queue unwritten (consent withdrawn, shed): it used to wait for it forever, and every
//           later flush joined it.
//   SC177 — flush() returns once the delivered events' removal is in the queue log: a kill
//           after it returns sends none of them again. Not when the store fails, nor longer
//           than 1 s when the disk hangs.
//   SC181 — a flush that delivered nothing returns as soon as its request fails: it has no
//           removal to wait for, not even while an unrelated write hangs (issue 34 item 3).
//   SC182 — a flush on a failing store (a read-only launch) returns at once, without waiting for
//           its removal, which cannot be written (issue 34 item 3).
//   SC183 — a damaged queue log on a read-only store is reported like a writable one's: the
//           damaged record is lost, the others kept, one `storage` diagnostic names the damage.
//   SC184 — a read-only launch followed by a writable one delivers each event once: while the
//           store cannot record removals, the stored events are held, not sent (issue 35 item 4).
//   SC186 — with the system scheduler, events reach the queue log's file while every `fsync`
//           (the identity's atomic write, the log's sync) is held: no append waits for a sync
//           (issue 35 item 2; real threads, the fsyncs held by a file-fault policy).
@Suite struct ReliabilityScenarios {
    // MARK: SC120

    /// The repro of issue 14 item 1 on the manual clock: queued events, `onBackground()`, the first
    /// batch answered after the 5 s budget, then `flush()`.
    @Test func SC120_lateSuccessOfAnAbandonedFlushIsNotSentTwice() async {
        let h = Harness()
        let c = h.client(maxQueueSize: 100_000, granted: true)
        for _ in 0..<300 { c.pv() }
        await h.settle()
        // The first request is answered 200 after 6 s; every later one at once.
        h.tx.script { _, i in i == 0 ? .delayed(6 * SEC, 200) : .status(200) }
        c.onBackground()
        await h.settle()
        await h.advance(5 * SEC + 100)
        #expect(c.inspect().lastFlush.ok == false)  // abandoned at 5 s
        await h.flush(c)
        await h.advance(2 * SEC)  // the late 2xx arrives
        await h.flush(c)
        let sent = h.tx.batches.flatMap { $0 }
        #expect(sent.count == 300)
        #expect(Set(sent).count == 300, "an event was sent twice")
        #expect(c.inspect().queue.depth == 0)
    }

    @Test func SC120_lateFailureOfAnAbandonedFlushKeepsTheEvents() async {
        let h = Harness()
        let c = h.client(granted: true)
        for _ in 0..<150 { c.pv() }
        await h.settle()
        h.tx.script { _, i in i == 0 ? .delayed(6 * SEC, 500) : .status(200) }
        c.onBackground()
        await h.settle()
        await h.advance(5 * SEC + 100)
        await h.flush(c)  // sends the 50 not in flight
        #expect(c.inspect().queue.depth == 100)
        await h.advance(2 * SEC)  // the late 500
        #expect(c.inspect().queue.depth == 100)
        await h.flush(c)
        #expect(c.inspect().queue.depth == 0)
        let sent = h.tx.batches.flatMap { $0 }
        // The 100 of the failed request were sent twice (once answered 500), the rest once.
        #expect(Set(sent).count == 150)
        #expect(sent.count == 250)
    }

    // MARK: SC121–SC123

    @Test func SC121_oversizedUserIdIsDroppedAndNeverStored() async throws {
        let h = Harness()
        let c = h.client(granted: true)
        let long = String(repeating: "u", count: ScoreClient.maxUserIdCodePoints + 1)
        c.identify(userId: long, traits: ["team": "t"])
        await h.settle()
        #expect(c.inspect().identity.userId == nil)
        #expect(c.inspect().queue.invalid == 1)
        #expect(c.inspect().queue.depth == 0)
        #expect(h.diagnostics.all.map(\.code) == ["invalid-event"])
        let stored = h.memoryStore.writtenBytes.map { String(decoding: $0, as: UTF8.self) }
        #expect(!stored.contains { $0.contains(long) })
        // Delivery goes on; the longest allowed userId (in code points, not bytes) is kept.
        let longest = String(repeating: "é", count: ScoreClient.maxUserIdCodePoints)
        c.identify(userId: longest)
        c.pv()
        await h.flush(c)
        #expect(h.tx.eventRequests.last?.names == ["identify", "poll_vote"])
        #expect(h.tx.eventRequests.last?.events.last?["userId"]?.stringValue == longest)
        // After a relaunch the userId is still the valid one.
        let c2 = h.client(granted: true)
        #expect(c2.inspect().identity.userId == longest)
    }

    @Test func SC122_oversizedStoredIdentityIsDiscardedAtLoad() async throws {
        let h = Harness()
        let huge = String(repeating: "x", count: 600_000)
        func identityFile(anonymousId: String, userId: String, linked: [String]) -> [UInt8] {
            WireJSON.encode(
                .object(
                    JSONObject([
                        ("anonymousId", .string(anonymousId)), ("userId", .string(userId)),
                        ("linked", .array(linked.map { .string($0) })),
                    ])))
        }
        try await h.store.saveIdentity(
            identityFile(
                anonymousId: A(9), userId: huge,
                linked: [A(1) + "\u{1F}" + huge, A(9) + "\u{1F}u1"]))
        let c = h.client(granted: true)
        #expect(c.inspect().identity.userId == nil)
        #expect(c.inspect().identity.anonymousId == A(9))
        let d = h.diagnostics.all
        try #require(d.count == 1)
        #expect(d[0].code == "storage" && d[0].message.contains("userId") && d[0].message.contains("1 linked"))
        #expect(!d[0].message.contains(huge.prefix(50)))
        #expect(c.state.withLock { $0.linked } == [A(9) + "\u{1F}u1"])  // the valid pair is kept
        // Events are delivered again, without the discarded userId; the file is rewritten.
        c.pv()
        await h.flush(c)
        #expect(h.tx.batches == [[E(1)]])
        #expect(h.tx.eventRequests[0].events[0]["userId"] == nil)
        let rewritten = String(decoding: h.memoryStore.writtenBytes.last { $0.first == UInt8(ascii: "{") } ?? [], as: UTF8.self)
        #expect(rewritten.contains(#""userId":null"#) && !rewritten.contains(huge))
        // An oversized anonymousId is replaced by a new one.
        let h2 = Harness()
        try await h2.store.saveIdentity(identityFile(anonymousId: huge, userId: "u1", linked: []))
        let c3 = h2.client(granted: true)
        #expect(c3.inspect().identity.anonymousId == A(1))
        #expect(c3.inspect().identity.userId == "u1")
        #expect(h2.diagnostics.all.count == 1)
        // So is a damaged one that still parses (not a lowercase UUID any more).
        let h3 = Harness()
        try await h3.store.saveIdentity(identityFile(anonymousId: "0000000a-0000-4000-8000-00000000000Z", userId: "u1", linked: []))
        let c4 = h3.client(granted: true)
        #expect(c4.inspect().identity.anonymousId == A(1))
        #expect(h3.diagnostics.all.count == 1)
    }

    @Test func SC122_aStoredEventTooLargeForAnyRequestIsDroppedWhenSent() async throws {
        let h = Harness()
        // Written by a build without the userId limit: the identify event of a 600 KB userId.
        let env =
            #"{"type":"identify","name":"identify","eventId":"\#(E(90))","timestamp":"2026-03-01T12:00:00.000Z","anonymousId":"\#(A(1))","sessionId":"\#(S(1))","userId":"\#(String(repeating: "x", count: 600_000))","siteId":"urc-ios","props":{},"traits":{},"context":\#(CTX),"sdk":\#(SDKJSON)}"#
        let e = QueuedEvent(
            eventId: E(90), name: "identify", timestampMs: T0, anonymousEpoch: 0, hasUserId: true,
            critical: false, notice: false, requires: 1, fields: nil, encoded: nil)
        _ = try await h.store.appendQueueRecords([QueueRecord.add(e, envelope: Array(env.utf8))])
        let c = h.client(granted: true)
        #expect(c.inspect().queue.depth == 1)
        c.pv()
        await h.flush(c)
        #expect(h.tx.batches == [[E(1)]])
        #expect(c.inspect().queue.depth == 0)
        #expect(c.inspect().queue.invalid == 1)
        #expect(h.diagnostics.all.map(\.code) == ["invalid-event"])
        await h.flush(c)
        #expect(h.tx.eventRequests.count == 1)
    }

    @Test func SC123_anEventAnswered413AloneIsDroppedAfterThreeFlushes() async {
        let h = Harness()
        let c = h.client(granted: true)
        c.pv()
        c.pv()
        c.pv()
        h.tx.script { r, _ in String(decoding: r.body ?? [], as: UTF8.self).contains(E(2)) ? .status(413) : .status(200) }
        await h.flush(c)
        // SC76's flush: E2 stays queued.
        #expect(c.inspect().queue.depth == 1)
        await h.flush(c)
        #expect(c.inspect().queue.depth == 1)
        #expect(h.diagnostics.all.isEmpty)
        await h.flush(c)
        #expect(c.inspect().queue.depth == 0)
        #expect(c.inspect().queue.invalid == 1)
        #expect(h.diagnostics.all.map(\.code) == ["invalid-event"])
        let before = h.tx.eventRequests.count
        await h.flush(c)
        #expect(h.tx.eventRequests.count == before)  // not uploaded forever
    }

    // MARK: SC124

    /// A store in memory whose queue appends and syncs fail while `full` is set (ENOSPC).
    final class FullDiskStore: ScoreStore, @unchecked Sendable {
        let inner = InMemoryScoreStore()
        let full = Locked(true)
        let syncFails = Locked(false)
        let attempts = Locked(0)
        func load() throws -> ScoreStoreContents { try inner.load() }
        func appendQueueRecords(_ records: [[UInt8]]) async throws -> [ScoreRecordLocation]? {
            attempts.withLock { $0 += 1 }
            if full.withLock({ $0 }) { throw AppendLogError("write", errno: ENOSPC) }
            return try await inner.appendQueueRecords(records)
        }
        func readQueueRecord(at location: ScoreRecordLocation) throws -> [UInt8]? { nil }
        func compactQueue(keeping: [ScoreRecordLocation]) async throws -> [ScoreRecordLocation?]? { nil }
        func rewriteQueue(_ records: [[UInt8]]) async throws {
            if full.withLock({ $0 }) { throw AppendLogError("write", errno: ENOSPC) }
            try await inner.rewriteQueue(records)
        }
        func saveIdentity(_ bytes: [UInt8]) async throws { try await inner.saveIdentity(bytes) }
        func syncQueue() async throws {
            if syncFails.withLock({ $0 }) { throw AppendLogError("fsync", errno: EIO) }
        }
    }

    @Test func SC124_eventsRecordedOnAFullDiskAreWrittenOnceSpaceReturns() async {
        let store = FullDiskStore()
        let h = Harness(store: store)
        let c = h.client(granted: true)
        for _ in 0..<200 { c.pv() }
        await h.settle()
        #expect(store.inner.queueRecords.isEmpty)
        #expect(h.diagnostics.all.filter { $0.code == "storage" }.count == 1)
        // Still failing at the first retry (100 ms), then space returns before the second (200 ms later).
        await h.advance(100)
        #expect(store.attempts.withLock { $0 } == 2)
        for _ in 0..<10 { c.pv() }
        await h.advance(150)
        #expect(store.attempts.withLock { $0 } == 2)  // backing off: recording calls do not retry
        store.full.withLock { $0 = false }
        await h.advance(50)
        #expect(store.inner.queueRecords.count == 210)
        #expect(h.diagnostics.all.filter { $0.code == "storage" }.count == 1)  // one per run of failures
        // Killed now: a relaunch finds every event, in order, and sends each once.
        let c2 = h.client(granted: true)
        #expect(c2.inspect().queue.depth == 210)
        await h.flush(c2)
        #expect(h.tx.batches.flatMap { $0 } == (1...210).map(E))
    }

    @Test func SC124_aFlushOnAFullDiskSendsFromMemoryAndNothingComesBack() async {
        let store = FullDiskStore()
        let h = Harness(store: store)
        let c = h.client(granted: true)
        c.pv()
        c.pv()
        await h.settle()
        // The flush does not wait for a write that cannot happen.
        await h.flush(c)
        #expect(h.tx.batches == [[E(1), E(2)]])
        #expect(c.inspect().queue.depth == 0)
        store.full.withLock { $0 = false }
        await h.advance(SEC)
        // The sent events' adds are not written after all: nothing to send again after a relaunch.
        #expect(store.inner.queueRecords.isEmpty)
        let c2 = h.client(granted: true)
        #expect(c2.inspect().queue.depth == 0)
    }

    @Test func SC124_failingSyncsAreDiagnosedOnceAndAppendsGoOn() async {
        let store = FullDiskStore()
        store.full.withLock { $0 = false }
        store.syncFails.withLock { $0 = true }
        let h = Harness(store: store)
        let c = h.client(granted: true)
        for k in 0..<5 {
            c.pv()
            await h.settle()
            await h.advance(Int64(100 + k))
        }
        #expect(store.inner.queueRecords.count == 5)
        #expect(h.diagnostics.all.filter { $0.code == "storage" }.count == 1)
    }

    // MARK: SC125

    /// Forwards to an in-memory store; each `syncQueue()` waits for `release()`.
    final class HeldSyncStore: ScoreStore, @unchecked Sendable {
        let inner = InMemoryScoreStore()
        let held = Locked<[CheckedContinuation<Void, Never>]>([])
        let syncs = Locked(0)
        func load() throws -> ScoreStoreContents { try inner.load() }
        func appendQueueRecords(_ records: [[UInt8]]) async throws -> [ScoreRecordLocation]? {
            try await inner.appendQueueRecords(records)
        }
        func readQueueRecord(at location: ScoreRecordLocation) throws -> [UInt8]? { nil }
        func compactQueue(keeping: [ScoreRecordLocation]) async throws -> [ScoreRecordLocation?]? { nil }
        func rewriteQueue(_ records: [[UInt8]]) async throws { try await inner.rewriteQueue(records) }
        func saveIdentity(_ bytes: [UInt8]) async throws { try await inner.saveIdentity(bytes) }
        func syncQueue() async throws {
            syncs.withLock { $0 += 1 }
            await withCheckedContinuation { c in held.withLock { $0.append(c) } }
        }
        func release() {
            for c in held.withLock({ h -> [CheckedContinuation<Void, Never>] in
                defer { h = [] }
                return h
            }) { c.resume() }
        }
    }

    @Test func SC125_appendsContinueWhileASyncRuns() async {
        let store = HeldSyncStore()
        let h = Harness(store: store)
        let c = h.client(granted: true)
        c.pv()
        await h.settle()
        #expect(store.syncs.withLock { $0 } == 1)  // the first append is synced at once, and held
        c.pv()
        c.pv()
        await h.settle()
        #expect(store.inner.queueRecords.count == 3, "appends waited for the sync")
        // A flush is not held up by the sync either.
        await h.flush(c)
        #expect(h.tx.batches == [[E(1), E(2), E(3)]])
        store.release()
        await h.advance(100)
        store.release()
        await h.advance(100)
        store.release()
        #expect(store.syncs.withLock { $0 } >= 2)
    }

    @Test func SC125_fileStoreAppendsAndReadsWhileItsFsyncRuns() async throws {
        let dir = NSTemporaryDirectory() + "score-heldsync-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let entered = DispatchSemaphore(value: 0)
        let gate = DispatchSemaphore(value: 0)
        let store = FileScoreStore(
            directory: dir, sync: true,
            openForAppending: { path, sync in try AppendLog.open(path: path, sync: sync) },
            beforeSync: {
                entered.signal()
                gate.wait()
            })
        _ = try store.load()
        let first = try store.appendDeferringSyncNow([[1, 2, 3]])
        // Threads, not tasks: the held sync must not take a thread of the shared pool.
        Thread { try? store.syncNow() }.start()
        #expect(entered.wait(timeout: .now() + 30) == .success)
        // The sync is held: an append and a read must not wait for it (bounded, so that a
        // regression fails instead of hanging).
        let done = DispatchSemaphore(value: 0)
        let result = Locked<[ScoreRecordLocation]?>(nil)
        Thread {
            let locs = try? store.appendDeferringSyncNow([[4, 5, 6]])
            _ = try? store.readQueueRecord(at: first[0])
            result.withLock { $0 = locs }
            done.signal()
        }.start()
        let appendedDuringSync = done.wait(timeout: .now() + 10) == .success
        gate.signal()
        if !appendedDuringSync { _ = done.wait(timeout: .now() + 30) }
        #expect(appendedDuringSync, "the append waited for the fsync")
        let loc = try #require(result.withLock { $0 })
        #expect(try store.readQueueRecord(at: loc[0]) == [4, 5, 6])
        let bytes = try #require(try FileIO.readBytes(dir + "/queue.log"))
        #expect(AppendLog.parse(bytes).records == [[1, 2, 3], [4, 5, 6]])
    }

    // MARK: SC126

    @Test func SC126_aReadOnlyQueueIsHeldUntilWritable() async throws {
        let dir = NSTemporaryDirectory() + "score-ro-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let h = Harness(store: FileScoreStore(directory: dir, sync: false))
        let c = h.client(granted: true)
        c.pv()
        c.pv()
        c.pv()
        await h.settle()
        // Relaunch on a read-only directory (EROFS on the read-write open).
        let writable = Locked(false)
        h.store = FileScoreStore(
            directory: dir, sync: false,
            openForAppending: { path, sync in
                guard writable.withLock({ $0 }) else { throw AppendLogError("open", errno: EROFS) }
                return try AppendLog.open(path: path, sync: sync)
            })
        h.diagnostics.clear()
        let c2 = h.client(granted: true)
        #expect(c2.inspect().queue.depth == 3)
        c2.pv()  // recorded in memory
        await h.flush(c2)
        // The stored events are held: their removal could not be recorded.
        #expect(h.tx.batches == [[E(4)]])
        #expect(c2.inspect().queue.depth == 3)
        await h.advance(5 * SEC)  // write retries fail quietly
        #expect(h.diagnostics.all.count == 1)
        #expect(h.diagnostics.all.first?.code == "storage")
        // Writable again: the held events go, and their removal is written; nothing comes back.
        writable.withLock { $0 = true }
        await h.advance(60 * SEC)
        await h.flush(c2)
        #expect(h.tx.batches == [[E(4)], [E(1), E(2), E(3)]])
        #expect(c2.inspect().queue.depth == 0)
        await h.settle()
        let c3 = h.client(granted: true)
        #expect(c3.inspect().queue.depth == 0)
    }

    @Test func SC126_aReallyReadOnlyDirectory() async throws {
        guard getuid() != 0 else {
            print("SC126_aReallyReadOnlyDirectory skipped: running as root, file modes do not stop writes")
            return
        }
        let dir = NSTemporaryDirectory() + "score-ro2-\(UUID().uuidString)"
        defer {
            chmod(dir, 0o700)
            try? FileManager.default.removeItem(atPath: dir)
        }
        let h = Harness(store: FileScoreStore(directory: dir, sync: false))
        let c = h.client(granted: true)
        c.pv()
        c.pv()
        await h.settle()
        chmod(dir + "/queue.log", 0o400)
        chmod(dir, 0o500)
        h.store = FileScoreStore(directory: dir, sync: false)
        let c2 = h.client(granted: true)
        #expect(c2.inspect().queue.depth == 2)
        await h.flush(c2)
        #expect(h.tx.batches.isEmpty)  // held: the removal could not be recorded
        chmod(dir, 0o700)
        chmod(dir + "/queue.log", 0o600)
        h.store = FileScoreStore(directory: dir, sync: false)
        let c3 = h.client(granted: true)
        await h.flush(c3)
        #expect(h.tx.batches == [[E(1), E(2)]])
        _ = c2
    }

    // MARK: SC127

    @Test func SC127_oneDiagnosticPerCall() async {
        let h = Harness()
        let c = h.client(granted: true)
        var props: [String: Any] = [:]
        for k in 0..<100_000 { props["k\(k)"] = k % 100 == 0 ? Double.nan : k }
        c.track("many", properties: props)
        c.identify(userId: "u1", traits: props)
        c.setConsent(analytics: false, personalization: false, advertising: false)
        c.track("denied", properties: props)
        // Issue 37 item 9: the NaN keys are dropped, one `invalid-property` diagnostic per call;
        // "many" and the identify event are then too large for a request (the identify counted
        // only, as before), and "denied" is dropped by consent.
        #expect(h.diagnostics.count("invalid-property") == 3)
        #expect(h.diagnostics.count("invalid-event") == 1)
        #expect(c.inspect().queue.invalid == 2)
        let before = h.diagnostics.all.count
        // Many valid keys: no diagnostic at all.
        c.grantAllConsent()
        var fine: [String: Any] = [:]
        for k in 0..<10_000 { fine["k\(k)"] = k }
        c.track("fine", properties: fine)
        #expect(h.diagnostics.all.count == before)
        // A failing store across many writes: one.
        let store = FullDiskStore()
        let h2 = Harness(store: store)
        let c2 = h2.client(granted: true)
        for _ in 0..<50 {
            c2.pv()
            await h2.advance(40 * SEC)
        }
        #expect(store.attempts.withLock { $0 } > 3)
        #expect(h2.diagnostics.all.count == 1)
    }

    // MARK: SC128

    /// The fixtures' envelopes and requests written out from section 2's table and 12.0's
    /// definitions by hand, not by the implementation: key order, ids, CTX, the request line and
    /// headers. (SC91 compares what the implementation produces with the fixture files; this
    /// checks the files themselves against the spec.)
    @Test func SC128_fixturesMatchTheSpecWrittenOut() throws {
        func file(_ name: String) throws -> String {
            try String(contentsOfFile: ConformanceScenarios.dir + name, encoding: .utf8)
        }
        func field(_ k: String, _ v: String) -> String { "\"\(k)\":\(v)" }
        func str(_ s: String) -> String { "\"\(s)\"" }
        let ts = str("2026-03-01T12:00:00.000Z")
        let ctx = #"{"os":"iOS 18.1","appVersion":"4.2.0","device":"iPhone","locale":"en-GB"}"#
        let sdk = "{" + field("name", str("score-tracker-linux")) + "," + field("version", str(ScoreClient.sdkVersion)) + "}"
        // Section 2: type, name, eventId, timestamp, anonymousId, sessionId, userId, siteId,
        // props, traits (identify only), context, sdk.
        func envelope(type: String, name: String, n: Int, props: String, traits: String?) -> String {
            var parts = [
                field("type", str(type)), field("name", str(name)), field("eventId", str(E(n))),
                field("timestamp", ts), field("anonymousId", str(A(1))), field("sessionId", str(S(1))),
                field("userId", str("auth0|abc123")), field("siteId", str("urc-ios")), field("props", props),
            ]
            if let traits { parts.append(field("traits", traits)) }
            parts += [field("context", ctx), field("sdk", sdk)]
            return "{" + parts.joined(separator: ",") + "}"
        }
        // PV's props with keys in code-point order (section 2, README decision 10).
        let pv = envelope(type: "track", name: "poll_vote", n: 1, props: #"{"choice":"player_7","pollId":"motm-r12"}"#, traits: nil)
        let screen = envelope(type: "screen", name: "match_centre", n: 2, props: "{}", traits: nil)
        // SC47's identify envelope.
        let identify = envelope(type: "identify", name: "identify", n: 3, props: "{}", traits: #"{"team":"urc-leinster"}"#)
        #expect(try file("envelope-track.json") == pv + "\n")
        #expect(try file("envelope-screen.json") == screen + "\n")
        #expect(try file("envelope-identify.json") == identify + "\n")
        // Section 2's requests: the events request and the link request, same headers.
        let headers =
            "{"
            + [
                field("Content-Type", str("application/json")), field("X-Publishable-Key", str("pk_test_1")),
                field("Authorization", str("Bearer tok-1")),
            ].joined(separator: ",") + "}"
        let batch =
            "{"
            + [
                field("method", str("POST")), field("url", str("https://score.test/api/events")),
                field("headers", headers),
                field(
                    "body",
                    "{" + field("sentAt", ts) + "," + field("events", "[" + [pv, screen, identify].joined(separator: ",") + "]") + "}"),
            ]
            .joined(separator: ",") + "}"
        #expect(try file("request-events-batch.json") == batch + "\n")
        let link =
            "{"
            + [
                field("method", str("POST")), field("url", str("https://score.test/api/identity/link-anonymous")),
                field("headers", headers),
                field("body", "{" + field("anonymousId", str(A(1))) + "," + field("userId", str("auth0|abc123")) + "}"),
            ]
            .joined(separator: ",") + "}"
        #expect(try file("request-link-anonymous.json") == link + "\n")
    }

    // MARK: SC174

    @Test func SC174_aFlushWaitingToPersistGoesOnWhenAnUnwrittenEventLeaves() async throws {
        let h = Harness(holdsOutsideWork: true)
        let c = h.client(granted: true)
        await h.settle()
        // Recorded, their write held until the settle; a flush starts and waits for them.
        c.pv()
        c.track(.adImpression)
        c.startFlush()
        #expect(c.state.withLock { $0.flight?.machine.phase } == .waitingPersist)
        // Advertising withdrawn before the writer ran: the ad impression leaves unwritten.
        c.setConsent(ConsentState(analytics: true, personalization: true, advertising: false))
        await h.settle()
        #expect(c.state.withLock { $0.flight == nil && $0.lastFlush.ok == true })
        #expect(h.tx.batches == [[E(1)]])
        // A later flush is its own (it does not join a stuck one).
        c.pv()
        await h.clock.withOutsideWorkReleased { await h.flush(c) }
        #expect(h.tx.batches.count == 2)
    }

    // MARK: SC177

    /// A store in memory whose appends of removal records wait for `release()` while `hold` is
    /// set (a slow disk), or fail while `fail` is set.
    final class SlowRemovalStore: ScoreStore, @unchecked Sendable {
        let inner = InMemoryScoreStore()
        let hold = Locked(false)
        /// Holds every append, not only removals, while set.
        let holdAll = Locked(false)
        let fail = Locked(false)
        private let held = Locked<[CheckedContinuation<Void, Never>]>([])
        var heldCount: Int { held.withLock { $0.count } }
        func load() throws -> ScoreStoreContents { try inner.load() }
        func syncQueue() async throws {}
        func readQueueRecord(at location: ScoreRecordLocation) throws -> [UInt8]? { nil }
        func compactQueue(keeping: [ScoreRecordLocation]) async throws -> [ScoreRecordLocation?]? { nil }
        func appendQueueRecords(_ records: [[UInt8]]) async throws -> [ScoreRecordLocation]? {
            if records.contains(where: { $0.first == UInt8(ascii: "R") }) {
                if fail.withLock({ $0 }) { throw AppendLogError("write", errno: EIO) }
                if hold.withLock({ $0 }) { await withCheckedContinuation { k in held.withLock { $0.append(k) } } }
            } else if holdAll.withLock({ $0 }) {
                await withCheckedContinuation { k in held.withLock { $0.append(k) } }
            }
            return try await inner.appendQueueRecords(records)
        }
        func rewriteQueue(_ records: [[UInt8]]) async throws { try await inner.rewriteQueue(records) }
        func saveIdentity(_ bytes: [UInt8]) async throws { try await inner.saveIdentity(bytes) }
        func release() {
            hold.withLock { $0 = false }
            holdAll.withLock { $0 = false }
            for k in held.withLock({ h in
                defer { h = [] }
                return h
            }) { k.resume() }
        }
    }

    /// Launch 1 with two events written, then a flush whose removal append is held; returns the
    /// client, the flush's task and whether it returned (read after a settle).
    func flushWithHeldRemoval(_ h: Harness, _ store: SlowRemovalStore) async -> (
        ScoreClient, Task<Result<Void, Error>, Never>, Locked<Bool>
    ) {
        let c = h.client(granted: true)
        c.pv()
        c.pv()
        await h.settle()
        store.hold.withLock { $0 = true }
        let returned = Locked(false)
        let t = h.clock.executor.startTask { () -> Result<Void, Error> in
            defer { returned.withLock { $0 = true } }
            do {
                try await c.flush()
                return .success(())
            } catch { return .failure(error) }
        }
        await h.settle()
        #expect(h.tx.batches == [[E(1), E(2)]])
        return (c, t, returned)
    }

    @Test func SC177_flushReturnsOnceTheDeliveredRemovalIsWritten() async throws {
        let store = SlowRemovalStore()
        let h = Harness(store: store)
        let (_, t, returned) = await flushWithHeldRemoval(h, store)
        // Answered 2xx, the removal not yet in the log: a kill now would send both again.
        #expect(store.heldCount == 1)
        #expect(returned.withLock { $0 } == false)
        store.release()
        await h.settle()
        #expect(returned.withLock { $0 })
        #expect((try? await bounded(t, "the flush")?.get()) != nil)
        // The relaunch after a kill sends nothing again.
        let h2 = Harness(store: store.inner)
        let c2 = h2.client(granted: true)
        await h2.settle()
        #expect(c2.inspect().queue.depth == 0)
        await h2.flush(c2)
        #expect(h2.tx.batches.isEmpty)
    }

    @Test func SC177_aHungDiskHoldsTheFlushForOneSecondAtMost() async throws {
        let store = SlowRemovalStore()
        let h = Harness(store: store)
        let (c, t, returned) = await flushWithHeldRemoval(h, store)
        await h.advance(999)
        #expect(returned.withLock { $0 } == false)
        await h.advance(1)
        #expect(returned.withLock { $0 })
        #expect((try? await bounded(t, "the flush")?.get()) != nil)
        // The removal is written when the disk answers.
        store.release()
        await h.settle()
        #expect(store.inner.queueRecords.last?.first == UInt8(ascii: "R"))
        #expect(c.inspect().queue.depth == 0)
    }

    @Test func SC177_aFailingStoreDoesNotHoldTheFlush() async throws {
        let store = SlowRemovalStore()
        store.fail.withLock { $0 = true }
        let h = Harness(store: store)
        let c = h.client(granted: true)
        c.pv()
        await h.settle()
        await h.flush(c)  // returns: the removal cannot be written
        #expect(h.tx.batches == [[E(1)]])
        #expect(c.inspect().lastFlush.ok == true)
    }

    @Test func SC177_theBackgroundTaskWaitsForTheRemovalAndEndsAtOnceWhenTheTimeIsTakenBack() async throws {
        for expires in [false, true] {
            let store = SlowRemovalStore()
            let h = Harness(store: store)
            let c = h.client(granted: true)
            let lc = LC(clock: h.clock, state: .foreground)
            c.bindToAppLifecycle(source: lc, autoFlushEverySeconds: nil)
            await h.settle()
            c.pv()
            await h.settle()
            store.hold.withLock { $0 = true }
            await lc.emit(.background)
            #expect(h.tx.batches == [[E(1)]])
            // Answered; the removal not written: iOS could suspend the app if the task ended.
            #expect(lc.begins.count == 1 && lc.ends.isEmpty)
            if expires {
                await lc.emit(.backgroundTimeExpired)
                #expect(lc.ends.count == 1)
                store.release()
                await h.settle()
            } else {
                await h.advance(10)
                store.release()
                await h.settle()
                #expect(lc.ends == [T0 + 10])
            }
            #expect(lc.ends.count == 1)
            #expect(store.inner.queueRecords.last?.first == UInt8(ascii: "R"))
        }
    }

    /// Starts `c.flush()` on the clock's executor; the flag tells whether it has returned.
    func startNotedFlush(_ h: Harness, _ c: ScoreClient) async -> (Task<Result<Void, Error>, Never>, Locked<Bool>) {
        let returned = Locked(false)
        let t = h.clock.executor.startTask { () -> Result<Void, Error> in
            defer { returned.withLock { $0 = true } }
            do {
                try await c.flush()
                return .success(())
            } catch { return .failure(error) }
        }
        await h.settle()
        return (t, returned)
    }

    // MARK: SC181

    @Test func SC181_aFlushThatDeliveredNothingReturnsAsSoonAsItsRequestFails() async throws {
        let store = SlowRemovalStore()
        let h = Harness(store: store)
        let c = h.client(granted: true)
        c.pv()
        await h.settle()
        h.tx.script { _, _ in .delayed(100, 500) }
        let (t, returned) = await startNotedFlush(h, c)
        #expect(h.tx.batches == [[E(1)]])
        // While the request is out, a later event's write hangs (a slow disk).
        store.holdAll.withLock { $0 = true }
        c.pv()
        await h.settle()
        #expect(store.heldCount == 1)
        await h.advance(100)  // the 500 arrives: nothing was delivered, nothing is to be removed
        #expect(returned.withLock { $0 }, "a flush that delivered nothing waited for an unrelated write")
        #expect(c.state.withLock { $0.finishing.isEmpty })
        store.release()
        await h.settle()
        let result = try #require(await bounded(t, "the failed flush"))
        #expect((try? result.get()) == nil, "a 500 fails the flush")
        #expect(c.inspect().queue.depth == 2)
    }

    // MARK: SC182

    @Test func SC182_aFlushOnAFailingStoreDoesNotWaitForItsRemoval() async throws {
        let dir = NSTemporaryDirectory() + "score-sc182-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let h = Harness(store: FileScoreStore(directory: dir, sync: false))
        let c = h.client(granted: true)
        c.pv()
        c.pv()
        await h.settle()
        // Relaunch on a read-only directory: the store fails every write.
        h.store = FileScoreStore(
            directory: dir, sync: false, openForAppending: { _, _ in throw AppendLogError("open", errno: EROFS) })
        let c2 = h.client(granted: true)
        #expect(c2.inspect().queue.depth == 2)
        #expect(c2.state.withLock { $0.storeFailing })
        c2.pv()  // its write fails: the writer waits for its retry timer
        await h.settle()
        let (t, returned) = await startNotedFlush(h, c2)
        #expect(h.tx.batches == [[E(3)]])  // the stored E1 and E2 are held (SC184)
        // Delivered, its removal unwritable: returned at once, no time passed, nothing waits.
        #expect(returned.withLock { $0 }, "the flush waited for a removal a failing store cannot write")
        #expect(c2.state.withLock { $0.finishing.isEmpty })
        let result = try #require(await bounded(t, "the flush on a failing store"))
        #expect((try? result.get()) != nil)
        _ = c
    }

    // MARK: SC183

    @Test func SC183_aDamagedLogOnAReadOnlyStoreIsReported() async throws {
        let dir = NSTemporaryDirectory() + "score-sc183-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: dir) }
        do {
            let h = Harness(store: FileScoreStore(directory: dir, sync: false))
            let c = h.client(granted: true)
            for _ in 0..<20 { c.pv() }
            await h.settle()
        }
        let path = dir + "/queue.log"
        var bytes = try Array(Data(contentsOf: URL(fileURLWithPath: path)))
        let offsets = AppendLog.parseWithOffsets(bytes).offsets
        #expect(offsets.count == 20)
        // 8 bytes flipped across the header of record 10 (its length and checksum).
        for i in 0..<8 { bytes[offsets[10] + i] ^= 0xA5 }
        try Data(bytes).write(to: URL(fileURLWithPath: path))

        let h = Harness(
            store: FileScoreStore(
                directory: dir, sync: false, openForAppending: { _, _ in throw AppendLogError("open", errno: EROFS) }))
        let c = h.client(granted: true)
        #expect(c.inspect().queue.depth == 19)
        let reported = h.diagnostics.all.filter { $0.code == "storage" && $0.message.contains("damaged") }
        #expect(reported.count == 1, "the read-only load's damage was not reported: \(h.diagnostics.all.map(\.message))")
        #expect(reported.first?.message.contains("1 region") == true)
    }

    // MARK: SC184

    @Test func SC184_aReadOnlyLaunchThenAWritableOneDeliversEachEventOnce() async throws {
        let dir = NSTemporaryDirectory() + "score-sc184-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let h = Harness(store: FileScoreStore(directory: dir, sync: false))
        let c1 = h.client(granted: true)
        for _ in 0..<150 { c1.pv() }
        await h.settle()
        // Launch 2 on read-only storage: a flush answered 2xx, then the app is killed (no time
        // passes: nothing more is written).
        h.store = FileScoreStore(
            directory: dir, sync: false, openForAppending: { _, _ in throw AppendLogError("open", errno: EROFS) })
        let c2 = h.client(granted: true)
        #expect(c2.inspect().queue.depth == 150)
        c2.pv()  // recorded in memory only
        await h.flush(c2)
        // Launch 3, writable.
        h.store = FileScoreStore(directory: dir, sync: false)
        let c3 = h.client(granted: true)
        await h.flush(c3)
        let sent = h.tx.batches.flatMap { $0 }
        #expect(Set(sent).count == 151, "every event is delivered")
        #expect(sent.count == Set(sent).count, "\(sent.count - Set(sent).count) event(s) delivered twice")
        #expect(c3.inspect().queue.depth == 0)
        _ = (c1, c2)
    }

    // MARK: SC186

    /// Holds every `fsync` under a directory until `open()` (a device that syncs slowly), and
    /// counts those waiting.
    final class HeldFsyncs: FileFaultPolicy, @unchecked Sendable {
        private let lock = NSLock()
        private let gate = DispatchSemaphore(value: 0)
        private var opened = false
        private var waitingCount = 0
        var waiting: Int { lock.withLock { waitingCount } }
        /// Signalled at every `write` under the directory (before it runs).
        private let writeCalls = DispatchSemaphore(value: 0)
        /// Signalled at every `fsync` under the directory, as it starts waiting.
        private let fsyncCalls = DispatchSemaphore(value: 0)
        func fault(_ call: FileCall, path: String, bytes: Int) -> Int32? {
            if call == .write { writeCalls.signal() }
            guard call == .fsync else { return nil }
            let held: Bool = lock.withLock {
                if !opened { waitingCount += 1 }
                return !opened
            }
            fsyncCalls.signal()
            if held {
                // Bounded: a test that never opens the gate lets the syncs go after 20 s.
                _ = gate.wait(timeout: .now() + 20)
                gate.signal()
                lock.withLock { waitingCount -= 1 }
            }
            return nil
        }
        func open() {
            lock.withLock { opened = true }
            gate.signal()
        }
        /// Waits for the next `write` call under the directory, at most `ms` milliseconds (the
        /// call is seen before it runs, so the caller reads the file again either way).
        func awaitWriteCall(ms: Int) {
            _ = writeCalls.wait(timeout: .now() + .milliseconds(ms))
        }
        /// Waits for the next `fsync` call under the directory, at most `ms` milliseconds.
        func awaitFsyncCall(ms: Int) {
            _ = fsyncCalls.wait(timeout: .now() + .milliseconds(ms))
        }
    }

    @Test func SC186_appendsReachTheFileWhileEveryFsyncIsHeld() async throws {
        let dir = NSTemporaryDirectory() + "score-sc186-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: dir) }
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        let fsyncs = HeldFsyncs()
        let installed = FileFaults.install(fsyncs, under: dir)
        defer {
            fsyncs.open()
            installed.remove()
        }
        let store = FileScoreStore(directory: dir)
        let c = ScoreClient(
            configuration: ScoreConfiguration(
                publishableKey: "pk_test_1", siteId: "urc-ios", endpoint: "https://score.test", initialConsent: .all,
                store: store, transport: RecordingTransport(statuses: { _ in 500 }), onDiagnostic: { _ in }))
        _ = c.inspect()  // loaded; the new identity's atomic write goes to its fsync
        // Bounded, real time: that fsync is held before anything is tracked.
        for _ in 0..<200 where fsyncs.waiting == 0 { fsyncs.awaitFsyncCall(ms: 50) }
        for n in 0..<5 { c.track("held", properties: ["n": n]) }
        // Bounded, real time (system threads): the five adds in the file while the syncs wait. The
        // file is read again after each write call the store makes (or 50 ms without one).
        var adds = 0
        for _ in 0..<200 where adds < 5 {
            let bytes = (try? FileIO.readBytes(store.queuePath)) ?? []
            adds = AppendLog.parse(bytes).records.filter { $0.first == UInt8(ascii: "A") }.count
            if adds < 5 { fsyncs.awaitWriteCall(ms: 50) }
        }
        #expect(fsyncs.waiting >= 1, "no fsync was held: the test proves nothing")
        #expect(adds == 5, "\(adds) of 5 events reached the file while an fsync was held: appends waited for it")
        fsyncs.open()
        _ = c
    }
}
