import Foundation
import Testing
import TrackerCore
import TrackerCoreTestKit

// `Process` exists on macOS and Linux only (Apple: macOS 10.0+, Mac Catalyst; not iOS, tvOS or
// visionOS, where the Apple CI runs these tests on the simulators): so does the Python reference.
#if os(macOS) || os(Linux)
    /// Runs `python3` once to get `json.dumps(obj, separators=(",", ":"), ensure_ascii=False)` of each
    /// file, the independent reference for the compact re-encoding of every example.
    enum PythonCompact {
        static let script = """
            import json, sys
            out = sys.stdout.buffer
            for p in sys.argv[1:]:
                with open(p, encoding="utf-8") as f:
                    obj = json.load(f)
                out.write(json.dumps(obj, separators=(",", ":"), ensure_ascii=False).encode("utf-8"))
                out.write(b"\\0")
            """

        /// The compact Python encoding of each file, in order.
        static func compact(_ paths: [String]) throws -> [[UInt8]] {
            let process = Process()
            process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
            process.arguments = [ProcessInfo.processInfo.environment["PYTHON"] ?? "python3", "-c", script] + paths
            let pipe = Pipe()
            process.standardOutput = pipe
            try process.run()
            let data = pipe.fileHandleForReading.readDataToEndOfFile()
            process.waitUntilExit()
            guard process.terminationStatus == 0 else {
                throw PythonError(message: "python3 exited with \(process.terminationStatus)")
            }
            let parts = [UInt8](data).split(separator: 0, omittingEmptySubsequences: false).dropLast().map { [UInt8]($0) }
            guard parts.count == paths.count else { throw PythonError(message: "expected \(paths.count) outputs, got \(parts.count)") }
            return parts
        }

        struct PythonError: Error, CustomStringConvertible {
            let message: String
            var description: String { message }
        }
    }
#endif

@Suite struct ExampleRoundTripTests {
    #if os(macOS) || os(Linux)
        @Test func everyValidExampleReencodesLikePython() throws {
            let paths = ContractExamples.allValid
            #expect(paths.count >= 28)
            let expected = try PythonCompact.compact(paths)
            for (path, want) in zip(paths, expected) {
                let value = try WireJSON.decode(try ContractExamples.bytes(path))
                let got = WireJSON.encode(value)
                #expect(got == want, "\(path)")
                for schema in Self.schemas(of: path) { PayloadCapture.record(got, schema: schema) }
            }
        }
    #endif

    /// The schemas an example validates against: a v1 paywall snapshot is also a v1.1 one.
    static func schemas(of path: String) -> [CapturedSchema] {
        if path.contains("/examples/onboarding-run/") { return [.onboardingRunV1] }
        if path.contains("/examples/paywall-presentation-v1_1/") { return [.paywallPresentationV1_1] }
        return [.paywallPresentationV1, .paywallPresentationV1_1]
    }

    /// Contract §17: the wire sizes of the onboarding examples.
    @Test func onboardingExampleWireSizes() throws {
        let sizes: [String: Int] = [
            "studio-1-mid-flow.json": 1378, "studio-2-completed.json": 2166, "in-flow-variant.json": 590,
            "truncated.json": 58043,
            "funnel-derived-skip-r1.json": 1066, "funnel-derived-skip-r2.json": 1356, "funnel-derived-skip-r3.json": 911,
            "funnel-derived-skip-r4.json": 909, "funnel-derived-skip-r5.json": 623, "funnel-derived-skip-r6.json": 623,
            "funnel-alternative-screens-r1.json": 1095, "funnel-alternative-screens-r2.json": 1101,
            "funnel-alternative-screens-r3.json": 944, "funnel-alternative-screens-r4.json": 1095,
            "funnel-alternative-screens-r5.json": 820,
            "funnel-merge-back-r1.json": 1239, "funnel-merge-back-r2.json": 964, "funnel-merge-back-r3.json": 1121,
            "funnel-merge-back-r4.json": 964, "funnel-merge-back-r5.json": 1121,
        ]
        let paths = ContractExamples.valid(.onboardingRun)
        #expect(paths.count == sizes.count)
        for path in paths {
            let name = URL(fileURLWithPath: path).lastPathComponent
            let bytes = WireJSON.encode(try WireJSON.decode(try ContractExamples.bytes(path)))
            #expect(bytes.count == sizes[name], "\(name)")
        }
    }
}
