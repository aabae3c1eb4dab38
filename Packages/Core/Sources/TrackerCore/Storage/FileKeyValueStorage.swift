import Dispatch

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// A store that keeps each key in its own file under a directory private to the app.
///
/// Writes are atomic and durable: the value goes to a temporary file (mode 0600) that is
/// flushed with `fsync` and renamed over the key's file, then the directory is synced; a crash
/// leaves either the old or the new value, never a mix. The directory is created with mode
/// 0700. File I/O runs on a private serial queue, never on the caller's thread, and operations
/// apply in call order.
///
/// A write killed between creating its temporary file and the rename leaves that file
/// (`<key>.kv.tmp-<uuid>`) behind. Opening a store removes such files when they are older than
/// ``staleTemporaryFileAge`` (first thing on its queue, before any other operation): a younger
/// one may be a write in flight in another process or store on the same directory.
public final class FileKeyValueStorage: KeyValueStorage {
    /// Where the files live.
    public let directory: String
    private let queue = DispatchQueue(label: "tracker.file-storage")

    /// How old (by modification time) a leftover temporary file must be for a store opening
    /// the directory to remove it: 60 s, far longer than any write of a small value takes.
    public static let staleTemporaryFileAge = 60

    /// Creates a store in `directory` (created on first write when missing), and starts the
    /// removal of stale temporary files on its queue.
    public init(directory: String) {
        self.directory = directory
        queue.async { _ = FileIO.removeStaleTemporaryFiles(in: directory, olderThanSeconds: Self.staleTemporaryFileAge) }
    }

    /// The file that holds `key`: the key percent-encoded to a safe file name.
    public func path(for key: String) -> String {
        var name = ""
        for b in key.utf8 {
            switch b {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
                UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "_"):
                name.unicodeScalars.append(Unicode.Scalar(b))
            default:
                let hex = Array("0123456789ABCDEF".unicodeScalars)
                name.unicodeScalars.append("%")
                name.unicodeScalars.append(hex[Int(b >> 4)])
                name.unicodeScalars.append(hex[Int(b & 15)])
            }
        }
        return directory + "/" + name + ".kv"
    }

    public func getItem(_ key: String) async throws -> String? {
        let path = path(for: key)
        return try await run { try FileIO.read(path) }
    }

    public func setItem(_ key: String, _ value: String) async throws {
        let path = path(for: key)
        let directory = directory
        try await run { try FileIO.writeAtomically(Array(value.utf8), to: path, directory: directory) }
    }

    public func removeItem(_ key: String) async throws {
        let path = path(for: key)
        let directory = directory
        try await run { try FileIO.remove(path, directory: directory) }
    }

    private func run<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            queue.async { continuation.resume(with: Result { try body() }) }
        }
    }
}

/// A file operation that failed, with the `errno` it failed with.
public struct FileStorageError: Error, Sendable, Equatable, CustomStringConvertible {
    /// What was being done.
    public let operation: String
    /// The `errno` value.
    public let code: Int32
    public var description: String { "\(operation) failed (errno \(code))" }

    /// Creates an error.
    public init(operation: String, code: Int32) {
        self.operation = operation
        self.code = code
    }
}

/// Small, durable POSIX file helpers shared by the file-backed stores.
public enum FileIO {
    /// Reads a whole file as UTF-8; `nil` when it does not exist.
    public static func read(_ path: String) throws -> String? {
        guard let bytes = try readBytes(path) else { return nil }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// Reads a whole file; `nil` when it does not exist.
    public static func readBytes(_ path: String) throws -> [UInt8]? {
        let fd = FileFaults.open(path, O_RDONLY | O_CLOEXEC)
        if fd < 0 {
            if errno == ENOENT { return nil }
            throw FileStorageError(operation: "open", code: errno)
        }
        defer { FileFaults.close(fd) }
        var out: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 64 * 1024)
        while true {
            let n = chunk.withUnsafeMutableBytes { FileFaults.read(fd, $0.baseAddress, $0.count) }
            if n < 0 {
                if errno == EINTR { continue }
                throw FileStorageError(operation: "read", code: errno)
            }
            if n == 0 { break }
            out.append(contentsOf: chunk[0..<n])
        }
        return out
    }

    /// Creates `directory` (and its parents) with mode 0700 when missing.
    public static func ensureDirectory(_ directory: String) throws {
        var prefix = directory.hasPrefix("/") ? "" : "."
        for part in directory.split(separator: "/") {
            prefix += "/" + part
            if FileFaults.mkdir(prefix, 0o700) != 0 && errno != EEXIST {
                throw FileStorageError(operation: "mkdir", code: errno)
            }
        }
    }

