/// The version of the `RocalyticsClient` package: the top release heading of its `CHANGELOG.md`
/// (a test ties the two together).
public enum RocalyticsClientVersion {
    /// Semantic version string.
    public static let current = "0.1.0"
}
