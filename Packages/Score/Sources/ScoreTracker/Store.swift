import TrackerCore

#if canImport(Darwin)
    import Foundation
#elseif canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif
#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// Where a queue record lives in a store that can read records back.
public struct ScoreRecordLocation: Sendable, Hashable {
    /// The log file's generation (bumped by each compaction).
    public let generation: Int
    /// The record's frame offset in that generation's file.
    public let offset: Int

    /// Creates a location.
    public init(generation: Int, offset: Int) {
        self.generation = generation
        self.offset = offset
    }
}

/// What a ``ScoreStore`` holds at start-up.
public struct ScoreStoreContents: Sendable, Equatable {
    /// The queue log's intact records, in order.
    public var queueRecords: [[UInt8]]
    /// Where each record lives, when the store can read records back (then the client keeps
    /// only the locations in memory, not the events' bytes).
    public var queueLocations: [ScoreRecordLocation]?
    /// The identity file (`anonymousId`, `userId`, linked pairs), when present.
    public var identity: [UInt8]?
    /// Whether the queue could only be read, not opened for writing (a read-only directory or
    /// file system): the records are held (not sent, since their removal could not be recorded)
    /// and nothing new is stored until writing works again.
    public var readOnly: Bool
    /// Damaged regions the queue log's load skipped (the client reports them as a `storage`
    /// diagnostic); `.none` when the log was intact or the store keeps no log.
    public var queueDamage: AppendLog.Damage = .none

    /// Creates contents.
    public init(
        queueRecords: [[UInt8]] = [], queueLocations: [ScoreRecordLocation]? = nil, identity: [UInt8]? = nil,
        readOnly: Bool = false, queueDamage: AppendLog.Damage = .none
    ) {
        self.queueRecords = queueRecords
        self.queueLocations = queueLocations
        self.identity = identity
        self.readOnly = readOnly
        self.queueDamage = queueDamage
    }
}

/// Durable storage of a ``ScoreClient``: an append-only queue log and a small identity file.
///
/// `load()` runs once, at construction; the writes run off the caller's thread, one at a time
/// for the queue log.
///
/// A store wrapping another one should forward the read-back calls too
/// (``appendQueueRecordsLocated(_:)``, ``readQueueRecord(at:)``, ``compactQueue(keeping:)``) to
/// keep queued events on disk only; when it does not, the client checks at start-up that the
/// loaded locations can be read back and otherwise keeps the events' bytes in memory.
public protocol ScoreStore: Sendable {
    /// Reads everything stored (cutting a torn tail off the queue log).
    func load() throws -> ScoreStoreContents
    /// Appends records to the queue log, durably.
    func appendQueueRecords(_ records: [[UInt8]]) async throws
    /// Replaces the queue log with `records` (compaction), atomically.
    func rewriteQueue(_ records: [[UInt8]]) async throws
    /// Replaces the identity file atomically.
    func saveIdentity(_ bytes: [UInt8]) async throws
    /// Appends records like ``appendQueueRecords(_:)`` and returns where they went, or `nil` when
    /// this store cannot read records back (the default).
    func appendQueueRecordsLocated(_ records: [[UInt8]]) async throws -> [ScoreRecordLocation]?
    /// Reads back the record at `location`; `nil` when it cannot (the default).
    func readQueueRecord(at location: ScoreRecordLocation) throws -> [UInt8]?
    /// Compacts the log to the records at `keeping`, in that order, and returns their new
    /// locations (`nil` for one that could not be read); `nil` when unsupported (the default).
    func compactQueue(keeping: [ScoreRecordLocation]) async throws -> [ScoreRecordLocation?]?
    /// Appends like ``appendQueueRecordsLocated(_:)`` but may leave the device sync (`fsync`)
    /// to a later ``syncQueue()``: the records must be written, so that they survive the app
    /// crashing or being killed, but need not yet survive a power loss. The client calls
    /// ``syncQueue()`` within ``ScoreClient/queueSyncIntervalMs`` of such an append. Default:
    /// ``appendQueueRecordsLocated(_:)``, durable at once. A wrapping store forwards this call
    /// and ``syncQueue()`` together, or neither.
    func appendQueueRecordsDeferringSync(_ records: [[UInt8]]) async throws -> [ScoreRecordLocation]?
    /// Syncs the appends ``appendQueueRecordsDeferringSync(_:)`` left unsynced, all at once.
    /// Default: nothing.
    func syncQueue() async throws
}

