import Foundation
import RocalyticsClient
import RocalyticsClientExamples
import RocalyticsClientTestSupport
import Testing
import TrackerCore
import TrackerCoreTestKit

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Captures what the process writes to file descriptors 1 and 2 while `body` runs.
func captureOutput(_ body: () async throws -> Void) async rethrows -> String {
    fflush(nil)
    let path = FileManager.default.temporaryDirectory.appendingPathComponent("rocalytics-output-\(UUID().uuidString)").path
    let fd = open(path, O_CREAT | O_RDWR | O_TRUNC, 0o600)
    let savedOut = dup(1)
    let savedErr = dup(2)
    dup2(fd, 1)
    dup2(fd, 2)
    defer {
        fflush(nil)
        dup2(savedOut, 1)
        dup2(savedErr, 2)
        close(savedOut)
        close(savedErr)
        close(fd)
        unlink(path)
    }
    try await body()
    fflush(nil)
    return String(decoding: FileManager.default.contents(atPath: path) ?? Data(), as: UTF8.self)
}

/// The default diagnostic handler's output. Serialized: these tests redirect the process's
/// standard output and error. Other suites use collecting handlers and print nothing; lines the
/// test runner itself writes meanwhile are ignored by the filters below.
@Suite(.serialized) struct OutputTests {
    @Test func C26_theExampleRunsWithoutServices() async throws {
        var eventId: String?
        let output = try await captureOutput {
            let rocalytics = startRocalytics()
            try await onSignedIn(rocalytics, userId: "user-42", revenueCatId: "$RCAnonymousID:abc")
            eventId = try await onPurchase(
                rocalytics, product: ["productIdentifier": "pro_yearly"],
                transaction: ["originalTransactionIdentifier": "2000000841136630"],
                price: 0, currency: "EUR", isTrial: true)
            #expect(rocalytics.rocaId == nil)
        }
        #expect(eventId == "purchase-2000000841136630")
        let ours = output.split(separator: "\n").filter { $0.hasPrefix("[rocalytics-sdk]") }
        #expect(ours.count == 1)
        #expect(ours.first?.hasPrefix("[rocalytics-sdk] native-modules-unavailable: Rocalytics is disabled for this session: ") == true)
        #expect(!output.contains("user-42"))
    }

    @Test func D33_aWorkingClientLogsNothing() async throws {
        let transport = RecordingTransport.rocalytics()
        let clock = ManualClock()
        let output = try await captureOutput {
            let client = RocalyticsClient(
                configuration: .init(
                    platform: .custom(FixturePlatform.ios()), transport: transport, clock: clock, scheduler: clock, installPing: false))
            await client.ready()
            try await client.trackPurchase(originalTransactionIdentifier: "t-1", productId: "pro_monthly", price: 9.99, currency: "EUR")
            try await client.trackOnboarding(stepId: "welcome", answers: ["goal": "x"])
            try await client.identify(["email": "user@example.com"])
            _ = await client.sendOnboardingRun(COMPLETED)
        }
        let r = transport.requests
        #expect(r.count == 7)
        expectRequest(r[0], "\(API)/identify", body: IDENT_IOS)
        expectRequest(r[1], "\(API)/track", body: A1_INSTALL)
        expectRequest(r[2], "\(API)/track", body: D30_BODY)
        expectRequest(
            r[3], "\(API)/onboarding-response",
            body: #"{"sent_at":"\#(T0)","responses":[{"step_id":"welcome","entered_at":"\#(T0)","exited_at":null,"answers":{"goal":"x"}}]}"#
        )
        expectRequest(r[4], "\(API)/identify", body: #"{"email":"user@example.com"}"#)
        for needle in ["rocalytics", "ROCALYTICS", "user@example.com", "pro_monthly", "9.99", ID] {
            #expect(!output.contains(needle), "printed \(needle)")
        }
    }

    @Test func theSourcesNeverPrint() throws {
        // The client writes nothing except through the diagnostic handler (§13).
        let dir = PackagePaths.packageRoot(#filePath) + "/Sources/RocalyticsClient"
        for file in try FileManager.default.contentsOfDirectory(atPath: dir) where file.hasSuffix(".swift") {
            let text = try String(contentsOfFile: dir + "/" + file, encoding: .utf8)
            for banned in ["print(", "debugPrint(", "dump(", "NSLog(", "os_log(", "Logger(", "fputs(", "FileHandle.standard", "URLSession"]
            {
                #expect(!text.contains(banned), "\(file) uses \(banned)")
            }
        }
    }
}
