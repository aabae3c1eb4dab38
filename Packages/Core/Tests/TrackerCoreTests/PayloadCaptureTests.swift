import Foundation
import Testing
import TrackerCoreTestKit

@Suite struct PayloadCaptureTests {
    @Test func schemaFoldersNameTheirSchemaFiles() {
        for schema in [CapturedSchema.onboardingRunV1, .paywallPresentationV1, .paywallPresentationV1_1] {
            let file = ContractExamples.contractsDirectory + "/\(schema.name).schema.json"
            #expect(FileManager.default.fileExists(atPath: file), "\(file)")
        }
    }

    /// Concurrent records land in distinct files. Runs under a plain `swift test` too (it used to
    /// return early unless `TRACKER_CAPTURE_DIR` was set): it captures into its own folder.
    @Test func concurrentRecordsGetDistinctFiles() async throws {
        let dir = NSTemporaryDirectory() + "capture-selftest-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let paths = await withTaskGroup(of: String?.self) { group in
            for i in 0..<32 {
                group.addTask {
                    PayloadCapture.record(Array("{\"n\":\(i)}".utf8), schema: CapturedSchema(name: "capture-selftest"), in: dir)
                }
            }
            var all: [String] = []
            for await p in group { if let p { all.append(p) } }
            return all
        }
        #expect(paths.count == 32)
        #expect(Set(paths).count == 32)
        let files = try FileManager.default.contentsOfDirectory(atPath: dir + "/capture-selftest")
        #expect(files.count == 32 && files.allSatisfy { $0.hasSuffix(".json") })
        let bodies = Set(paths.compactMap { try? String(contentsOfFile: $0, encoding: .utf8) })
        #expect(bodies == Set((0..<32).map { "{\"n\":\($0)}" }))
    }

    @Test func captureFollowsTheEnvironment() {
        // Off unless the variable is set; when set (make test), record() writes under it.
        let env = ProcessInfo.processInfo.environment[PayloadCapture.environmentVariable]
        #expect(PayloadCapture.directory == ((env?.isEmpty ?? true) ? nil : env))
    }
}
