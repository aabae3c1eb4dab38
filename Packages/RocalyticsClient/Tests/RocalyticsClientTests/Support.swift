import Foundation
import RocalyticsClient
import RocalyticsClientTestSupport
import Testing
import TrackerCore
import TrackerCoreTestKit

// Shared definitions of rocalytics-client.md §18.
let ID = "6f1c2a4e-8b3d-4c5e-9f70-1a2b3c4d5e6f"
let OTHER = "0b6e5a2c-3d4f-4a1b-8c9d-0e1f2a3b4c5d"
let IDFV = "0A1B2C3D-4E5F-4061-8273-94A5B6C7D8E9"
let API = "https://rocalytics-api.rocapine.io/functions/v1"
let T0 = "2026-01-10T08:00:00.000Z"
let T0ms: Int64 = 1_768_032_000_000

let DC_IOS =
    #"{"ip":"203.0.113.7","user_agent":"Example/2.4.0 (Apple iPhone 15 Pro; iOS 18.1; en-US)","device_model":"iPhone 15 Pro","device_brand":"Apple","device_manufacturer":"Apple","os_name":"iOS","os_version":"18.1","screen_width":393,"screen_height":852,"screen_scale":3,"timezone":"Europe/Paris","locale":"en-US","app_version":"2.4.0","app_build":"412"}"#
let DC_AND =
    #"{"ip":null,"user_agent":"Example/2.4.0 (google Unknown; Android 34; fr-FR)","device_model":null,"device_brand":"google","device_manufacturer":"Google","os_name":"Android","os_version":null,"screen_width":411.4,"screen_height":914.3,"screen_scale":2.625,"timezone":"Europe/Paris","locale":"fr-FR","app_version":"2.4.0","app_build":"412"}"#
let IDENT_IOS = #"{"idfv":"\#(IDFV)","locale":"en-US"}"#

/// `TRACK(name, dedup, props, dc[, custom])` as compact JSON text.
func TRACK(_ name: String, _ dedup: String, _ props: String, _ dc: String, custom: Bool = false) -> String {
    #"{"name":"\#(name)","deduplication_id":"\#(dedup)","properties":\#(props),"device_context":\#(dc)\#(custom ? #","custom_event":true"# : "")}"#
}

func H(_ platform: String, rocaId: String = ID) -> [HTTPHeader] {
    [
        HTTPHeader("Content-Type", "application/json"), HTTPHeader("X-Roca-ID", rocaId),
        HTTPHeader("X-Application-ID", "com.example.app"), HTTPHeader("X-Platform", platform),
    ]
}

func RETURNING() -> InMemorySecureStore { InMemorySecureStore(["rocalytics-roca-id": ID, "rocadata-install-tracked": "true"]) }

func json(_ text: String) -> JSONValue {
    do { return try WireJSON.decode(text) } catch { fatalError("bad JSON in test: \(error): \(text)") }
}

func obj(_ text: String) -> JSONObject { json(text).objectValue! }

/// The body text of a request ("" when none).
func bodyText(_ r: HTTPRequest) -> String { r.body.map { String(decoding: $0, as: UTF8.self) } ?? "" }

/// A client on the fixture platform with a recording transport, on a manual clock.
struct ClientFixture {
    let store: InMemorySecureStore
    let transport: RecordingTransport
    let log = DiagnosticLog()
    let clock: ManualClock
    /// Where recorded requests and the opt-out are kept (in memory unless a test passes one).
    let storage: any KeyValueStorage
    let client: RocalyticsClient

    init(
        platform: FixturePlatform? = nil, store: InMemorySecureStore = InMemorySecureStore(),
        transport: RecordingTransport = RecordingTransport.rocalytics(), clock: ManualClock = ManualClock(),
        installPing: Bool = false, identifyOnStart: Bool = true, baseURL: String = rocalyticsDefaultBaseURL,
        attributionBaseURL: String = rocalyticsDefaultAttributionBaseURL, choice: RocalyticsPlatformChoice? = nil,
        storage: any KeyValueStorage = InMemoryKeyValueStorage()
    ) {
        self.store = store
        self.transport = transport
        self.clock = clock
        self.storage = storage
        let p = platform ?? FixturePlatform.ios(store: store)
        client = RocalyticsClient(
            configuration: .init(
                platform: choice ?? .custom(p), transport: transport, baseURL: baseURL, clock: clock, scheduler: clock,
                onDiagnostic: log.handler, identifyOnStart: identifyOnStart, installPing: installPing,
                attributionBaseURL: attributionBaseURL, storage: storage))
    }

    /// Another launch on the same secure store and storage (and, unless given, transport and clock).
    func relaunch(
        installPing: Bool = false, platform: FixturePlatform? = nil, transport: RecordingTransport? = nil, clock: ManualClock? = nil,
        storage: (any KeyValueStorage)? = nil
    ) -> ClientFixture {
        ClientFixture(
            platform: platform ?? FixturePlatform.ios(store: store), store: store, transport: transport ?? self.transport,
            clock: clock ?? self.clock, installPing: installPing, storage: storage ?? self.storage)
    }

    var requests: [HTTPRequest] { transport.requests }
    var paths: [String] { transport.paths }
}

/// Expects a request's URL, method, the four headers (in order) and its body bytes.
func expectRequest(
    _ r: HTTPRequest?, _ url: String, body: String?, headers: [HTTPHeader] = H("ios"), sourceLocation: SourceLocation = #_sourceLocation
) {
    guard let r else {
        Issue.record("missing request \(url)", sourceLocation: sourceLocation)
        return
    }
    #expect(r.url == url, sourceLocation: sourceLocation)
    #expect(r.method == "POST", sourceLocation: sourceLocation)
    #expect(r.headers == headers, sourceLocation: sourceLocation)
    if let body {
        #expect(bodyText(r) == body, sourceLocation: sourceLocation)
    } else {
        #expect(r.body == nil, sourceLocation: sourceLocation)
    }
}

/// Runs `body` and returns the thrown error's text, or nil when it did not throw.
func errorMessage(_ body: () async throws -> Void) async -> String? {
    do {
        try await body()
        return nil
    } catch {
        return (error as? RocalyticsError)?.description ?? "\(error)"
    }
}

/// A payload given as raw JSON (the contract types' wire form).
struct RawPayload: WireEncodable {
    let value: JSONValue
    init(_ text: String) { value = json(text) }
    init(_ value: JSONValue) { self.value = value }
    func wireJSON() -> JSONValue { value }
}
