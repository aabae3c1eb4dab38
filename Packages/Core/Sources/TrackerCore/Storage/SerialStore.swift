/// What a ``SerialStore`` read found.
public enum StoreReadResult: Sendable {
    /// A JSON value (with its stored text), or `nil` when nothing is stored.
    case ok(JSONValue?, raw: String?)
    /// Something is stored but it is not JSON.
    case invalid(raw: String, error: JSONParseError)
    /// The storage did not answer (it failed twice in a row).
    case failed(String)
}

/// What a deferred write stores when its turn comes.
public enum StoreWrite: Sendable {
    /// Store this value (as compact wire JSON).
    case value(JSONValue)
    /// Store this text as it is (compact JSON the caller built from wire bytes, ``OutboxEntries``).
    case text(String)
    /// Remove the key.
    case remove
    /// Leave the stored value as it is.
    case skip
}

/// JSON values under one storage key, with every read and write applied in call order, so an
/// older write can never land after a newer one. Operations never throw: failures go to
/// `onError`. Work runs through the injected scheduler.
public final class SerialStore: Sendable {
    /// The storage.
    public let storage: any KeyValueStorage
    /// The key.
    public let key: String
    private let scheduler: any TrackerScheduler
    private let onError: @Sendable (String) -> Void

    private let queue: StoreQueue
    /// Whether this store's operations run through ``TrackerScheduler/spawnOutbox(_:)``.
    private let outboxThread: Bool
    /// This store's place among the stores of its queue (1 for the first).
    private let generation: Int

    /// Creates a store over `storage` and `key`. `onError` receives a short description of
    /// each failed operation (never the stored value).
    ///
    /// With `sharedQueue`, every store created with `sharedQueue` over the same storage object
    /// and key in this process uses one queue: a store created later (a tracker replacing a
    /// disposed one) reads only after the writes an earlier store already queued have landed.
    public convenience init(
        storage: any KeyValueStorage, key: String, scheduler: any TrackerScheduler, sharedQueue: Bool = false,
        onError: @escaping @Sendable (String) -> Void
    ) {
        self.init(storage: storage, key: key, scheduler: scheduler, sharedQueue: sharedQueue, outboxThread: false, onError: onError)
    }

    /// Creates a store whose operations run on the outbox thread (``TrackerScheduler/spawnOutbox(_:)``)
    /// when `outboxThread` is set; otherwise the same as ``init(storage:key:scheduler:sharedQueue:onError:)``.
    public init(
        storage: any KeyValueStorage, key: String, scheduler: any TrackerScheduler, sharedQueue: Bool, outboxThread: Bool,
        onError: @escaping @Sendable (String) -> Void
    ) {
        self.outboxThread = outboxThread
        self.storage = storage
        self.key = key
        self.scheduler = scheduler
        self.onError = onError
        let queue = sharedQueue ? StoreQueue.shared(storage: storage, key: key) : StoreQueue()
        self.queue = queue
        self.generation = queue.register()
    }

    /// Whether a store created later on the same shared queue has started an operation (a
    /// successor tracker's first read, say): the stored value is now that store's to write, and
    /// a value built from this store's owner would replace what it wrote. Always `false`
    /// without `sharedQueue`.
    public var isSuperseded: Bool { queue.latestStarted > generation }

    /// Reads the value after every operation queued before it; when `after` is given, the
    /// read first awaits it (for example another store's ``idle()``, bounded by the caller).
    /// A failing `getItem` is retried once, in the same turn, before the read counts as failed.
    public func read(after wait: (@Sendable () async -> Void)? = nil) async -> StoreReadResult {
        await perform { [storage, key] in
            if let wait { await wait() }
            let raw: String?
            do {
                raw = try await storage.getItem(key)
            } catch {
                do {
                    raw = try await storage.getItem(key)
                } catch {
                    return .failed(String(describing: error))
                }
            }
            guard let raw else { return .ok(nil, raw: nil) }
            do {
                return .ok(try WireJSON.decode(raw), raw: raw)
            } catch let error as JSONParseError {
                return .invalid(raw: raw, error: error)
            } catch {
                return .invalid(raw: raw, error: JSONParseError(offset: 0, reason: "\(error)"))
            }
        }
    }

    /// Reads the value; `nil` when absent, not JSON or unreadable (the last two are reported).
    public func load() async -> JSONValue? {
        switch await read() {
        case .ok(let value, _): return value
        case .invalid(_, let error):
            onError("stored value is not JSON: \(error)")
            return nil
        case .failed(let reason):
            onError("read failed: \(reason)")
            return nil
        }
    }

