import Foundation
import Testing
import TrackerCoreTestKit

// The README's snippets that join two packages are excerpts of files this package compiles.
//
// New scenario:
// - INT6: every `<!-- example: PATH -->` excerpt of the README that uses the API of two SDK
//   packages names a file compiled by this package (in `Integration/Examples`, or linked there),
//   and the README shows the seed's one-liners for the Rocalytics sinks from such a file. (A part
//   behind `#if canImport(UIKit)`, as in `AppleSetupExample.swift`, compiles only in an Apple
//   build of this package.)

/// Words that only code using a package's API contains.
let packageMarkers: [String: [String]] = [
    "OnboardingTracker": ["OnboardingRun.", "OnboardingRunConfiguration", "OnboardingRunTracker"],
    "PaywallTracker": ["PaywallTrackerConfiguration", "PaywallPresentationTracker", "PaywallObserver", "PaywallPresentationHandle"],
    "RocalyticsClient": ["RocalyticsClient", "createRocalytics", "rocalytics."],
    "ScoreTracker": ["ScoreClient", "score."],
]

struct ReadmeExcerpt {
    let path: String
    let code: String
}

func readmeExcerpts(_ root: String) throws -> [ReadmeExcerpt] {
    let readme = try String(contentsOfFile: root + "/README.md", encoding: .utf8)
    var out: [ReadmeExcerpt] = []
    let lines = readme.components(separatedBy: "\n")
    var i = 0
    while i < lines.count {
        let line = lines[i].trimmingCharacters(in: .whitespaces)
        if line.hasPrefix("<!-- example:"), line.hasSuffix("-->"), i + 1 < lines.count, lines[i + 1].hasPrefix("```") {
            let path = line.dropFirst("<!-- example:".count).dropLast("-->".count).trimmingCharacters(in: .whitespaces)
            var code: [String] = []
            var j = i + 2
            while j < lines.count, !lines[j].hasPrefix("```") {
                code.append(lines[j])
                j += 1
            }
            out.append(ReadmeExcerpt(path: path, code: code.joined(separator: "\n")))
            i = j
        }
        i += 1
    }
    return out
}

/// The repository paths of the files `Integration/Examples` compiles (links resolved).
func integrationCompiledFiles(_ root: String) throws -> Set<String> {
    let dir = root + "/Integration/Examples"
    var out: Set<String> = []
    for name in try FileManager.default.contentsOfDirectory(atPath: dir) where name.hasSuffix(".swift") {
        let resolved = URL(fileURLWithPath: dir + "/" + name).resolvingSymlinksInPath().path
        let base = URL(fileURLWithPath: root).resolvingSymlinksInPath().path + "/"
        out.insert(resolved.hasPrefix(base) ? String(resolved.dropFirst(base.count)) : resolved)
    }
    return out
}

@Suite struct ReadmeExamplesTests {
    @Test func INT6_readmeSnippetsJoiningTwoPackagesAreCompiledHere() throws {
        let root = URL(fileURLWithPath: PackagePaths.packageRoot(#filePath)).deletingLastPathComponent().path
        let excerpts = try readmeExcerpts(root)
        let compiled = try integrationCompiledFiles(root)
        #expect(compiled.contains("Packages/RocalyticsClient/Examples/ClientExample.swift"))
        #expect(!excerpts.isEmpty)
        var joining: [ReadmeExcerpt] = []
        for e in excerpts {
            let packages = packageMarkers.filter { _, words in words.contains { e.code.contains($0) } }.keys
            if packages.count >= 2 {
                joining.append(e)
                #expect(
                    compiled.contains(e.path),
                    "the README excerpt from \(e.path) joins \(packages.sorted()) but Integration does not compile it")
            }
        }
        // The seed's one-liners are shown, from files compiled here.
        for oneLiner in ["sink: createRocalyticsOnboardingSink(rocalytics)", "sink: createRocalyticsPaywallSink(rocalytics)"] {
            #expect(joining.contains { $0.code.contains(oneLiner) }, "the README shows \(oneLiner) from a compiled file")
        }
    }
}