    /// Writes `bytes` to `path` atomically and durably (temp file 0600, fsync, rename, directory fsync).
    public static func writeAtomically(_ bytes: [UInt8], to path: String, directory: String) throws {
        try ensureDirectory(directory)
        // A unique temporary name: two stores (or two processes) writing the same key never
        // rename each other's half-written file.
        let temp = path + ".tmp-" + IDs.uuidV4()
        let fd = FileFaults.open(temp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        if fd < 0 { throw FileStorageError(operation: "open", code: errno) }
        var ok = false
        defer {
            if !ok { FileFaults.unlink(temp) }
        }
        do {
            defer { FileFaults.close(fd) }
            fchmod(fd, 0o600)
            try writeAll(fd, bytes)
            if FileFaults.fsync(fd) != 0 { throw FileStorageError(operation: "fsync", code: errno) }
        }
        if FileFaults.rename(temp, path) != 0 { throw FileStorageError(operation: "rename", code: errno) }
        ok = true
        syncDirectory(directory)
    }

    /// Removes the temporary files ``writeAtomically(_:to:directory:)`` leaves when the process
    /// dies before its rename (`*.kv.tmp-<uuid>` in `directory`) whose modification time is at
    /// least `olderThanSeconds` in the past. Returns how many were removed; best effort (a
    /// missing or unreadable directory removes nothing).
    @discardableResult
    public static func removeStaleTemporaryFiles(in directory: String, olderThanSeconds: Int) -> Int {
        removeStaleTemporaryFiles(in: directory, olderThanSeconds: olderThanSeconds, where: isTemporaryName)
    }

    /// Removes the temporary files ``writeAtomically(_:to:directory:)`` leaves for the files named
    /// `names` in `directory` (`<name>.tmp-<uuid>`) when the process dies before its rename, if
    /// at least `olderThanSeconds` old. Other files are never touched. Returns how many were
    /// removed; best effort.
    @discardableResult
    public static func removeStaleTemporaryFiles(of names: [String], in directory: String, olderThanSeconds: Int) -> Int {
        let markers = names.map { Array(($0 + ".tmp-").utf8) }
        return removeStaleTemporaryFiles(in: directory, olderThanSeconds: olderThanSeconds) { name in
            markers.contains { isTemporaryName(name, marker: $0, exactHead: true) }
        }
    }

    private static func removeStaleTemporaryFiles(
        in directory: String, olderThanSeconds: Int, where isTemporary: (String) -> Bool
    ) -> Int {
        guard let dir = opendir(directory) else { return 0 }
        defer { closedir(dir) }
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        var removed = 0
        while let entry = readdir(dir) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
            }
            guard isTemporary(name) else { continue }
            let path = directory + "/" + name
            var st = stat()
            guard lstat(path, &st) == 0, (st.st_mode & S_IFMT) == S_IFREG else { continue }
            #if canImport(Darwin)
                let modified = Int(st.st_mtimespec.tv_sec)
            #else
                let modified = Int(st.st_mtim.tv_sec)
            #endif
            guard Int(now.tv_sec) - modified >= olderThanSeconds else { continue }
            if FileFaults.unlink(path) == 0 { removed += 1 }
        }
        if removed > 0 { syncDirectory(directory) }
        return removed
    }

    /// Whether `name` is one of ``writeAtomically(_:to:directory:)``'s temporary files:
    /// `<name>.kv.tmp-` followed by a UUID (36 characters of hex digits and dashes).
    static func isTemporaryName(_ name: String) -> Bool {
        isTemporaryName(name, marker: Array(".kv.tmp-".utf8), exactHead: false)
    }

    /// Whether `name` is `marker` followed by a UUID: with `exactHead`, nothing may come before
    /// `marker`; without it, `marker` must follow a non-empty name.
    private static func isTemporaryName(_ name: String, marker: [UInt8], exactHead: Bool) -> Bool {
        let u = Array(name.utf8)
        guard u.count >= marker.count + 36 else { return false }
        let tail = u.suffix(36)
        let head = u.dropLast(36)
        if exactHead {
            guard Array(head) == marker else { return false }
        } else {
            guard head.count > marker.count, Array(head.suffix(marker.count)) == marker else { return false }
        }
        return tail.allSatisfy { b in
            (b >= 48 && b <= 57) || (b >= 65 && b <= 70) || (b >= 97 && b <= 102) || b == 45
        }
    }

    /// Writes every byte, retrying short writes and `EINTR`.
    public static func writeAll(_ fd: Int32, _ bytes: [UInt8]) throws {
        var offset = 0
        while offset < bytes.count {
            let n = bytes.withUnsafeBytes { FileFaults.write(fd, $0.baseAddress! + offset, bytes.count - offset) }
            if n < 0 {
                if errno == EINTR { continue }
                throw FileStorageError(operation: "write", code: errno)
            }
            offset += n
        }
    }

    /// Removes `path` when it exists, and syncs the directory.
    public static func remove(_ path: String, directory: String) throws {
        if FileFaults.unlink(path) != 0 {
            if errno == ENOENT { return }
            throw FileStorageError(operation: "unlink", code: errno)
        }
        syncDirectory(directory)
    }

    /// Flushes a directory entry change to disk (best effort).
    public static func syncDirectory(_ directory: String) {
        let dfd = FileFaults.open(directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        if dfd >= 0 {
            FileFaults.fsync(dfd)
            FileFaults.close(dfd)
        }
    }
}
