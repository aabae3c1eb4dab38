/// Build facts of the Score tracker package.
public enum ScoreSDK {
    /// The package release, the top release heading of `Packages/Score/CHANGELOG.md` (a test ties
    /// them together). Sent as `sdk.version` in every envelope.
    public static let version = "0.1.0"

    /// The SDK name sent as `sdk.name`, from the platform this build targets.
    public static let name: String = {
        #if os(iOS)
            return "score-tracker-ios"
        #elseif os(macOS)
            return "score-tracker-macos"
        #elseif os(tvOS)
            return "score-tracker-tvos"
        #elseif os(watchOS)
            return "score-tracker-watchos"
        #elseif os(visionOS)
            return "score-tracker-visionos"
        #elseif os(Android)
            return "score-tracker-android"
        #elseif os(Linux)
            return "score-tracker-linux"
        #elseif os(Windows)
            return "score-tracker-windows"
        #else
            return "score-tracker-unknown"
        #endif
    }()
}
