import Foundation

/// One file a generator writes, relative to the repository root.
struct GeneratedFile {
    let path: String
    let contents: String
}

/// A code generator: reads its sources under the repository root and returns the files it writes.
protocol Generator {
    /// Short name for messages.
    var name: String { get }
    /// The files this generator produces, fully rendered.
    func generate(repoRoot: URL) throws -> [GeneratedFile]
}
