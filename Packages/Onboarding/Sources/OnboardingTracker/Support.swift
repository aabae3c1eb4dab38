import TrackerCore

/// A sink of onboarding run snapshots: it receives Core's generated contract type
/// ``OnboardingRunSnapshot`` (contract v1), whose `wireBytes()` are the exact bytes to send. A
/// retry hands over the very same value, so the bytes are identical.
public typealias OnboardingSink = Sink<OnboardingRunSnapshot>

/// The former payload type of an onboarding sink; the sink now takes ``OnboardingRunSnapshot``.
@available(*, deprecated, renamed: "OnboardingRunSnapshot")
public typealias OnboardingRunPayload = OnboardingRunSnapshot

extension OnboardingRunSnapshot {
    /// Whether this is the run's completion (`status` is `completed`).
    public var isCompleted: Bool { status == .completed }

    /// The compact UTF-8 wire bytes.
    @available(*, deprecated, renamed: "wireBytes()")
    public var bytes: [UInt8] { wireBytes() }

    /// The snapshot as ordered JSON.
    @available(*, deprecated, renamed: "wireJSON()")
    public var json: JSONValue { wireJSON() }

    /// The wire JSON text.
    @available(*, deprecated, message: "use String(decoding: wireBytes(), as: UTF8.self)")
    public var text: String { String(decoding: wireBytes(), as: UTF8.self) }

    /// The snapshot itself (the former payload wrapped it).
    @available(*, deprecated, message: "the sink's payload is the snapshot itself")
    public var snapshot: OnboardingRunSnapshot { self }
}

/// A value completed once; callbacks registered before or after completion run once.
final class Deferred<T: Sendable>: Sendable {
    private struct State: Sendable {
        var value: T?
        var done = false
        var callbacks: [@Sendable (T) -> Void] = []
    }

    private let state = Locked(State())

    init() {}

    var isComplete: Bool { state.withLock { $0.done } }
    var value: T? { state.withLock { $0.value } }

    func onComplete(_ cb: @escaping @Sendable (T) -> Void) {
        let v = state.withLock { s -> T? in
            if s.done { return s.value }
            s.callbacks.append(cb)
            return nil
        }
        if let v { cb(v) }
    }

    func complete(_ v: T) {
        let cbs = state.withLock { s -> [@Sendable (T) -> Void] in
            guard !s.done else { return [] }
            s.done = true
            s.value = v
            defer { s.callbacks = [] }
            return s.callbacks
        }
        for cb in cbs { cb(v) }
    }
}

/// Calls `done(timedOut)` once: when `register`'s completion fires or `ms` elapse on `scheduler`.
func boundedWait(ms: Int64, scheduler: any TrackerScheduler, register: (@escaping @Sendable () -> Void) -> Void,
                 done: @escaping @Sendable (Bool) -> Void)
{
    let state = Locked<(fired: Bool, token: TimerToken?)>((false, nil))
    let fire: @Sendable (Bool) -> Void = { timedOut in
        let (first, token) = state.withLock { s -> (Bool, TimerToken?) in
            defer { s.fired = true }
            return (!s.fired, s.token)
        }
        guard first else { return }
        if !timedOut, let token { scheduler.cancel(token) }
        done(timedOut)
    }
    let token = scheduler.schedule(afterMs: max(0, ms)) { fire(true) }
    let already = state.withLock { s -> Bool in
        s.token = token
        return s.fired
    }
    if already { scheduler.cancel(token) }
    register { fire(false) }
}

/// Awaits a callback-style completion; resumes `false` promptly when the task is cancelled.
func awaitCancellable(_ register: (@escaping @Sendable () -> Void) -> Void) async -> Bool {
    let box = Locked<(cont: CheckedContinuation<Bool, Never>?, result: Bool?)>((nil, nil))
    let finish: @Sendable (Bool) -> Void = { r in
        let c = box.withLock { b -> CheckedContinuation<Bool, Never>? in
            guard b.result == nil else { return nil }
            b.result = r
            defer { b.cont = nil }
            return b.cont
        }
        c?.resume(returning: r)
    }
    return await withTaskCancellationHandler {
        await withCheckedContinuation { (c: CheckedContinuation<Bool, Never>) in
            let ready = box.withLock { b -> Bool? in
                if let r = b.result { return r }
                b.cont = c
                return nil
            }
            if let ready { c.resume(returning: ready); return }
            register { finish(true) }
            if Task.isCancelled { finish(false) }
        }
    } onCancel: {
        finish(false)
    }
}

/// A storage wrapper that reports each write that landed (for re-writing after a predecessor's
/// late write, onboarding-tracker.md §7.5 W2).
final class LandingObserverStorage: KeyValueStorage {
    let inner: any KeyValueStorage
    let onLanded: @Sendable () -> Void

    init(_ inner: any KeyValueStorage, onLanded: @escaping @Sendable () -> Void) {
        self.inner = inner
        self.onLanded = onLanded
    }

    func getItem(_ key: String) async throws -> String? { try await inner.getItem(key) }
    func setItem(_ key: String, _ value: String) async throws {
        try await inner.setItem(key, value)
        onLanded()
    }
    func removeItem(_ key: String) async throws {
        try await inner.removeItem(key)
        onLanded()
    }
}
