import Foundation
import Testing
import TrackerCore
import TrackerCoreTestKit

#if canImport(Glibc)
    import Glibc
#endif

/// The fault-injecting file layer (`FaultyFileSystem`) under the real file stores: disk full on
/// write or on sync, read-only file system, I/O errors, and space returning.
///
/// Scenarios: S159 disk full then space returned (key-value store), S160 read-only directory,
/// S161 I/O error on read, S162 append log on a full disk keeps its intact records and no
/// partial frame, S163 a failed sync, S164 only the faulted directory is affected.
@Suite struct FileFaultTests {
    private func tempDir() -> String {
        let dir = NSTemporaryDirectory() + "file-faults-\(IDs.uuidV4())"
        try? FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        return dir
    }

    @Test func S159_diskFullFailsWritesKeepsTheOldValueAndSpaceReturning() async throws {
        let dir = tempDir()
        let store = FileKeyValueStorage(directory: dir)
        try await store.setItem("k", "v1")
        let fs = FaultyFileSystem(directory: dir, condition: .diskFull)
        defer { fs.uninstall() }
        await #expect(throws: FileStorageError(operation: "write", code: ENOSPC)) { try await store.setItem("k", "v2") }
        #expect(try await store.getItem("k") == "v1")
        #expect(try FileManager.default.contentsOfDirectory(atPath: dir) == ["k.kv"])  // no temp file left
        fs.set(.healthy)
        try await store.setItem("k", "v3")
        #expect(try await store.getItem("k") == "v3")
        #expect(fs.failures(.write) == 1)
    }

    @Test func S160_aReadOnlyDirectoryFailsWritesAndRemovalsButReads() async throws {
        let dir = tempDir()
        let store = FileKeyValueStorage(directory: dir)
        try await store.setItem("k", "v1")
        let fs = FaultyFileSystem(directory: dir, condition: .readOnly)
        defer { fs.uninstall() }
        await #expect(throws: FileStorageError(operation: "open", code: EROFS)) { try await store.setItem("k", "v2") }
        await #expect(throws: FileStorageError(operation: "unlink", code: EROFS)) { try await store.removeItem("k") }
        #expect(try await store.getItem("k") == "v1")
    }

    @Test func S161_anIOErrorOnReadIsThrownNotCrashed() async throws {
        let dir = tempDir()
        let store = FileKeyValueStorage(directory: dir)
        try await store.setItem("k", "v1")
        let fs = FaultyFileSystem(directory: dir)
        defer { fs.uninstall() }
        fs.failNext(.read, errno: EIO)
        await #expect(throws: FileStorageError(operation: "read", code: EIO)) { try await store.getItem("k") }
        #expect(try await store.getItem("k") == "v1")
    }

    @Test func S162_anAppendLogOnAFullDiskKeepsItsRecordsAndLeavesNoPartialFrame() throws {
        let dir = tempDir()
        let path = dir + "/q.log"
        let (log, _) = try AppendLog.open(path: path)
        try log.append([[1], [2]])
        let fs = FaultyFileSystem(directory: dir, condition: .diskFull)
        defer { fs.uninstall() }
        #expect(throws: AppendLogError("write", errno: ENOSPC)) { try log.append([[3]]) }
        #expect(throws: AppendLogError("write", errno: ENOSPC)) { try log.rewrite([[2]]) }
        #expect(!FileManager.default.fileExists(atPath: path + ".tmp"))
        #expect(log.byteCount == 18)
        fs.set(.healthy)
        try log.append([[4]])
        #expect(try AppendLog.open(path: path).records == [[1], [2], [4]])
    }

    @Test func S163_aFailedSyncIsReportedAndTheAppendUndone() throws {
        let dir = tempDir()
        let path = dir + "/q.log"
        let (log, _) = try AppendLog.open(path: path)
        try log.append([[1]])
        let fs = FaultyFileSystem(directory: dir, condition: .diskFull(syncFails: true))
        defer { fs.uninstall() }
        #expect(throws: AppendLogError("write", errno: ENOSPC)) { try log.append([[2]]) }
        fs.set(.healthy)
        fs.failNext(.fsync, errno: EIO)
        #expect(throws: AppendLogError("fsync", errno: EIO)) { try log.append([[3]]) }
        // A failed append (write or sync) is cut back: the file holds only what was acknowledged.
        #expect(try AppendLog.open(path: path).records == [[1]])
        try log.append([[5]], sync: false)
        fs.failNext(.fsync, errno: ENOSPC)
        #expect(throws: AppendLogError("fsync", errno: ENOSPC)) { try log.sync() }
        #expect(log.hasUnsyncedAppends)
        try log.sync()
        #expect(!log.hasUnsyncedAppends)
    }

    @Test func S164_onlyTheFaultedDirectoryIsAffected() async throws {
        let faulted = tempDir()
        let other = tempDir()
        let fs = FaultyFileSystem(directory: faulted, condition: .ioError)
        defer { fs.uninstall() }
        let store = FileKeyValueStorage(directory: other)
        try await store.setItem("k", "v")
        #expect(try await store.getItem("k") == "v")
        await #expect(throws: FileStorageError.self) { try await FileKeyValueStorage(directory: faulted).setItem("k", "v") }
        #expect(fs.calls(.write) == 0 && fs.totalFailures >= 1)
    }
}