extension ScoreStore {
    public func appendQueueRecordsLocated(_ records: [[UInt8]]) async throws -> [ScoreRecordLocation]? {
        try await appendQueueRecords(records)
        return nil
    }
    public func readQueueRecord(at location: ScoreRecordLocation) throws -> [UInt8]? { nil }
    public func compactQueue(keeping: [ScoreRecordLocation]) async throws -> [ScoreRecordLocation?]? { nil }
    public func appendQueueRecordsDeferringSync(_ records: [[UInt8]]) async throws -> [ScoreRecordLocation]? {
        try await appendQueueRecordsLocated(records)
    }
    public func syncQueue() async throws {}
}

/// A store in memory (for tests and hosts without a file system). It records every byte
/// written, in `writtenBytes`.
public final class InMemoryScoreStore: ScoreStore {
    private struct State {
        var records: [[UInt8]] = []
        var identity: [UInt8]?
        var written: [[UInt8]] = []
    }
    private let state = Locked(State())
    private let delay: (@Sendable () async -> Void)?

    /// Creates an empty store. `delay` runs before each write (tests use it to slow writes down).
    public init(delayEachWrite delay: (@Sendable () async -> Void)? = nil) {
        self.delay = delay
    }

    /// Every buffer ever written (queue records and identity files), in order.
    public var writtenBytes: [[UInt8]] { state.withLock { $0.written } }
    /// The queue log's current records.
    public var queueRecords: [[UInt8]] { state.withLock { $0.records } }

    public func load() throws -> ScoreStoreContents {
        state.withLock { ScoreStoreContents(queueRecords: $0.records, identity: $0.identity) }
    }

    public func appendQueueRecords(_ records: [[UInt8]]) async throws {
        if let delay { await delay() }
        state.withLock {
            $0.records += records
            $0.written += records
        }
    }

    public func rewriteQueue(_ records: [[UInt8]]) async throws {
        if let delay { await delay() }
        state.withLock {
            $0.records = records
            $0.written += records
        }
    }

    public func saveIdentity(_ bytes: [UInt8]) async throws {
        if let delay { await delay() }
        state.withLock {
            $0.identity = bytes
            $0.written.append(bytes)
        }
    }
}

/// The default store: `queue.log` (an `AppendLog`) and `identity.json` in one owner-only
/// directory. A compaction's rename is synced by the next ``syncQueue()``; until then a power
/// loss may bring back the log from before the compaction, which holds the same events. Default
/// directory (``defaultDirectory(siteId:)``): Core's `StorageLocation`, that is
/// `Rocalytics/score-<siteId>` in Caches on tvOS and in Application Support on the other Apple
/// platforms; `$XDG_DATA_HOME` or `~/.local/share`, then `score-tracker/<siteId>`, elsewhere.
///
/// Locked device (Core's rule, `StorageLocation.readFailure(errno:platform:)`): when a load finds
/// the files protected (a launch before the first unlock), ``load()`` throws
/// `StorageLocation.ProtectedDataUnavailable` and, until a load succeeds, the store refuses to
/// write the identity or to rewrite (compact) the queue log: what it holds is never overwritten
/// or compacted away by a client that could not read it.
public final class FileScoreStore: ScoreStore, @unchecked Sendable {
    /// The directory holding the files.
    public let directory: String
    /// The location policy applied when the directory is created (Apple platforms: protection
    /// class and backup exclusion); `nil` creates a plain owner-only directory.
    public let location: StorageLocation?
    private let sync: Bool
    /// The platform whose rules classify failed reads (`.current`; tests pass another).
    let platform: StorageLocation.Platform
    /// Guards `log`, `generation`, `forward`, `renameUnsynced` and `dataProtected`.
    private let lock = Locked(())
    /// Whether the last load found the stored files protected (see the type's comment).
    private var dataProtected = false
    private var log: AppendLog?
    private var generation = 0
    private var forward: [Int: Int] = [:]
    /// The records appended while the last compaction wrote its new file were copied onto it:
    /// an offset of the previous generation at or past `from` moved by `by` bytes.
    private var carried: (from: Int, by: Int)?
    /// Whether a compaction's rename still waits for the directory's sync (see ``syncQueue()``).
    private var renameUnsynced = false
    /// Opens the queue log for appending (tests replace it to inject faults).
    let openForAppending: @Sendable (_ path: String, _ sync: Bool) throws -> (AppendLog, [[UInt8]])
    /// Runs before each `fsync` of ``syncQueue()``, outside the store's lock (tests hold it).
    let beforeSync: (@Sendable () -> Void)?
    /// Whether start-up may use the quick read (``loadFollowingLengths(expect:visit:)``): not for a store
    /// whose log opening a test replaced, so that its faults reach the load.
    let opensQuickly: Bool

