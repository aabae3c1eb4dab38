import TrackerCore

/// The device and app context of a presentation: Core's `RunContextInput`, the type
/// the onboarding tracker takes too.
@available(*, deprecated, renamed: "RunContextInput")
public typealias PaywallContext = RunContextInput

/// Where the tracker gets the context: Core's `ContextSource`.
@available(*, deprecated, renamed: "ContextSource")
public typealias PaywallContextSource = ContextSource

extension RunContextInput {
    /// The wire `context`, with this library's `library_version`; `nil` for a platform the
    /// contract does not accept (`RunContextInput.problems` reports it).
    func wire() -> PaywallPresentationSnapshot.Context? {
        paywallPresentationContext(libraryVersion: PaywallTrackerVersion.current)
    }
}
