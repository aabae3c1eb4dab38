import Dispatch
import TrackerCore

#if canImport(Darwin)
    import Foundation
#elseif canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

// The recording path's internals (split out of `ScoreClient.swift`, issue 35 item 6: no Score
// source file over 600 lines): building, stamping and queueing events.
extension ScoreClient {
    // MARK: - Internals: recording

    static func mask(_ categories: [ConsentCategory]) -> UInt8 {
        var m: UInt8 = 0
        for c in categories { m |= c.bit }
        return m
    }

    func allowed(_ requires: UInt8, _ consent: ConsentState) -> Bool {
        let granted = consent.mask
        if requires == 0 { return granted != 0 }
        return requires & ~granted == 0
    }

    func countDropped(_ s: inout ClientState, _ requires: UInt8) {
        s.counts.droppedByConsent += 1
        let granted = s.consent.mask
        for (i, c) in ConsentCategory.allCases.enumerated() where requires & c.bit != 0 && granted & c.bit == 0 {
            s.counts.droppedByCategory[i] += 1
        }
    }

    func countInvalid(_ message: String) {
        state.withLock { $0.counts.invalid += 1 }
        diagnose(Diagnostic(code: "invalid-event", message: message))
    }

    /// `userId` length at most, in Unicode code points (the spec sets none; decided here, see
    /// the CHANGELOG): room for any auth provider's subject (`auth0|…`, e-mail addresses, UUIDs)
    /// while a userId, which every envelope carries, stays under 1.5 KB even fully escaped.
    public static let maxUserIdCodePoints = 256

    static func withinCodePoints(_ text: String, _ limit: Int) -> Bool {
        if text.utf8.count <= limit { return true }
        var n = 0
        for _ in text.unicodeScalars {
            n += 1
            if n > limit { return false }
        }
        return true
    }

    static func validUserId(_ userId: String) -> Bool {
        !userId.isEmpty && withinCodePoints(userId, maxUserIdCodePoints)
    }

    static func validName(_ name: String) -> Bool {
        guard !name.isEmpty else { return false }
        if name.utf8.count <= 128 { return true }
        var n = 0
        for _ in name.unicodeScalars {
            n += 1
            if n > 128 { return false }
        }
        return true
    }

