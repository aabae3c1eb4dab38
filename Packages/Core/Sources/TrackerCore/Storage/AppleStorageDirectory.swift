#if canImport(Darwin)
    import Foundation

    /// Applies ``StorageLocation/standard(for:)`` through the OS (Apple platforms only; every
    /// decision lives in ``StorageLocation``).
    public enum AppleStorageDirectory {
        /// The app's Application Support and Caches directories (no file I/O); `nil` when the
        /// OS names neither.
        public static func systemDirectories() -> StorageLocation.SystemDirectories? {
            let fm = FileManager.default
            guard let support = fm.urls(for: .applicationSupportDirectory, in: .userDomainMask).first,
                let caches = fm.urls(for: .cachesDirectory, in: .userDomainMask).first
            else { return nil }
            return StorageLocation.SystemDirectories(
                applicationSupport: support.path, caches: caches.path, appIdentifier: appIdentifier)
        }

        /// The app's bundle identifier, or its process name without one (a command-line tool).
        static var appIdentifier: String { Bundle.main.bundleIdentifier ?? ProcessInfo.processInfo.processName }

        /// Creates `folder` (and its parents) when missing, mode 0700, with `location`'s
        /// protection class, and marks it excluded from backup when `location` says so. Does
        /// file I/O: call it off the main thread.
        public static func apply(_ location: StorageLocation, to folder: String) throws {
            let fm = FileManager.default
            var url = URL(fileURLWithPath: folder, isDirectory: true)
            var attributes: [FileAttributeKey: Any] = [.posixPermissions: 0o700]
            if location.protection == .completeUntilFirstUserAuthentication {
                attributes[.protectionKey] = FileProtectionType.completeUntilFirstUserAuthentication
            }
            try fm.createDirectory(at: url, withIntermediateDirectories: true, attributes: attributes)
            if location.excludedFromBackup {
                // URLResourceValues.isExcludedFromBackup; set on the folder, it covers what it holds.
                var values = URLResourceValues()
                values.isExcludedFromBackup = true
                try url.setResourceValues(values)
            }
        }

        /// Creates (when missing) and returns the folder of SDK `name` in the standard location,
        /// excluded from backup and protected as the policy says. Does file I/O: call it off the
        /// main thread, e.g. before creating a ``FileKeyValueStorage`` in a background task.
        public static func prepare(_ name: String, location: StorageLocation = .standard()) throws -> String {
            let fm = FileManager.default
            let search: FileManager.SearchPathDirectory = location.base == .caches ? .cachesDirectory : .applicationSupportDirectory
            // FileManager.url(for:in:appropriateFor:create:) creates Application Support when missing.
            let base = try fm.url(for: search, in: .userDomainMask, appropriateFor: nil, create: true)
            let appBase = StorageLocation.appFolder(basePath: base.path, platform: .current, appIdentifier: appIdentifier)
            let folder = StorageLocation.folder(name, under: appBase)
            try apply(location, to: folder)
            return folder
        }
    }
#endif
