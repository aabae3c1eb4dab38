import TrackerCore

extension LogSubsystem {
    /// The unified-log subsystem of the paywall tracker (its default diagnostic handler's).
    @usableFromInline static let paywall = "com.rocapine.rocalytics.paywall"
}
