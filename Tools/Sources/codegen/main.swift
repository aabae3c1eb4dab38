import Foundation

// `codegen [--check] [--root DIR]`: regenerates every generated file of the repository, or with
// `--check` exits 1 when a checked-in file differs from a fresh generation.
var check = false
var root = URL(fileURLWithPath: FileManager.default.currentDirectoryPath)
var args = CommandLine.arguments.dropFirst()
while let a = args.popFirst() {
    switch a {
    case "--check": check = true
    case "--root": root = URL(fileURLWithPath: args.popFirst() ?? ".")
    default: FileHandle.standardError.write(Data("usage: codegen [--check] [--root DIR]\n".utf8)); exit(2)
    }
}
// Run from Tools/ or from the repository root.
if !FileManager.default.fileExists(atPath: root.appendingPathComponent("Packages").path) {
    root = root.deletingLastPathComponent()
}

let generators: [any Generator] = allGenerators()
var drift: [String] = []
for g in generators {
    for file in try g.generate(repoRoot: root) {
        let url = root.appendingPathComponent(file.path)
        let current = try? String(contentsOf: url, encoding: .utf8)
        if current == file.contents { continue }
        if check {
            drift.append(file.path)
        } else {
            try FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
            try file.contents.write(to: url, atomically: true, encoding: .utf8)
            print("\(g.name): wrote \(file.path)")
        }
    }
}
if check {
    if drift.isEmpty {
        print("codegen: generated files are up to date")
    } else {
        for p in drift { FileHandle.standardError.write(Data("codegen: \(p) differs from a fresh generation (run `make generate`)\n".utf8)) }
        exit(1)
    }
}
