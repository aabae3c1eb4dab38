/// The version of the `Paywall` package: the top release heading of its `CHANGELOG.md` (a test
/// ties the two together). Sent as `context.library_version` in every snapshot.
public enum PaywallTrackerVersion {
    /// Semantic version string.
    public static let current = "0.1.0"
}