    func record(type: String, name: String, props: [String: Any], traits: [String: Any]?, requires: UInt8, critical: Bool) {
        guard ScoreClient.validName(name) else {
            countInvalid(name.isEmpty ? "an event name is empty" : "an event name is longer than 128 code points")
            return
        }
        // A first look: consent, and the identity to stamp (pre-encoded).
        let v = view.withLock { $0 }
        // While the stored consent is read, the event is built and waits for it (`ConsentKeeper`).
        let parking = consentKeeper.reading
        if !parking && !allowed(requires, v.consent) {
            // A dropped event is only validated, never scrubbed.
            var size = 0
            var droppedKeys = DroppedKeys()
            do { _ = try PiiScrubber.validator.object(props, size: &size, dropped: &droppedKeys) } catch {
                countInvalid("props are nested deeper than \(PiiScrubber.maxDepth) levels")
                return
            }
            reportDropped(droppedKeys, traits: false)
            let droppedUnder = state.withLock { s -> ConsentState? in
                // Consent granted meanwhile: record after all.
                if allowed(requires, s.consent) { return nil }
                countDropped(&s, requires)
                return s.consent
            }
            if let droppedUnder {
                noteDroppedByConsent(droppedUnder)
                return
            }
        }
        let (anonEpoch, hasUserId, identity, generation) = (v.anonymousEpoch, v.hasUserId, v.identity, v.generation)
        // Where the userId sits in `identity` (the envelope's layout once its head is built).
        let userIdOffset = v.userIdOffset
        // Scrubbed and encoded here, on the caller's thread, straight into wire bytes: the queued
        // event holds its compact envelope only (no value tree), so a burst the writer has not
        // caught up with yet stays small in memory, and the writer only frames and appends.
        // One writer takes the props, then the head (the props are scrubbed before the clock is
        // read and the event id minted, as ever); the envelope is copied out of it once, in order.
        var w = WireWriter(capacity: 512)
        var droppedKeys = DroppedKeys()
        do { try scrubber.write(props, into: &w, dropped: &droppedKeys) } catch {
            countInvalid("props are nested deeper than \(PiiScrubber.maxDepth) levels")
            return
        }
        if droppedKeys.count > 0 { reportDropped(droppedKeys, traits: false) }
        let propsCount = w.count
        let now = clock.nowMs()
        // The production source's ids go straight to their packed form: no string is built.
        let id: CompactEventId
        if let systemIds {
            let (hi, lo) = systemIds.newEventIdHalves(nowMs: now)
            id = .uuid(hi, lo)
        } else {
            id = CompactEventId(ids.newEventId(nowMs: now))
        }
        EnvelopeWriter.head(type: type, name: name, eventId: id, timestampMs: now, into: &w)
        let headCount = w.count - propsCount
        let bytes = EnvelopeWriter.assemble(w, propsCount: propsCount, identity: identity, tail: envelopeTail)
        if bytes.count + ScoreClient.bodyOverhead > ScoreClient.maxBodyBytes {
            countInvalid("an event is too large for any request")
            return
        }
        var event = QueuedEvent(
            id: id, name: name, timestampMs: now, anonymousEpoch: anonEpoch,
            hasUserId: hasUserId, critical: critical, notice: false, requires: requires,
            encoded: bytes,
            layout: userIdOffset < 0 ? nil : EnvelopeLayout(identityAt: headCount, userIdAt: headCount + userIdOffset))
        if parking,
            consentKeeper.park(
                Parked(event: event, requires: requires, restamp: (headCount, identity.count, generation)))
        {
            return
        }
        var droppedUnder: ConsentState?
        // The hand-over: a lock and an append. What it takes off `dropLater` is freed after it.
        let (starts, taken) = state.withLock { s -> (WriterStarts, DropLaterTaken) in
            guard allowed(requires, s.consent) else {
                countDropped(&s, requires)
                droppedUnder = s.consent
                return (WriterStarts(), DropLaterTaken())
            }
            if s.identityGeneration != generation {
                // Identity changed meanwhile (identify, reset, new session): stamp the current one.
                let current = identityBytes(&s)
                let restamped = EnvelopeWriter.restamp(
                    bytes, headCount: headCount, oldIdentityCount: identity.count, identity: current)
                event = QueuedEvent(
                    id: id, name: name, timestampMs: now, anonymousEpoch: s.anonymousEpoch,
                    hasUserId: s.userId != nil, critical: critical, notice: false, requires: requires,
                    encoded: restamped, layout: EnvelopeLayout(headCount: headCount, identity: current))
            }
            enqueue(&s, event)
            let taken = ScoreClient.takeDropLater(&s)
            return (claimWriters(&s), taken)
        }
        withExtendedLifetime(taken) {}
        start(starts)
        if let droppedUnder { noteDroppedByConsent(droppedUnder) }
    }

    /// Logs the removal of persisted events: joined to the removal still waiting to be written,
    /// when there is one (one record and one allocation per write instead of one per event).
    /// Any place in the backlog is safe: the events' add records are already on disk.
    /// While the store fails and stored events are held (see `heldWhileFailing`), a write is
    /// needed to learn that the store works again: when no other operation is queued, an empty
    /// removal record (a dead record of one byte) is.
    static func probeStoreIfHolding(_ s: inout ClientState) {
        guard s.storeFailing, s.writer.backlog.isEmpty, s.queue.contains(where: { $0.persisted }) else { return }
        s.writer.queue(.remove([]))
        s.writer.deadRecords += 1
    }

    /// See ``QueueWriterMachine/queueRemoval(_:)``.
    static func logRemoval(_ s: inout ClientState, _ ids: [CompactEventId]) {
        s.writer.queueRemoval(ids)
    }

    /// Empties `dropLater` when the writer goes idle, a few events per lock hold, freeing outside
    /// the lock (recording calls may be running).
    func releaseDropLaterOnExit() {
        while true {
            // What is taken here is freed when `bytes` and `events` go, after the lock.
            var bytes: [[UInt8]] = []
            let events: [QueuedEvent] = state.withLock { s in
                let n = min(16, s.writer.dropLater.count)
                let taken = Array(s.writer.dropLater.suffix(n))
                s.writer.dropLater.removeLast(n)
                for e in taken where e.persisted && e.location != nil {
                    if let b = e.encoded { bytes.append(b) }
                    e.encoded = nil
                }
                return taken
            }
            if events.isEmpty { return }
        }
    }