    /// The queue log's path.
    public var queuePath: String { directory + "/queue.log" }
    /// The identity file's path.
    public var identityPath: String { directory + "/identity.json" }
    /// How old (in seconds) a temporary file of an interrupted identity write must be before
    /// ``load()`` removes it: Core's one threshold for `writeAtomically`'s temporary files.
    static let staleTemporaryFileAge = FileKeyValueStorage.staleTemporaryFileAge

    /// Creates a store in `directory` (created with mode 0700 when absent, with `location`'s
    /// protection class and backup exclusion on Apple platforms). `sync: false` skips the queue
    /// log's `fsync` (benchmarks only; the identity file is always written durably).
    public init(directory: String, sync: Bool = true, location: StorageLocation? = nil) {
        self.directory = directory
        self.sync = sync
        self.location = location
        self.platform = .current
        self.openForAppending = { path, sync in try AppendLog.open(path: path, sync: sync) }
        self.beforeSync = nil
        self.opensQuickly = true
    }

    /// A store whose failed reads are classified by `platform`'s rules, for tests.
    init(directory: String, sync: Bool = true, platform: StorageLocation.Platform) {
        self.directory = directory
        self.sync = sync
        self.location = nil
        self.platform = platform
        self.openForAppending = { path, sync in try AppendLog.open(path: path, sync: sync) }
        self.beforeSync = nil
        self.opensQuickly = true
    }

    /// A store with fault hooks, for tests.
    init(
        directory: String, sync: Bool = true,
        openForAppending: @escaping @Sendable (_ path: String, _ sync: Bool) throws -> (AppendLog, [[UInt8]]),
        beforeSync: (@Sendable () -> Void)? = nil
    ) {
        self.directory = directory
        self.sync = sync
        self.location = nil
        self.platform = .current
        self.openForAppending = openForAppending
        self.beforeSync = beforeSync
        self.opensQuickly = false
    }

    /// The default directory for `siteId` on this platform (see the type's comment).
    public static func defaultDirectory(siteId: String) -> String {
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
        return defaultDirectory(siteId: siteId, platform: .current, system: system, hostBase: hostBase)
    }

    /// The default directory's choice, on values (tests drive every platform): Core's
    /// `StorageLocation.defaultFolder`, with `<hostBase>/score-tracker/<siteId>` as the folder
    /// where the host chooses (Linux).
    static func defaultDirectory(
        siteId: String, platform: StorageLocation.Platform, system: StorageLocation.SystemDirectories?, hostBase: String
    ) -> String {
        var safe = String(
            siteId.unicodeScalars.map { s -> Character in
                (s.properties.isAlphabetic || ("0"..."9").contains(s) || s == "-" || s == "_" || s == ".") && s.isASCII ? Character(s) : "_"
            })
        if safe.isEmpty { safe = "default" }
        return StorageLocation.defaultFolder(
            "score-" + safe, platform: platform, system: system, hostFolder: hostBase + "/score-tracker/" + safe)
    }

