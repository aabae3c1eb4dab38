import TrackerCore

extension LogSubsystem {
    /// The unified-log subsystem of the Rocalytics client (its default diagnostic handler's).
    @usableFromInline static let rocalyticsClient = "com.rocapine.rocalytics.client"
}
