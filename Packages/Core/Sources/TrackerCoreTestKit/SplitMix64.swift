/// A seeded, deterministic 64-bit generator (SplitMix64) for property tests and fuzzers: the
/// same seed gives the same sequence on every platform, so a failing seed replays.
public struct SplitMix64: RandomNumberGenerator, Sendable {
    /// The generator's state (the seed before the first draw).
    public private(set) var state: UInt64

    /// A generator starting from `seed`.
    public init(seed: UInt64) { state = seed }

    /// The next 64 random bits.
    public mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    /// A number in `0..<n` (0 when `n <= 1`).
    public mutating func below(_ n: Int) -> Int { Int(next() % UInt64(max(1, n))) }
    /// True with probability `percent` / 100.
    public mutating func chance(_ percent: Int) -> Bool { below(100) < percent }
    /// One of `items` (which must not be empty).
    public mutating func pick<T>(_ items: [T]) -> T { items[below(items.count)] }
}
