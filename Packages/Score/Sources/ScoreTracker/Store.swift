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
    /// The number of the queue log's segment holding the record (`FileScoreStore`: 0 for
    /// `queue.log`, `n` for `queue.<n>.log`; a record never moves while its segment exists).
    public let generation: Int
    /// The record's frame offset in that segment's file.
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
/// `load()` runs once, at start-up, off the caller's thread; the writes run off the caller's
/// thread too, one at a time for the queue log.
///
/// Every requirement is one each store answers for itself: there is no default. A store that
/// cannot read records back says so by returning `nil` from ``appendQueueRecords(_:)`` (the
/// client then keeps the events' bytes in memory), ``readQueueRecord(at:)`` and
/// ``compactQueue(keeping:)`` (the client then rewrites the whole queue with
/// ``rewriteQueue(_:)``); a store whose appends are durable at once does nothing in
/// ``syncQueue()``. A store wrapping another one forwards each call it does not answer itself.
public protocol ScoreStore: Sendable {
    /// Reads everything stored (cutting a torn tail off the queue log).
    func load() throws -> ScoreStoreContents
    /// Appends records to the queue log and returns where they went, or `nil` when this store
    /// cannot read records back. Once it returns, the records must survive the app crashing or
    /// being killed; surviving a power loss may wait for the next ``syncQueue()``, which the
    /// client calls within ``ScoreClient/queueSyncIntervalMs`` of an append.
    func appendQueueRecords(_ records: [[UInt8]]) async throws -> [ScoreRecordLocation]?
    /// Makes every append that returned before this call survive a power loss (`fsync`), all
    /// at once. Nothing to do for a store whose appends are durable when they return.
    func syncQueue() async throws
    /// Reads back the record at `location` (one ``appendQueueRecords(_:)`` returned), checked;
    /// `nil` when no intact record is there, or when this store returns no locations.
    func readQueueRecord(at location: ScoreRecordLocation) throws -> [UInt8]?
    /// Reclaims the space of every record but those at `keeping` (in that order) and returns
    /// their locations afterwards (`nil` for one that could not be kept); `nil` when this store
    /// cannot (the client then uses ``rewriteQueue(_:)``).
    func compactQueue(keeping: [ScoreRecordLocation]) async throws -> [ScoreRecordLocation?]?
    /// Replaces the queue log with `records` (the queued events the client holds), atomically.
    func rewriteQueue(_ records: [[UInt8]]) async throws
    /// Replaces the identity file atomically.
    func saveIdentity(_ bytes: [UInt8]) async throws
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

    /// Appends `records` (in memory: as durable as the store itself); no locations (records are
    /// not read back).
    @discardableResult
    public func appendQueueRecords(_ records: [[UInt8]]) async throws -> [ScoreRecordLocation]? {
        if let delay { await delay() }
        state.withLock {
            $0.records += records
            $0.written += records
        }
        return nil
    }

    /// Nothing to sync.
    public func syncQueue() async throws {}

    /// `nil`: this store returns no locations.
    public func readQueueRecord(at location: ScoreRecordLocation) throws -> [UInt8]? { nil }

    /// `nil`: the client rewrites the queue with ``rewriteQueue(_:)``.
    public func compactQueue(keeping: [ScoreRecordLocation]) async throws -> [ScoreRecordLocation?]? { nil }

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

/// The default store: the queue log, a chain of `AppendLog` segments (`queue.log`, then
/// `queue.1.log`, `queue.2.log`…: appends go to the newest, which rolls at 512 KiB, and the
/// oldest are deleted once every event in them is removed; the single `queue.log` of earlier
/// versions is the first segment, kept as it is), and `identity.json`, in one owner-only
/// directory. Default
/// directory (``defaultDirectory(siteId:)``): Core's `StorageLocation`, that is
/// `Rocalytics/score-<siteId>` in Caches on tvOS and in Application Support on the other Apple
/// platforms; `$XDG_DATA_HOME` or `~/.local/share`, then `score-tracker/<siteId>`, elsewhere.
///
/// Locked device (Core's rule, `StorageLocation.readFailure(errno:platform:)`): when a load finds
/// the files protected (a launch before the first unlock), ``load()`` throws
/// `StorageLocation.ProtectedDataUnavailable` and, until a load succeeds, the store refuses to
/// write the identity, to rewrite the queue log or to delete any of its segments: what it holds is
/// never overwritten or deleted by a client that could not read it.
public final class FileScoreStore: ScoreStore, @unchecked Sendable {
    /// The directory holding the files.
    public let directory: String
    /// The location policy applied when the directory is created (Apple platforms: protection
    /// class and backup exclusion); `nil` creates a plain owner-only directory.
    public let location: StorageLocation?
    private let sync: Bool
    /// The platform whose rules classify failed reads (`.current`; tests pass another).
    let platform: StorageLocation.Platform
    /// Guards `opened` and `dataProtected`.
    private let lock = Locked(())
    /// Whether the last load found the stored files protected (see the type's comment).
    private var dataProtected = false
    /// Whether the segments are open for appending (a read-only load leaves them closed; each
    /// later write retries opening them).
    private var opened = false
    /// The queue log: a chain of segments (`SegmentedQueueLog`, issue 35), `queue.log` first.
    let segments: SegmentedQueueLog
    /// Opens the queue log for appending (tests replace it to inject faults).
    let openForAppending: @Sendable (_ path: String, _ sync: Bool) throws -> (AppendLog, [[UInt8]])
    /// Runs before each `fsync` of ``syncQueue()``, outside the store's lock (tests hold it).
    let beforeSync: (@Sendable () -> Void)?
    /// Whether start-up may use the quick read (``loadFollowingLengths(expect:visit:indexed:)``): not for a store
    /// whose log opening a test replaced, so that its faults reach the load.
    let opensQuickly: Bool
    /// How many queued events a lazy launch reads at least before leaving the later sealed
    /// segments unloaded (`LaunchTailPlan`; tests lower it).
    let launchHeadEvents: Int
    /// Runs at the start of the lazy launch's splice step, before the tail is read (tests).
    let beforeSplice: (@Sendable () async -> Void)?

