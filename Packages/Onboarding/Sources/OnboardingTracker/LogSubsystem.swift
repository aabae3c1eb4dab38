import TrackerCore

extension LogSubsystem {
    /// The unified-log subsystem of the onboarding tracker (its default diagnostic handler's).
    @usableFromInline static let onboarding = "com.rocapine.rocalytics.onboarding"
}
