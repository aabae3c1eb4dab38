import TrackerCore

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// A fault-injecting file layer under the real file stores (``FileIO``, ``AppendLog``,
/// ``FileKeyValueStorage``, the Score file store's queue log): while installed, the system calls
/// on paths under one directory fail as scripted. Usable from the tests of every package.
///
/// ```swift
/// let fs = FaultyFileSystem(directory: dir)   // installed at once
/// fs.set(.diskFull)                           // writes fail with ENOSPC
/// ...
/// fs.set(.healthy)                            // space returned
/// fs.uninstall()
/// ```
public final class FaultyFileSystem: FileFaultPolicy, @unchecked Sendable {
    /// A standing fault of the whole directory.
    public enum Condition: Sendable, Equatable {
        /// Every call runs.
        case healthy
        /// Writes of one byte or more fail with `ENOSPC`; so does `fsync` when `syncFails` (a
        /// delayed-allocation file system reports a full disk at the sync).
        case diskFull(syncFails: Bool)
        /// Every call that would change the directory or a file in it fails with `EROFS`.
        case readOnly
        /// Every call fails with `EIO` (a failing device).
        case ioError

        /// A full disk whose writes fail (and whose syncs run).
        public static let diskFull = Condition.diskFull(syncFails: false)
    }

    private struct State {
        var condition = Condition.healthy
        var oneShot: [(call: FileCall, errno: Int32, remaining: Int)] = []
        var calls: [FileCall: Int] = [:]
        var failures: [FileCall: Int] = [:]
    }

    /// The directory the faults apply to.
    public let directory: String
    private let state = Locked(State())
    private var installation: FileFaults.Installation?

    /// Creates the layer for `directory` (absolute) and installs it.
    public init(directory: String, condition: Condition = .healthy) {
        self.directory = directory
        state.withLock { $0.condition = condition }
        installation = FileFaults.install(self, under: directory)
    }

    /// Removes the layer; calls under the directory run normally again.
    public func uninstall() {
        installation?.remove()
        installation = nil
    }

    deinit { installation?.remove() }

    /// Changes the standing condition (`.healthy` returns the space, the write access, the device).
    public func set(_ condition: Condition) { state.withLock { $0.condition = condition } }

    /// Makes the next `count` calls of `call` fail with `code` (before the standing condition).
    public func failNext(_ call: FileCall, count: Int = 1, errno code: Int32) {
        state.withLock { $0.oneShot.append((call, code, count)) }
    }

    /// How many times `call` was attempted under the directory.
    public func calls(_ call: FileCall) -> Int { state.withLock { $0.calls[call, default: 0] } }

    /// How many times `call` was made to fail.
    public func failures(_ call: FileCall) -> Int { state.withLock { $0.failures[call, default: 0] } }

    /// How many calls of any kind were made to fail.
    public var totalFailures: Int { state.withLock { $0.failures.values.reduce(0, +) } }

    public func fault(_ call: FileCall, path: String, bytes: Int) -> Int32? {
        state.withLock { s -> Int32? in
            s.calls[call, default: 0] += 1
            var code: Int32?
            if let i = s.oneShot.firstIndex(where: { $0.call == call }) {
                code = s.oneShot[i].errno
                s.oneShot[i].remaining -= 1
                if s.oneShot[i].remaining <= 0 { s.oneShot.remove(at: i) }
            } else {
                code = Self.standing(s.condition, call, bytes: bytes)
            }
            if code != nil { s.failures[call, default: 0] += 1 }
            return code
        }
    }

    private static func standing(_ condition: Condition, _ call: FileCall, bytes: Int) -> Int32? {
        switch condition {
        case .healthy:
            return nil
        case .diskFull(let syncFails):
            switch call {
            case .write: return bytes > 0 ? ENOSPC : nil
            case .fsync: return syncFails ? ENOSPC : nil
            case .mkdir: return ENOSPC
            default: return nil
            }
        case .readOnly:
            switch call {
            case .openForReading, .read: return nil
            case .fsync: return nil  // fsync of a read-only descriptor succeeds
            default: return EROFS
            }
        case .ioError:
            return EIO
        }
    }
}
