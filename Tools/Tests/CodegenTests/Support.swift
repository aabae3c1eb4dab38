import Foundation

/// Paths and scratch folders for the generator tests (no TrackerCoreTestKit: these tests must run
/// when Core's generated files are broken).
enum Repo {
    /// The repository root: this file is `Tools/Tests/CodegenTests/Support.swift`.
    static let root: URL = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    /// A fresh folder under the temporary directory holding copies of `paths` (relative to the
    /// repository root, files or folders), removed by the caller.
    static func scratchCopy(of paths: [String]) throws -> URL {
        let dir = URL(fileURLWithPath: NSTemporaryDirectory()).appendingPathComponent("codegen-\(UUID().uuidString)")
        for p in paths {
            let to = dir.appendingPathComponent(p)
            try FileManager.default.createDirectory(at: to.deletingLastPathComponent(), withIntermediateDirectories: true)
            try FileManager.default.copyItem(at: root.appendingPathComponent(p), to: to)
        }
        return dir
    }

    static func text(_ url: URL) throws -> String { try String(contentsOf: url, encoding: .utf8) }
}
