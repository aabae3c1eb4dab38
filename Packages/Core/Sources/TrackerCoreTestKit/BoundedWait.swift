import Dispatch
import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// A continuation resumed at most once: by the event a test waits for, or by the bound of
/// ``boundedWait(timeoutMs:what:onTimeout:_:)`` when the event never comes. Later resumes are
/// ignored, so a waiter list may keep it after the bound fired.
public final class OnceContinuation<T: Sendable>: @unchecked Sendable {
    private let lock = NSLock()
    private var continuation: CheckedContinuation<T, Never>?

    init(_ continuation: CheckedContinuation<T, Never>) { self.continuation = continuation }

    /// Resumes with `value` unless already resumed; returns whether this call resumed it.
    @discardableResult
    public func resume(returning value: T) -> Bool {
        lock.lock()
        let c = continuation
        continuation = nil
        lock.unlock()
        c?.resume(returning: value)
        return c != nil
    }
}

/// The real-time bound of the test kit's event-driven waits (60 s): far above any wait that
/// succeeds, there only so that a regression fails the test instead of hanging the suite.
public let defaultWaitBoundMs = 60_000

/// Whether the process runs under ThreadSanitizer (its runtime's `__tsan_init` is linked in).
/// Everything runs several times slower there, and a suite's tests then queue far longer for the
/// few threads of the shared pool: a real-time bound tight enough to fail a hung wait quickly in
/// an ordinary run needs more room (Score's 10 s flush bound failed under `make test-tsan` on a
/// loaded two-core machine while every flush finished).
public let underThreadSanitizer: Bool = {
    #if canImport(Darwin)
        return dlsym(UnsafeMutableRawPointer(bitPattern: -2), "__tsan_init") != nil  // RTLD_DEFAULT
    #else
        return dlsym(nil, "__tsan_init") != nil  // RTLD_DEFAULT is a null handle on glibc
    #endif
}()

/// Waits for an event, at most `timeoutMs` of real time. `register` gets the continuation to put
/// in a waiter list (or to resume at once); when the bound passes first, the wait resumes with
/// `onTimeout()` and a line naming `what` goes to standard error.
public func boundedWait<T: Sendable>(
    timeoutMs: Int = defaultWaitBoundMs, what: String, onTimeout: @escaping @Sendable () -> T,
    _ register: (OnceContinuation<T>) -> Void
) async -> T {
    await withCheckedContinuation { (c: CheckedContinuation<T, Never>) in
        let once = OnceContinuation(c)
        DispatchQueue.global().asyncAfter(deadline: .now() + .milliseconds(timeoutMs)) {
            let value = onTimeout()
            if once.resume(returning: value) {
                FileHandle.standardError.write(Data("test kit: \(what) gave up after \(timeoutMs) ms\n".utf8))
            }
        }
        register(once)
    }
}
