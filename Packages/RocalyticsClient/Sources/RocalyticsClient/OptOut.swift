import TrackerCore

extension RocalyticsClient {
    // MARK: - Opt-out

    /// Whether the app opted this device out of Rocalytics (``optOut()``). Persisted: read from
    /// ``RocalyticsConfiguration/storage`` during start-up, so it reflects an earlier launch's
    /// choice once ``ready()`` has returned.
    public var isOptedOut: Bool { recorded.isOptedOut }

    /// Opts this device out, for this launch and the next ones (kept in
    /// ``RocalyticsConfiguration/storage``): nothing is sent any more. Requests recorded and not
    /// yet sent are dropped (an attempt already on the wire is not recalled, and never retried);
    /// the `track…`, `identify` and `trackOnboarding` calls return without sending;
    /// ``getDemandScore(_:)`` throws; the sinks answer `ignored`, so the trackers drop their
    /// snapshots; start-up sends no identify, install or install ping. The roca id is kept.
    /// Never throws, never waits.
    public func optOut() { recorded.optOut() }

    /// Undoes ``optOut()``: sending resumes with what is recorded from now on. The start-up
    /// requests skipped meanwhile (the install) are sent at the next launch.
    public func optIn() { recorded.optIn() }

    /// Resolves once the recorded requests' and the opt-out's storage operations so far have
    /// finished (for tests and for an app about to exit).
    public func storageIdle() async { await recorded.idle() }
}
