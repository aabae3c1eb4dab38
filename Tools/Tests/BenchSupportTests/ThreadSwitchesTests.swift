import Testing

@testable import BenchSupport

/// The idle bench's per-thread arithmetic: counted per thread id, summed by name.
@Suite struct ThreadSwitchesTests {
    /// Two Dispatch workers share a name; one ends inside the window and a new one is born. Summed
    /// by name before and after, the figure was 45 - 47 = -2 (the bench printed -6 once); per id
    /// it is the 3 switches the surviving worker made plus the 2 of the new one.
    @Test func BS1_countedPerThreadIdNotPerName() {
        let before = [10: 100, 11: 40, 12: 7]
        let after: [Int: (name: String, switches: Int)] = [
            10: ("tracker.curl", 100), 11: ("other_threads", 43), 13: ("other_threads", 2),
        ]
        let d = switchesBetween(before, after)
        #expect(d.byName == ["tracker.curl": 0, "other_threads": 5])
        #expect(d.ended == 1)
    }

    @Test func BS2_anIdleWindowCountsNothing() {
        let d = switchesBetween([1: 5], [1: ("tracker.io", 5)])
        #expect(d.byName == ["tracker.io": 0])
        #expect(d.ended == 0)
    }
}
