// The host-facing observer interface of paywall presentations. This module has no dependency, so a
// paywall host SDK can import it alone; `PaywallTracker` re-exports it and its tracker conforms.

/// Where a presentation happens.
public enum PaywallSurface: String, Sendable, Equatable, CaseIterable {
    /// A `present()` call that resolved to a paywall.
    case present
    /// One display of a `Paywall` step inside an onboarding.
    case paywallStep = "paywall_step"
}

/// How the paywall is rendered.
public enum PaywallRenderMode: String, Sendable, Equatable, CaseIterable {
    /// Rendered from the catalog's elements.
    case elements
    /// A custom screen of the app.
    case custom
}

/// How the purchase is billed.
public enum PaywallBilling: String, Sendable, Equatable, CaseIterable {
    /// App Store / Play billing.
    case store
    /// Stripe (web) billing.
    case stripe
}

/// How a presentation ended.
public enum PaywallOutcomeStatus: String, Sendable, Equatable, CaseIterable {
    /// A purchase (or, with `restored: true`, a restore) completed.
    case purchased
    /// The user closed the paywall.
    case dismissed
    /// The user cancelled the purchase flow.
    case cancelled
    /// The host failed after the paywall was resolved.
    case error
}

/// Who serves a paywall the Studio does not serve (contract v1.1).
public enum PaywallProvider: String, Sendable, Equatable, CaseIterable {
    /// A third-party paywall service; comes with a `placement` and an `externalPaywallId`.
    case external
    /// A paywall the app renders with its own code; comes with an `externalPaywallId`.
    case native
}

/// The onboarding run a `paywall_step` presentation belongs to.
public struct PaywallOnboardingRun: Sendable, Equatable {
    /// The run id (a lowercase UUID).
    public var runId: String
    /// The step key (`^[A-Za-z0-9][A-Za-z0-9_.:-]{0,127}$`).
    public var stepKey: String

    /// Creates the reference.
    public init(runId: String, stepKey: String) {
        self.runId = runId
        self.stepKey = stepKey
    }
}

/// What the host knows about a presentation when it resolved the paywall.
///
/// Without a `provider` (a Studio paywall, contract v1), `moment`, `paywallId`, `renderMode` and
/// `billing` are required and `audienceId` `nil` means "no audience". With a `provider`
/// (contract v1.1), they are optional and sent only when given; `externalPaywallId` is required,
/// and `placement` too for `.external`.
public struct PaywallPresentationInfo: Sendable, Equatable {
    /// The moment key (1 to 128 UTF-16 units).
    public var moment: String?
    /// The paywall id (1 to 128 UTF-16 units).
    public var paywallId: String?
    /// The audience id (1 to 128), or `nil` when the catalog carried no audience.
    public var audienceId: String?
    /// The render mode.
    public var renderMode: PaywallRenderMode?
    /// The billing.
    public var billing: PaywallBilling?
    /// Where the presentation happens.
    public var surface: PaywallSurface
    /// The variant key (1 to 128), when the paywall has one.
    public var variantKey: String?
    /// The deployment id (1 to 128), when the paywall has one.
    public var deploymentId: String?
    /// The onboarding run; sent only with `surface == .paywallStep`, validated in any case.
    public var onboardingRun: PaywallOnboardingRun?
    /// Contract v1.1: who serves the paywall. `nil` sends exactly the v1 snapshot.
    public var provider: PaywallProvider?
    /// Contract v1.1: the third-party placement (1 to 128), required with `.external`.
    public var placement: String?
    /// Contract v1.1: the provider's own paywall id (1 to 128), required with a provider.
    public var externalPaywallId: String?
    /// Contract v1.1: free text naming the provider (1 to 64), optional.
    public var providerName: String?

    /// Creates the info of a Studio paywall (contract v1).
    public init(
        moment: String, paywallId: String, audienceId: String? = nil, renderMode: PaywallRenderMode,
        billing: PaywallBilling, surface: PaywallSurface, variantKey: String? = nil, deploymentId: String? = nil,
        onboardingRun: PaywallOnboardingRun? = nil
    ) {
        self.moment = moment
        self.paywallId = paywallId
        self.audienceId = audienceId
        self.renderMode = renderMode
        self.billing = billing
        self.surface = surface
        self.variantKey = variantKey
        self.deploymentId = deploymentId
        self.onboardingRun = onboardingRun
    }

    /// Creates the info of a paywall the Studio does not serve (contract v1.1).
    public init(
        provider: PaywallProvider, externalPaywallId: String, placement: String? = nil, providerName: String? = nil,
        surface: PaywallSurface = .present, moment: String? = nil, paywallId: String? = nil, audienceId: String? = nil,
        renderMode: PaywallRenderMode? = nil, billing: PaywallBilling? = nil, variantKey: String? = nil,
        deploymentId: String? = nil, onboardingRun: PaywallOnboardingRun? = nil
    ) {
        self.provider = provider
        self.externalPaywallId = externalPaywallId
        self.placement = placement
        self.providerName = providerName
        self.surface = surface
        self.moment = moment
        self.paywallId = paywallId
        self.audienceId = audienceId
        self.renderMode = renderMode
        self.billing = billing
        self.variantKey = variantKey
        self.deploymentId = deploymentId
        self.onboardingRun = onboardingRun
    }
}

