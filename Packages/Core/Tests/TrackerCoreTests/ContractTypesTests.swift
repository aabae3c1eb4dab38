import Foundation
import Testing
import TrackerCore
import TrackerCoreTestKit

/// Paywall tracker emission order (paywall.md §3.8): the example files use the docs' order, so the
/// typed encoding is compared with the example reordered this way.
func paywallTrackerOrder(_ v: JSONValue) -> JSONValue {
    guard case .object(let o) = v else { return v }
    let order = [
        "schema_version", "presentation_id", "seq", "started_at", "shown_at", "sent_at", "paywall", "surface",
        "onboarding_run", "context", "status", "ended_at", "outcome",
    ]
    var out = JSONObject()
    for k in order { if let x = o[k] { out.appendUnchecked(k, x) } }
    for e in o.entries where !order.contains(e.key) { out.appendUnchecked(e.key, e.value) }
    return .object(out)
}

@Suite struct ContractTypesTests {
    @Test(arguments: ContractExamples.valid(.onboardingRun))
    func onboardingExampleRoundTripsThroughTheTypedSnapshot(_ path: String) throws {
        let json = try WireJSON.decode(try ContractExamples.bytes(path))
        let snapshot = try OnboardingRunSnapshot(json: json)
        let direct = snapshot.wireBytes()
        // Byte-identical to the file's compact form (its keys are already in wire order, §17).
        #expect(direct == WireJSON.encode(json))
        #expect(WireJSON.encode(snapshot.wireJSON()) == direct)
        #expect(try OnboardingRunSnapshot(json: try WireJSON.decode(direct)) == snapshot)
        PayloadCapture.record(direct, schema: .onboardingRunV1)
    }

    @Test(arguments: ContractExamples.valid(.paywallPresentation))
    func paywallV1ExampleRoundTrips(_ path: String) throws {
        let json = try WireJSON.decode(try ContractExamples.bytes(path))
        let snapshot = try PaywallPresentationSnapshot(json: json)
        let direct = snapshot.wireBytes()
        #expect(direct == WireJSON.encode(paywallTrackerOrder(json)))
        #expect(WireJSON.encode(snapshot.wireJSON()) == direct)
        #expect(try WireJSON.decode(direct).semanticallyEquals(json))
        // A v1 snapshot is also a v1.1 snapshot without a provider, byte for byte (paywall.md §4 point 1).
        let v11 = try PaywallPresentationSnapshotV1_1(json: json)
        #expect(v11.schemaVersion == 1)
        #expect(v11.wireBytes() == direct)
        PayloadCapture.record(direct, schema: .paywallPresentationV1)
        PayloadCapture.record(direct, schema: .paywallPresentationV1_1)
    }

    @Test(arguments: ContractExamples.valid(.paywallPresentationV1_1))
    func paywallV1_1ExampleRoundTrips(_ path: String) throws {
        let json = try WireJSON.decode(try ContractExamples.bytes(path))
        let snapshot = try PaywallPresentationSnapshotV1_1(json: json)
        let direct = snapshot.wireBytes()
        #expect(snapshot.schemaVersion == 1.1)
        #expect(direct == WireJSON.encode(paywallTrackerOrder(json)))
        #expect(WireJSON.encode(snapshot.wireJSON()) == direct)
        #expect(try PaywallPresentationSnapshotV1_1(json: try WireJSON.decode(direct)) == snapshot)
        #expect(throws: ContractDecodingError.self) { try PaywallPresentationSnapshot(json: json) }
        PayloadCapture.record(direct, schema: .paywallPresentationV1_1)
    }

    static func minimalRun() -> OnboardingRunSnapshot {
        OnboardingRunSnapshot(
            runId: "00000000-0000-4000-8000-000000000009", seq: 1, status: .inProgress,
            startedAt: "2026-01-10T08:00:00.000Z", completedAt: nil, sentAt: "2026-01-10T08:00:00.000Z",
            onboarding: .init(key: "flow", version: "1"),
            context: .init(appVersion: "1.0", build: nil, platform: .ios, osVersion: nil, locale: "en", timezone: "UTC"),
            manifest: .init(steps: [.init(stepKey: "a", slot: nil)]),
            steps: [.init(stepKey: "a", enteredAt: "2026-01-10T08:00:00.000Z", exitedAt: nil, answers: [])])
    }

