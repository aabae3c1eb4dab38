#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// Whether the process renders Xcode Previews (issue 37 item 7): nothing may be written or sent
/// from a preview. Xcode sets `XCODE_RUNNING_FOR_PREVIEWS=1` in the environment of the process
/// that renders them.
public enum XcodePreviews {
    /// The environment variable Xcode sets.
    public static let environmentVariable = "XCODE_RUNNING_FOR_PREVIEWS"

    /// Whether this process renders Xcode Previews (read from the environment at each call).
    public static var isRunning: Bool {
        isRunning(environmentValue: getenv(environmentVariable).map { String(cString: $0) })
    }

    /// Whether `value`, the variable's value (`nil` when unset), says previews are rendered: `"1"`
    /// (Xcode's value), or `"true"`/`"yes"` in any case.
    public static func isRunning(environmentValue value: String?) -> Bool {
        guard let value else { return false }
        switch value.lowercased() {
        case "1", "true", "yes": return true
        default: return false
        }
    }
}