    private func ensureDirectory() throws {
        #if canImport(Darwin)
            if let location {
                try AppleStorageDirectory.apply(location, to: directory)
                return
            }
        #endif
        try FileIO.ensureDirectory(directory)
    }

    /// Whether `error` (of a failed open or read) means the files are protected now.
    private func isProtected(_ error: any Error) -> Bool {
        let code: Int32
        switch error {
        case let e as FileStorageError: code = e.code
        case let e as AppendLogError: code = e.errno
        default: return false
        }
        return StorageLocation.readFailure(errno: code, platform: platform) == .protectedDataUnavailable
    }

    /// Whether the last load found the files protected (until a load succeeds).
    var storedDataProtected: Bool { lock.withLock { _ in dataProtected } }

    /// Throws while the last load found the files protected: nothing is overwritten meanwhile.
    private func refuseWhileProtected() throws {
        if dataProtected { throw StorageLocation.ProtectedDataUnavailable() }
    }

    private func openLog() throws -> (AppendLog, [[UInt8]]) {
        try ensureDirectory()
        let (log, records) = try openForAppending(queuePath, sync)
        return (log, records)
    }

    public func load() throws -> ScoreStoreContents {
        try lock.withLock { _ in try loadLocked() }
    }

    /// The identity file's bytes, after removing stale temporary files of interrupted writes.
    /// Notes whether the file is protected now (`dataProtected`; `nil` then).
    private func readIdentity() -> [UInt8]? {
        let identity: [UInt8]?
        do {
            identity = try FileIO.readBytes(identityPath)
        } catch let error where isProtected(error) {
            dataProtected = true
            return nil
        } catch {
            identity = nil
        }
        dataProtected = false
        // A kill between an identity write and its rename leaves `identity.json.tmp-<uuid>`.
        FileIO.removeStaleTemporaryFiles(
            of: ["identity.json"], in: directory,
            olderThanSeconds: Self.staleTemporaryFileAge)
        return identity
    }

    /// What ``loadFollowingLengths(expect:visit:)`` opened: the queue log's frames as the file was, for
    /// their checksums to be checked after the start-up (or walked again).
    struct FramedContents {
        var frames: AppendLog.FrameReader
        /// The generation the frames' offsets belong to (see ``ScoreRecordLocation``).
        var generation: Int
    }

    /// Reads the identity file for the quick start-up load (see ``loadFollowingLengths(expect:visit:)``).
    func loadIdentity() -> [UInt8]? {
        lock.withLock { _ in readIdentity() }
    }

    /// The quick start-up read (see `AppendLog.openFollowingLengths`): opens the queue log and
    /// calls `visit` with each frame as it is read. `nil` when the frames do not tile the file,
    /// when `visit` said stop, when the log cannot be opened for writing, or for a store whose
    /// log opening a test replaced; the caller then calls ``load()``, which checks and repairs.
    /// `expect` is called before the first frame with the log's size and the generation its
    /// offsets will belong to (``FramedContents/generation``, when the read succeeds).
    func loadFollowingLengths(
        expect: (_ fileBytes: Int, _ generation: Int) -> Void = { _, _ in },
        visit: (_ index: Int, _ offset: Int, _ payload: UnsafeBufferPointer<UInt8>, _ checksum: UInt32) -> Bool
    ) -> FramedContents? {
        guard opensQuickly else { return nil }
        return lock.withLock { _ -> FramedContents? in
            let next = generation + 1
            guard (try? ensureDirectory()) != nil,
                let (log, frames) =
                    (try? AppendLog.openFollowingLengths(
                        path: queuePath, sync: sync, expect: { expect($0, next) }, visit: visit)) ?? nil
            else { return nil }
            self.log = log
            generation = next
            forward = [:]
            carried = nil
            return FramedContents(frames: frames, generation: generation)
        }
    }

