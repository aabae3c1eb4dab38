import Foundation
import TrackerCore

extension RocalyticsConfiguration {
    /// The folder of the default ``storage``: Core's `StorageLocation.defaultFolder` for
    /// `rocalytics-client` (`<Application Support>/Rocalytics/rocalytics-client` on iOS, iPadOS
    /// and visionOS, Caches on tvOS); elsewhere `$XDG_DATA_HOME/rocalytics-client` (default
    /// `~/.local/share`). No file I/O.
    public static func defaultStorageDirectory() -> String {
        #if canImport(Darwin)
            let system = AppleStorageDirectory.systemDirectories()
            let hostBase = system?.applicationSupport ?? NSTemporaryDirectory()
        #else
            func env(_ name: String) -> String? { getenv(name).map { String(cString: $0) } }
            let system: StorageLocation.SystemDirectories? = nil
            let hostBase =
                env("XDG_DATA_HOME").flatMap { $0.isEmpty ? nil : $0 }
                ?? ((env("HOME") ?? env("TMPDIR") ?? "/tmp") + "/.local/share")
        #endif
        return StorageLocation.defaultFolder("rocalytics-client", system: system, hostFolder: hostBase + "/rocalytics-client")
    }
}
