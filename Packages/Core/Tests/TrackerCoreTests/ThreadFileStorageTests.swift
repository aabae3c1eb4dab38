import Foundation
import Testing
import TrackerCore

/// A store over a file store's files whose I/O runs on its owner's thread (issue 36: onboarding's
/// writes never wait behind another engine's sync on a store the app shares).
///
/// Scenario: S246 standing for a `StandardFileStorage`, it does no file I/O when created, prepares
/// the folder (mode 0700) on its thread before its first call, makes every file call on that
/// thread, and reads and writes the very files of the store it stands for; a `FileKeyValueStorage`
/// is stood for the same way, and any other store is not.
@Suite struct ThreadFileStorageTests {
    /// Records whether each file call under the folder ran on `thread`.
    final class OnThread: FileFaultPolicy, @unchecked Sendable {
        let thread: SerialThread
        private let calls = Locked<[(FileCall, Bool)]>([])
        init(_ thread: SerialThread) { self.thread = thread }
        func fault(_ call: FileCall, path: String, bytes: Int) -> Int32? {
            let here = thread.isCurrent
            calls.withLock { $0.append((call, here)) }
            return nil
        }
        func take() -> [(FileCall, Bool)] {
            calls.withLock { c in
                defer { c = [] }
                return c
            }
        }
    }

    @Test func S246_theSameFilesOnTheOwnersThread() async throws {
        let base = NSTemporaryDirectory() + "thread-file-storage-\(IDs.uuidV4())"
        defer { try? FileManager.default.removeItem(atPath: base) }
        let dir = base + "/Rocalytics/trackers"
        let thread = SerialThread(name: "test.own-io")
        let policy = OnThread(thread)
        let installation = FileFaults.install(policy, under: base)
        defer { installation.remove() }

        let shared = StandardFileStorage(directory: dir)
        let own = try #require(ThreadFileStorage.sameFiles(as: shared, on: thread))
        #expect(own.directory == dir)
        #expect(!FileManager.default.fileExists(atPath: base), "creating it touched the disk")
        try await own.setItem("onboarding", "v1")
        let attributes = try FileManager.default.attributesOfItem(atPath: dir)
        #expect((attributes[.posixPermissions] as? NSNumber)?.intValue == 0o700)
        let calls = policy.take()
        #expect(calls.contains { $0.0 == .fsync } && calls.contains { $0.0 == .rename })
        #expect(calls.allSatisfy { $0.1 }, "a file call ran off the owner's thread: \(calls)")

        // The very files of the store it stands for, both ways.
        #expect(try await shared.getItem("onboarding") == "v1")
        try await shared.setItem("other", "from the shared store")
        #expect(try await own.getItem("other") == "from the shared store")
        _ = policy.take()
        try await own.removeItem("onboarding")
        #expect(policy.take().allSatisfy { $0.1 })
        #expect(try await shared.getItem("onboarding") == nil)

        let files = FileKeyValueStorage(directory: base + "/plain")
        let ownFiles = try #require(ThreadFileStorage.sameFiles(as: files, on: thread))
        try await ownFiles.setItem("k", "v")
        #expect(try await files.getItem("k") == "v")
        #expect(ThreadFileStorage.sameFiles(as: InMemoryKeyValueStorage(), on: thread) == nil)
    }
}
