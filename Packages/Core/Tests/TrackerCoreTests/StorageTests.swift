import Foundation
import Testing
import TrackerCore
import TrackerCoreTestKit

@Suite struct FileStorageTests {
    func tempDir() -> String {
        NSTemporaryDirectory() + "tracker-storage-\(IDs.uuidV4())/nested"
    }

    @Test func roundTripRemoveAndReopen() async throws {
        let dir = tempDir()
        let store = FileKeyValueStorage(directory: dir)
        #expect(try await store.getItem("rocalytics-sdk:onboarding-run") == nil)
        try await store.setItem("rocalytics-sdk:onboarding-run", "{\"format\":1,\"é\":\"日本\"}")
        try await store.setItem("rocalytics-sdk:onboarding-run", "{\"format\":1}")
        let reopened = FileKeyValueStorage(directory: dir)
        #expect(try await reopened.getItem("rocalytics-sdk:onboarding-run") == "{\"format\":1}")
        try await reopened.removeItem("rocalytics-sdk:onboarding-run")
        try await reopened.removeItem("rocalytics-sdk:onboarding-run")  // absent: still fine
        #expect(try await store.getItem("rocalytics-sdk:onboarding-run") == nil)
    }

    @Test func filesAreOwnerOnly() async throws {
        let dir = tempDir()
        let store = FileKeyValueStorage(directory: dir)
        try await store.setItem("k", "v")
        let fileMode = try #require(try FileManager.default.attributesOfItem(atPath: store.path(for: "k"))[.posixPermissions] as? Int)
        let dirMode = try #require(try FileManager.default.attributesOfItem(atPath: dir)[.posixPermissions] as? Int)
        #expect(fileMode == 0o600)
        #expect(dirMode == 0o700)
        // No temporary file is left behind.
        #expect(try FileManager.default.contentsOfDirectory(atPath: dir) == ["k.kv"])
    }

    // Issue 14 item 8: temporary files left by a kill between write and rename were never removed.
    @Test func S158_staleTemporaryFilesAreRemovedWhenAStoreOpens() async throws {
        let dir = tempDir()
        let store = FileKeyValueStorage(directory: dir)
        try await store.setItem("rocalytics-sdk:onboarding-run", "{}")
        let kept = store.path(for: "rocalytics-sdk:onboarding-run")
        let stale = [kept + ".tmp-" + IDs.uuidV4(), store.path(for: "paywall") + ".tmp-" + IDs.uuidV4()]
        let fresh = kept + ".tmp-" + IDs.uuidV4()  // a write in flight elsewhere
        let foreign = [dir + "/notes.tmp-" + IDs.uuidV4(), kept + ".tmp-short", dir + "/other.txt"]
        for p in stale + [fresh] + foreign { _ = FileManager.default.createFile(atPath: p, contents: Data("x".utf8)) }
        let old = Date(timeIntervalSinceNow: -Double(FileKeyValueStorage.staleTemporaryFileAge) - 5)
        for p in stale + foreign { try FileManager.default.setAttributes([.modificationDate: old], ofItemAtPath: p) }

        let reopened = FileKeyValueStorage(directory: dir)
        // Operations apply in order: the clean-up ran before this read.
        #expect(try await reopened.getItem("rocalytics-sdk:onboarding-run") == "{}")
        let names = Set(try FileManager.default.contentsOfDirectory(atPath: dir))
        let expected = Set(([kept, fresh] + foreign).map { String($0.split(separator: "/").last!) })
        #expect(names == expected)
        // A store on a directory that does not exist yet starts without error.
        let empty = FileKeyValueStorage(directory: tempDir())
        #expect(try await empty.getItem("k") == nil)
    }

    @Test func keysMapToDistinctSafeFileNames() {
        let store = FileKeyValueStorage(directory: "/tmp/x")
        #expect(store.path(for: "a/b") == "/tmp/x/a%2Fb.kv")
        #expect(store.path(for: "../etc") == "/tmp/x/%2E%2E%2Fetc.kv")
        #expect(store.path(for: "a:b") != store.path(for: "a_b"))
    }

