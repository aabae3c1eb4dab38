// The error and configuration style shared with Core (issue 16, item 2). Scenario ids of this file:
// ER1 RocalyticsError: a stable code, the reference texts, the old case spellings still build them
// ER2 RocalyticsError as thrown: code, endpoint, status and detail of a failed track and identify
// ER3 RocalyticsSecureStoreError: codes, texts and the old case spellings; `locked` still sends the
//     client waiting for protected data when a store's own error value is built with the code
// CF1 RocalyticsConfiguration: the documented defaults; init(configuration:) and init(options:)
import Foundation
import RocalyticsClient
import RocalyticsClientTestSupport
import Testing
import TrackerCore
import TrackerCoreTestKit

@Suite struct ErrorAndConfigurationTests {
    @Test func ER1_rocalyticsErrorCodesAndTexts() {
        let failed = RocalyticsError.requestFailed(endpoint: "track", status: 500, detail: "install")
        #expect(failed.code == .requestFailed)
        #expect(failed.description == "[ROCALYTICS] track failed: 500 (install)")
        #expect(failed.message == failed.description)
        #expect(failed.localizedDescription == "[ROCALYTICS] track failed: 500 (install)")
        #expect(failed.endpoint == "track" && failed.status == 500 && failed.detail == "install")
        #expect(
            RocalyticsError.requestFailed(endpoint: "identify", status: 503, detail: nil).description == "[ROCALYTICS] identify failed: 503"
        )

        let inert = RocalyticsError.demandScoreUnavailable
        #expect(inert.code == .demandScoreUnavailable)
        #expect(inert.description == "[ROCALYTICS] demand-score unavailable: client failed to initialize")
        let unreadable = RocalyticsError.invalidResponse(endpoint: "demand-score")
        #expect(unreadable.code == .invalidResponse)
        #expect(unreadable.description == "[ROCALYTICS] demand-score failed: invalid response")

        // Codes are open: their text is stable and a new one compares like any other.
        #expect(
            [RocalyticsError.Code.requestFailed, .demandScoreUnavailable, .invalidResponse].map(\.rawValue)
                == ["request-failed", "demand-score-unavailable", "invalid-response"])
        #expect(RocalyticsError.Code(rawValue: "request-failed") == .requestFailed)
        #expect("\(RocalyticsError.Code.invalidResponse)" == "invalid-response")
        // Values compare as values (the enum's Equatable), and hash alike.
        #expect(failed == RocalyticsError.requestFailed(endpoint: "track", status: 500, detail: "install"))
        #expect(failed != RocalyticsError.requestFailed(endpoint: "track", status: 500, detail: "purchase"))
        #expect(Set([failed, failed, inert]).count == 2)
    }

    @Test func ER2_thrownErrorsCarryTheirFields() async {
        let h = ClientFixture(
            store: RETURNING(),
            transport: RecordingTransport { r in
                r.url.hasSuffix("/identify") ? HTTPResponse(status: 503) : HTTPResponse(status: 500)
            }, identifyOnStart: false)
        do {
            try await h.client.trackCustomEvent("cart_abandoned")
            Issue.record("expected a failure")
        } catch let e as RocalyticsError {
            #expect(e.code == .requestFailed)
            #expect(e.endpoint == "track" && e.status == 500 && e.detail == "cart_abandoned")
            #expect(e.description == "[ROCALYTICS] track failed: 500 (cart_abandoned)")
        } catch {
            Issue.record("unexpected \(error)")
        }
        do {
            try await h.client.identify(["user_id": "u"])
            Issue.record("expected a failure")
        } catch let e as RocalyticsError {
            #expect(e == .requestFailed(endpoint: "identify", status: 503, detail: nil))
        } catch {
            Issue.record("unexpected \(error)")
        }

        let inert = ClientFixture(choice: RocalyticsPlatformChoice.none)
        do {
            _ = try await inert.client.getDemandScore()
            Issue.record("expected a failure")
        } catch RocalyticsError.demandScoreUnavailable {
            // The old `catch RocalyticsError.demandScoreUnavailable` spelling still matches.
        } catch {
            Issue.record("unexpected \(error)")
        }
    }

    @Test func ER3_secureStoreErrorCodesAndTexts() async {
        #expect(RocalyticsSecureStoreError.locked.code == .locked)
        #expect(RocalyticsSecureStoreError.locked.description == "the Keychain is unavailable while the device is locked")
        let keychain = RocalyticsSecureStoreError.keychain(status: -34018)
        #expect(keychain.code == .keychain && keychain.status == -34018)
        #expect(keychain.description == "Keychain error -34018")
        #expect(RocalyticsSecureStoreError.undecodable.description == "the Keychain item is not UTF-8 text")
        #expect(
            [RocalyticsSecureStoreError.Code.locked, .keychain, .undecodable].map(\.rawValue) == ["locked", "keychain", "undecodable"])
        #expect(keychain == .keychain(status: -34018) && keychain != .keychain(status: -25300))
        // The enum's spellings in a `catch` and a `switch` still work.
        do { throw RocalyticsSecureStoreError(code: .locked, message: "host store: locked") } catch RocalyticsSecureStoreError.locked {
        } catch { Issue.record("a locked error of another message should match by its code") }
        switch keychain {
        case .locked, .undecodable: Issue.record("matched the wrong value")
        case .keychain(status: -34018): break
        default: Issue.record("no match")
        }

        // A host's own store may build its locked error with a message of its own: the client
        // goes by the code and waits for protected data.
        let platform = LockedOnceStore(FixturePlatform.ios(store: RETURNING()))
        let h = ClientFixture(platform: nil, store: RETURNING(), choice: .custom(platform))
        await h.clock.settle()
        #expect(platform.waits.value == 1)
        #expect(h.client.rocaId == nil)
        platform.unlock()
        await h.client.ready()
        #expect(h.client.rocaId == ID)
    }

    /// Deprecated: it pins the reference's spelling, `RocalyticsClient(options:)`, which is.
    @available(*, deprecated)
    @Test func CF1_configurationDefaultsAndBothInitialisers() async {
        let c = RocalyticsConfiguration()
        #expect(c.platform.isSystemDefault)
        #expect(c.transport == nil)
        #expect(c.baseURL == rocalyticsDefaultBaseURL)
        #expect(c.attributionBaseURL == rocalyticsDefaultAttributionBaseURL)
        #expect(c.identifyOnStart && c.installPing)
        #expect(c.clock is SystemClock)

        let transport = RecordingTransport.rocalytics()
        let clock = ManualClock()
        var config = RocalyticsConfiguration(
            platform: .custom(FixturePlatform.ios(store: RETURNING())), transport: transport,
            clock: clock, scheduler: clock, onDiagnostic: { _ in }, installPing: false)
        config.baseURL = "https://api.example"
        let a = RocalyticsClient(configuration: config)
        let b = RocalyticsClient(options: config)
        #expect(a.onboardingRunDestination == "https://api.example/functions/v1/onboarding-response (custom fetch)")
        #expect(b.onboardingRunDestination == a.onboardingRunDestination)
        #expect(b.paywallPresentationDestination == a.paywallPresentationDestination)
        await clock.settle()
        await a.ready()
        await b.ready()
        #expect(a.rocaId == ID && b.rocaId == ID)
    }
}

