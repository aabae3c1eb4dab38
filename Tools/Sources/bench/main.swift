import Foundation

// `bench [--out FILE] [--filter SUBSTRING]`: runs the benchmark cases (build with -c release),
// prints a table and writes every figure as JSON.
var outPath = "out/bench.json"
var filter: String?
var args = CommandLine.arguments.dropFirst()
while let a = args.popFirst() {
    switch a {
    case "--out": outPath = args.popFirst() ?? outPath
    case "--filter": filter = args.popFirst()
    default:
        FileHandle.standardError.write(Data("unknown argument \(a)\n".utf8))
        exit(2)
    }
}

var cases: [BenchCase] = []
cases += wireBenchCases()
cases += httpBenchCases()
cases += onboardingBenchCases()
cases += paywallBenchCases()
cases += scoreBenchCases()
// Opt-in cases (they idle for real, or build packages): run only when `--filter` names them.
let optInCases = idleBenchCases() + sizeBenchCases()
if let filter { cases += optInCases.filter { $0.name.contains(filter) } }

var results: [String: [String: Double]] = [:]
for c in cases where filter.map({ c.name.contains($0) }) ?? true {
    do {
        let figures = try c.run()
        results[c.name] = figures
        print(c.name)
        for (k, v) in figures.sorted(by: { $0.key < $1.key }) {
            print("  \(k.padding(toLength: 36, withPad: " ", startingAt: 0)) \(String(format: "%.3f", v))")
        }
    } catch {
        print("\(c.name): failed: \(error)")
        exit(1)
    }
}
let json = try JSONSerialization.data(withJSONObject: results, options: [.prettyPrinted, .sortedKeys])
let url = URL(fileURLWithPath: outPath)
try? FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
try json.write(to: url)
print("results written to \(outPath)")
