import Foundation
import RocalyticsClient
import RocalyticsClientTestSupport
import Testing
import TrackerCore
import TrackerCoreTestKit

/// Replays every scenario of the reference fixture (rocalytics-client.md §15) with the install
/// ping off and compares every URL, method, header and body: any difference, extra or missing
/// request fails. Every request sent is also captured (when `TRACKER_CAPTURE_DIR` is set) for
/// `make validate-openapi`, which checks it against the API's published description
/// (`Contracts/rocalytics-openapi.yaml`).
@Suite struct ReferenceReplayTests {
    static let fixturePath = PackagePaths.packageRoot(#filePath) + "/Tests/RocalyticsClientTests/Fixtures/rocalytics-reference.json"
    static let fixtureBytes: [UInt8] = Array(FileManager.default.contents(atPath: fixturePath) ?? Data())
    static let fixture: JSONValue = (try? WireJSON.decode(fixtureBytes)) ?? .null
    static var scenarios: [JSONValue] { fixture["scenarios"]?.arrayValue ?? [] }

    @Test func fixtureIsTheUnmodifiedReferenceCopy() throws {
        #expect(Self.fixtureBytes.count == 42_949)
        // FNV-1a 64 of the copy as taken from the reference capture (Fixtures/SOURCE.md): an edit
        // to the fixture fails here instead of silently changing what the replay compares against.
        #expect(ContractExamples.fnv1a64(Self.fixtureBytes) == "732eeeb3edb457bf")
        #expect(Self.scenarios.count == 11)
        #expect(Self.scenarios.reduce(0) { $0 + ($1["requests"]?.arrayValue?.count ?? 0) } == 27)
        var paths = Set<String>()
        for s in Self.scenarios {
            for r in s["requests"]?.arrayValue ?? [] { paths.insert(RecordingTransport.path(of: r["url"]?.stringValue ?? "")) }
        }
        #expect(
            paths == ["/functions/v1/demand-score", "/functions/v1/identify", "/functions/v1/onboarding-response", "/functions/v1/track"])
    }

