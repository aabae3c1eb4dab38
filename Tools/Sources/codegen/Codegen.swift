import Foundation

/// One run of the generators over a repository, shared by `main.swift` and the tests.
enum Codegen {
    /// The repository root for `directory`: itself when it holds `Packages/`, else its parent (so
    /// that codegen runs from `Tools/` or from the root).
    static func repositoryRoot(from directory: URL) -> URL {
        if FileManager.default.fileExists(atPath: directory.appendingPathComponent("Packages").path) {
            return directory
        }
        return directory.deletingLastPathComponent()
    }

    /// Runs `generators` against `root` and returns the paths whose checked-in contents differ from
    /// a fresh generation. Without `check` it also writes each of them (creating folders), calling
    /// `wrote` with the generator's name and the path; with `check` it writes nothing.
    static func run(
        _ generators: [any Generator], root: URL, check: Bool, wrote: (String, String) -> Void = { _, _ in }
    ) throws -> [String] {
        var differing: [String] = []
        for g in generators {
            for file in try g.generate(repoRoot: root) {
                let url = root.appendingPathComponent(file.path)
                let current = try? String(contentsOf: url, encoding: .utf8)
                if current == file.contents { continue }
                differing.append(file.path)
                if !check {
                    try FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
                    try file.contents.write(to: url, atomically: true, encoding: .utf8)
                    wrote(g.name, file.path)
                }
            }
        }
        return differing
    }
}