/// A platform whose first secure-store read throws a locked error with a message of the host's
/// own, until ``unlock()``.
final class LockedOnceStore: RocalyticsPlatform, @unchecked Sendable {
    let facts: FixturePlatform
    let waits = Locked(0)
    private let state = Locked<(locked: Bool, waiters: [CheckedContinuation<Bool, Never>])>((true, []))

    init(_ facts: FixturePlatform) { self.facts = facts }

    func unlock() {
        let all = state.withLock { s -> [CheckedContinuation<Bool, Never>] in
            s.locked = false
            defer { s.waiters = [] }
            return s.waiters
        }
        for c in all { c.resume(returning: true) }
    }

    func waitForProtectedData() async -> Bool {
        await withCheckedContinuation { c in
            let now = state.withLock { s -> Bool in
                if !s.locked { return true }
                s.waiters.append(c)
                return false
            }
            waits.withLock { $0 += 1 }
            if now { c.resume(returning: true) }
        }
    }

    func secureValue(forKey key: String) async throws -> String? {
        if state.withLock({ $0.locked }) { throw RocalyticsSecureStoreError(code: .locked, message: "host store: locked") }
        return try await facts.secureValue(forKey: key)
    }
    func setSecureValue(_ value: String, forKey key: String) async throws { try await facts.setSecureValue(value, forKey: key) }
    var platformName: String { facts.platformName }
    var platformVersion: RocalyticsPlatformVersion { facts.platformVersion }
    var applicationId: String? { facts.applicationId }
    var applicationName: String? { facts.applicationName }
    var applicationVersion: String? { facts.applicationVersion }
    var buildNumber: String? { facts.buildNumber }
    var deviceBrand: String? { facts.deviceBrand }
    var deviceModelName: String? { facts.deviceModelName }
    var deviceManufacturer: String? { facts.deviceManufacturer }
    var osName: String? { facts.osName }
    var osVersion: String? { facts.osVersion }
    var screen: RocalyticsScreen { facts.screen }
    var localeIdentifier: String { facts.localeIdentifier }
    var timeZoneIdentifier: String { facts.timeZoneIdentifier }
    func identifierForVendor() async -> String? { await facts.identifierForVendor() }
    func androidId() -> String? { facts.androidId() }
    func installationTime() async throws -> Date { try await facts.installationTime() }
    func ipAddress() async throws -> String? { try await facts.ipAddress() }
    func makeUUID() -> String { facts.makeUUID() }
}