    @Test func A1_freshIOSDeviceIdentifiesThenSendsInstall() async throws {
        let run = try await replay(0)
        #expect(
            run.store.writes.map { "\($0.key)=\($0.value)" } == [
                "rocalytics-roca-id=\(ID)", "rocalitics-roca-id=\(ID)", "rocadata-install-tracked=true",
            ])
        #expect(run.client.rocaId == ID)
    }
    @Test func A2_freshAndroidDeviceWithNoIpAndMissingFields() async throws { _ = try await replay(1) }
    @Test func A3_returningDeviceOnlyIdentifies() async throws {
        let run = try await replay(2)
        #expect(run.store.writes.isEmpty)
    }
    @Test func A4_trackUsesTheDefaultDedupId() async throws { _ = try await replay(3) }
    @Test func A5_trackPurchaseWithProductAndTransaction() async throws { _ = try await replay(4) }
    @Test func A6_trackCustomEventFlagsTheEventAsCustom() async throws { _ = try await replay(5) }
    @Test func A7_trackOnboardingResendsTheWholeList() async throws { _ = try await replay(6) }
    @Test func A8_identifyDropsNullIdentifiers() async throws { _ = try await replay(7) }
    @Test func A9_aFailedRequestFailsWithEndpointStatusAndEventName() async throws { _ = try await replay(8) }
    @Test func A10_customEventWithDedupSuffix() async throws {
        let run = try await replay(9)
        // The legacy id is migrated forward; no install is sent (both install keys are set).
        #expect(run.store.values["rocalytics-roca-id"] == ID)
        #expect(!run.transport.requests.contains { bodyText($0).contains("\"install\"") })
    }
    @Test func A11_getDemandScorePostsTheSignalsAndReturnsTheResponse() async throws { _ = try await replay(10) }

    struct Run {
        let client: RocalyticsClient
        let store: InMemorySecureStore
        let transport: RecordingTransport
    }

    /// Replays scenario `index` and checks requests and outcomes.
    func replay(_ index: Int, sourceLocation: SourceLocation = #_sourceLocation) async throws -> Run {
        let scenario = try #require(Self.scenarios.count > index ? Self.scenarios[index] : nil)
        var initial: [String: String] = [:]
        for (k, v) in scenario["store"]?.objectValue?.entries ?? [] { initial[k] = v.stringValue }
        let store = InMemorySecureStore(initial)
        let device = try #require(scenario["device"])
        let platform = try #require(FixturePlatform(fixtureDevice: device, store: store))
        let respond = scenario["respond"]?.objectValue ?? JSONObject()
        let transport = RecordingTransport { request in
            let path = RecordingTransport.path(of: request.url)
            let r = respond[path]
            let status = r?["status"]?.intValue ?? (path == "/functions/v1/identify" ? 200 : 204)
            return HTTPResponse(status: status, body: WireJSON.encode(r?["json"] ?? .object(JSONObject())))
        }
        let steps = scenario["steps"]?.arrayValue ?? []
        let start = try #require(steps.first?["now"]?.stringValue.flatMap(Timestamp.parse))
        let clock = ManualClock(startMs: start)
        let log = DiagnosticLog()
        let client = RocalyticsClient(
            configuration: .init(
                platform: .custom(platform), transport: transport, clock: clock, scheduler: clock, onDiagnostic: log.handler,
                identifyOnStart: true, installPing: false))

        var outcomes: [JSONValue] = []
        for step in steps {
            let now = try #require(step["now"]?.stringValue.flatMap(Timestamp.parse))
            await clock.set(ms: now)
            let args = step["args"]?.arrayValue ?? []
            func arg(_ i: Int) -> JSONValue? {
                guard i < args.count, !args[i].isNull else { return nil }
                return args[i]
            }
            var value: JSONValue?
            do {
                switch step["call"]?.stringValue {
                case "ready":
                    await client.ready()
                case "track":
                    let name = try #require(TrackEventName(rawValue: arg(0)?.stringValue ?? ""))
                    try await client.track(name, properties: arg(1)?.objectValue ?? [:])
                case "trackPurchase":
                    let purchase = try #require(arg(0))
                    let p = try purchaseParams(purchase)
                    try await client.trackPurchase(
                        originalTransactionIdentifier: p.originalTransactionIdentifier, productId: p.productId, price: p.value,
                        currency: p.currency, isTrial: p.isTrial, purchaseType: p.purchaseType, product: p.product,
                        transaction: p.transaction, redemptionResult: p.redemptionResult)
                case "trackCustomEvent":
                    try await client.trackCustomEvent(
                        arg(0)?.stringValue ?? "", properties: arg(1)?.objectValue ?? [:], dedupSuffix: arg(2)?.stringValue)
                case "trackOnboarding":
                    try await client.trackOnboarding(
                        stepId: arg(0)?.stringValue ?? "", answers: arg(1)?.objectValue, metadata: arg(2)?.objectValue)
                case "identify":
                    try await client.identify(IdentifyParams(arg(0)?.objectValue ?? JSONObject()))
                case "getDemandScore":
                    value = try await client.getDemandScore(arg(0).map(demandSignals)).raw
                default:
                    Issue.record("unknown call \(String(describing: step["call"]))", sourceLocation: sourceLocation)
                }
                outcomes.append(value.map { ["value": $0] } ?? .null)
            } catch {
                outcomes.append(["error": .string((error as? RocalyticsError)?.description ?? "\(error)")])
            }
        }
        await client.ready()
        for request in transport.requests { Self.capture(request) }

        // Outcomes.
        let returned = scenario["returned"]?.arrayValue ?? []
        #expect(outcomes.count == returned.count, sourceLocation: sourceLocation)
        for (got, want) in zip(outcomes, returned) {
            let same = got.semanticallyEquals(want)
            #expect(same, "outcome \(WireJSON.encodeString(got)) != \(WireJSON.encodeString(want))", sourceLocation: sourceLocation)
        }

        // Requests.
        let only = scenario["only"]?.arrayValue?.compactMap(\.stringValue)
        let sent = transport.requests.filter { only == nil || only!.contains(RecordingTransport.path(of: $0.url)) }
        let expected = scenario["requests"]?.arrayValue ?? []
        #expect(sent.count == expected.count, "request count", sourceLocation: sourceLocation)
        for (i, want) in expected.enumerated() {
            guard i < sent.count else {
                Issue.record("missing request \(i): \(WireJSON.encodeString(want))", sourceLocation: sourceLocation)
                continue
            }
            let got = sent[i]
            #expect(got.url == want["url"]?.stringValue, sourceLocation: sourceLocation)
            #expect(got.method == want["method"]?.stringValue, sourceLocation: sourceLocation)
            var headers: [String: String] = [:]
            for h in got.headers { headers[h.name] = h.value }
            var wantHeaders: [String: String] = [:]
            for (k, v) in want["headers"]?.objectValue?.entries ?? [] { wantHeaders[k] = v.stringValue }
            #expect(headers == wantHeaders, sourceLocation: sourceLocation)
            #expect(got.headers.count == wantHeaders.count, "duplicate headers", sourceLocation: sourceLocation)
            let wantBody = want["body"] ?? .null
            if wantBody.isNull {
                #expect(got.body == nil, "request \(i) must have no body", sourceLocation: sourceLocation)
            } else {
                let gotBody = try #require(got.body, sourceLocation: sourceLocation)
                let parsed = try WireJSON.decode(gotBody)
                let sameStructure = parsed.semanticallyEquals(wantBody)
                #expect(sameStructure, "body \(i): \(bodyText(got)) != \(WireJSON.encodeString(wantBody))", sourceLocation: sourceLocation)
                // Byte parity: the fixture keeps the reference's key order.
                let sameBytes = bodyText(got) == WireJSON.encodeString(wantBody)
                #expect(sameBytes, "byte order of body \(i): \(bodyText(got))", sourceLocation: sourceLocation)
            }
        }
        #expect(log.all.isEmpty, "no diagnostics: \(log.codes)", sourceLocation: sourceLocation)
        return Run(client: client, store: store, transport: transport)
    }

    /// The capture folder of the OpenAPI description (`Tools/scripts/validate-openapi.py`).
    static let openAPIRequests = CapturedSchema(name: "rocalytics-openapi")

    /// Writes `request` as `{"method","url","headers":[[name,value]],"body"}` for `make validate-openapi`.
    static func capture(_ request: HTTPRequest) {
        guard PayloadCapture.directory != nil else { return }
        let body: JSONValue = request.body.flatMap { try? WireJSON.decode($0) } ?? .null
        let text: JSONValue = request.body.map { body.isNull ? .string(String(decoding: $0, as: UTF8.self)) : .null } ?? .null
        let capture: JSONValue = [
            "method": .string(request.method), "url": .string(request.url),
            "headers": .array(request.headers.map { [.string($0.name), .string($0.value)] }), "body": body, "body_text": text,
        ]
        PayloadCapture.record(WireJSON.encode(capture), schema: openAPIRequests)
    }

    func purchaseParams(_ o: JSONValue) throws -> TrackPurchaseParams {
        TrackPurchaseParams(
            isTrial: o["isTrial"]?.boolValue ?? false, value: o["value"]?.numberValue ?? 0,
            currency: o["currency"]?.stringValue ?? "",
            originalTransactionIdentifier: o["originalTransactionIdentifier"]?.stringValue ?? "",
            productId: o["productId"]?.stringValue, product: o["product"], transaction: o["transaction"],
            redemptionResult: o["redemptionResult"], purchaseType: o["purchaseType"]?.stringValue.map(PurchaseType.init(rawValue:)))
    }

    func demandSignals(_ o: JSONValue) -> DemandScoreSignals {
        DemandScoreSignals(
            deviceModel: o["device_model"]?.stringValue, deviceReleaseYear: o["device_release_year"]?.intValue,
            osVersion: o["os_version"]?.stringValue,
            connectionType: o["connection_type"]?.stringValue.flatMap(ConnectionType.init(rawValue:)),
            storeCountry: o["store_country"]?.stringValue, appOpenCount: o["app_open_count"]?.intValue,
            paywallViewCount: o["paywall_view_count"]?.intValue, locale: o["locale"]?.stringValue)
    }
}
