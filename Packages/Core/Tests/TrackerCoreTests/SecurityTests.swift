import Foundation
import Testing
import TrackerCore
import TrackerCoreTestKit

/// Security promises of the transport: TLS verification cannot be turned off, a self-signed
/// server is refused, only http/https, no redirects.
@Suite struct SecurityTests {
    // `Process` exists on macOS and Linux only (Apple: macOS 10.0+, Mac Catalyst; not iOS, tvOS or
    // visionOS, where the Apple CI runs these tests on the simulators): so does this test.
    #if os(macOS) || os(Linux)
        /// Runs `openssl s_server` with a fresh self-signed certificate on a free loopback port and
        /// returns once it accepts connections (it prints `ACCEPT`).
        final class SelfSignedServer: @unchecked Sendable {
            let process = Process()
            let port: Int
            let dir: String

            init() throws {
                dir = NSTemporaryDirectory() + "tls-\(IDs.uuidV4())"
                try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
                let gen = Process()
                gen.executableURL = URL(fileURLWithPath: "/usr/bin/openssl")
                gen.arguments = [
                    "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-subj", "/CN=127.0.0.1",
                    "-addext", "subjectAltName=IP:127.0.0.1", "-days", "1",
                    "-keyout", dir + "/key.pem", "-out", dir + "/cert.pem",
                ]
                gen.standardOutput = FileHandle.nullDevice
                gen.standardError = FileHandle.nullDevice
                try gen.run()
                gen.waitUntilExit()
                port = try Self.freePort()
                process.executableURL = URL(fileURLWithPath: "/usr/bin/openssl")
                process.arguments = [
                    "s_server", "-accept", "127.0.0.1:\(port)", "-cert", dir + "/cert.pem",
                    "-key", dir + "/key.pem", "-www",
                ]
                let out = Pipe()
                process.standardOutput = out
                process.standardError = out
                process.standardInput = Pipe()
                try process.run()
                // Wait (without sleeping) for the line that says it listens.
                var seen = ""
                while !seen.contains("ACCEPT") {
                    let chunk = out.fileHandleForReading.availableData
                    if chunk.isEmpty { break }
                    seen += String(decoding: chunk, as: UTF8.self)
                }
            }

            static func freePort() throws -> Int {
                let probe = try LoopbackHTTPServer { _ in .close }
                defer { probe.stop() }
                return probe.port
            }

            func stop() {
                kill(process.processIdentifier, SIGKILL)
                var status: Int32 = 0
                waitpid(process.processIdentifier, &status, 0)
                try? FileManager.default.removeItem(atPath: dir)
            }
        }

        @Test(.enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/openssl")))
        func selfSignedHTTPSServerIsRefused() async throws {
            let server = try SelfSignedServer()
            defer { server.stop() }
            let transport = CurlTransport()
            defer { transport.shutdown() }
            do {
                _ = try await transport.send(HTTPRequest(url: "https://127.0.0.1:\(server.port)/", timeoutMs: 5000))
                Issue.record("a self-signed certificate was accepted")
            } catch let error as HTTPError {
                #expect(error.code == .tls)
            }
            // The stock sink reports it as transient and never as accepted.
            let sink = HTTPSink<JSONValue>(
                url: "https://127.0.0.1:\(server.port)/v1/onboarding-runs", timeoutMs: 5000, transport: transport)
            #expect(await sink.send(["seq": 1]).outcome == .transient)
        }
    #endif

    @Test func noConfigurationTurnsVerificationOff() {
        // Every option the transport has; none of them concerns certificate verification.
        let names = Mirror(reflecting: CurlTransport.Options()).children.compactMap(\.label).map { $0.lowercased() }
        #expect(!names.isEmpty)
        for name in names {
            #expect(
                !name.contains("verif") && !name.contains("insecure") && !name.contains("cert") && !name.contains("ssl")
                    && !name.contains("tls"), "option \(name)")
        }
    }

    @Test func redirectNeverCarriesHeadersToAnotherHost() async throws {
        let other = try LoopbackHTTPServer { _ in .respond(status: 200, body: "{\"outcome\":\"accepted\"}") }
        defer { other.stop() }
        let first = try LoopbackHTTPServer { _ in
            .respond(status: 307, headers: [HTTPHeader("Location", other.baseURL + "/steal")], body: "")
        }
        defer { first.stop() }
        let sink = HTTPSink<JSONValue>(url: first.baseURL + "/v1", headers: .fixed([HTTPHeader("authorization", "Bearer secret-token")]))
        #expect(await sink.send(["seq": 1]).outcome == .transient)
        #expect(first.requestCount == 1)
        #expect(other.requestCount == 0)
    }
}