    @Test func unwritableDirectoryFailsWithAnError() async {
        let store = FileKeyValueStorage(directory: "/proc/definitely-not-writable")
        await #expect(throws: FileStorageError.self) { try await store.setItem("k", "v") }
    }
}

@Suite struct SerialStoreTests {
    func makeStore(_ storage: any KeyValueStorage, _ clock: ManualClock, errors: Locked<[String]> = Locked([])) -> SerialStore {
        SerialStore(storage: storage, key: "k", scheduler: clock) { e in errors.withLock { $0.append(e) } }
    }

    @Test func S153_serialStoreOrder() async {
        let clock = ManualClock()
        let storage = InMemoryKeyValueStorage()
        let store = makeStore(storage, clock)
        store.save(["n": 1])
        store.save(["n": 2])
        #expect(await store.load() == ["n": 2])
        store.save(nil)
        #expect(await store.load() == nil)
        #expect(storage.snapshot["k"] == nil)
    }

    @Test func S154_readResults() async {
        let clock = ManualClock()
        let ok = makeStore(InMemoryKeyValueStorage(["k": "{\"a\":1}"]), clock)
        guard case .ok(let value, _) = await ok.read() else {
            Issue.record("expected ok")
            return
        }
        #expect(value == ["a": 1])

        let invalid = makeStore(InMemoryKeyValueStorage(["k": "{nope"]), clock)
        guard case .invalid = await invalid.read() else {
            Issue.record("expected invalid")
            return
        }

        var once = FaultInjectingStorage.Faults()
        once.failNextGets = 1
        let retried = makeStore(FaultInjectingStorage(backing: InMemoryKeyValueStorage(["k": "{\"a\":1}"]), faults: once), clock)
        guard case .ok(let v2, _) = await retried.read() else {
            Issue.record("expected ok after one retry")
            return
        }
        #expect(v2 == ["a": 1])

        var twice = FaultInjectingStorage.Faults()
        twice.failNextGets = 2
        let failed = makeStore(FaultInjectingStorage(backing: InMemoryKeyValueStorage(["k": "{\"a\":1}"]), faults: twice), clock)
        guard case .failed = await failed.read() else {
            Issue.record("expected failed")
            return
        }
    }

    @Test func S155_readAfterAnotherStoresWrites() async {
        let clock = ManualClock()
        var slow = FaultInjectingStorage.Faults()
        slow.writeDelayMs = 500
        let storage = FaultInjectingStorage(clock: clock, faults: slow)
        let store1 = makeStore(storage, clock)
        let store2 = makeStore(storage, clock)
        store1.save(["n": 1])
        let readResult = Locked<JSONValue?>(nil)
        clock.spawn {
            if case .ok(let v, _) = await store2.read(after: { await store1.idle() }) { readResult.withLock { $0 = v } }
            await store2.saveWith { .value(["n": 2]) }
        }
        await clock.advance(byMs: 500)
        #expect(readResult.value == ["n": 1])
        await clock.advance(byMs: 500)
        #expect(storage.stored("k") == "{\"n\":2}")
    }

    @Test func S156_deferredValues() async {
        // Held: the queued write must not run before the value changes (it raced it, rarely).
        let clock = ManualClock(holdsOutsideWork: true)
        let storage = InMemoryKeyValueStorage()
        let store = makeStore(storage, clock)
        let state = Locked(1)
        store.enqueueSaveWith { .value(["n": .number(Double(state.value))]) }
        state.withLock { $0 = 2 }
        await clock.settle()
        #expect(storage.snapshot["k"] == "{\"n\":2}")
        store.enqueueSaveWith { .skip }
        await clock.settle()
        #expect(storage.snapshot["k"] == "{\"n\":2}")
    }

    @Test func S157_aBrokenStorageIsReportedNotThrown() async {
        let clock = ManualClock()
        var faults = FaultInjectingStorage.Faults()
        faults.writesAlwaysFail = true
        let storage = FaultInjectingStorage(backing: InMemoryKeyValueStorage(["k": "{not json"]), faults: faults)
        let errors = Locked<[String]>([])
        let store = makeStore(storage, clock, errors: errors)
        store.save(["n": 1])
        #expect(await store.load() == nil)
        #expect(errors.value.count == 2)
    }
}

