/// Build facts of the umbrella package.
public enum RocalyticsKitVersion {
    /// The package release, the top release heading of `Packages/Rocalytics/CHANGELOG.md` (a test
    /// ties them together).
    public static let current = "0.1.0"
}
