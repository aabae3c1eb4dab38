import TrackerCore

// The paywall tracker's opt-out switch (issue 37 item 3).
extension PaywallPresentationTracker {
    /// The stored value while opted out (``optOut()``): the switch alone, as nothing is kept beside it.
    static let optedOutMarker = #"{"optedOut":true}"#

    /// Whether ``optOut()`` is in force (this session's call, or the stored switch once the launch
    /// read has found it).
    public var isOptedOut: Bool { state.withLock { $0.optedOut } }

    /// Stops sending (issue 37 item 3): every unsent snapshot is settled as ignored instead of
    /// sent, `start()` returns `nil` (one `opted-out` diagnostic per opt-out period), and the switch
    /// is stored (the stored value becomes `{"optedOut":true}`, as nothing else is kept) so later
    /// launches stay opted out until ``optIn()``. A launch reads the switch with the stored value; a
    /// `start()` made before that read finishes is recorded and, if the read finds the switch on,
    /// is settled as ignored when its send comes (with the Rocalytics sink the client's own stored
    /// opt-out also answers `ignored`).
    public func optOut() { setOptedOut(true) }

    /// Sends again (stored).
    public func optIn() { setOptedOut(false) }

    private func setOptedOut(_ on: Bool) {
        state.withLock { s in
            s.optedOut = on
            s.optChosen = true
            if !on { s.optOutReported = false }
            if on {
                // Forgotten: nothing recorded before the opt-out is stored or sent after it (the
                // deliveries settle what they hold as ignored).
                s.pending = [:]
                s.pendingBytes = [:]
                s.pendingOrder = []
            }
        }
        persist()
    }
}
