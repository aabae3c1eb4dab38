import Testing
import TrackerCore
import TrackerCoreTestKit

@testable import PaywallTracker

// Launch cost (issue 19): the tracker's constructor does no storage I/O on the caller's thread.
//
// New scenario: L1 the constructor returns while its storage's first read is held (the read
// blocks its thread until the test opens the gate); once released, the restored snapshot is
// resent as at any launch.
@Suite struct LaunchTests {
    @Test func L1_constructorReturnsWhileTheFirstReadIsHeld() async throws {
        let backing = InMemoryKeyValueStorage()
        // Launch 1 leaves one unsent presentation.
        let first = PaywallFixture(storage: backing) { _, _ in .result(.transient) }
        _ = try #require(first.tracker.start(INFO))
        await first.settle()
        await first.tracker.idle()
        first.tracker.dispose()
        #expect(backing.snapshot[STORAGE_KEY] != nil)

        // Launch 2: its storage's reads block until the gate opens. A constructor that read
        // on the caller's thread would never get past this line.
        let gated = GatedReadStorage(backing: backing)
        let second = PaywallFixture(storage: gated)
        // The read runs in the background and is held there now.
        #expect(await gated.gate.waitUntilEntered())
        #expect(gated.gate.entered == 1)
        #expect(second.received.isEmpty)

        gated.gate.open()
        await second.settle()
        await second.tracker.idle()
        await second.settle()
        #expect(second.received.count == 1)
        #expect(gated.gate.entered == 1)
    }
}
