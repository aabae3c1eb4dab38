import TrackerCore

/// The device and app context of a presentation: Core's `RunContextInput`, the type
/// the onboarding tracker takes too.
@available(*, deprecated, renamed: "RunContextInput")
public typealias PaywallContext = RunContextInput

/// Where the tracker gets the context: Core's `ContextSource`.
@available(*, deprecated, renamed: "ContextSource")
public typealias PaywallContextSource = ContextSource

extension RunContextInput {
    /// The wire `context` object, with this library's `library_version` (a valid context only).
    func wire() -> JSONObject {
        paywallPresentationContext(libraryVersion: PaywallTrackerVersion.current)?.wireJSON().objectValue ?? JSONObject()
    }
}
