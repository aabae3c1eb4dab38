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

    /// Concurrent records land in distinct files (only observable when capture is on).
    @Test func concurrentRecordsGetDistinctFiles() async {
        guard PayloadCapture.directory != nil else { return }
        let paths = await withTaskGroup(of: String?.self) { group in
            for _ in 0..<32 {
                group.addTask { PayloadCapture.record(Array("{}".utf8), schema: CapturedSchema(name: "capture-selftest")) }
            }
            var all: [String] = []
            for await p in group { if let p { all.append(p) } }
            return all
        }
        #expect(Set(paths).count == 32)
        // Not a real payload: remove it so that validation does not look for a schema.
        for p in paths { try? FileManager.default.removeItem(atPath: p) }
        if let dir = PayloadCapture.directory { try? FileManager.default.removeItem(atPath: dir + "/capture-selftest") }
    }
}