    /// Contract §3.3: nulls that are always written, members that are omitted.
    @Test func absentVersusNull() throws {
        var run = Self.minimalRun()
        let text = String(decoding: run.wireBytes(), as: UTF8.self)
        #expect(
            text
                == #"{"schema_version":1,"run_id":"00000000-0000-4000-8000-000000000009","seq":1,"status":"in_progress","started_at":"2026-01-10T08:00:00.000Z","completed_at":null,"sent_at":"2026-01-10T08:00:00.000Z","onboarding":{"key":"flow","version":"1"},"context":{"app_version":"1.0","build":null,"platform":"ios","os_version":null,"locale":"en","timezone":"UTC"},"manifest":{"steps":[{"step_key":"a"}]},"steps":[{"step_key":"a","entered_at":"2026-01-10T08:00:00.000Z","exited_at":null,"answers":[]}]}"#
        )
        run.truncated = true
        run.properties["zeta"] = .number(1.5e-7)
        run.properties["alpha"] = .string("a/\u{2028}")
        run.properties["zeta"] = .bool(true)  // keeps its first position
        run.studio = .init(deploymentId: "412")
        run.steps[0].answers = [
            .init(questionKey: "q1", value: .numeric(70, unit: "kg")), .init(questionKey: "q2", value: .multi([])),
            .init(questionKey: "q3", value: .text("\"hi\"\n")), .init(questionKey: "q4", value: .single("x")),
        ]
        let bytes = run.wireBytes()
        #expect(bytes == WireJSON.encode(run.wireJSON()))
        let text2 = String(decoding: bytes, as: UTF8.self)
        #expect(text2.contains(#""studio":{"deployment_id":"412"},"context""#))
        #expect(text2.contains("\"properties\":{\"zeta\":true,\"alpha\":\"a/\u{2028}\"},\"truncated\":true,\"steps\""))
        #expect(
            text2.contains(
                #""answers":[{"question_key":"q1","kind":"numeric","value":70,"unit":"kg"},{"question_key":"q2","kind":"multi","value":[]},{"question_key":"q3","kind":"text","value":"\"hi\"\n"},{"question_key":"q4","kind":"single","value":"x"}]"#
            ))
        #expect(try OnboardingRunSnapshot(json: try WireJSON.decode(bytes)) == run)
        PayloadCapture.record(bytes, schema: .onboardingRunV1)
    }

    @Test func decodingRejectsWhatTheClosedSchemaRejects() throws {
        let good = Self.minimalRun().wireJSON()
        func mutated(_ f: (inout JSONObject) -> Void) -> JSONValue {
            var o = good.objectValue!
            f(&o)
            return .object(o)
        }
        let cases: [JSONValue] = [
            mutated { $0["country"] = "FR" },
            mutated { $0["schema_version"] = 2 },
            mutated { $0["seq"] = 1.5 },
            mutated { $0["status"] = "quit" },
            mutated { $0["completed_at"] = nil },
            mutated {
                $0["steps"] = [
                    [
                        "step_key": "a", "entered_at": "x", "exited_at": nil,
                        "answers": [["question_key": "q", "kind": "single", "value": "v", "unit": "u"]],
                    ]
                ]
            },
        ]
        for c in cases {
            #expect(throws: ContractDecodingError.self) { try OnboardingRunSnapshot(json: c) }
        }
        // The closed-schema invalid paywall example (a price in the transaction) does not decode.
        let price = try WireJSON.decode(
            try ContractExamples.bytes(
                ContractExamples.invalid(.paywallPresentation).first {
                    $0.hasSuffix("no-price-unknown-transaction-field-closed-schema.json")
                }!))
        #expect(throws: ContractDecodingError.self) { try PaywallPresentationSnapshot(json: price) }
    }

    @Test func paywallV1_1SchemaVersionFollowsTheProvider() throws {
        let path = ContractExamples.valid(.paywallPresentationV1_1).first { $0.hasSuffix("native-start.json") }!
        var snapshot = try PaywallPresentationSnapshotV1_1(json: try WireJSON.decode(try ContractExamples.bytes(path)))
        #expect(String(decoding: snapshot.wireBytes(), as: UTF8.self).hasPrefix(#"{"schema_version":1.1,"#))
        snapshot.paywall.audienceId = .null
        #expect(String(decoding: snapshot.wireBytes(), as: UTF8.self).contains(#""billing":"store","audience_id":null"#) == false)
        #expect(String(decoding: snapshot.wireBytes(), as: UTF8.self).contains(#""render_mode":"custom""#))
        #expect(
            String(decoding: snapshot.wireBytes(), as: UTF8.self).contains(
                #""external_paywall_id":"native_annual","audience_id":null,"render_mode""#))
        // A mismatched schema_version does not decode.
        var o = snapshot.wireJSON().objectValue!
        o["schema_version"] = 1
        #expect(throws: ContractDecodingError.self) { try PaywallPresentationSnapshotV1_1(json: .object(o)) }
    }

    /// Each generated file records a hash of its schema: a schema edited without running
    /// `make generate` fails here (and in `make check-generated`).
    @Test(arguments: [
        ("OnboardingRunSnapshot.swift", "onboarding-run.schema.json"),
        ("PaywallPresentationSnapshot.swift", "paywall-presentation.schema.json"),
        ("PaywallPresentationSnapshotV1_1.swift", "paywall-presentation.v1_1.schema.json"),
    ])
    func generatedTypesMatchTheirSchema(_ file: String, _ schema: String) throws {
        let root = PackagePaths.packageRoot(#filePath)
        let source = try String(contentsOfFile: root + "/Sources/TrackerCore/Contracts/Generated/" + file, encoding: .utf8)
        #expect(source.hasPrefix("// GENERATED FILE, DO NOT EDIT."))
        #expect(source.contains("from Packages/Core/Contracts/\(schema)."))
        let hash = ContractExamples.fnv1a64(try ContractExamples.bytes(root + "/Contracts/" + schema))
        #expect(source.contains("// schema-fnv1a64: " + hash))
    }
}
