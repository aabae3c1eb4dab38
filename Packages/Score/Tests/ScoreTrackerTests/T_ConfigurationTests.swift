// ScoreConfiguration: the configuration-style constructor.
//
// SC147 `ScoreClient(configuration:)` and the labelled `ScoreClient(publishableKey:siteId:endpoint:…)`
//       build the same tracker: given the same values, a tracked event leaves as the same request
//       (URL, headers, body bytes) through the recording transport on the manual clock, and
//       `inspect()` is the same; `ScoreConfiguration`'s defaults are the labelled initializer's.

import Testing
import TrackerCore
import TrackerCoreTestKit

@testable import ScoreTracker

@Suite struct ConfigurationTests {
    /// Records a few calls on a client, flushes, and returns what went out and what it shows.
    private func run(_ h: Harness, _ c: ScoreClient) async -> (requests: [Recorded], inspect: InspectSnapshot, json: String) {
        c.grantAllConsent()
        c.pv()
        c.track("custom_tap", properties: ["email": "fan@example.com", "n": 3])
        c.identify(userId: "u-42", traits: ["phone": "+33 6 12 34 56 78"])
        await h.flush(c)
        return (h.tx.records, c.inspect(), c.inspectJSON())
    }

    /// Deprecated: it pins the integration guide's labelled initializer, which is.
    @available(*, deprecated)
    @Test func SC147_configurationAndLabelledInitBuildTheSameTracker() async {
        let pii = PII4
        let privacy = PrivacyOptions(mode: .cpra)

        let h1 = Harness()
        let labelled = ScoreClient(
            publishableKey: "pk_test_1", siteId: "urc-ios", endpoint: "https://score.test/", appVersion: "4.2.0",
            os: "iOS 18.1", device: "iPhone", locale: "en-GB", privacy: privacy, pii: pii, initialConsent: ConsentState.none,
            identifyReplayBufferSize: 7, maxQueueSize: 50, tokenRefreshTimeoutSeconds: 2, store: h1.store,
            transport: h1.tx, clock: h1.clock, scheduler: h1.clock, idSource: h1.ids,
            onDiagnostic: h1.diagnostics.handler)
        let a = await run(h1, labelled)

        let h2 = Harness()
        var configuration = ScoreConfiguration(publishableKey: "pk_test_1", siteId: "urc-ios", endpoint: "https://score.test/")
        configuration.appVersion = "4.2.0"
        configuration.os = "iOS 18.1"
        configuration.device = "iPhone"
        configuration.locale = "en-GB"
        configuration.privacy = privacy
        configuration.pii = pii
        configuration.initialConsent = ConsentState.none
        configuration.identifyReplayBufferSize = 7
        configuration.maxQueueSize = 50
        configuration.tokenRefreshTimeoutSeconds = 2
        configuration.store = h2.store
        configuration.transport = h2.tx
        configuration.clock = h2.clock
        configuration.scheduler = h2.clock
        configuration.idSource = h2.ids
        configuration.onDiagnostic = h2.diagnostics.handler
        let configured = ScoreClient(configuration: configuration)
        let b = await run(h2, configured)

        #expect(!a.requests.isEmpty)
        #expect(a.requests.contains { $0.isEvents && $0.names.contains("poll_vote") })
        #expect(a.requests.map(\.url) == b.requests.map(\.url))
        #expect(a.requests.map(\.method) == b.requests.map(\.method))
        #expect(a.requests.map(\.headers) == b.requests.map(\.headers))
        #expect(a.requests.map(\.body) == b.requests.map(\.body))
        #expect(a.requests.map(\.atMs) == b.requests.map(\.atMs))
        #expect(a.inspect == b.inspect)
        #expect(a.json == b.json)
        #expect(h1.diagnostics.codes == h2.diagnostics.codes)
        // The values given took effect (not both sides falling back to the same defaults).
        #expect(a.inspect.queue.maxSize == 50 && a.inspect.identity.replayBuffer.capacity == 7)
        #expect(a.inspect.endpoint == "https://score.test" && a.inspect.privacy.mode == "cpra")
        #expect(labelled.tokenTimeoutMs == 2_000 && configured.tokenTimeoutMs == 2_000)
        #expect(labelled.envelopeTail == configured.envelopeTail)
    }