@Suite struct FileStorageConcurrencyTests {
    /// Two stores on one directory writing the same key at once (a tracker and its successor, or
    /// two processes) never fail and leave one complete value and no temporary file.
    @Test func twoStoresWritingOneKeyNeverCollide() async throws {
        let dir = NSTemporaryDirectory() + "tracker-storage-\(IDs.uuidV4())"
        let a = FileKeyValueStorage(directory: dir)
        let b = FileKeyValueStorage(directory: dir)
        try await withThrowingTaskGroup(of: Void.self) { group in
            for i in 0..<50 {
                group.addTask { try await a.setItem("k", "{\"from\":\"a\",\"i\":\(i)}") }
                group.addTask { try await b.setItem("k", "{\"from\":\"b\",\"i\":\(i)}") }
            }
            try await group.waitForAll()
        }
        let value = try #require(try await a.getItem("k"))
        #expect((try? WireJSON.decode(value))?["i"] != nil)
        #expect(try FileManager.default.contentsOfDirectory(atPath: dir) == ["k.kv"])
    }
}

@Suite struct SharedQueueTests {
    /// A store created later over the same storage and key reads only after an earlier store's
    /// queued writes landed (a tracker replacing a disposed one on the same storage).
    @Test func aLaterStoreReadsAfterTheEarlierStoresWrites() async {
        let clock = ManualClock()
        let storage = FaultInjectingStorage(clock: clock)
        storage.update { $0.writeDelayMs = 500 }
        let first = SerialStore(storage: storage, key: "k", scheduler: clock, sharedQueue: true) { _ in }
        first.save(["n": 1])
        first.save(["n": 2])
        let second = SerialStore(storage: storage, key: "k", scheduler: clock, sharedQueue: true) { _ in }
        let seen = Locked<JSONValue?>(nil)
        clock.spawn {
            if case .ok(let v, _) = await second.read() { seen.withLock { $0 = v } }
        }
        await clock.advance(byMs: 999)
        #expect(seen.value == nil)  // still behind the first store's second write
        await clock.advance(byMs: 1)
        #expect(seen.value == ["n": 2])
    }

    /// A store is superseded once a store created later on its shared queue started an
    /// operation, not before (its operations queued earlier still count as its own).
    @Test func aStoreIsSupersededOnceALaterStoreOnTheQueueStarted() async {
        let clock = ManualClock()
        let storage = FaultInjectingStorage(clock: clock)
        storage.update { $0.writeDelayMs = 500 }
        let first = SerialStore(storage: storage, key: "k", scheduler: clock, sharedQueue: true) { _ in }
        first.save(["n": 1])
        let second = SerialStore(storage: storage, key: "k", scheduler: clock, sharedQueue: true) { _ in }
        let unshared = SerialStore(storage: storage, key: "k", scheduler: clock) { _ in }
        clock.spawn { _ = await second.read() }
        await clock.advance(byMs: 499)
        #expect(!first.isSuperseded)  // the second store's read waits behind the first's write
        await clock.advance(byMs: 1)
        #expect(first.isSuperseded)
        #expect(!second.isSuperseded)
        #expect(!unshared.isSuperseded)
    }

    @Test func separateQueuesByDefaultAndPerKey() async {
        let clock = ManualClock()
        let storage = FaultInjectingStorage(clock: clock)
        storage.update { $0.writesNeverFinish = true }
        let writer = SerialStore(storage: storage, key: "k", scheduler: clock, sharedQueue: true) { _ in }
        writer.save(["n": 1])  // never finishes
        let otherKey = SerialStore(storage: storage, key: "other", scheduler: clock, sharedQueue: true) { _ in }
        let unshared = SerialStore(storage: storage, key: "k", scheduler: clock) { _ in }
        let reads = Locked(0)
        clock.spawn {
            _ = await otherKey.read()
            reads.withLock { $0 += 1 }
        }
        clock.spawn {
            _ = await unshared.read()
            reads.withLock { $0 += 1 }
        }
        await clock.settle()
        #expect(reads.value == 2)
    }
}
