import Foundation

// Binary size (issue 19): how much a stripped release build of a minimal executable grows when
// it links each package, on Linux.
//
// `size.linux.stripped` writes a scratch SwiftPM package (default `Tools/.build/size-probe`,
// `SIZE_BENCH_DIR` overrides) with one executable per package: a baseline that links nothing,
// and one per package that constructs its main type and makes one recording call (so dead
// stripping keeps what an app really uses). It builds them with `swift build -c release`
// (incremental: a second run reuses the build), strips a copy of each (`strip --strip-all`) and
// reports the growth over the baseline in bytes, and for the packages above Core the growth over
// the Core probe. The Swift runtime, Foundation and libcurl are shared libraries on Linux and
// not counted. Opt-in (it builds every package): `bench --filter size`.
// The iOS figure needs a Mac: see the README's Benchmarks section.

func sizeBenchCases() -> [BenchCase] {
    [BenchCase(name: "size.linux.stripped", run: runSizeProbe)]
}

private struct SizeBenchFailure: Error, CustomStringConvertible {
    var description: String
}

/// One probe: its executable name, the package and product it links, and its `main.swift`.
private struct Probe {
    let name: String
    let package: String?
    let product: String?
    let source: String
}

private let probes: [Probe] = [
    Probe(
        name: "baseline", package: nil, product: nil,
        source: """
            print("probe", CommandLine.arguments.count)
            """),
    Probe(
        name: "core", package: "Core", product: "TrackerCore",
        source: """
            import TrackerCore
            let sink = HTTPSink<JSONValue>(url: "https://collector.example.com/v1/x")
            if CommandLine.arguments.count > 9 { Task { _ = await sink.send(.string("x")) } }
            print("probe", WireJSON.encodeString(.string(CommandLine.arguments[0])))
            """),
    Probe(
        name: "onboarding", package: "Onboarding", product: "OnboardingTracker",
        source: """
            import OnboardingTracker
            import TrackerCore
            OnboardingRun.configure(OnboardingRunConfiguration(
                sink: HTTPSink<OnboardingRunSnapshot>(url: "https://collector.example.com/v1/onboarding-runs"),
                context: .value(RunContextInput(appVersion: "1.0", build: nil, platform: .ios, osVersion: nil,
                                                locale: "en-US", timezone: "UTC"))))
            let run = OnboardingRun.start(StartOptions(manifest: [ManifestStepInput(stepKey: "welcome")]))
            run.enterStep("welcome")
            print("probe", run.runId)
            """),
    Probe(
        name: "paywall", package: "Paywall", product: "PaywallTracker",
        source: """
            import PaywallTracker
            import TrackerCore
            let tracker = PaywallPresentationTracker(
                sink: HTTPSink<PaywallSnapshot>(url: "https://collector.example.com/v1/paywall-presentations"),
                context: .value(RunContextInput(appVersion: "1.0", build: nil, platform: .ios, osVersion: nil,
                                               locale: "en-US", timezone: "UTC")))
            print("probe", tracker.start(json: .null) == nil)
            """),
    Probe(
        name: "rocalytics_client", package: "RocalyticsClient", product: "RocalyticsClient",
        source: """
            import RocalyticsClient
            let client = RocalyticsClient(configuration: .init())
            if CommandLine.arguments.count > 9 { Task { await client.ready() } }
            print("probe", client.isInert)
            """),
    Probe(
        name: "score", package: "Score", product: "ScoreTracker",
        source: """
            import ScoreTracker
            let client = ScoreClient(configuration: ScoreConfiguration(publishableKey: "pk_probe", siteId: "probe", endpoint: "https://score.example.com"))
            client.track("probe_event", properties: ["n": CommandLine.arguments.count])
            print("probe", client.inspect().queue.depth)
            """),
]