    private func loadLocked() throws -> ScoreStoreContents {
        let identity = readIdentity()
        try refuseWhileProtected()
        let log: AppendLog
        let records: [[UInt8]]
        do {
            (log, records) = try openLog()
        } catch let error where isProtected(error) {
            dataProtected = true
            throw StorageLocation.ProtectedDataUnavailable()
        } catch {
            // Not writable (a read-only directory or file system, no space to create the file):
            // read what is stored so it can still be sent. Without locations the client keeps
            // the events' bytes in memory; each later write retries opening the log.
            guard let bytes = try? FileIO.readBytes(queuePath) else { throw error }
            self.log = nil
            let scanned = AppendLog.scan(bytes)
            return ScoreStoreContents(queueRecords: scanned.records, identity: identity, readOnly: true, queueDamage: scanned.damage)
        }
        self.log = log
        generation += 1
        forward = [:]
        carried = nil
        let locations = log.loadedOffsets.map { ScoreRecordLocation(generation: generation, offset: $0) }
        return ScoreStoreContents(queueRecords: records, queueLocations: locations, identity: identity, queueDamage: log.damage)
    }

    private func withLog<T>(_ body: (AppendLog) throws -> T) throws -> T {
        try lock.withLock { _ in
            if log == nil { log = try openLog().0 }
            return try body(log!)
        }
    }

    public func appendQueueRecords(_ records: [[UInt8]]) async throws {
        _ = try await appendQueueRecordsLocated(records)
    }

    public func appendQueueRecordsLocated(_ records: [[UInt8]]) async throws -> [ScoreRecordLocation]? {
        try withLog { log in
            try log.append(records).map { ScoreRecordLocation(generation: generation, offset: $0) }
        }
    }

    /// Writes the records at once and leaves their `fsync` to ``syncQueue()``.
    public func appendQueueRecordsDeferringSync(_ records: [[UInt8]]) async throws -> [ScoreRecordLocation]? {
        try appendDeferringSyncNow(records)
    }

    /// ``appendQueueRecordsDeferringSync(_:)``'s work, on the calling thread.
    func appendDeferringSyncNow(_ records: [[UInt8]]) throws -> [ScoreRecordLocation] {
        try withLog { log in
            try log.append(records, sync: false).map { ScoreRecordLocation(generation: generation, offset: $0) }
        }
    }

    /// Syncs the log file (and a compaction's rename) to the device outside the store's lock:
    /// appends and reads go on while the `fsync` runs (it can take seconds on a busy device).
    /// The appends it covers are those written before it started.
    public func syncQueue() async throws {
        try syncNow()
    }

    /// ``syncQueue()``'s work, on the calling thread.
    func syncNow() throws {
        guard sync else { return }
        let rename: Bool = lock.withLock { _ in
            defer { renameUnsynced = false }
            return renameUnsynced
        }
        beforeSync?()
        // A descriptor of its own: the log's may be replaced by a compaction meanwhile (that
        // compaction syncs its new file itself; its rename is synced by the next call).
        let fd = FileFaults.open(queuePath, O_RDONLY | O_CLOEXEC)
        if fd < 0 {
            if errno == ENOENT { return }
            throw AppendLogError("open", errno: errno)
        }
        defer { _ = FileFaults.close(fd) }
        if FileFaults.fsync(fd) != 0 { throw AppendLogError("fsync", errno: errno) }  // durableSync, with faults
        if rename {
            let dfd = FileFaults.open(directory, O_RDONLY | O_CLOEXEC)
            if dfd >= 0 {
                _ = FileFaults.fsync(dfd)
                _ = FileFaults.close(dfd)
            }
        }
    }

    public func rewriteQueue(_ records: [[UInt8]]) async throws {
        try withLog { (log: AppendLog) -> Void in
            try refuseWhileProtected()
            _ = try log.rewrite(records, deferDirectorySync: true)
            forward = [:]
            carried = nil
            generation += 1
            renameUnsynced = true
        }
    }

