import Foundation
import Testing
import TrackerCore

/// The default store of the onboarding and paywall trackers (issue 37 item 1).
///
/// Scenarios: S229 creating it does no file I/O (its folder does not exist yet); the first call
/// prepares the folder (mode 0700) on the store's own queue, then reads and writes go through;
/// S230 a preparation that fails fails that call and is tried again by the next; S231 the default
/// folder is `Rocalytics/<name>` under the host's data directory on Linux.
@Suite struct StandardFileStorageTests {
    private func tempBase() -> String {
        NSTemporaryDirectory() + "standard-storage-\(IDs.uuidV4())"
    }

    @Test func S229_createdWithoutIOPreparedByTheFirstCall() async throws {
        let base = tempBase()
        defer { try? FileManager.default.removeItem(atPath: base) }
        let dir = base + "/a/b/Rocalytics/trackers"
        let store = StandardFileStorage(directory: dir)
        #expect(!FileManager.default.fileExists(atPath: base), "the constructor touched the disk")
        #expect(!store.isPrepared)
        #expect(try await store.getItem("k") == nil)
        #expect(store.isPrepared)
        let attributes = try FileManager.default.attributesOfItem(atPath: dir)
        #expect((attributes[.posixPermissions] as? NSNumber)?.intValue == 0o700)
        try await store.setItem("k", "v1")
        #expect(try await store.getItem("k") == "v1")
        try await store.removeItem("k")
        #expect(try await store.getItem("k") == nil)
    }

    @Test func S230_aFailedPreparationIsTriedAgain() async throws {
        let base = tempBase()
        defer { try? FileManager.default.removeItem(atPath: base) }
        // A regular file where a parent folder must go: preparing fails.
        #expect(FileManager.default.createFile(atPath: base, contents: Data("x".utf8)))
        let store = StandardFileStorage(directory: base + "/Rocalytics/trackers")
        await #expect(throws: (any Error).self) { try await store.setItem("k", "v") }
        #expect(!store.isPrepared)
        try FileManager.default.removeItem(atPath: base)
        try await store.setItem("k", "v")
        #expect(store.isPrepared)
        #expect(try await store.getItem("k") == "v")
    }

    #if os(Linux)
        @Test func S231_theDefaultFolderOnLinux() {
            let dir = StandardFileStorage.defaultDirectory(name: "trackers")
            let env = ProcessInfo.processInfo.environment
            let home = (env["HOME"] ?? env["TMPDIR"] ?? "/tmp") + "/.local/share"
            let host = env["XDG_DATA_HOME"].flatMap { $0.isEmpty ? nil : $0 } ?? home
            #expect(dir == host + "/Rocalytics/trackers")
            #expect(StandardFileStorage().directory == dir)
            #expect(StandardFileStorage.defaultDirectory(name: "../x") == host + "/Rocalytics/..x")
        }
    #endif
}
