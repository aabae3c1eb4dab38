import Foundation
import RocalyticsClient
import RocalyticsClientTestSupport
import Testing
import TrackerCore
import TrackerCoreTestKit

/// B. Identity, storage and install (rocalytics-client.md §18).
@Suite struct IdentityTests {
    @Test func B12_mintingWritesBothKeys() async throws {
        let h = ClientFixture()
        await h.client.ready()
        #expect(h.client.rocaId == ID)
        #expect(h.store.writes.prefix(2).map { "\($0.key)=\($0.value)" } == ["rocalytics-roca-id=\(ID)", "rocalitics-roca-id=\(ID)"])
        #expect(try h.store.value(forKey: "rocalitics-roca-id") == ID)
    }

    @Test func B13_aFailedLegacyWriteKeepsTheMintedId() async throws {
        let h = ClientFixture(store: InMemorySecureStore(failWrites: ["rocalitics-roca-id"]))
        await h.client.ready()
        #expect(h.client.rocaId == ID)
        #expect(h.store.values["rocalytics-roca-id"] == ID)
        #expect(h.log.codes == ["identity-legacy-write-failed"])
        #expect(h.paths == ["/functions/v1/identify", "/functions/v1/track"])
    }

    @Test func B14_aDeviceWithOnlyTheLegacyKeyKeepsItsId() async throws {
        let h = ClientFixture(store: InMemorySecureStore(["rocalitics-roca-id": OTHER, "rocadata-install-tracked": "true"]))
        await h.client.ready()
        #expect(h.client.rocaId == OTHER)
        #expect(h.store.values["rocalytics-roca-id"] == OTHER)
        #expect(h.store.values["rocalitics-roca-id"] == OTHER)
        #expect(h.paths == ["/functions/v1/identify"])
        #expect(h.requests.allSatisfy { $0.headers == H("ios", rocaId: OTHER) })
    }

    @Test func B15_withBothKeysTheCurrentKeyWins() async throws {
        let h = ClientFixture(
            store: InMemorySecureStore(["rocalytics-roca-id": ID, "rocalitics-roca-id": OTHER, "rocadata-install-tracked": "true"]))
        await h.client.ready()
        #expect(h.client.rocaId == ID)
        #expect(h.store.writes.isEmpty)
    }

    @Test func B16_aFailedMigrationWriteKeepsTheLegacyIdForTheSession() async throws {
        let h = ClientFixture(
            store: InMemorySecureStore(
                ["rocalitics-roca-id": OTHER, "rocadata-install-tracked": "true"], failWrites: ["rocalytics-roca-id"]))
        await h.client.ready()
        #expect(h.client.rocaId == OTHER)
        #expect(h.log.codes.contains("identity-migration-failed"))
    }

    @Test func B17_aFailedReadOfTheCurrentKeyNeverMints() async throws {
        let h = ClientFixture(store: InMemorySecureStore(["rocadata-install-tracked": "true"], failReads: ["rocalytics-roca-id"]))
        await h.client.ready()
        try await h.client.track(.onboardingCompleted)
        #expect(h.client.rocaId == nil)
        #expect(h.store.writes.isEmpty)
        #expect(h.requests.isEmpty)
        #expect(h.log.codes == ["identity-unavailable"])
    }

    @Test func B18_aFailedReadOfTheLegacyKeyNeverMints() async throws {
        let h = ClientFixture(store: InMemorySecureStore(["rocadata-install-tracked": "true"], failReads: ["rocalitics-roca-id"]))
        await h.client.ready()
        try await h.client.track(.onboardingCompleted)
        #expect(h.client.rocaId == nil)
        #expect(h.store.writes.isEmpty)
        #expect(h.requests.isEmpty)
        #expect(h.log.codes == ["identity-unavailable"])
    }

    @Test func B19_installFiresOncePerDevice() async throws {
        let first = ClientFixture()
        await first.client.ready()
        #expect(first.paths == ["/functions/v1/identify", "/functions/v1/track"])
        #expect(bodyText(first.requests[1]).hasPrefix(#"{"name":"install""#))
        #expect(first.store.values["rocadata-install-tracked"] == "true")
        let second = ClientFixture(store: first.store)
        await second.client.ready()
        #expect(second.paths == ["/functions/v1/identify"])
    }

    @Test func B20_theCurrentInstallKeySuppressesInstall() async throws {
        let h = ClientFixture(store: InMemorySecureStore(["rocalytics-roca-id": ID, "rocadata-install-tracked": "true"]))
        await h.client.ready()
        #expect(h.paths == ["/functions/v1/identify"])
        #expect(h.store.writes.isEmpty)
    }

    @Test func B21_theLegacyInstallKeySuppressesInstall() async throws {
        let h = ClientFixture(store: InMemorySecureStore(["rocalytics-roca-id": ID, "rocadata-install-tracked-4": "true"]))
        await h.client.ready()
        #expect(h.paths == ["/functions/v1/identify"])
        #expect(h.store.writes.isEmpty)
    }

