/// A store over the same files as a ``FileKeyValueStorage`` or a ``StandardFileStorage`` (one file
/// per key in the same folder, written the same way: atomically and durably), whose file I/O runs
/// on a ``SerialThread`` its owner gives rather than on the queue of the store it stands for.
///
/// An engine whose writes must not wait behind another engine's `fsync` on a store the app shares
/// between them (the onboarding tracker's outbox, on the store the app also gives the paywall
/// tracker) writes its own keys through one of these: the shared store's queue runs one operation
/// at a time, so a write of another key queued behind a slow `fsync` there waits for it. Operations
/// apply in call order on the thread; the owner must be the only writer of its keys. Creating one
/// does no file I/O; the folder is prepared (as the store it stands for prepares it) on the thread
/// before the first operation.
public final class ThreadFileStorage: KeyValueStorage, Sendable {
    /// Where the files live.
    public let directory: String
    private let thread: SerialThread
    /// Names the files (the same names as the store this one stands for).
    private let files: FileKeyValueStorage
    private let prepareFolder: @Sendable () throws -> Void
    private let prepared = Locked(false)

    /// A store over `files`' folder whose I/O runs on `thread`; `prepare` runs on the thread before
    /// the first operation (and again after one that failed).
    public init(files: FileKeyValueStorage, thread: SerialThread, prepare: @escaping @Sendable () throws -> Void = {}) {
        directory = files.directory
        self.files = files
        self.thread = thread
        prepareFolder = prepare
    }

    /// The same files as `storage` with their I/O on `thread`, when `storage` is a
    /// ``FileKeyValueStorage`` or a ``StandardFileStorage`` (whose folder is then prepared with its
    /// location policy); `nil` for any other store.
    public static func sameFiles(as storage: any KeyValueStorage, on thread: SerialThread) -> ThreadFileStorage? {
        if let files = storage as? FileKeyValueStorage { return ThreadFileStorage(files: files, thread: thread) }
        guard let standard = storage as? StandardFileStorage else { return nil }
        let (directory, location) = (standard.directory, standard.location)
        return ThreadFileStorage(files: FileKeyValueStorage(directory: directory), thread: thread) {
            try StandardFileStorage.prepareFolder(directory, location: location)
        }
    }

    public func getItem(_ key: String) async throws -> String? {
        let path = files.path(for: key)
        return try await run { try FileIO.read(path) }
    }

    public func setItem(_ key: String, _ value: String) async throws {
        let (path, directory) = (files.path(for: key), directory)
        try await run { try FileIO.writeAtomically(Array(value.utf8), to: path, directory: directory) }
    }

    public func removeItem(_ key: String) async throws {
        let (path, directory) = (files.path(for: key), directory)
        try await run { try FileIO.remove(path, directory: directory) }
    }

    private func run<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
        let (prepared, prepareFolder) = (prepared, prepareFolder)
        return try await withCheckedThrowingContinuation { continuation in
            thread.run {
                continuation.resume(
                    with: Result {
                        if !prepared.value {
                            try prepareFolder()
                            prepared.withLock { $0 = true }
                        }
                        return try body()
                    })
            }
        }
    }
}