/// The store transaction of a purchase.
public struct PaywallTransactionInfo: Sendable, Equatable {
    /// iOS: StoreKit's original transaction id, the same value given to Rocalytics' purchase call
    /// (the iOS join key). Android: the Play order id (`GPA.…`), not used to join.
    public var originalTransactionIdentifier: String?
    /// Android: the Play purchase token (the Android join key).
    public var purchaseToken: String?
    /// The store product id.
    public var productId: String?
    /// `true` for a restore or a web redemption (not a new purchase); only `true` is ever sent.
    public var restored: Bool?

    /// Creates a transaction; each store string is kept only when it has 1 to 1024 UTF-16 units.
    public init(originalTransactionIdentifier: String? = nil, purchaseToken: String? = nil, productId: String? = nil, restored: Bool? = nil)
    {
        self.originalTransactionIdentifier = originalTransactionIdentifier
        self.purchaseToken = purchaseToken
        self.productId = productId
        self.restored = restored
    }
}

/// How a presentation ended, as the host reports it.
public struct PaywallPresentationEnd: Sendable, Equatable {
    /// The outcome.
    public var status: PaywallOutcomeStatus
    /// The host's error reason; kept only with `.error` and when it matches the key pattern.
    public var reason: String?
    /// The transaction; kept only with `.purchased`.
    public var transaction: PaywallTransactionInfo?

    /// Creates an end.
    public init(status: PaywallOutcomeStatus, reason: String? = nil, transaction: PaywallTransactionInfo? = nil) {
        self.status = status
        self.reason = reason
        self.transaction = transaction
    }

    /// The user closed the paywall.
    public static let dismissed = PaywallPresentationEnd(status: .dismissed)
    /// The user cancelled.
    public static let cancelled = PaywallPresentationEnd(status: .cancelled)
    /// A purchase with its transaction.
    public static func purchased(_ transaction: PaywallTransactionInfo? = nil) -> PaywallPresentationEnd {
        PaywallPresentationEnd(status: .purchased, transaction: transaction)
    }
    /// A restore or web redemption: `purchased` with `restored: true` (not a conversion).
    public static let restored = PaywallPresentationEnd(status: .purchased, transaction: PaywallTransactionInfo(restored: true))
    /// A host failure after resolution, with the host's reason.
    public static func error(_ reason: String?) -> PaywallPresentationEnd { PaywallPresentationEnd(status: .error, reason: reason) }
}

/// One presentation, as returned by ``PaywallObserver/start(_:)``. Calls never throw or block.
public protocol PaywallPresentationHandle: AnyObject, Sendable {
    /// The host confirmed the paywall is on screen.
    func shown()
    /// The presentation ended.
    func end(_ outcome: PaywallPresentationEnd)
}

/// What a paywall host calls for each presentation that resolved to a paywall.
public protocol PaywallObserver: AnyObject, Sendable {
    /// Starts following a presentation. Never throws, never blocks. `nil` means refused (the
    /// observer reports why through its own diagnostics).
    func start(_ info: PaywallPresentationInfo) -> (any PaywallPresentationHandle)?
}

/// A closure form of an observer, for hosts that declare their own observer protocol (with the
/// same shape) or take callbacks: the host's conformance forwards to these closures.
public struct PaywallObserverClosures: Sendable {
    /// Starts a presentation; `nil` when refused.
    public let start: @Sendable (PaywallPresentationInfo) -> PaywallHandleClosures?

    /// Creates the closures.
    public init(start: @escaping @Sendable (PaywallPresentationInfo) -> PaywallHandleClosures?) {
        self.start = start
    }
}

/// The closure form of a ``PaywallPresentationHandle``.
public struct PaywallHandleClosures: Sendable {
    /// Forwards to ``PaywallPresentationHandle/shown()``.
    public let shown: @Sendable () -> Void
    /// Forwards to ``PaywallPresentationHandle/end(_:)``.
    public let end: @Sendable (PaywallPresentationEnd) -> Void

    /// Creates the closures.
    public init(shown: @escaping @Sendable () -> Void, end: @escaping @Sendable (PaywallPresentationEnd) -> Void) {
        self.shown = shown
        self.end = end
    }

    /// Wraps a handle.
    public init(_ handle: any PaywallPresentationHandle) {
        self.init(shown: { handle.shown() }, end: { handle.end($0) })
    }
}

extension PaywallObserver {
    /// This observer as closures (the adapter for hosts that declare their own protocol).
    public var closures: PaywallObserverClosures {
        PaywallObserverClosures { [self] info in start(info).map(PaywallHandleClosures.init) }
    }
}
