import TrackerCore

// The lazy launch's second step (`LaunchTail.swift`): the tail's sealed segments are indexed
// (each from its seal, as the launch indexes a sealed segment; from its frames when its seal no
// longer reads; from its intact records when neither works) and their events spliced into the
// queue right after the head's, before every event located after the tail or recorded in this
// run, exactly as if the launch had read them:
//
// - the removals of the segments after the tail apply to them (those of the tail's own segments
//   are in their seals); an event queued already (its id added again by a rewrite killed before
//   deleting the older segments) is not queued twice;
// - the categories withdrawn while the tail was unloaded remove its events requiring them (their
//   removal is logged); retention applies to them; when the queue reached its cap meanwhile
//   (counting the tail's adds), the cap is applied now, the oldest best-effort events shed first;
// - a flush selected while the tail was unloaded sends the tail's events next, then the
//   best-effort events after the tail it had selected, and goes on if it was waiting for them.
//
// Runs on the sync thread with the system scheduler (never on Swift's shared pool), as a step of
// the scheduler otherwise (tests drive it). `inspect()` waits for it; no segment is deleted or
// compacted before it (the load's check phase lasts until it ends).
extension ScoreClient {
    /// Reads the tail and splices it (see the comment at the top); the diagnostics to report.
    func spliceTail() -> [Diagnostic] {
        guard let file = store as? FileScoreStore, let unloaded = state.withLock({ $0.tail }) else { return [] }
        let (events, dead, damage, isTailId, unreadable) = ScoreClient.indexTail(unloaded, file: file)
        let resume: Int? = state.withLock { s in
            guard let t = s.tail else { return nil }
            s.tail = nil
            if !unreadable.isEmpty { s.writer.reclaimHeld = true }
            // An id queued already (a stored one added again in the tail): kept where it is.
            var twice = Set<CompactEventId>()
            for e in s.queue where e.location != nil && isTailId(e.id) { twice.insert(e.id) }
            let fresh = twice.isEmpty ? events : events.filter { !twice.contains($0.id) }
            let at = s.queue.firstIndex { !t.isBefore($0) } ?? s.queue.endIndex
            s.queue.insert(contentsOf: fresh, at: at)
            for e in fresh where e.notice { s.noticeCount += 1 }
            s.writer.deadRecords += dead + (events.count - fresh.count)
            if t.withdrawn != 0 {
                let gone = fresh.filter { $0.requires & t.withdrawn != 0 }
                if !gone.isEmpty { removeFromQueue(&s, gone) }
            }
            if t.capReached { applyCapAfterSplice(&s) }
            applyRetention(&s, now: clock.nowMs())
            var resume: Int?
            if let f = s.flight, f.deferredForTail {
                f.selected += fresh.filter { $0.inQueue && sendable($0, s) } + f.afterTail
                f.afterTail = []
                f.deferredForTail = false
                if f.parkedForTail {
                    f.parkedForTail = false
                    resume = f.id
                }
            }
            if s.periodic.everyMs != nil && s.periodic.timer == nil && hasAutoFlushWork(&s) { armAutoFlushIfIdle(&s) }
            kickWriters(&s)
            return resume
        }
        if let id = resume { scheduler.spawn { [self] in sendNextBatch(id) } }
        var diagnostics = damage.map { [$0] } ?? []
        if let (count, error) = unreadable.first.map({ (unreadable.count, $0.error) }) {
            diagnostics.append(
                Diagnostic(
                    code: "storage",
                    message:
                        "\(count) segment(s) of the stored queue could not be read (\(error)): their events stay on disk for the next launch, and no queue space is reclaimed until then"
                ))
        }
        return diagnostics
    }

    /// The queue cap applied after a splice (the queue reached it while the tail was unloaded):
    /// the oldest best-effort events are shed first, then the oldest critical ones are lost
    /// (`queue_full`), until the queue is within its cap.
    func applyCapAfterSplice(_ s: inout ClientState) {
        while s.queue.count - s.noticeCount > maxQueueSize {
            if let i = s.queue.firstIndex(where: { !$0.critical && !$0.notice }) {
                s.counts.shed += 1
                removeFromQueue(&s, [s.queue[i]])
            } else if let i = s.queue.firstIndex(where: { $0.critical }) {
                let lost = s.queue[i]
                removeFromQueue(&s, [lost])
                criticalLost(&s, lost, reason: "queue_full", now: clock.nowMs())
            } else {
                return
            }
        }
    }

    /// The tail's queued events in order, the dead records among its frames, and a diagnostic
    /// when damaged records were skipped (see the comment at the top).
    static func indexTail(_ t: LazyTail, file: FileScoreStore) -> (
        events: [QueuedEvent], dead: Int, damage: Diagnostic?, isTailId: (CompactEventId) -> Bool,
        unreadable: [(segment: Int, error: String)]
    ) {
        var index = QuickIndex(anonymousId: t.storedAnonymousId, epoch: 0)
        index.expect(fileBytes: t.adds * QuickIndex.bytesPerEventEstimate)
        var ok = true
        for n in t.segments where ok {
            let path = file.segments.path(n)
            if let seal = SegmentSeal.read(path: path) {
                ok = index.visit(seal: seal, segment: n)
            } else {
                let walked = try? AppendLog.followLengths(
                    path: path,
                    visit: { _, offset, payload, checksum in
                        index.visit(location: ScoreRecordLocation(generation: n, offset: offset), payload: payload, checksum: checksum)
                    })
                ok = walked != nil
            }
        }
        if ok {
            index.visit(removals: t.laterRemovals)
            if index.resolve() {
                let (events, dead) = index.finishEvents()
                let ids = index
                return (events, dead, nil, { ids.isQueued($0) }, [])
            }
        }
        // The careful reading: each segment's intact records, then the later removals.
        var records: [[UInt8]] = []
        var locations: [ScoreRecordLocation] = []
        var damage = AppendLog.Damage.none
        var unreadable: [(segment: Int, error: String)] = []
        for n in t.segments {
            let bytes: [UInt8]
            do {
                // Gone (nil): nothing of it to keep.
                guard let read = try FileIO.readBytes(file.segments.path(n)) else { continue }
                bytes = read
            } catch {
                unreadable.append((n, "\(error)"))
                continue
            }
            let scan = AppendLog.scan(bytes)
            records += scan.records
            locations += scan.offsets.map { ScoreRecordLocation(generation: n, offset: $0) }
            damage.skippedRegions += scan.damage.skippedRegions
            damage.skippedBytes += scan.damage.skippedBytes
        }
        if !t.laterRemovals.isEmpty {
            records.append(QueueRecord.remove(t.laterRemovals.map { CompactEventId.uuid($0.0, $0.1) }))
            locations.append(ScoreRecordLocation(generation: -1, offset: 0))
        }
        var scratch = ClientState(consent: .none, anonymousId: t.storedAnonymousId, sessionId: "")
        loadQueue(records, locations: locations, into: &scratch)
        let diagnostic = damage.hasSkippedRegions ? queueDamaged(bytes: damage.skippedBytes, regions: damage.skippedRegions) : nil
        let ids = Set(scratch.queue.map(\.id))
        return (
            Array(scratch.queue), max(0, scratch.writer.deadRecords - (t.laterRemovals.isEmpty ? 0 : 1)), diagnostic,
            { ids.contains($0) }, unreadable
        )
    }
}
