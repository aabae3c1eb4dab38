import TrackerCore

// The lifecycle triggers of flushing (split out of `Flush.swift`, issue 35 item 6: no Score
// source file over 600 lines): foreground, background, network, the periodic flush and the
// lifecycle binding.
extension ScoreClient {
    // MARK: - Lifecycle

    /// The app came to the foreground: flush, and restart the periodic flush when it is on.
    public func onForeground() {
        let rotate: String? = ids.newSessionIdIfNeeded(self)
        state.withLock { s in
            if let rotate {
                s.sessionId = rotate
                s.identityGeneration += 1
                publishView(&s)
            }
            s.periodic.inBackground = false
            s.periodic.backgroundSinceMs = nil
            restartAutoFlushTimer(&s)
        }
        startFlush()
    }

    /// The app went to the background: pause the periodic flush and run one flush bounded by the
    /// background budget (5 s by default).
    public func onBackground() {
        let (budget, source): (Int64, AppLifecycleSource?) = state.withLock { s in
            s.periodic.inBackground = true
            s.periodic.backgroundSinceMs = clock.nowMs()
            if let t = s.periodic.timer { scheduler.cancel(t) }
            s.periodic.timer = nil
            return (s.periodic.binding?.budgetMs ?? 5_000, s.periodic.binding?.source)
        }
        let taskId = source?.beginBackgroundTask()
        startFlush()
        attachBackground(source: source, taskId: taskId, deadlineMs: clock.nowMs() + budget)
    }

    /// Binds a background flush's task and budget to the flush in flight, or ends the task when
    /// none runs. Before the start-up load they wait for the flush that starts after it.
    func attachBackground(source: AppLifecycleSource?, taskId: BackgroundTaskID?, deadlineMs: Int64) {
        let ended: Bool = state.withLock { s in
            guard let f = s.flight else {
                // The flush may already be done, its removal still being written: the task
                // waits for that write too (see `complete`).
                if let w = s.finishing.last, let source, let taskId {
                    w.backgroundTasks.append((source, taskId))
                    return false
                }
                if s.loaded { return true }
                s.backgroundBeforeLoad.append(DeferredBackground(source: source, taskId: taskId, deadlineMs: deadlineMs))
                return false
            }
            if let source, let taskId { f.backgroundTasks.append((source, taskId)) }
            if f.budgetTimer == nil {
                let id = f.id
                f.budgetTimer = scheduler.schedule(afterMs: max(0, deadlineMs - clock.nowMs())) { [self] in abandon(id) }
            }
            return false
        }
        if ended, let source, let taskId { source.endBackgroundTask(taskId) }
    }

    /// Connectivity came back: flush.
    public func onNetworkAvailable() {
        startFlush()
    }

    /// Turns the periodic flush on (first tick one interval from now).
    public func startAutoFlush(everySeconds: Double = 30) {
        state.withLock { s in
            s.periodic.everyMs = max(1, Int64((everySeconds * 1000).rounded()))
            restartAutoFlushTimer(&s)
        }
    }

    /// Turns the periodic flush off.
    public func stopAutoFlush() {
        state.withLock { s in
            s.periodic.everyMs = nil
            if let t = s.periodic.timer { scheduler.cancel(t) }
            s.periodic.timer = nil
        }
    }

    /// Starts the periodic flush's period now; its timer is armed only when there is work (see
    /// ``hasAutoFlushWork(_:)``): an idle client has no timer to wake it.
    func restartAutoFlushTimer(_ s: inout ClientState) {
        if let t = s.periodic.timer { scheduler.cancel(t) }
        s.periodic.timer = nil
        s.periodic.anchorMs = clock.nowMs()
        guard let every = s.periodic.everyMs, !s.periodic.inBackground, hasAutoFlushWork(&s) else { return }
        s.periodic.timer = scheduler.schedule(afterMs: every) { [self] in autoFlushTick() }
    }

    /// Arms the periodic flush's timer, when it is on and not armed, for the period's next tick
    /// (work arrived after an idle spell).
    func armAutoFlushIfIdle(_ s: inout ClientState) {
        guard let every = s.periodic.everyMs, s.periodic.timer == nil, !s.periodic.inBackground else { return }
        let now = clock.nowMs()
        let due = s.periodic.anchorMs + (max(0, now - s.periodic.anchorMs) / every + 1) * every
        s.periodic.timer = scheduler.schedule(afterMs: due - now) { [self] in autoFlushTick() }
    }

