/// Whether a screen is shown, from the appear and disappear calls of a UI framework (SwiftUI's
/// `onAppear`/`onDisappear`), which may repeat: the portable logic behind the trackers' view
/// modifiers (issue 37 item 7), tested on Linux.
///
/// A screen is entered on its first appearance and exited on its last disappearance: a second
/// `onAppear` without a disappearance between (a `TabView` or a navigation stack can send one)
/// enters nothing again, and a disappearance that does not match an appearance exits nothing.
/// After the exit, an appearance enters the screen again.
public struct ViewPresence: Sendable, Equatable {
    /// Appearances not yet matched by a disappearance.
    public private(set) var visibleCount = 0

    /// A screen not shown.
    public init() {}

    /// Whether the screen is shown.
    public var isVisible: Bool { visibleCount > 0 }

    /// The view appeared: `true` when this enters the screen (record it now).
    public mutating func appear() -> Bool {
        visibleCount += 1
        return visibleCount == 1
    }

    /// The view disappeared: `true` when this exits the screen (record the exit now).
    public mutating func disappear() -> Bool {
        guard visibleCount > 0 else { return false }
        visibleCount -= 1
        return visibleCount == 0
    }
}
