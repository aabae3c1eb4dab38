import CTrackerCurlShim

/// A lock-free `UInt64` cell that deploys to every supported OS.
///
/// `Synchronization.Atomic` needs macOS 15 / iOS 18 / tvOS 18 / visionOS 2, above the SDKs'
/// floors (macOS 12, iOS 15, tvOS 15, visionOS 1); this cell uses the C compiler's atomic
/// builtins instead, on every platform, so Linux tests exercise the same code Apple devices run.
public final class AtomicCell: @unchecked Sendable {
    private let cell: UnsafeMutablePointer<UInt64>

    /// Creates a cell holding `value`.
    public init(_ value: UInt64 = 0) {
        cell = UnsafeMutablePointer<UInt64>.allocate(capacity: 1)
        cell.initialize(to: value)
    }

    deinit {
        cell.deallocate()
    }

    /// The value, with acquire ordering.
    public func load() -> UInt64 { ctracker_atomic_load_acquire(cell) }

    /// Stores `value` with release ordering.
    public func store(_ value: UInt64) { ctracker_atomic_store_release(cell, value) }

    /// Stores `value` with relaxed ordering.
    public func storeRelaxed(_ value: UInt64) { ctracker_atomic_store_relaxed(cell, value) }

    /// Adds `delta` (wrapping) with relaxed ordering and returns the new value.
    @discardableResult
    public func wrappingAddRelaxed(_ delta: UInt64) -> UInt64 { ctracker_atomic_add_relaxed(cell, delta) }
}
