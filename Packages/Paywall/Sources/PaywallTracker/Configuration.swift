import TrackerCore

/// How a ``PaywallPresentationTracker`` is set up (<doc:GettingStarted#Configuration>): the one
/// configuration of the tracker, taken by ``PaywallPresentationTracker/init(configuration:)``.
/// Every member but `sink` and `context` has a default, given with it.
public struct PaywallTrackerConfiguration: Sendable {
    /// Where snapshots go: the Rocalytics paywall sink, an `HTTPSink`, or a custom sink. Required.
    public var sink: any Sink<PaywallSnapshot>
    /// Device and app facts, read once per presentation at `start()`. Required.
    public var context: ContextSource
    /// Keeps unsent snapshots across launches; without it nothing survives a restart. Default: `nil`.
    public var storage: (any KeyValueStorage)?
    /// The storage key (default ``PaywallPresentationTracker/defaultStorageKey``).
    public var storageKey: String
    /// The clock of every timestamp. Default: `SystemClock()`.
    public var clock: any TrackerClock
    /// Runs every timer and background step. Default: `SystemScheduler.shared`.
    public var scheduler: any TrackerScheduler
    /// Mints presentation ids; must return a lowercase UUID. Default: UUIDv7 from `clock`.
    public var uuid: (@Sendable () -> String)?
    /// Backoff after transient answers (default 1 s doubling up to 60 s).
    public var retry: RetryPolicy
    /// An attempt with no answer after this long, in seconds, counts as transient (default 30 s).
    /// Kept as whole milliseconds, rounded to the nearest (`Milliseconds.from(seconds:)`).
    public var attemptTimeout: TimeInterval {
        get { Milliseconds.seconds(attemptMs) }
        set { attemptMs = Milliseconds.from(seconds: newValue) }
    }
    /// ``attemptTimeout`` in milliseconds.
    @available(*, deprecated, message: "use attemptTimeout (a TimeInterval, in seconds)")
    public var attemptTimeoutMs: Int64 {
        get { attemptMs }
        set { attemptMs = newValue }
    }
    var attemptMs: Int64
    /// Ignored: a snapshot goes to delivery when it is recorded and its write starts at the same
    /// moment, so nothing waits for a write any more (paywall spec 10.2, issue 36). Kept so that
    /// code setting it still compiles.
    @available(*, deprecated, message: "Ignored: a paywall snapshot is sent when it is recorded, while its write runs.")
    public var persistTimeoutMs: Int64 {
        get { ignoredPersistTimeoutMs }
        set { ignoredPersistTimeoutMs = newValue }
    }
    private var ignoredPersistTimeoutMs: Int64 = 1000
    /// Receives every diagnostic. Default: the unified log (subsystem
    /// `com.rocapine.rocalytics.paywall`) on Apple platforms, a console line
    /// `[rocalytics-sdk] <code>: <message>` elsewhere.
    public var onDiagnostic: DiagnosticHandler

    /// Creates a configuration.
    public init(
        sink: any Sink<PaywallSnapshot>, context: ContextSource, storage: (any KeyValueStorage)? = nil,
        storageKey: String = PaywallPresentationTracker.defaultStorageKey, clock: any TrackerClock = SystemClock(),
        scheduler: any TrackerScheduler = SystemScheduler.shared, uuid: (@Sendable () -> String)? = nil,
        retry: RetryPolicy = RetryPolicy(), attemptTimeout: TimeInterval = 30,
        onDiagnostic: @escaping DiagnosticHandler = Diagnostics.systemLog(subsystem: LogSubsystem.paywall, prefix: "rocalytics-sdk")
    ) {
        self.sink = sink
        self.context = context
        self.storage = storage
        self.storageKey = storageKey
        self.clock = clock
        self.scheduler = scheduler
        self.uuid = uuid
        self.retry = retry
        self.attemptMs = Milliseconds.from(seconds: attemptTimeout)
        self.onDiagnostic = onDiagnostic
    }

    /// Creates a configuration with the attempt timeout in milliseconds.
    @available(*, deprecated, message: "use attemptTimeout: (a TimeInterval, in seconds)")
    @_disfavoredOverload
    public init(
        sink: any Sink<PaywallSnapshot>, context: ContextSource, storage: (any KeyValueStorage)? = nil,
        storageKey: String = PaywallPresentationTracker.defaultStorageKey, clock: any TrackerClock = SystemClock(),
        scheduler: any TrackerScheduler = SystemScheduler.shared, uuid: (@Sendable () -> String)? = nil,
        retry: RetryPolicy = RetryPolicy(), attemptTimeoutMs: Int64 = 30_000,
        onDiagnostic: @escaping DiagnosticHandler = Diagnostics.systemLog(subsystem: LogSubsystem.paywall, prefix: "rocalytics-sdk")
    ) {
        self.init(
            sink: sink, context: context, storage: storage, storageKey: storageKey, clock: clock, scheduler: scheduler,
            uuid: uuid, retry: retry, attemptTimeout: Milliseconds.seconds(attemptTimeoutMs), onDiagnostic: onDiagnostic)
    }

    /// Creates a configuration; `persistTimeoutMs` is ignored (see ``persistTimeoutMs``).
    @available(*, deprecated, message: "persistTimeoutMs is ignored: a paywall snapshot is sent when it is recorded, while its write runs.")
    public init(
        sink: any Sink<PaywallSnapshot>, context: ContextSource, storage: (any KeyValueStorage)? = nil,
        storageKey: String = PaywallPresentationTracker.defaultStorageKey, clock: any TrackerClock = SystemClock(),
        scheduler: any TrackerScheduler = SystemScheduler.shared, uuid: (@Sendable () -> String)? = nil,
        retry: RetryPolicy = RetryPolicy(), attemptTimeoutMs: Int64 = 30_000, persistTimeoutMs: Int64,
        onDiagnostic: @escaping DiagnosticHandler = Diagnostics.systemLog(subsystem: LogSubsystem.paywall, prefix: "rocalytics-sdk")
    ) {
        self.init(
            sink: sink, context: context, storage: storage, storageKey: storageKey, clock: clock, scheduler: scheduler,
            uuid: uuid, retry: retry, attemptTimeout: Milliseconds.seconds(attemptTimeoutMs), onDiagnostic: onDiagnostic)
        ignoredPersistTimeoutMs = persistTimeoutMs
    }
}
