import TrackerCore

extension LogSubsystem {
    /// The unified-log subsystem of the Score tracker (its default diagnostic handler's).
    @usableFromInline static let score = "com.rocapine.score"
}
