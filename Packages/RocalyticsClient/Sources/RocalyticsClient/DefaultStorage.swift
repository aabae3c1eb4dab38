import TrackerCore

extension RocalyticsConfiguration {
    /// The folder of the default ``storage``: Core's standard folder for `rocalytics-client`
    /// (`<Application Support>/Rocalytics/rocalytics-client` on iOS, iPadOS and visionOS, Caches
    /// on tvOS; `$XDG_DATA_HOME` or `~/.local/share`, then `/Rocalytics/rocalytics-client`,
    /// elsewhere), as `StandardFileStorage` computes it. No file I/O.
    public static func defaultStorageDirectory() -> String {
        StandardFileStorage.defaultDirectory(name: "rocalytics-client")
    }
}
