import Foundation

/// Locates files of a package from a test file's `#filePath`.
public enum PackagePaths {
    /// The package root: the directory above `Tests/` (or `Sources/`) in `filePath`.
    public static func packageRoot(_ filePath: String) -> String {
        var url = URL(fileURLWithPath: filePath)
        while url.pathComponents.count > 1 {
            url.deleteLastPathComponent()
            let name = url.lastPathComponent
            if name == "Tests" || name == "Sources" { return url.deletingLastPathComponent().path }
        }
        return URL(fileURLWithPath: filePath).deletingLastPathComponent().path
    }

    /// The repository root (the directory holding `Packages/`).
    public static func repositoryRoot(_ filePath: String) -> String {
        URL(fileURLWithPath: packageRoot(filePath)).deletingLastPathComponent().deletingLastPathComponent().path
    }
}

/// Reads Keep-a-Changelog files.
public enum ChangelogCheck {
    /// The first released version heading (`## [x.y.z]`), skipping `## [Unreleased]`.
    public static func topRelease(of changelog: String) -> String? {
        for line in changelog.split(separator: "\n") where line.hasPrefix("## [") {
            guard let close = line.firstIndex(of: "]") else { continue }
            let version = line[line.index(line.startIndex, offsetBy: 4)..<close]
            if version != "Unreleased" { return String(version) }
        }
        return nil
    }
}
