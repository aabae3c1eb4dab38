/// The version of the `TrackerCore` package: the top release heading of its `CHANGELOG.md`
/// (a test ties the two together).
public enum TrackerCoreVersion {
    /// Semantic version string.
    public static let current = "0.1.0"
}
