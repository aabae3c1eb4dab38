import TrackerCore

/// A sink of onboarding run snapshots: it receives Core's generated contract type
/// `OnboardingRunSnapshot` (contract v1), whose `wireBytes()` are the exact bytes to send. A
/// retry hands over the very same value, so the bytes are identical.
public typealias OnboardingSink = Sink<OnboardingRunSnapshot>

/// 0.1.0's payload type of an onboarding sink; the sink takes `OnboardingRunSnapshot` itself.
/// Kept for one release so 0.1.0 code keeps compiling (with a warning).
@available(*, deprecated, renamed: "OnboardingRunSnapshot")
public typealias OnboardingRunPayload = OnboardingRunSnapshot

extension OnboardingRunSnapshot {
    /// Whether this is the run's completion (`status` is `completed`).
    public var isCompleted: Bool { status == .completed }

    /// 0.1.0's spelling of ``OnboardingRunSnapshot/wireBytes()``.
    @available(*, deprecated, renamed: "wireBytes()")
    public var bytes: [UInt8] { wireBytes() }

    /// 0.1.0's spelling of ``OnboardingRunSnapshot/wireJSON()``.
    @available(*, deprecated, renamed: "wireJSON()")
    public var json: JSONValue { wireJSON() }

    /// 0.1.0's wire text.
    @available(*, deprecated, message: "use String(decoding: wireBytes(), as: UTF8.self)")
    public var text: String { String(decoding: wireBytes(), as: UTF8.self) }

    /// 0.1.0's wrapped snapshot: the payload is now the snapshot itself.
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
func boundedWait(
    ms: Int64, scheduler: any TrackerScheduler, register: (@escaping @Sendable () -> Void) -> Void,
    done: @escaping @Sendable (Bool) -> Void
) {
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
            if let ready {
                c.resume(returning: ready)
                return
            }
            register { finish(true) }
            if Task.isCancelled { finish(false) }
        }
    } onCancel: {
        finish(false)
    }
}

/// A storage wrapper that reports each write that landed (for re-writing after a predecessor's
/// late write, <doc:HandOver> W2, and for the seq reservation) and each that failed.
final class LandingObserverStorage: KeyValueStorage {
    let inner: any KeyValueStorage
    let onFinished: @Sendable (_ landed: Bool) -> Void

    init(_ inner: any KeyValueStorage, onFinished: @escaping @Sendable (_ landed: Bool) -> Void) {
        self.inner = inner
        self.onFinished = onFinished
    }

    func getItem(_ key: String) async throws -> String? { try await inner.getItem(key) }
    func setItem(_ key: String, _ value: String) async throws {
        do { try await inner.setItem(key, value) } catch {
            onFinished(false)
            throw error
        }
        onFinished(true)
    }
    func removeItem(_ key: String) async throws {
        do { try await inner.removeItem(key) } catch {
            onFinished(false)
            throw error
        }
        onFinished(true)
    }
}

/// Which run a stored state (landed, or being written) holds as its resumable `current`, and the
/// highest seq it reserves for that run: a later launch resumes that run past this seq.
/// `runId == nil`: no run in progress is stored.
struct StoredRunMark: Sendable, Equatable {
    var runId: String?
    var reserved: Int

    static let none = StoredRunMark(runId: nil, reserved: 0)

    init(runId: String?, reserved: Int) {
        self.runId = runId
        self.reserved = reserved
    }

    /// The mark of an outbox ledger entry (`[runId: reserved]`, or none).
    init(records: [String: Int]) {
        self.init(runId: records.first?.key, reserved: records.first?.value ?? 0)
    }

    /// The outbox ledger entry of this mark.
    var records: [String: Int] { runId.map { [$0: reserved] } ?? [:] }

    /// Whether a snapshot `seq` of `runId` can never be built again from this stored state.
    func covers(_ runId: String, seq: Int) -> Bool { self.runId != runId || seq <= reserved }
}

/// How many seqs a write of the live run reserves beyond its last assigned one (issue 14 item 5):
/// that many snapshots may be sent while writes fail or hang, and a run resumed from that state
/// continues past them, so it never reuses one of their seqs for another body.
let seqReservation = 16
