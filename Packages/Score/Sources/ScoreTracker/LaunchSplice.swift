import TrackerCore

// The lazy launch's second step (`LaunchTail.swift`): the tail's sealed segments are indexed
// (each from its seal, as the launch indexes a sealed segment; from its frames when its seal no
// longer reads; from its intact records when neither works) and their events spliced into the
// queue right after the head's, before every event located after the tail or recorded in this
// run, exactly as if the launch had read them:
//
// - the removals of the segments after the tail apply to them (those of the tail's own segments
//   are in their seals); an event the launch's load queued already (its id added again by a
//   rewrite killed before deleting the older segments) is not queued twice, even when it was
//   sent since;
// - the categories withdrawn while the tail was unloaded remove its events requiring them (their
//   removal is logged); retention applies to them; when the queue reached its cap meanwhile
//   (counting the tail's adds), the cap is applied now, the oldest best-effort events shed first;
// - a flush selected while the tail was unloaded sends the tail's events next, then the
//   best-effort events after the tail it had selected, and goes on if it was waiting for them.
//
// Before it, once the head is checked, the launch counts the tail's events from its seals
// (`TailCount`) and the load ends: `inspect()` answers from the count while the tail is unloaded
// (issue 35: "ready" flat in queue depth). When the count cannot say what the splice will queue
// (not counted, a category its events require withdrawn, the cap reached), `inspect()` waits for
// the splice, or runs it itself when the background step has not taken it yet.
//
// Runs on the sync thread with the system scheduler (never on Swift's shared pool), as a step of
// the scheduler otherwise (tests drive it). No segment is deleted or compacted before it ends
// (`ClientState.reclamationBlocked`).
extension ScoreClient {
    /// Takes the splice of the tail (see ``LazyTail/claimed``): the tail, or `nil` when there is
    /// none or another step took it.
    func claimSplice() -> LazyTail? {
        state.withLock { s in
            guard let t = s.tail, !t.claimed else { return nil }
            s.tail?.claimed = true
            return t
        }
    }

    /// Splices the tail taken with ``claimSplice()``, then ends the launch's background work
    /// (reclamation, diagnostics, seals). The tail is read again, not taken from the count's
    /// reading: a segment that no longer reads is found here (and kept, SC321).
    func spliceAndFinish(_ unloaded: LazyTail) {
        let diagnostics = spliceTail(unloaded)
        tailDone.leave()
        reclaimSegmentsIfDue()
        for d in diagnostics { diagnose(d) }
        sealSegmentsFoundUnsealed()
    }

    /// `inspect()`'s wait for the tail: none when there is no tail or its count holds; else the
    /// splice, run here when no step has taken it yet (an `inspect()` on the sync thread, where
    /// the background step waits behind it), waited for otherwise.
    func waitForTailUnlessCounted() {
        enum Step {
            case done
            case wait
            case run(LazyTail)
        }
        let step: Step = state.withLock { s in
            guard let t = s.tail, !t.countHolds else { return .done }
            if t.claimed { return .wait }
            s.tail?.claimed = true
            return .run(t)
        }
        switch step {
        case .done: return
        case .wait: tailDone.wait()
        case .run(let t): spliceAndFinish(t)
        }
    }

    /// Reads the tail and splices it (see the comment at the top); the diagnostics to report.
    func spliceTail(_ unloaded: LazyTail) -> [Diagnostic] {
        guard let file = store as? FileScoreStore else {
            // (Never: only a file store's load leaves a tail.) Dropped, so that no `inspect()`
            // waits for it.
            state.withLock { $0.tail = nil }
            return []
        }
        let (events, dead, damage, unreadable) = ScoreClient.indexTail(unloaded, file: file)
        let resume: Int? = state.withLock { s in
            guard let t = s.tail else { return nil }
            s.tail = nil
            if !unreadable.isEmpty { s.writer.reclaimHeld = true }
            // An id the launch's load queued already (a stored one added again in the tail): not
            // queued twice (as the count, `TailCount`, leaves it out).
            let fresh = events.filter { e in
                guard case .uuid(let hi, let lo) = e.id else { return true }
                return !t.loaded.contains(hi, lo)
            }
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
        events: [QueuedEvent], dead: Int, damage: Diagnostic?, unreadable: [(segment: Int, error: String)]
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
                return (events, dead, nil, [])
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
        return (Array(scratch.queue), max(0, scratch.writer.deadRecords - (t.laterRemovals.isEmpty ? 0 : 1)), diagnostic, unreadable)
    }
}
