import Foundation
import RocalyticsClient
import RocalyticsClientTestSupport
import Testing
import TrackerCore
import TrackerCoreTestKit

// The sinks' spellings (issue 13 item 1): the seed's factories give the very types the trackers'
// sinks take, and the Swift spellings beside them are the same sinks.
//
// New scenarios:
// - SK1: `createRocalyticsOnboardingSink(client)` is an `any Sink<OnboardingRunSnapshot>` and
//   `createRocalyticsPaywallSink(client)` an `any Sink<PaywallPresentationSnapshotV1_1>` (the
//   onboarding and paywall trackers' sink types); `for:` still picks another snapshot type.
// - SK2: `.rocalytics(client)` and `RocalyticsOnboardingSink(client: client)` /
//   `RocalyticsPaywallSink(client: client)` are the same sinks: same destination, same request bytes.
// - SK3: a v1 paywall snapshot taken as the tracker's type (v1.1) posts exactly the bytes of the
//   v1 contract example, as the v1-typed sink does.
@Suite struct SinkSpellingTests {
    @Test func SK1_theSeedFactoriesGiveTheTrackersSinkTypes() async {
        let client = RocalyticsClient(configuration: .init(platform: .none, onDiagnostic: { _ in }))
        let onboarding: any Sink<OnboardingRunSnapshot> = createRocalyticsOnboardingSink(client)
        let paywall: any Sink<PaywallPresentationSnapshotV1_1> = createRocalyticsPaywallSink(client)
        let v1Only: RocalyticsPaywallSink<PaywallPresentationSnapshot> = createRocalyticsPaywallSink(
            client, for: PaywallPresentationSnapshot.self)
        #expect(onboarding.destination == client.onboardingRunDestination)
        #expect(paywall.destination == client.paywallPresentationDestination)
        #expect(v1Only.destination == client.paywallPresentationDestination)
        await client.ready()
    }

    @Test func SK2_swiftSpellingsAreTheSameSinks() async throws {
        let h = ClientFixture(
            store: RETURNING(),
            transport: RecordingTransport { r in
                r.url.hasSuffix("/paywall-presentations")
                    ? HTTPResponse(status: 200, body: Array(#"{"outcome":"accepted"}"#.utf8))
                    : try await RecordingTransport.rocalyticsReplies(r)
            })
        let onboarding: [any Sink<OnboardingRunSnapshot>] = [
            createRocalyticsOnboardingSink(h.client), .rocalytics(h.client), RocalyticsOnboardingSink(client: h.client),
        ]
        let paywall: [any Sink<PaywallPresentationSnapshotV1_1>] = [
            createRocalyticsPaywallSink(h.client), .rocalytics(h.client), RocalyticsPaywallSink(client: h.client),
        ]
        for sink in onboarding {
            #expect(sink.destination == h.client.onboardingRunDestination)
            #expect(try await sink.send(IN_PROGRESS) == .accepted)
        }
        let snapshot = try PaywallPresentationSnapshotV1_1(json: try paywallExample("native-start", v1_1: true))
        for sink in paywall {
            #expect(sink.destination == h.client.paywallPresentationDestination)
            #expect(try await sink.send(snapshot) == .accepted)
        }
        let onboardingBodies = h.requests.filter { $0.url.hasSuffix("/onboarding-response") }.compactMap(\.body)
        #expect(onboardingBodies.count == 3 && Set(onboardingBodies).count == 1)
        let paywallBodies = h.requests.filter { $0.url.hasSuffix("/paywall-presentations") }.compactMap(\.body)
        #expect(paywallBodies == Array(repeating: snapshot.wireBytes(), count: 3))
    }

    @Test func SK3_aV1SnapshotAsTheTrackersTypePostsTheV1Bytes() async throws {
        let h = ClientFixture(
            store: RETURNING(),
            transport: RecordingTransport { r in
                r.url.hasSuffix("/paywall-presentations")
                    ? HTTPResponse(status: 200, body: Array(#"{"outcome":"accepted"}"#.utf8))
                    : try await RecordingTransport.rocalyticsReplies(r)
            })
        let example = try paywallExample("purchased-android-3-ended-purchased")
        let asTrackerType = try PaywallPresentationSnapshotV1_1(json: example)
        let asV1 = try PaywallPresentationSnapshot(json: example)
        #expect(try await createRocalyticsPaywallSink(h.client).send(asTrackerType) == .accepted)
        #expect(try await createRocalyticsPaywallSink(h.client, for: PaywallPresentationSnapshot.self).send(asV1) == .accepted)
        let bodies = h.requests.filter { $0.url.hasSuffix("/paywall-presentations") }.compactMap(\.body)
        // Both sinks post the v1 snapshot's bytes (the tracker's emission order), and they carry
        // the contract example's members and values.
        #expect(bodies == [asV1.wireBytes(), asV1.wireBytes()])
        #expect(try WireJSON.decode(bodies[0]).semanticallyEquals(example))
        #expect(ContractChecker.paywallPresentation(try WireJSON.decode(bodies[0])).isEmpty)
        PayloadCapture.record(bodies[0], schema: .paywallPresentationV1)
    }
}