    /// The current offset of `location`, following one compaction.
    private func currentOffset(_ location: ScoreRecordLocation) -> Int? {
        if location.generation == generation { return location.offset }
        if location.generation == generation - 1 {
            if let moved = forward[location.offset] { return moved }
            if let carried, location.offset >= carried.from { return location.offset + carried.by }
        }
        return nil
    }

    public func readQueueRecord(at location: ScoreRecordLocation) throws -> [UInt8]? {
        try withLog { log in
            guard let offset = currentOffset(location) else { return nil }
            return try log.read(at: offset)
        }
    }

    public func compactQueue(keeping: [ScoreRecordLocation]) async throws -> [ScoreRecordLocation?]? {
        try finishCompaction(compactionSnapshot(keeping: keeping))
    }

    /// The first step of a compaction that never holds appends for long (issue 35): the kept
    /// records, read under the lock, and where the log ends now. The caller takes it when every
    /// record up to that end is accounted for (the client's queue writer, between appends), then
    /// calls ``finishCompaction(_:)`` off the append path.
    struct CompactionSnapshot: Sendable {
        var records: [[UInt8]]
        var oldOffsets: [Int]
        /// For each location kept, its index in `records` (`nil`: unreadable, dropped).
        var slot: [Int?]
        var end: Int
        var generation: Int
    }

    func compactionSnapshot(keeping: [ScoreRecordLocation]) throws -> CompactionSnapshot {
        try withLog { log in
            try refuseWhileProtected()
            var snap = CompactionSnapshot(records: [], oldOffsets: [], slot: [], end: 0, generation: generation)
            snap.records.reserveCapacity(keeping.count)
            for loc in keeping {
                if let offset = currentOffset(loc), let r = try log.read(at: offset) {
                    snap.slot.append(snap.records.count)
                    snap.records.append(r)
                    snap.oldOffsets.append(offset)
                } else {
                    snap.slot.append(nil)
                }
            }
            snap.end = log.byteCount
            return snap
        }
    }

    /// The rest of the compaction begun by ``compactionSnapshot(keeping:)``: the new file is
    /// written and synced outside the lock (appends go on meanwhile); then, under the lock like
    /// an append, the records appended since the snapshot are copied onto it (written, not
    /// synced: the next ``syncQueue()`` syncs them with the rename) and it is renamed over the
    /// log. Returns the kept records' new locations; `nil` (nothing changed) when the log was
    /// replaced meanwhile. One compaction at a time (the client's rule).
    func finishCompaction(_ snap: CompactionSnapshot) throws -> [ScoreRecordLocation?]? {
        let prepared = try AppendLog.prepareRewrite(path: queuePath, records: snap.records, sync: sync)
        return try withLog { log -> [ScoreRecordLocation?]? in
            guard generation == snap.generation, log.byteCount >= snap.end else {
                prepared.discard()
                return nil
            }
            try refuseWhileProtected()
            let carriedAt = try log.completeRewrite(prepared, carryingFrom: snap.end, deferDirectorySync: true)
            renameUnsynced = true
            var map: [Int: Int] = [:]
            map.reserveCapacity(prepared.offsets.count)
            for (old, new) in zip(snap.oldOffsets, prepared.offsets) { map[old] = new }
            forward = map
            carried = (from: snap.end, by: carriedAt - snap.end)
            generation += 1
            return snap.slot.map { $0.map { ScoreRecordLocation(generation: generation, offset: prepared.offsets[$0]) } }
        }
    }

    public func saveIdentity(_ bytes: [UInt8]) async throws {
        try saveIdentityNow(bytes)
    }

    /// ``saveIdentity(_:)``'s work, on the calling thread.
    func saveIdentityNow(_ bytes: [UInt8]) throws {
        // Core's atomic write: a private (0600) temporary file, fsync, rename, directory fsync.
        // Always durable, also with `sync: false` (which only concerns the queue log).
        try lock.withLock { _ in try refuseWhileProtected() }
        try FileIO.writeAtomically(bytes, to: identityPath, directory: directory)
    }
}
