#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// A file-system call made by the file-backed stores (``FileIO``, ``AppendLog``,
/// ``FileKeyValueStorage``), as ``FileFaultPolicy`` sees it.
public enum FileCall: String, Sendable, CaseIterable {
    /// `open` for reading only.
    case openForReading
    /// `open` with write access or `O_CREAT`.
    case openForWriting
    /// `read` or `pread`.
    case read
    /// `write`.
    case write
    /// `fsync` of a file or a directory.
    case fsync
    /// `ftruncate`.
    case ftruncate
    /// `rename`.
    case rename
    /// `mkdir`.
    case mkdir
    /// `unlink`.
    case unlink
}

/// Decides which file-system calls fail, for tests that inject faults (disk full, read-only file
/// system, I/O errors) under the real stores. Installed with ``FileFaults/install(_:under:)``
/// for one directory; an app never installs one.
public protocol FileFaultPolicy: AnyObject, Sendable {
    /// The `errno` that `call` on `path` fails with, or `nil` to let the call run. `bytes` is
    /// the size of a write (0 for other calls).
    func fault(_ call: FileCall, path: String, bytes: Int) -> Int32?
}

/// The registry of installed ``FileFaultPolicy`` objects, and the system calls the stores make
/// through it. With no policy installed each call costs one atomic load more than the bare call.
public enum FileFaults {
    private struct Registry {
        var policies: [(id: Int, directory: String, policy: any FileFaultPolicy)] = []
        var nextId = 1
        /// Paths of the descriptors opened through ``FileFaults/open(_:_:_:)`` and not closed yet.
        var descriptors: [Int32: String] = [:]
    }

    /// 1 while a policy is installed. Core's `AtomicCell` (C atomics), not `Synchronization.Atomic`,
    /// which needs macOS 15 / iOS 18 / tvOS 18 / visionOS 2, above the package's floors.
    private static let active = AtomicCell(0)
    private static let registry = Locked(Registry())

    /// A handle that removes its policy again.
    public struct Installation: Sendable {
        let id: Int
        /// Removes the policy; calls under its directory run normally again.
        public func remove() { FileFaults.remove(id) }
    }

    /// Makes the calls on paths under `directory` (an absolute path, no trailing slash) go
    /// through `policy` until the returned installation is removed. Several policies may be
    /// installed for different directories (tests running in parallel).
    @discardableResult
    public static func install(_ policy: any FileFaultPolicy, under directory: String) -> Installation {
        let id = registry.withLock { r -> Int in
            let id = r.nextId
            r.nextId += 1
            r.policies.append((id, directory, policy))
            active.store(1)
            return id
        }
        return Installation(id: id)
    }

    static func remove(_ id: Int) {
        registry.withLock { r in
            r.policies.removeAll { $0.id == id }
            if r.policies.isEmpty { active.store(0) }
        }
    }

    @inline(__always) private static var isActive: Bool { active.load() != 0 }

    private static func policy(for path: String, in r: Registry) -> (any FileFaultPolicy)? {
        for entry in r.policies.reversed() where path == entry.directory || path.hasPrefix(entry.directory + "/") {
            return entry.policy
        }
        return nil
    }

    private static func fault(_ call: FileCall, path: String, bytes: Int = 0) -> Int32? {
        guard let p = registry.withLock({ policy(for: path, in: $0) }) else { return nil }
        return p.fault(call, path: path, bytes: bytes)
    }

    private static func fault(_ call: FileCall, fd: Int32, bytes: Int = 0) -> Int32? {
        guard let path = registry.withLock({ $0.descriptors[fd] }) else { return nil }
        return fault(call, path: path, bytes: bytes)
    }

    private static func fail(_ code: Int32) -> Int32 {
        errno = code
        return -1
    }

    // MARK: the calls

    /// `open(2)`.
    @discardableResult
    public static func open(_ path: String, _ flags: Int32, _ mode: mode_t = 0) -> Int32 {
        if isActive {
            let writing = (flags & (O_WRONLY | O_RDWR | O_CREAT | O_TRUNC)) != 0
            if let e = fault(writing ? .openForWriting : .openForReading, path: path) { return fail(e) }
        }
        let fd = sysOpen(path, flags, mode)
        // Every descriptor is noted (a fault installed later applies to files already open).
        if fd >= 0 { registry.withLock { $0.descriptors[fd] = path } }
        return fd
    }