    /// What a recording call takes off `dropLater` (see ``takeDropLater(_:)``): held until the
    /// lock is released, then freed.
    struct DropLaterTaken {
        var first: (QueuedEvent, [UInt8]?)?
        var second: (QueuedEvent, [UInt8]?)?
    }

    /// Takes up to two events off `dropLater`, dropping the bytes of one still queued and located
    /// on disk. The references (maybe an event's last) and the bytes come back in the result, so
    /// that the caller frees them after the lock: a free is no work to do while holding it.
    static func takeDropLater(_ s: inout ClientState) -> DropLaterTaken {
        var taken = DropLaterTaken()
        func take() -> (QueuedEvent, [UInt8]?)? {
            guard let e = s.writer.dropLater.popLast() else { return nil }
            var bytes: [UInt8]?
            if e.persisted, e.location != nil {
                bytes = e.encoded
                e.encoded = nil
            }
            return (e, bytes)
        }
        taken.first = take()
        if taken.first != nil { taken.second = take() }
        return taken
    }

    /// Publishes the recording view of `s` (call after changing consent or identity).
    func publishView(_ s: inout ClientState) {
        let v = ScoreClient.makeView(&s, siteId: siteId)
        view.withLock { $0 = v }
    }

    static func makeView(_ s: inout ClientState, siteId: String) -> RecordingView {
        RecordingView(
            consent: s.consent, anonymousEpoch: s.anonymousEpoch, hasUserId: s.userId != nil,
            identity: identityBytes(&s, siteId: siteId), generation: s.identityGeneration)
    }

    /// The current identity part of an envelope, encoded once per identity generation.
    func identityBytes(_ s: inout ClientState) -> [UInt8] { ScoreClient.identityBytes(&s, siteId: siteId) }

    static func identityBytes(_ s: inout ClientState, siteId: String) -> [UInt8] {
        if s.identityCache.generation != s.identityGeneration {
            var out = [UInt8]()
            EnvelopeWriter.identity(
                anonymousId: s.anonymousId, sessionId: s.sessionId, userId: s.userId, siteId: siteId,
                into: &out)
            s.identityCache = (s.identityGeneration, out)
        }
        return s.identityCache.bytes
    }

    /// Whether an envelope of `count` bytes fits a request body on its own.
    static func fitsAlone(_ count: Int) -> Bool {
        count + ScoreClient.bodyOverhead <= ScoreClient.maxBodyBytes
    }

    /// Bytes of a body around its events: `{"sentAt":"…","events":[` and `]}`.
    static let bodyOverhead = #"{"sentAt":"2026-03-01T12:00:00.000Z","events":[]}"#.utf8.count

    /// An event built under the lock (an `identify`, a `delivery_failed` notice) with the current
    /// identity: its envelope built by ``EnvelopeWriter`` at once, as a recording call's is.
    func makeEvent(
        _ s: inout ClientState, type: String, name: String, eventId: String, timestampMs: Int64, props: JSONObject,
        traits: JSONObject?, requires: UInt8, notice: Bool
    ) -> QueuedEvent {
        let (bytes, layout) = EnvelopeWriter.envelope(
            type: type, name: name, eventId: eventId, timestampMs: timestampMs, identity: identityBytes(&s),
            props: props, traits: traits, tail: envelopeTail)
        return QueuedEvent(
            eventId: eventId, name: name, timestampMs: timestampMs, anonymousEpoch: s.anonymousEpoch,
            hasUserId: s.userId != nil, critical: false, notice: notice, requires: requires, encoded: bytes,
            layout: layout)
    }

