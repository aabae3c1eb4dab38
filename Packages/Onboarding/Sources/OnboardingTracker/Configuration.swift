import TrackerCore

/// How a tracker is set up (<doc:GettingStarted#Configuration>).
public struct OnboardingRunConfiguration: Sendable {
    /// Where snapshots go. Its `destination` decides what a reconfigure hands over and what stored
    /// state is sent.
    public var sink: any OnboardingSink
    /// The run context, read once per run at `start`.
    public var context: ContextSource
    /// Key-value storage; without it nothing survives a restart.
    public var storage: (any KeyValueStorage)?
    /// One restorable run per key. Default `rocalytics-sdk:onboarding-run`.
    public var storageKey: String
    /// ``debounce`` in milliseconds (the TypeScript README's `debounceMs`). Default 500.
    public var debounceMs: Int64
    /// ``persistTimeout`` in milliseconds (the TypeScript README's `persistTimeoutMs`). Default 1000.
    public var persistTimeoutMs: Int64
    /// ``storageReadTimeout`` in milliseconds (the TypeScript README's `storageReadTimeoutMs`).
    /// Default 5000.
    public var storageReadTimeoutMs: Int64
    /// Backoff between retries of a transient answer. Default 1 s × 2 up to 60 s.
    public var retry: RetryPolicy
    /// ``attemptTimeout`` in milliseconds (the TypeScript README's `attemptTimeoutMs`). Default 30000.
    public var attemptTimeoutMs: Int64

    /// Window coalescing changes into one send, in seconds; `<= 0` sends on every change.
    /// Default 0.5 s. Stored as whole milliseconds (``debounceMs``; see `Milliseconds.from(seconds:)`
    /// for the rounding).
    public var debounce: TimeInterval {
        get { Milliseconds.seconds(debounceMs) }
        set { debounceMs = Milliseconds.from(seconds: newValue) }
    }
    /// With storage, the longest a send waits for its snapshot's write, in seconds. Default 1 s.
    public var persistTimeout: TimeInterval {
        get { Milliseconds.seconds(persistTimeoutMs) }
        set { persistTimeoutMs = Milliseconds.from(seconds: newValue) }
    }
    /// After this long (seconds) an unfinished stored-state read is reported; bounds `idle()`.
    /// Default 5 s.
    public var storageReadTimeout: TimeInterval {
        get { Milliseconds.seconds(storageReadTimeoutMs) }
        set { storageReadTimeoutMs = Milliseconds.from(seconds: newValue) }
    }
    /// A sink call with no answer after this long (seconds) counts as transient. Default 30 s.
    public var attemptTimeout: TimeInterval {
        get { Milliseconds.seconds(attemptTimeoutMs) }
        set { attemptTimeoutMs = Milliseconds.from(seconds: newValue) }
    }
    /// Receives diagnostics; `nil` writes them to the unified log (`os.Logger`, subsystem
    /// `com.rocapine.rocalytics.onboarding`) on Apple platforms and prints
    /// `[rocalytics-sdk] <code>: <message>` on standard error elsewhere.
    public var onDiagnostic: DiagnosticHandler?
    /// Time source; `nil` is the system clock.
    public var clock: (any TrackerClock)?
    /// Timers and background steps; `nil` is the system scheduler.
    public var scheduler: (any TrackerScheduler)?
    /// Run id generator (lowercased; must then be a UUID); `nil` mints UUIDv7 from `clock`.
    public var uuid: (@Sendable () throws -> String)?
    /// Process-wide per-key records; tests pass a fresh one to simulate a new process.
    public var registry: HandoffRegistry

    /// Creates a configuration with the defaults of the spec. Durations are in seconds
    /// (`TimeInterval`), kept as whole milliseconds rounded to the nearest (`Milliseconds.from(seconds:)`).
    public init(
        sink: any OnboardingSink, context: ContextSource, storage: (any KeyValueStorage)? = nil,
        storageKey: String = "rocalytics-sdk:onboarding-run", debounce: TimeInterval = 0.5, persistTimeout: TimeInterval = 1,
        storageReadTimeout: TimeInterval = 5, retry: RetryPolicy = RetryPolicy(), attemptTimeout: TimeInterval = 30,
        onDiagnostic: DiagnosticHandler? = nil, clock: (any TrackerClock)? = nil, scheduler: (any TrackerScheduler)? = nil,
        uuid: (@Sendable () throws -> String)? = nil, registry: HandoffRegistry = .shared
    ) {
        self.init(
            sink: sink, context: context, storage: storage, storageKey: storageKey,
            debounceMs: Milliseconds.from(seconds: debounce), persistTimeoutMs: Milliseconds.from(seconds: persistTimeout),
            storageReadTimeoutMs: Milliseconds.from(seconds: storageReadTimeout), retry: retry,
            attemptTimeoutMs: Milliseconds.from(seconds: attemptTimeout), onDiagnostic: onDiagnostic, clock: clock,
            scheduler: scheduler, uuid: uuid, registry: registry)
    }

    /// The same configuration with durations in milliseconds: the TypeScript README's option
    /// names (`debounceMs`, `persistTimeoutMs`, `storageReadTimeoutMs`, `attemptTimeoutMs`), kept
    /// for it, not deprecated. ``init(sink:context:storage:storageKey:debounce:persistTimeout:storageReadTimeout:retry:attemptTimeout:onDiagnostic:clock:scheduler:uuid:registry:)``
    /// is the documented form.
    @_disfavoredOverload
    public init(
        sink: any OnboardingSink, context: ContextSource, storage: (any KeyValueStorage)? = nil,
        storageKey: String = "rocalytics-sdk:onboarding-run", debounceMs: Int64 = 500, persistTimeoutMs: Int64 = 1000,
        storageReadTimeoutMs: Int64 = 5000, retry: RetryPolicy = RetryPolicy(), attemptTimeoutMs: Int64 = 30_000,
        onDiagnostic: DiagnosticHandler? = nil, clock: (any TrackerClock)? = nil, scheduler: (any TrackerScheduler)? = nil,
        uuid: (@Sendable () throws -> String)? = nil, registry: HandoffRegistry = .shared
    ) {
        self.sink = sink
        self.context = context
        self.storage = storage
        self.storageKey = storageKey
        self.debounceMs = debounceMs
        self.persistTimeoutMs = persistTimeoutMs
        self.storageReadTimeoutMs = storageReadTimeoutMs
        self.retry = retry
        self.attemptTimeoutMs = attemptTimeoutMs
        self.onDiagnostic = onDiagnostic
        self.clock = clock
        self.scheduler = scheduler
        self.uuid = uuid
        self.registry = registry
    }
}