    /// Deprecated: it pins the integration guide's labelled initializer, which is.
    @available(*, deprecated)
    @Test func SC147_configurationDefaultsAreTheLabelledInitDefaults() async {
        let config = ScoreConfiguration(publishableKey: "pk", siteId: "site", endpoint: "https://score.test")
        #expect(config.publishableKey == "pk" && config.siteId == "site" && config.endpoint == "https://score.test")
        #expect(config.appVersion == nil && config.os == nil && config.device == nil && config.locale == nil)
        #expect(config.privacy == nil && config.pii == nil && config.initialConsent == nil)
        #expect(config.identifyReplayBufferSize == 100)
        #expect(config.maxQueueSize == 1_000)
        #expect(config.tokenRefreshTimeoutSeconds == 5)
        #expect(config.store == nil && config.transport == nil && config.onDiagnostic == nil)
        #expect(config.clock is SystemClock)
        #expect((config.scheduler as? SystemScheduler) === SystemScheduler.shared)
        #expect(config.idSource is SystemScoreIdSource)

        // Every defaulted value that is not an injected dependency, left out on both sides, gives
        // the same tracker: a default changed on one side only shows here.
        let h1 = Harness()
        let labelled = ScoreClient(
            publishableKey: "pk", siteId: "site", endpoint: "https://score.test", store: h1.store, transport: h1.tx,
            clock: h1.clock, scheduler: h1.clock, idSource: h1.ids, onDiagnostic: h1.diagnostics.handler)
        let h2 = Harness()
        var defaults = ScoreConfiguration(publishableKey: "pk", siteId: "site", endpoint: "https://score.test")
        defaults.store = h2.store
        defaults.transport = h2.tx
        defaults.clock = h2.clock
        defaults.scheduler = h2.clock
        defaults.idSource = h2.ids
        defaults.onDiagnostic = h2.diagnostics.handler
        let configured = ScoreClient(configuration: defaults)
        await h1.settle()
        await h2.settle()

        #expect(labelled.inspect() == configured.inspect())
        #expect(labelled.maxQueueSize == configured.maxQueueSize && configured.maxQueueSize == 1_000)
        #expect(labelled.replayCapacity == configured.replayCapacity && configured.replayCapacity == 100)
        #expect(labelled.tokenTimeoutMs == configured.tokenTimeoutMs && configured.tokenTimeoutMs == 5_000)
        #expect(labelled.envelopeTail == configured.envelopeTail)
        #expect(labelled.inspect().consent == configured.inspect().consent)
        let a = await run(h1, labelled)
        let b = await run(h2, configured)
        #expect(!a.requests.isEmpty)
        #expect(a.requests.map(\.request) == b.requests.map(\.request))
        #expect(a.json == b.json)
    }

    /// SC301 — `ScoreConfiguration`'s labelled initializer sets every value its properties set: a
    /// configuration built by label and one built by properties make the same tracker.
    @Test func SC301_configurationByLabelEqualsConfigurationByProperties() async {
        let pii = PII4
        let h1 = Harness()
        let byLabel = ScoreClient(
            configuration: ScoreConfiguration(
                publishableKey: "pk_test_1", siteId: "urc-ios", endpoint: "https://score.test/", appVersion: "4.2.0",
                os: "iOS 18.1", device: "iPhone", locale: "en-GB", privacy: PrivacyOptions(mode: .cpra), pii: pii,
                initialConsent: ConsentState.none, persistConsent: true, identifyReplayBufferSize: 7, maxQueueSize: 50,
                tokenRefreshTimeoutSeconds: 2.5, store: h1.store, transport: h1.tx, clock: h1.clock, scheduler: h1.clock,
                idSource: h1.ids, onDiagnostic: h1.diagnostics.handler))
        let h2 = Harness()
        var configuration = ScoreConfiguration(publishableKey: "pk_test_1", siteId: "urc-ios", endpoint: "https://score.test/")
        configuration.appVersion = "4.2.0"
        configuration.os = "iOS 18.1"
        configuration.device = "iPhone"
        configuration.locale = "en-GB"
        configuration.privacy = PrivacyOptions(mode: .cpra)
        configuration.pii = pii
        configuration.initialConsent = ConsentState.none
        configuration.persistConsent = true
        configuration.identifyReplayBufferSize = 7
        configuration.maxQueueSize = 50
        configuration.tokenRefreshTimeoutSeconds = 2.5
        (configuration.store, configuration.transport) = (h2.store, h2.tx)
        (configuration.clock, configuration.scheduler, configuration.idSource) = (h2.clock, h2.clock, h2.ids)
        configuration.onDiagnostic = h2.diagnostics.handler
        let byProperties = ScoreClient(configuration: configuration)
        let a = await run(h1, byLabel)
        let b = await run(h2, byProperties)
        #expect(!a.requests.isEmpty)
        #expect(a.requests.map(\.request) == b.requests.map(\.request))
        #expect(a.inspect == b.inspect && a.json == b.json)
        #expect(a.inspect.queue.maxSize == 50 && a.inspect.identity.replayBuffer.capacity == 7)
        #expect(byLabel.tokenTimeoutMs == 2_500 && byProperties.tokenTimeoutMs == 2_500)
        #expect(byLabel.envelopeTail == byProperties.envelopeTail)
        // persistConsent needs the file store: both report it once.
        #expect(h1.diagnostics.codes == h2.diagnostics.codes && h1.diagnostics.count("storage") == 1)
    }
}
