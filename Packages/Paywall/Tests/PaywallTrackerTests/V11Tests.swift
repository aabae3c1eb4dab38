import Testing
import TrackerCore
import TrackerCoreTestKit

@testable import PaywallTracker

private let ANDROID = RunContextInput(
    appVersion: "2.4.0", build: "412", platform: .android, osVersion: "15", locale: "en-US", timezone: "America/New_York")

private func example(_ name: String) throws -> JSONValue {
    try WireJSON.decode(ContractExamples.bytes(ContractExamples.contractsDirectory + "/examples/paywall-presentation-v1_1/" + name))
}

/// Spec 17 J: contract v1.1 (wire form of spec section 4).
@Suite struct V11Tests {
    @Test func P55_noProviderSendsExactlyV1() async throws {
        // Typed info without provider, and the untyped form with `provider: null`.
        for start in [
            { (t: PaywallPresentationTracker) in t.start(INFO) },
            { (t: PaywallPresentationTracker) in t.start(json: InfoValidation.raw(INFO).withNullProvider) },
        ] {
            let h = PaywallFixture()
            let handle = try #require(start(h.tracker))
            handle.shown()
            await h.settle()
            await h.advance(1000)
            handle.end(.dismissed)
            await h.settle()
            try h.expectShownThenDismissedAfterOneSecond()
            for s in h.received {
                #expect(s.schemaVersion == 1)
                #expect(!s.wireString.contains("provider") && !s.wireString.contains("placement") && !s.wireString.contains("external"))
                #expect(PaywallContractChecker.problems(s.wireJSON(), schema: .v1).isEmpty)
            }
            h.expectConformant()
        }
    }

    @Test func P56_externalProvider() async throws {
        // The clock holds the work the synchronous calls start until the test settles, so the
        // three calls always coalesce the same way (seq 2 replaced by seq 3 while seq 1 is in flight).
        let h = PaywallFixture(
            startMs: T9, context: .value(ANDROID), clock: ManualClock(startMs: T9, holdsOutsideWork: true), uuid: { FIXED_ID })
        let info = PaywallPresentationInfo(provider: .external, externalPaywallId: "sw_annual_v2", placement: "onboarding_end")
        let handle = try #require(h.tracker.start(info))
        handle.shown()
        handle.end(.purchased(PaywallTransactionInfo(purchaseToken: "tok")))
        await h.settle()
        #expect(h.log.all.isEmpty)
        #expect(h.received.map(\.seq) == [1, 3])
        #expect(h.bodies[0].hasPrefix(#"{"schema_version":1.1,"presentation_id":"\#(FIXED_ID)","seq":1,"#))
        #expect(
            h.bodies[0].contains(
                #""paywall":{"provider":"external","placement":"onboarding_end","external_paywall_id":"sw_annual_v2"},"surface":"present""#)
        )
        for s in h.received {
            #expect(s.schemaVersion == 1.1)
            #expect(PaywallContractChecker.problems(s.wireJSON(), schema: .v1_1).isEmpty)
        }
        h.expectConformant()

        // With the fields of the shipped example (an explicit null audience needs the untyped entry).
        let h2 = PaywallFixture(startMs: T9, context: .value(ANDROID), uuid: { FIXED_ID })
        _ = try #require(
            h2.tracker.start(json: [
                "provider": "external", "providerName": "Superwall", "placement": "onboarding_end",
                "externalPaywallId": "sw_annual_v2", "audienceId": nil, "surface": "present",
            ]))
        await h2.settle()
        let sent = try #require(h2.received.first)
        #expect(sent.wireJSON().semanticallyEquals(try example("external-start.json")))
        #expect(
            sent.wireString.contains(
                #""paywall":{"provider":"external","provider_name":"Superwall","placement":"onboarding_end","external_paywall_id":"sw_annual_v2","audience_id":null}"#
            ))
        h2.expectConformant()
    }

    @Test func P57_nativeProvider() async throws {
        let h = PaywallFixture(startMs: T9, context: .value(ANDROID), uuid: { FIXED_ID })
        let named = PaywallPresentationInfo(provider: .native, externalPaywallId: "native_annual", providerName: "In-house")
        let plain = PaywallPresentationInfo(provider: .native, externalPaywallId: "native_annual", renderMode: .custom, billing: .store)
        let a = try #require(h.tracker.start(named))
        a.end(.dismissed)
        let h3 = PaywallFixture(startMs: T9, context: .value(ANDROID), uuid: { FIXED_ID })
        _ = try #require(h3.tracker.start(plain))
        await h.settle()
        await h3.settle()
        let named1 = try #require(h.received.first)
        #expect(
            named1.wireString.contains(#""paywall":{"provider":"native","provider_name":"In-house","external_paywall_id":"native_annual"}"#)
        )
        let plain1 = try #require(h3.received.first)
        #expect(plain1.wireJSON().semanticallyEquals(try example("native-start.json")))
        #expect(!plain1.wireString.contains("provider_name"))
        for s in h.received + h3.received {
            #expect(s.schemaVersion == 1.1)
            #expect(!s.wireString.contains("placement"))
        }
        h.expectConformant()
        h3.expectConformant()

        // An external start without a placement is refused and sends nothing.
        let h2 = PaywallFixture()
        #expect(h2.tracker.start(PaywallPresentationInfo(provider: .external, externalPaywallId: "x")) == nil)
        #expect(h2.tracker.start(json: ["provider": "native", "surface": "present"]) == nil)
        #expect(h2.tracker.start(json: ["provider": "modal", "externalPaywallId": "x", "surface": "present"]) == nil)
        #expect(
            h2.tracker.start(
                PaywallPresentationInfo(provider: .native, externalPaywallId: "x", providerName: String(repeating: "n", count: 65))) == nil)
        await h2.settle()
        #expect(h2.received.isEmpty)
        #expect(
            h2.log.with("invalid-info").map(\.message) == [
                "placement must be 1 to 128 characters",
                "externalPaywallId must be 1 to 128 characters",
                "provider must be external or native",
                "providerName must be 1 to 64 characters",
            ])
    }
}

extension JSONValue {
    /// The same object with `provider: null` added.
    var withNullProvider: JSONValue {
        guard case .object(var o) = self else { return self }
        o["provider"] = .null
        return .object(o)
    }
}