    /// Whether a periodic flush would have something to do: a queued event whose consent is
    /// granted, or a link-anonymous request that can be made (analytics granted, a token or a
    /// provider known).
    func hasAutoFlushWork(_ s: inout ClientState) -> Bool {
        if let uid = s.userId, s.consent.analytics, s.tokens.token != nil || s.tokens.provider != nil,
            !s.linked.contains(linkKey(s.anonymousId, uid))
        {
            return true
        }
        return s.queue.contains { sendable($0, s) }
    }

    /// Whether a flush may send `e` now: its consent is granted and it is not held (see
    /// ``heldWhileFailing(_:_:)``).
    func sendable(_ e: QueuedEvent, _ s: ClientState) -> Bool {
        allowed(e.requires, s.consent) && !heldWhileFailing(e, s)
    }

    /// Whether `e` is held back from sending because the store cannot write now (a read-only
    /// launch, a full disk): a stored event's removal after a 2xx could not be recorded, so the
    /// next launch would send it again. It waits until a write succeeds. An event recorded
    /// meanwhile, not stored, is sent from memory: no later launch can send it again.
    func heldWhileFailing(_ e: QueuedEvent, _ s: ClientState) -> Bool {
        s.storeFailing && e.persisted
    }

    func autoFlushTick() {
        let go: Bool = state.withLock { s in
            guard s.periodic.timer != nil else { return false }
            restartAutoFlushTimer(&s)
            return true
        }
        if go { startFlush() }
    }

    /// Binds the tracker to a lifecycle source: flush in the foreground (and every
    /// `autoFlushEverySeconds`, `nil` for none), a bounded flush in the background, a flush when
    /// the network comes back. Binding again replaces the previous binding.
    ///
    /// Returns the binding, the same kind as the onboarding and paywall trackers' (issue 37 item
    /// 6): keep it and call its `unbind()` to stop observing and stop the periodic flush. A
    /// binding replaced since then is already over: its `unbind()` does nothing.
    @discardableResult
    public func bindToAppLifecycle(
        source: AppLifecycleSource, autoFlushEverySeconds: Double? = 30,
        backgroundBudgetSeconds: Double = 5
    ) -> AppLifecycleBinding {
        unbindLifecycle(onlyId: nil)
        let binding = LifecycleBinding(
            source: source, autoFlushMs: autoFlushEverySeconds.map { max(1, Int64(($0 * 1000).rounded())) },
            budgetMs: Int64((max(0, backgroundBudgetSeconds) * 1000).rounded()))
        let initial = source.currentState  // never under the lock: a source may reach the main thread
        state.withLock { s in
            s.periodic.binding = binding
            s.periodic.everyMs = binding.autoFlushMs
            s.periodic.inBackground = initial == .background
            if s.periodic.inBackground { s.periodic.backgroundSinceMs = clock.nowMs() }
        }
        source.startObserving { [weak self] event in
            guard let self else { return }
            guard self.state.withLock({ $0.periodic.binding?.source === source }) else { return }
            switch event {
            case .foreground: self.onForeground()
            case .background: self.onBackground()
            case .networkAvailable: self.onNetworkAvailable()
            case .backgroundTimeExpired: self.backgroundTimeExpired()
            }
        }
        if initial == .foreground { onForeground() }
        return ScoreBindingSystem.binding(client: self, id: binding.id)
    }

    /// Stops observing the lifecycle source and stops the periodic flush.
    @available(*, deprecated, message: "call unbind() on the AppLifecycleBinding that bindToAppLifecycle returns")
    public func unbindAppLifecycle() {
        unbindLifecycle(onlyId: nil)
    }

    /// Ends the current binding (only when its id is `onlyId`, when given).
    func unbindLifecycle(onlyId: UInt64?) {
        let source: AppLifecycleSource? = state.withLock { s in
            if let onlyId, s.periodic.binding?.id != onlyId { return nil }
            let source = s.periodic.binding?.source
            s.periodic.binding = nil
            s.periodic.everyMs = nil
            if let t = s.periodic.timer { scheduler.cancel(t) }
            s.periodic.timer = nil
            return source
        }
        source?.stopObserving()
    }
}

extension ScoreIdSource {
    /// A new session id when the app was in the background for at least 30 minutes.
    func newSessionIdIfNeeded(_ client: ScoreClient) -> String? {
        let due: Bool = client.state.withLock { s in
            guard let since = s.periodic.backgroundSinceMs else { return false }
            return client.clock.nowMs() - since >= ScoreClient.sessionTimeoutMs
        }
        return due ? newSessionId() : nil
    }
}
