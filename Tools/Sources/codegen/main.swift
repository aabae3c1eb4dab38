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
    default:
        FileHandle.standardError.write(Data("usage: codegen [--check] [--root DIR]\n".utf8))
        exit(2)
    }
}
root = Codegen.repositoryRoot(from: root)

let drift = try Codegen.run(allGenerators(), root: root, check: check) { name, path in print("\(name): wrote \(path)") }
if check {
    if drift.isEmpty {
        print("codegen: generated files are up to date")
    } else {
        for p in drift {
            FileHandle.standardError.write(Data("codegen: \(p) differs from a fresh generation (run `make generate`)\n".utf8))
        }
        exit(1)
    }
}