    @Test func B22_anUnreadableInstallFlagSkipsInstallButKeepsTheId() async throws {
        let h = ClientFixture(store: InMemorySecureStore(["rocalytics-roca-id": ID], failReads: ["rocadata-install-tracked-4"]))
        await h.client.ready()
        #expect(h.paths == ["/functions/v1/identify"])
        #expect(h.client.rocaId == ID)
        #expect(h.log.codes == ["init-failed"])
    }

    @Test func B23_aFailedPrimaryWriteAfterMintingGoesInert() async throws {
        let h = ClientFixture(store: InMemorySecureStore(failWrites: ["rocalytics-roca-id"]))
        await h.client.ready()
        #expect(h.client.rocaId == nil)
        #expect(h.client.isInert)
        #expect(h.log.codes == ["identity-unavailable"])
        #expect(h.requests.isEmpty)
        #expect(h.store.writes.isEmpty)
    }
}

/// C. Inert client and start-up failures.
@Suite struct InertAndStartupTests {
    @Test func C24_noPlatformServicesEverythingIsAQuietNoOp() async throws {
        let h = ClientFixture(choice: RocalyticsPlatformChoice.none)
        await h.client.ready()
        #expect(h.client.rocaId == nil)
        try await h.client.track(.purchase)
        try await h.client.track(.install)
        try await h.client.identify(["user_id": "u"])
        try await h.client.trackCustomEvent("x")
        try await h.client.trackOnboarding(stepId: "welcome")
        try await h.client.trackPurchase(originalTransactionIdentifier: "t", productId: "p", price: 1, currency: "EUR")
        let message = await errorMessage { _ = try await h.client.getDemandScore() }
        #expect(message == "[ROCALYTICS] demand-score unavailable: client failed to initialize")
        #expect(h.requests.isEmpty)
        #expect(h.log.codes == ["native-modules-unavailable"])
    }

    @Test func C25_theDefaultPlatformOnLinuxIsInertAndDoesNotThrow() async throws {
        let log = DiagnosticLog()
        let transport = RecordingTransport.rocalytics()
        let client = RocalyticsClient(configuration: .init(platform: .systemDefault, transport: transport, onDiagnostic: log.handler))
        await client.ready()
        #expect(client.rocaId == nil)
        #expect(log.codes == ["native-modules-unavailable"])
        #expect(log.all.first?.message.hasPrefix("Rocalytics is disabled for this session: ") == true)
        #expect(transport.requests.isEmpty)
    }

    // C26 runs the example with the default diagnostic handler: see OutputTests.

    @Test func C27_aFailedStartupIdentifyDoesNotFailReady() async throws {
        let transport = RecordingTransport { r in
            RecordingTransport.path(of: r.url) == "/functions/v1/identify" ? HTTPResponse(status: 503) : HTTPResponse(status: 204)
        }
        let h = ClientFixture(transport: transport)
        await h.client.ready()
        #expect(h.log.all.map { "\($0.code)|\($0.message)" } == ["init-failed|[ROCALYTICS] identify failed: 503"])
        #expect(h.client.rocaId == ID)
        #expect(h.paths == ["/functions/v1/identify"])
        #expect(h.store.values["rocadata-install-tracked"] == nil)
    }

    @Test func C28_afterAFailedStartupIdentifyEventsCarryNoDeviceContext() async throws {
        let transport = RecordingTransport { r in
            RecordingTransport.path(of: r.url) == "/functions/v1/identify" ? HTTPResponse(status: 503) : HTTPResponse(status: 204)
        }
        let h = ClientFixture(transport: transport)
        try await h.client.track(.trialStarted)
        expectRequest(
            h.requests.last, "\(API)/track",
            body: #"{"name":"trial_started","deduplication_id":"\#(ID)-trial_started","properties":{},"device_context":null}"#)
    }

    @Test func C29_aFailedInstallIsRetriedOnTheNextLaunch() async throws {
        let transport = RecordingTransport { r in
            switch RecordingTransport.path(of: r.url) {
            case "/functions/v1/identify": HTTPResponse(status: 200, body: Array("{}".utf8))
            default: HTTPResponse(status: 500)
            }
        }
        let h = ClientFixture(transport: transport)
        await h.client.ready()
        #expect(h.paths == ["/functions/v1/identify", "/functions/v1/track"])
        #expect(h.log.all.map { "\($0.code)|\($0.message)" } == ["init-failed|[ROCALYTICS] track failed: 500 (install)"])
        #expect(h.store.values["rocadata-install-tracked"] == nil)

        let next = ClientFixture(store: h.store)
        await next.client.ready()
        #expect(next.paths == ["/functions/v1/identify", "/functions/v1/track"])
        #expect(bodyText(next.requests[1]).hasPrefix(#"{"name":"install""#))
        #expect(next.store.values["rocadata-install-tracked"] == "true")
    }
}
