import Dispatch

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// The default store of the onboarding and paywall trackers (issue 37 item 1): a
/// ``FileKeyValueStorage`` in the SDK's default folder, created synchronously, so that set-up fits
/// in `App.init()`. Creating it does no file I/O: the folder is computed from the platform's
/// directories (``StorageLocation/defaultFolder(_:platform:system:hostFolder:)``) and prepared on
/// the store's own queue before its first read or write (created with mode 0700, and on Apple
/// platforms with the location's protection class and backup exclusion), as Score's default store
/// prepares its directory on its own I/O. A preparation that fails (a locked device before its
/// first unlock, a full disk) fails that call, and the next call tries again.
///
/// ```swift
/// let storage = StandardFileStorage()  // Rocalytics/trackers in Application Support
/// ```
public final class StandardFileStorage: KeyValueStorage, Sendable {
    /// Where the files live.
    public let directory: String
    /// The location policy applied when the folder is created.
    public let location: StorageLocation
    private let files: FileKeyValueStorage
    private let queue = DispatchQueue(label: "tracker.standard-storage")
    private let prepared = Locked(false)

    /// A store in the default folder of SDK `name` (`trackers` by default: the onboarding and
    /// paywall trackers use different keys, so they can share it): `<Application Support>/Rocalytics/<name>`
    /// on Apple platforms (Caches on tvOS), `$XDG_DATA_HOME` (or `~/.local/share`)`/Rocalytics/<name>`
    /// elsewhere. No file I/O here.
    public convenience init(name: String = "trackers", location: StorageLocation = .standard()) {
        self.init(directory: Self.defaultDirectory(name: name), location: location)
    }

    /// A store in `directory`, prepared (with `location`'s policy) on its own queue before its
    /// first read or write. No file I/O here.
    public init(directory: String, location: StorageLocation = .standard()) {
        self.directory = directory
        self.location = location
        files = FileKeyValueStorage(directory: directory)
    }

    /// The default folder of SDK `name` on this platform (no file I/O).
    public static func defaultDirectory(name: String) -> String {
        #if canImport(Darwin)
            let system = AppleStorageDirectory.systemDirectories()
            let host = system?.applicationSupport ?? "/tmp"
        #else
            func env(_ key: String) -> String? { getenv(key).map { String(cString: $0) }.flatMap { $0.isEmpty ? nil : $0 } }
            let system: StorageLocation.SystemDirectories? = nil
            let host = env("XDG_DATA_HOME") ?? ((env("HOME") ?? env("TMPDIR") ?? "/tmp") + "/.local/share")
        #endif
        return StorageLocation.defaultFolder(name, system: system, hostFolder: StorageLocation.folder(name, under: host))
    }

    /// Whether the folder has been prepared (for tests).
    public var isPrepared: Bool { prepared.value }

    public func getItem(_ key: String) async throws -> String? {
        try await prepare()
        return try await files.getItem(key)
    }

    public func setItem(_ key: String, _ value: String) async throws {
        try await prepare()
        try await files.setItem(key, value)
    }

    public func removeItem(_ key: String) async throws {
        try await prepare()
        try await files.removeItem(key)
    }

    /// Prepares the folder once, on this store's queue (never on the caller's thread).
    private func prepare() async throws {
        if prepared.value { return }
        let directory = directory
        let location = location
        let prepared = prepared
        try await withCheckedThrowingContinuation { (c: CheckedContinuation<Void, any Error>) in
            queue.async {
                c.resume(
                    with: Result {
                        if prepared.value { return }
                        try Self.prepareFolder(directory, location: location)
                        prepared.withLock { $0 = true }
                    })
            }
        }
    }

    /// Creates `directory` with `location`'s policy (on Apple platforms its protection class and
    /// backup exclusion; elsewhere just the folder). Blocking: call it off the caller's thread.
    static func prepareFolder(_ directory: String, location: StorageLocation) throws {
        #if canImport(Darwin)
            try AppleStorageDirectory.apply(location, to: directory)
        #else
            _ = location
            try FileIO.ensureDirectory(directory)
        #endif
    }
}