/// The repository's root: the first directory above the working directory (or the executable)
/// holding `Packages/Core/Package.swift`.
private func repositoryRoot() -> String? {
    let fm = FileManager.default
    for start in [fm.currentDirectoryPath, URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().path] {
        var url = URL(fileURLWithPath: start).standardizedFileURL
        while url.path != "/" {
            if fm.fileExists(atPath: url.appendingPathComponent("Packages/Core/Package.swift").path) { return url.path }
            url.deleteLastPathComponent()
        }
    }
    return nil
}

/// Runs `tool` with `args`; throws with its output when it fails.
private func run(_ tool: String, _ args: [String]) throws {
    let p = Process()
    p.executableURL = URL(fileURLWithPath: "/usr/bin/env")
    p.arguments = [tool] + args
    let out = Pipe()
    p.standardOutput = out
    p.standardError = out
    try p.run()
    let data = out.fileHandleForReading.readDataToEndOfFile()
    p.waitUntilExit()
    guard p.terminationStatus == 0 else {
        throw SizeBenchFailure(description: "\(tool) \(args.joined(separator: " ")) failed:\n" + String(decoding: data, as: UTF8.self))
    }
}

/// Writes `text` to `path` unless it already holds exactly that (keeps the build incremental).
private func writeIfChanged(_ path: String, _ text: String) throws {
    if (try? String(contentsOfFile: path, encoding: .utf8)) == text { return }
    try FileManager.default.createDirectory(atPath: (path as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
    try text.write(toFile: path, atomically: true, encoding: .utf8)
}

private func runSizeProbe() throws -> [String: Double] {
    #if os(Linux)
        guard let root = repositoryRoot() else { throw SizeBenchFailure(description: "run bench from the repository") }
        let dir = ProcessInfo.processInfo.environment["SIZE_BENCH_DIR"] ?? root + "/Tools/.build/size-probe"
        let packages = Array(Set(probes.compactMap(\.package))).sorted()
        var manifest = "// swift-tools-version:6.0\n// Written by `bench --filter size` (Tools/Sources/bench/SizeBench.swift).\n"
        manifest += "import PackageDescription\n\nlet package = Package(\n    name: \"SizeProbe\",\n    dependencies: [\n"
        for p in packages { manifest += "        .package(name: \"\(p)\", path: \"\(root)/Packages/\(p)\"),\n" }
        manifest += "    ],\n    targets: [\n"
        for probe in probes {
            let deps = probe.package.map { "[.product(name: \"\(probe.product!)\", package: \"\($0)\")]" } ?? "[]"
            manifest += "        .executableTarget(name: \"probe-\(probe.name)\", dependencies: \(deps)),\n"
            try writeIfChanged("\(dir)/Sources/probe-\(probe.name)/main.swift", probe.source + "\n")
        }
        manifest += "    ]\n)\n"
        try writeIfChanged("\(dir)/Package.swift", manifest)
        try run("swift", ["build", "-c", "release", "--package-path", dir])

        var stripped: [String: Double] = [:]
        let fm = FileManager.default
        for probe in probes {
            let binary = "\(dir)/.build/release/probe-\(probe.name)"
            let copy = NSTemporaryDirectory() + "probe-\(probe.name)-\(UUID().uuidString)"
            try? fm.removeItem(atPath: copy)
            try fm.copyItem(atPath: binary, toPath: copy)
            defer { try? fm.removeItem(atPath: copy) }
            try run("strip", ["--strip-all", copy])
            stripped[probe.name] = Double((try fm.attributesOfItem(atPath: copy)[.size] as? Int) ?? 0)
        }
        let base = stripped["baseline"] ?? 0
        var figures: [String: Double] = ["baseline_stripped_bytes": base]
        for probe in probes where probe.package != nil {
            let size = stripped[probe.name] ?? 0
            figures["\(probe.name).growth_bytes"] = size - base
            if probe.name != "core" { figures["\(probe.name).growth_over_core_bytes"] = size - (stripped["core"] ?? 0) }
        }
        return figures
    #else
        throw SizeBenchFailure(description: "size.linux.stripped measures Linux executables (ELF, strip --strip-all)")
    #endif
}