    /// Adds `e` to the queue under the cap rules of section 7.
    func enqueue(_ s: inout ClientState, _ e: QueuedEvent) {
        if e.notice {
            s.queue.append(e)
            s.noticeCount += 1
            s.writer.queue(.add(e))
            if s.noticeCount > ScoreClient.maxNotices, let i = s.queue.firstIndex(where: { $0.notice }) {
                let old = s.queue[i]
                removeFromQueue(&s, [old])
            }
            return
        }
        if let t = s.tail {
            // The tail's events are not in memory: the cap is applied when it is spliced.
            if s.queue.count - s.noticeCount + t.adds >= maxQueueSize { s.tail?.capReached = true }
        } else if s.queue.count - s.noticeCount >= maxQueueSize {
            if let i = s.queue.firstIndex(where: { !$0.critical && !$0.notice }) {
                s.counts.shed += 1
                removeFromQueue(&s, [s.queue[i]])
            } else if !e.critical {
                s.counts.shed += 1
                return
            } else if let i = s.queue.firstIndex(where: { $0.critical }) {
                let lost = s.queue[i]
                removeFromQueue(&s, [lost])
                criticalLost(&s, lost, reason: "queue_full", now: clock.nowMs(), pendingAdd: e)
            }
        }
        s.queue.append(e)
        s.writer.queue(.add(e))
        if s.periodic.everyMs != nil && s.periodic.timer == nil { armAutoFlushIfIdle(&s) }
    }

    /// Counts a lost critical event and queues its `delivery_failed` notice.
    func criticalLost(_ s: inout ClientState, _ lost: QueuedEvent, reason: String, now: Int64, pendingAdd: QueuedEvent? = nil) {
        s.counts.criticalLost += 1
        let req = ConsentCategory.analytics.bit
        guard allowed(req, s.consent) else {
            countDropped(&s, req)
            return
        }
        var props = JSONObject()
        props.appendUnchecked("originalEventId", .string(lost.eventId))
        props.appendUnchecked("originalEventName", .string(lost.name))
        props.appendUnchecked("reason", .string(reason))
        let notice = makeEvent(
            &s, type: "track", name: "delivery_failed", eventId: ids.newEventId(nowMs: now), timestampMs: now,
            props: props, traits: nil, requires: req, notice: true)
        enqueue(&s, notice)
    }

    /// Removes `events` from the queue and logs their removal.
    /// How many events leave the front of `queue` when the events just marked as left are all
    /// there (at most `marked`); `nil` when some of them are further back.
    static func leavingFront(_ queue: EventQueue, _ marked: Int) -> Int? {
        var n = 0
        var i = queue.startIndex
        while i < queue.endIndex && n < marked && !queue[i].inQueue {
            n += 1
            i += 1
        }
        // Some marked events further back: the general pass.
        return n == marked ? n : nil
    }

    func removeFromQueue(_ s: inout ClientState, _ events: [QueuedEvent]) {
        guard !events.isEmpty else { return }
        var notices = 0
        var persisted: [CompactEventId] = []
        var marked = 0
        for e in events where e.inQueue {
            e.inQueue = false
            marked += 1
            if e.notice { notices += 1 }
            // The writer skips an unpersisted add: release its bytes now.
            if !e.persisted { e.encoded = nil }
            // An unpersisted add is skipped by the writer instead (which logs a removal when
            // the event left while its add was being written).
            if e.persisted { persisted.append(e.id) }
        }
        if marked == 0 {
            // None was queued: nothing to take out.
        } else if events.count == 1, let i = s.queue.firstIndex(where: { $0 === events[0] }) {
            s.queue.remove(at: i, releasing: &s.writer.dropLater)
        } else if let removed = ScoreClient.leavingFront(s.queue, marked) {
            // A delivered batch of the oldest events: cut the front, not a pass over the queue.
            s.queue.removeFirst(removed)
        } else {
            s.queue.removeAll { !$0.inQueue }
        }
        s.noticeCount -= notices
        if !persisted.isEmpty { ScoreClient.logRemoval(&s, persisted) }
    }

    /// How long an event may stay queued (the privacy policy's retention), in milliseconds.
    var retentionMs: Int64 { Int64(privacy.retentionHours) * 3_600_000 }

    /// Drops events older than the retention cap (notices silently; critical ones are lost).
    func applyRetention(_ s: inout ClientState, now: Int64) {
        let retentionMs = self.retentionMs
        let expired = s.queue.filter { now - $0.timestampMs > retentionMs }
        guard !expired.isEmpty else { return }
        removeFromQueue(&s, expired)
        for e in expired where !e.notice {
            s.counts.expired += 1
            if e.critical { criticalLost(&s, e, reason: "age_evicted", now: now) }
        }
    }
}
