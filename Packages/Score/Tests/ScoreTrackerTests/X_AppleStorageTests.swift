import Foundation
import Testing
import TrackerCore
import TrackerCoreTestKit

@testable import ScoreTracker

// Issue 27, item 5: Score's default store goes through Core's `StorageLocation`.
//
// New scenarios:
//   AP27 the default directory per platform: Caches on tvOS, Application Support on iOS, visionOS
//        and macOS (Rocalytics/score-<siteId>), the XDG data directory on Linux (unchanged)
//   AP28 the locked-device rule: files protected at load (EPERM on iOS) make the load throw
//        ProtectedDataUnavailable, and the store then refuses to write the identity or compact the
//        queue until a load succeeds; on Linux the same errno is an ordinary failure
//   AP29 a client started on protected files says so once and overwrites nothing stored
@Suite struct AppleStorageTests {
    /// Fails every open of a file under `directory` with EPERM, as Darwin does for a file with
    /// complete-until-first-user-authentication protection before the first unlock.
    final class ProtectedFiles: FileFaultPolicy, @unchecked Sendable {
        func fault(_ call: FileCall, path: String, bytes: Int) -> Int32? {
            call == .openForReading || call == .openForWriting ? EPERM : nil
        }
    }

    static func tempDir(_ tag: String) -> String { NSTemporaryDirectory() + "score-\(tag)-\(UUID().uuidString)" }

    @Test func AP27_defaultDirectoryPerPlatform() {
        let system = StorageLocation.SystemDirectories(
            applicationSupport: "/app/Library/Application Support", caches: "/app/Library/Caches")
        func dir(_ p: StorageLocation.Platform) -> String {
            FileScoreStore.defaultDirectory(siteId: "urc ios/1", platform: p, system: system, hostBase: "/home/u/.local/share")
        }
        #expect(dir(.tvOS) == "/app/Library/Caches/Rocalytics/score-urc_ios_1")
        for p in [StorageLocation.Platform.iOS, .visionOS, .macOS] {
            #expect(dir(p) == "/app/Library/Application Support/Rocalytics/score-urc_ios_1")
        }
        #expect(dir(.linux) == "/home/u/.local/share/score-tracker/urc_ios_1")
        #expect(FileScoreStore.defaultDirectory(siteId: "", platform: .linux, system: nil, hostBase: "/d") == "/d/score-tracker/default")
        // Here (Linux) the public function keeps the XDG layout.
        #expect(FileScoreStore.defaultDirectory(siteId: "s").hasSuffix("/score-tracker/s"))
    }

    @Test func AP28_protectedFilesAreNeverOverwritten() async throws {
        let dir = Self.tempDir("ap28")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let first = FileScoreStore(directory: dir, sync: false, platform: .iOS)
        _ = try first.load()
        try await first.saveIdentity(Array("stored".utf8))
        try await first.appendQueueRecords([Array("r1".utf8), Array("r2".utf8)])

        let lockedNow = FileFaults.install(ProtectedFiles(), under: dir)
        let store = FileScoreStore(directory: dir, sync: false, platform: .iOS)
        #expect(throws: StorageLocation.ProtectedDataUnavailable.self) { try store.load() }
        #expect(store.storedDataProtected)
        lockedNow.remove()
        // Unlocked meanwhile, but this store never read its files: it still writes nothing.
        await #expect(throws: StorageLocation.ProtectedDataUnavailable.self) { try await store.saveIdentity(Array("minted".utf8)) }
        await #expect(throws: StorageLocation.ProtectedDataUnavailable.self) { try await store.rewriteQueue([]) }
        await #expect(throws: StorageLocation.ProtectedDataUnavailable.self) { _ = try await store.compactQueue(keeping: []) }
        #expect(try FileIO.readBytes(dir + "/identity.json") == Array("stored".utf8))
        // A load that reads the files ends the refusal.
        let contents = try store.load()
        #expect(contents.identity == Array("stored".utf8))
        #expect(contents.queueRecords.count == 2)
        #expect(!store.storedDataProtected)
        try await store.saveIdentity(Array("next".utf8))
        #expect(try FileIO.readBytes(dir + "/identity.json") == Array("next".utf8))

        // Linux has no protection classes: the same errno is an ordinary read failure.
        let again = FileFaults.install(ProtectedFiles(), under: dir)
        defer { again.remove() }
        let linux = FileScoreStore(directory: dir, sync: false, platform: .linux)
        #expect(throws: (any Error).self) { try linux.load() }
        #expect(!linux.storedDataProtected)
    }

    @Test func AP29_aClientStartedOnProtectedFilesOverwritesNothing() async throws {
        let dir = Self.tempDir("ap29")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let h0 = Harness(store: FileScoreStore(directory: dir, sync: false, platform: .iOS))
        let c0 = h0.client(granted: true)
        c0.identify(userId: "u-1")
        c0.track("before")
        await h0.settle()
        let identity = try #require(try FileIO.readBytes(dir + "/identity.json"))
        let log = try #require(try FileIO.readBytes(dir + "/queue.log"))

        let locked = FileFaults.install(ProtectedFiles(), under: dir)
        let h = Harness(store: FileScoreStore(directory: dir, sync: false, platform: .iOS))
        let c = h.client(granted: true)
        c.identify(userId: "u-2")
        c.track("while-locked")
        await h.settle()
        locked.remove()
        c.track("after-unlock")
        c.identify(userId: "u-3")
        await h.settle()
        let protectedNotes = h.diagnostics.all.filter { $0.message.contains("protected until the device is unlocked") }
        #expect(protectedNotes.count == 1)
        #expect(try FileIO.readBytes(dir + "/identity.json") == identity)
        // The stored events are still all there (appends may follow; nothing was compacted away).
        let now = try #require(try FileIO.readBytes(dir + "/queue.log"))
        #expect(Array(now.prefix(log.count)) == log)
    }
}