    /// Queues a write; `nil` removes the key. Never throws.
    public func save(_ value: JSONValue?) {
        enqueue { [self] in await write(value.map { StoreWrite.value($0) } ?? .remove) }
    }

    /// Queues a write whose value is computed when its turn comes (so it is the latest state);
    /// resolves once it is done.
    public func saveWith(_ produce: @escaping @Sendable () async -> StoreWrite) async {
        await perform { [self] in await write(await produce()) }
    }

    /// Queues a deferred write without waiting for it; `done` runs once it finished (landed or failed).
    public func enqueueSaveWith(_ produce: @escaping @Sendable () async -> StoreWrite, done: (@Sendable (Bool) -> Void)? = nil) {
        enqueue { [self] in
            let ok = await write(await produce())
            done?(ok)
        }
    }

    /// Resolves once every operation queued so far has finished.
    public func idle() async {
        await perform {}
    }

    /// Whether operations are queued or running (on this store's queue).
    public var isBusy: Bool { queue.isBusy }

    @discardableResult
    private func write(_ w: StoreWrite) async -> Bool {
        do {
            switch w {
            case .value(let v): try await storage.setItem(key, WireJSON.encodeString(v))
            case .text(let t): try await storage.setItem(key, t)
            case .remove: try await storage.removeItem(key)
            case .skip: break
            }
            return true
        } catch {
            onError("write failed: \(error)")
            return false
        }
    }

    @discardableResult
    private func perform<T: Sendable>(_ op: @escaping @Sendable () async -> T) async -> T {
        await withCheckedContinuation { (c: CheckedContinuation<T, Never>) in
            enqueue { c.resume(returning: await op()) }
        }
    }

    private func enqueue(_ op: @escaping @Sendable () async -> Void) {
        queue.enqueue(op, generation: generation, scheduler: scheduler, outboxThread: outboxThread)
    }
}

/// The operations of one or more ``SerialStore``s, run one at a time in call order.
final class StoreQueue: Sendable {
    private struct State: Sendable {
        var ops: [(generation: Int, op: @Sendable () async -> Void)] = []
        var running = false
        /// Stores registered so far.
        var stores = 0
        /// The newest store generation whose operation has started.
        var latestStarted = 0
    }

    private let state = Locked(State())

    private struct Entry {
        weak var storage: AnyObject?
        weak var queue: StoreQueue?
    }

    private struct RegistryKey: Hashable {
        let storage: ObjectIdentifier
        let key: String
    }

    private static let registry = Locked<[RegistryKey: Entry]>([:])

    /// The process-wide queue of `storage` and `key`.
    static func shared(storage: any KeyValueStorage, key: String) -> StoreQueue {
        let id = RegistryKey(storage: ObjectIdentifier(storage), key: key)
        return registry.withLock { entries in
            if let entry = entries[id], entry.storage === storage, let queue = entry.queue { return queue }
            entries = entries.filter { $0.value.storage != nil && $0.value.queue != nil }
            let queue = StoreQueue()
            entries[id] = Entry(storage: storage, queue: queue)
            return queue
        }
    }

    var isBusy: Bool { state.withLock { $0.running || !$0.ops.isEmpty } }

    /// Registers one more store on this queue; returns its generation (1, 2, ...).
    func register() -> Int {
        state.withLock {
            $0.stores += 1
            return $0.stores
        }
    }

    /// The newest store generation whose operation has started.
    var latestStarted: Int { state.withLock { $0.latestStarted } }

    func enqueue(_ op: @escaping @Sendable () async -> Void, generation: Int, scheduler: any TrackerScheduler, outboxThread: Bool) {
        let start = state.withLock { s -> Bool in
            s.ops.append((generation, op))
            if s.running { return false }
            s.running = true
            return true
        }
        guard start else { return }
        if outboxThread {
            scheduler.spawnOutbox { [self] in await drain() }
        } else {
            scheduler.spawn { [self] in await drain() }
        }
    }

    private func drain() async {
        while true {
            let next = state.withLock { s -> (@Sendable () async -> Void)? in
                if s.ops.isEmpty {
                    s.running = false
                    return nil
                }
                let next = s.ops.removeFirst()
                s.latestStarted = max(s.latestStarted, next.generation)
                return next.op
            }
            guard let op = next else { return }
            await op()
        }
    }
}
