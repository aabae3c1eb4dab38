import TrackerCore

/// One pass through an onboarding. Every method records synchronously, never throws and never
/// blocks; whatever the tracker declines to do is reported through `onDiagnostic`.
///
/// There is no skip call: a screen that is not shown is simply never entered.
public final class OnboardingRun: Sendable {
    /// The run's lowercase UUID (`run_id`).
    public let runId: String
    let tracker: OnboardingRunTracker?
    let generation: UInt64
    let lastStepKey = Locked<String?>(nil)
    /// 1 once `complete()` recorded the completion (lock-free: each recording call reads it).
    let completedFlag = AtomicCell(0)
    var isCompleted: Bool { completedFlag.load() != 0 }

    init(runId: String, tracker: OnboardingRunTracker?, generation: UInt64, stepKey: String? = nil) {
        self.runId = runId
        self.tracker = tracker
        self.generation = generation
        lastStepKey.withLock { $0 = stepKey }
    }

    /// The step key of the last recorded entry; `nil` before the first entry. In a truncated run
    /// this is the last step recorded before the limit: restore the position from your own
    /// navigation state.
    public var currentStepKey: String? { lastStepKey.value }

    /// A screen is shown. The step must be in the manifest; going back to a screen enters it again.
    public func enterStep(_ stepKey: String) { tracker?.enterStep(self, stepKey) }

    /// The user leaves a screen, with what was answered there. It may arrive just after the next
    /// screen's `enterStep`.
    public func exitStep(_ stepKey: String, answers: [AnswerInput]? = nil) { tracker?.exitStep(self, stepKey, answers ?? []) }

    /// Adds or changes run properties (merged; there is no removal).
    public func setProperties(_ properties: RunProperties) { tracker?.setProperties(self, properties) }

    /// The onboarding is finished: final, sent at once.
    public func complete() { tracker?.complete(self) }

    /// The app moved to the background: records the moment and sends at once.
    public func background() { tracker?.background(self) }
}

extension OnboardingRun {
    private static let app = Locked<OnboardingRunTracker?>(nil)
    /// Where the app-wide calls made before `configure` report: the default diagnostic handler
    /// (replaced only by tests, to observe it).
    static let consoleOutput = Locked<DiagnosticHandler>(
        Diagnostics.systemLog(subsystem: LogSubsystem.onboarding, prefix: "rocalytics-sdk"))

    /// Configures the app-wide tracker: disposes the current one (if any), then creates a new one.
    public static func configure(_ configuration: OnboardingRunConfiguration) {
        let old = app.withLock { $0 }
        old?.dispose()
        let tracker = OnboardingRunTracker(configuration: configuration)
        app.withLock { $0 = tracker }
    }

    /// The app-wide tracker, when configured.
    public static var shared: OnboardingRunTracker? { app.value }

    /// Starts a run on the app-wide tracker. Before `configure` it returns an inert run with id
    /// `00000000-0000-0000-0000-000000000000` and prints a `not-configured` warning.
    public static func start(_ options: StartOptions) -> OnboardingRun {
        if let t = app.value { return t.start(options) }
        consoleOutput.value(Diagnostic(code: .notConfigured, message: "onboardingRun.start called before configure", surface: .onboarding))
        return OnboardingRun(runId: "00000000-0000-0000-0000-000000000000", tracker: nil, generation: 0)
    }

    /// Resumes the killed or handed-over run on the app-wide tracker; `nil` when not configured.
    public static func resume(expected: StartOptions? = nil) async -> OnboardingRun? {
        guard let t = app.value else { return nil }
        return await t.resume(expected: expected)
    }

    /// Resumes the killed or handed-over run of `options`' onboarding on the app-wide tracker when
    /// the stored state is read within `resumeTimeout` seconds, else starts a new run
    /// (``OnboardingRunTracker/resumeOrStart(_:resumeTimeout:)``). Before `configure` it returns
    /// what ``start(_:)`` returns then.
    public static func resumeOrStart(_ options: StartOptions, resumeTimeout: TimeInterval = 3) async -> OnboardingRun {
        guard let t = app.value else { return start(options) }
        return await t.resumeOrStart(options, resumeTimeout: resumeTimeout)
    }

    /// Waits (bounded) for the app-wide tracker's stored-state read and queued writes.
    public static func idle() async {
        await app.value?.idle()
    }

    /// Disposes the app-wide tracker and forgets it.
    public static func dispose() {
        let t = app.withLock { a -> OnboardingRunTracker? in
            defer { a = nil }
            return a
        }
        t?.dispose()
    }
}
