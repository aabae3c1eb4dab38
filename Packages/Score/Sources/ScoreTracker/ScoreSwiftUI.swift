// SwiftUI integration (issue 37 item 7): thin. The decisions are portable and tested on Linux:
// when a screen is entered (Core's `ViewPresence`) and whether Xcode Previews run (Core's
// `RuntimeEnvironment.isXcodePreview`, which makes the client inert, see
// `ScoreConfiguration.runningForPreviews`).
#if canImport(SwiftUI)
    import SwiftUI
    import TrackerCore

    private struct ScoreClientKey: EnvironmentKey {
        static let defaultValue: ScoreClient? = nil
    }

    extension EnvironmentValues {
        /// The client that `scoreScreen(_:properties:)` records with; `nil` (no
        /// recording) until set with `scoreClient(_:)`.
        public var scoreClient: ScoreClient? {
            get { self[ScoreClientKey.self] }
            set { self[ScoreClientKey.self] = newValue }
        }
    }

    @available(iOS 15, macOS 12, tvOS 15, visionOS 1, *)
    private struct ScoreScreenModifier: ViewModifier {
        let name: String
        let properties: [String: Any]
        @Environment(\.scoreClient) private var client
        @State private var presence = ViewPresence()

        func body(content: Content) -> some View {
            content
                .onAppear {
                    if presence.appear() { client?.screen(name, properties: properties) }
                }
                .onDisappear { _ = presence.disappear() }
        }
    }

    @available(iOS 15, macOS 12, tvOS 15, visionOS 1, *)
    extension View {
        /// Records a screen view (``ScoreClient/screen(_:properties:)``) when this view appears:
        /// once per appearance, however many times SwiftUI calls `onAppear` while it is shown.
        /// Uses the client set with `scoreClient(_:)` on this view or an ancestor.
        public func scoreScreen(_ name: String, properties: [String: Any] = [:]) -> some View {
            modifier(ScoreScreenModifier(name: name, properties: properties))
        }

        /// Sets the client that `scoreScreen(_:properties:)` records with, for this view and its
        /// descendants.
        public func scoreClient(_ client: ScoreClient) -> some View {
            environment(\.scoreClient, client)
        }
    }
#endif