    /// The queue log's first segment's path (`queue.log`, the single log of earlier versions;
    /// later segments are `queue.<n>.log` beside it).
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
        self.launchHeadEvents = LaunchTailPlan.defaultHeadEvents
        self.beforeSplice = nil
        self.segments = SegmentedQueueLog(directory: directory, sync: sync)
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
        self.launchHeadEvents = LaunchTailPlan.defaultHeadEvents
        self.beforeSplice = nil
        self.segments = SegmentedQueueLog(directory: directory, sync: sync)
    }

    /// A store whose queue log's segments roll at `segmentBytes`, for tests; a lazy launch's
    /// head holds `launchHeadEvents` events at least, and `beforeSplice` runs before its tail is
    /// read.
    init(
        directory: String, sync: Bool = true, segmentBytes: Int, launchHeadEvents: Int = LaunchTailPlan.defaultHeadEvents,
        beforeSplice: (@Sendable () async -> Void)? = nil
    ) {
        self.directory = directory
        self.sync = sync
        self.location = nil
        self.platform = .current
        self.openForAppending = { path, sync in try AppendLog.open(path: path, sync: sync) }
        self.beforeSync = nil
        self.opensQuickly = true
        self.launchHeadEvents = launchHeadEvents
        self.beforeSplice = beforeSplice
        self.segments = SegmentedQueueLog(directory: directory, sync: sync, segmentBytes: segmentBytes)
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
        self.launchHeadEvents = LaunchTailPlan.defaultHeadEvents
        self.beforeSplice = nil
        self.segments = SegmentedQueueLog(directory: directory, sync: sync, openSegment: openForAppending)
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

    /// What ``loadFollowingLengths(expect:visit:indexed:)`` read: each segment's frames as the files
    /// were, for their checksums to be checked after the start-up.
    struct FramedContents {
        var segments: [SegmentedQueueLog.FollowedSegment]
    }

    /// Reads the identity file for the quick start-up load (see ``loadFollowingLengths(expect:visit:indexed:)``).
    func loadIdentity() -> [UInt8]? {
        lock.withLock { _ in readIdentity() }
    }

    /// The quick start-up read (see `SegmentedQueueLog.openFollowingLengths(expect:visit:indexed:)`):
    /// opens the queue log's segments and calls `visit` with each frame, with its location, as
    /// it is read. `nil` when the frames do not tile some segment, when `visit` said stop, when
    /// the log cannot be opened for writing, or for a store whose log opening a test replaced;
    /// the caller then calls ``load()``, which checks and repairs. `expect` is called before the
    /// first frame with the segments' total size. A sealed segment with an intact seal is passed
    /// to `indexed` (with its number) instead of its frames to `visit`.
    func loadFollowingLengths(
        expect: (_ fileBytes: Int) -> Void = { _ in },
        visit: (_ location: ScoreRecordLocation, _ payload: UnsafeBufferPointer<UInt8>, _ checksum: UInt32) -> Bool,
        indexed: (_ segment: Int, _ seal: SegmentSeal) -> Bool = { _, _ in false },
        chooseTail: ((_ sealed: [(segment: Int, summary: SegmentSeal.Summary?)]) -> [Int])? = nil,
        deferred: (_ segment: Int, _ summary: SegmentSeal.Summary) -> Void = { _, _ in }
    ) -> FramedContents? {
        guard opensQuickly else { return nil }
        return lock.withLock { _ -> FramedContents? in
            guard (try? ensureDirectory()) != nil,
                let followed = segments.openFollowingLengths(
                    expect: expect,
                    visit: { n, offset, payload, checksum in
                        visit(ScoreRecordLocation(generation: n, offset: offset), payload, checksum)
                    }, indexed: indexed, chooseTail: chooseTail, deferred: deferred)
            else { return nil }
            opened = true
            return FramedContents(segments: followed)
        }
    }

    private func loadLocked() throws -> ScoreStoreContents {
        let identity = readIdentity()
        try refuseWhileProtected()
        let loaded: SegmentedQueueLog.Loaded
        do {
            try ensureDirectory()
            loaded = try segments.open()
        } catch let error where isProtected(error) {
            dataProtected = true
            throw StorageLocation.ProtectedDataUnavailable()
        } catch {
            // Not writable (a read-only directory or file system, no space to create a file):
            // read what is stored so it can still be sent. Without locations the client keeps
            // the events' bytes in memory; each later write retries opening the log.
            guard let read = SegmentedQueueLog.readOnly(directory) else { throw error }
            opened = false
            return ScoreStoreContents(queueRecords: read.records, identity: identity, readOnly: true, queueDamage: read.damage)
        }
        opened = true
        return ScoreStoreContents(
            queueRecords: loaded.records, queueLocations: loaded.locations, identity: identity, queueDamage: loaded.damage)
    }

    /// Runs `body` with the segments open for appending (opening them again after a failed load).
    private func withOpenSegments<T>(_ body: () throws -> T) throws -> T {
        try lock.withLock { _ in
            if !opened {
                try ensureDirectory()
                _ = try segments.open()
                opened = true
            }
            return try body()
        }
    }

    /// Writes the records to the newest segment at once (a `write`, which survives the app
    /// being killed) and leaves their `fsync` to ``syncQueue()``; returns their locations.
    @discardableResult
    public func appendQueueRecords(_ records: [[UInt8]]) async throws -> [ScoreRecordLocation]? {
        try appendDeferringSyncNow(records)
    }

    /// ``appendQueueRecords(_:)``'s work, on the calling thread: a `write` to the
    /// newest segment (which rolls at its size bound), never an `fsync`.
    func appendDeferringSyncNow(_ records: [[UInt8]]) throws -> [ScoreRecordLocation] {
        try withOpenSegments { try segments.submit(records).locations }
    }

    /// Syncs the segments written since their last sync (and the directory after a segment was
    /// created or deleted) to the device outside every lock: appends and reads go on while the
    /// `fsync` runs (it can take seconds on a busy device). The appends it covers are those
    /// written before it started.
    public func syncQueue() async throws {
        try syncNow()
    }

    /// ``syncQueue()``'s work, on the calling thread. Seals the segments rolled since (see
    /// `SegmentedQueueLog.sealPending()`), also when the store does not sync.
    func syncNow() throws {
        guard sync else {
            segments.sealPending()
            return
        }
        beforeSync?()
        try segments.sync()
        // The segments rolled before this sync are synced: sealed now.
        segments.sealPending()
    }

    /// Replaces the queue log with `records` (the client's rewrite of events it holds in
    /// memory): a new segment, synced, then the older ones deleted (see
    /// `SegmentedQueueLog.replaceAll(_:)`).
    public func rewriteQueue(_ records: [[UInt8]]) async throws {
        try withOpenSegments {
            try refuseWhileProtected()
            _ = try segments.replaceAll(records)
        }
    }

    public func readQueueRecord(at location: ScoreRecordLocation) throws -> [UInt8]? {
        try segments.read(at: location)
    }

    /// Reclaims the space of the records not at `keeping` (see `SegmentedQueueLog.reclaim(live:before:)`); the
    /// kept records do not move: their locations are returned as given.
    public func compactQueue(keeping: [ScoreRecordLocation]) async throws -> [ScoreRecordLocation?]? {
        let bound = try reclaimBound()
        try reclaim(live: keeping, before: bound)
        return keeping
    }

    /// The newest segment's number now: taken with the live locations (between appends, when
    /// every record written so far is accounted for), it bounds ``reclaim(live:before:)``.
    func reclaimBound() throws -> Int? {
        try withOpenSegments {
            try refuseWhileProtected()
            return segments.newestSegment
        }
    }

    /// Deletes the oldest segments below `bound` holding none of the `live` locations, after
    /// syncing the removals written so far (see `SegmentedQueueLog.reclaim(live:before:)`). Off
    /// the append path: appends go on meanwhile (to the newest segment, never deleted).
    @discardableResult
    func reclaim(live: [ScoreRecordLocation], before bound: Int?) throws -> [Int] {
        try lock.withLock { _ in try refuseWhileProtected() }
        if sync { beforeSync?() }
        return try segments.reclaim(live: live, before: bound)
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