    /// `dup(2)`: the new descriptor refers to the same path (a fault applies to both).
    public static func dup(_ fd: Int32) -> Int32 {
        let own = sysDup(fd)
        if own >= 0 { registry.withLock { r in r.descriptors[own] = r.descriptors[fd] } }
        return own
    }

    /// `close(2)`.
    @discardableResult
    public static func close(_ fd: Int32) -> Int32 {
        registry.withLock { _ = $0.descriptors.removeValue(forKey: fd) }
        return sysClose(fd)
    }

    /// `read(2)`.
    @discardableResult
    public static func read(_ fd: Int32, _ buffer: UnsafeMutableRawPointer?, _ count: Int) -> Int {
        if isActive, let e = fault(.read, fd: fd) {
            errno = e
            return -1
        }
        return sysRead(fd, buffer, count)
    }

    /// `pread(2)`.
    @discardableResult
    public static func pread(_ fd: Int32, _ buffer: UnsafeMutableRawPointer?, _ count: Int, _ offset: off_t) -> Int {
        if isActive, let e = fault(.read, fd: fd) {
            errno = e
            return -1
        }
        return sysPread(fd, buffer, count, offset)
    }

    /// `write(2)`.
    @discardableResult
    public static func write(_ fd: Int32, _ buffer: UnsafeRawPointer?, _ count: Int) -> Int {
        if isActive, let e = fault(.write, fd: fd, bytes: count) {
            errno = e
            return -1
        }
        return sysWrite(fd, buffer, count)
    }

    /// `fsync(2)`.
    @discardableResult
    public static func fsync(_ fd: Int32) -> Int32 {
        if isActive, let e = fault(.fsync, fd: fd) { return fail(e) }
        return sysFsync(fd)
    }

    /// `ftruncate(2)`.
    @discardableResult
    public static func ftruncate(_ fd: Int32, _ length: off_t) -> Int32 {
        if isActive, let e = fault(.ftruncate, fd: fd) { return fail(e) }
        return sysFtruncate(fd, length)
    }

    /// `rename(2)`.
    @discardableResult
    public static func rename(_ from: String, _ to: String) -> Int32 {
        if isActive, let e = fault(.rename, path: to) { return fail(e) }
        return sysRename(from, to)
    }

    /// `mkdir(2)`.
    @discardableResult
    public static func mkdir(_ path: String, _ mode: mode_t) -> Int32 {
        // An existing directory answers EEXIST first, whatever the fault.
        if isActive, access(path, F_OK) != 0, let e = fault(.mkdir, path: path) { return fail(e) }
        return sysMkdir(path, mode)
    }

    /// `unlink(2)`.
    @discardableResult
    public static func unlink(_ path: String) -> Int32 {
        if isActive, let e = fault(.unlink, path: path) { return fail(e) }
        return sysUnlink(path)
    }
}

// The bare calls, outside the enum so that its method names do not shadow them.
@inline(__always) private func sysOpen(_ p: String, _ f: Int32, _ m: mode_t) -> Int32 { open(p, f, m) }
@inline(__always) private func sysClose(_ fd: Int32) -> Int32 { close(fd) }
@inline(__always) private func sysDup(_ fd: Int32) -> Int32 { dup(fd) }
@inline(__always) private func sysRead(_ fd: Int32, _ b: UnsafeMutableRawPointer?, _ n: Int) -> Int { read(fd, b, n) }
@inline(__always) private func sysPread(_ fd: Int32, _ b: UnsafeMutableRawPointer?, _ n: Int, _ o: off_t) -> Int { pread(fd, b, n, o) }
@inline(__always) private func sysWrite(_ fd: Int32, _ b: UnsafeRawPointer?, _ n: Int) -> Int { write(fd, b, n) }
// `durableSync` is `fcntl(F_FULLFSYNC)` on Darwin, `fsync` elsewhere.
@inline(__always) private func sysFsync(_ fd: Int32) -> Int32 { durableSync(fd) }
@inline(__always) private func sysFtruncate(_ fd: Int32, _ l: off_t) -> Int32 { ftruncate(fd, l) }
@inline(__always) private func sysRename(_ a: String, _ b: String) -> Int32 { rename(a, b) }
@inline(__always) private func sysMkdir(_ p: String, _ m: mode_t) -> Int32 { mkdir(p, m) }
@inline(__always) private func sysUnlink(_ p: String) -> Int32 { unlink(p) }
