/// The version of the `Onboarding` package: the top release of its `CHANGELOG.md` (a test ties
/// the two together). Sent as `context.library_version`.
public enum OnboardingTrackerVersion {
    /// Semantic version string.
    public static let current = "0.1.0"
}
