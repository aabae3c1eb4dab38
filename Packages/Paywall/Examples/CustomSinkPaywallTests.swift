import Foundation
import PaywallTracker
import Testing
import TrackerCore
import TrackerCoreTestKit

/// A backend that answers like the paywall ingest (spec 5.1), keeping the latest snapshot per
/// presentation; every body it gets is captured for schema validation and contract-checked.
private final class FakeBackend: Sendable {
    let stored = Locked<[String: JSONValue]>([:])
    let problems = Locked<[String]>([])
    let posts = Locked(0)

    func post(_ body: [UInt8]) async throws -> JSONValue? {
        posts.withLock { $0 += 1 }
        let value = try WireJSON.decode(body)
        let v1 = value["paywall"]?["provider"] == nil
        PayloadCapture.record(body, schema: v1 ? .paywallPresentationV1 : .paywallPresentationV1_1)
        let id = value["presentation_id"]?.stringValue ?? ""
        let p =
            PaywallContractChecker.problems(bytes: body, schema: v1 ? .v1 : .v1_1)
            + ContractChecker.paywallPresentation(value, previous: stored.withLock { $0[id] }).map(\.description)
        problems.withLock { $0 += p }
        let verdict = stored.withLock { s -> SinkOutcome in
            let v = PaywallContractChecker.verdict(stored: s[id], incoming: value, size: body.count)
            if v == .accepted { s[id] = value }
            return v
        }
        return ["outcome": .string(verdict.rawValue)]
    }
}

@Suite struct CustomSinkPaywallExampleTests {
    @Test func customSinkExampleRuns() async throws {
        let clock = ManualClock()
        let backend = FakeBackend()
        let diagnostics = Locked<[Diagnostic]>([])
        // On Linux there is no device: the test passes the platform and locale explicitly.
        let device = DeviceFacts(appVersion: "2.4.0", build: "412", platform: .ios, osVersion: "18.1", locale: "en-US")
        let storage = InMemoryKeyValueStorage()
        let tracker = setUpPaywallTracking(
            device: device, storage: storage, post: { try await backend.post($0) },
            clock: clock, scheduler: clock, onDiagnostic: { d in diagnostics.withLock { $0.append(d) } })
        presentUpgradePaywall(observer: tracker, originalTransactionIdentifier: "2000000123", productId: "pro_annual")
        presentExternalPaywall(observer: tracker)
        await clock.settle()
        await tracker.idle()
        await clock.settle()

        #expect(diagnostics.value.isEmpty)
        #expect(backend.problems.value.isEmpty)
        let ended = backend.stored.value.values.sorted {
            ($0["schema_version"]?.numberValue ?? 0) < ($1["schema_version"]?.numberValue ?? 0)
        }
        #expect(ended.count == 2)
        #expect(ended.allSatisfy { $0["status"] == "ended" })
        #expect(
            WireJSON.encodeString(ended[0]["outcome"]!)
                == #"{"status":"purchased","transaction":{"original_transaction_identifier":"2000000123","product_id":"pro_annual"}}"#)
        #expect(ended[1]["paywall"]?["provider"] == "external")
        #expect(ended[0]["context"]?["timezone"]?.stringValue == TimeZone.current.identifier)
        #expect(storage.snapshot.isEmpty)  // everything settled: nothing left to resend
    }
}
