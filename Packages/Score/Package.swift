// swift-tools-version:6.0
import PackageDescription

// The privacy manifest is declared on Apple hosts only: on Linux a resource makes SwiftPM add a
// Foundation-importing `Bundle.module` accessor, so the file is left out of the target there.
#if os(Linux)
    let privacyResources: [Resource]? = nil
    let privacyExclude = ["PrivacyInfo.xcprivacy"]
#else
    let privacyResources: [Resource]? = [.copy("PrivacyInfo.xcprivacy")]
    let privacyExclude: [String] = []
#endif

let package = Package(
    name: "Score",
    // The same floors as Core (watchOS is not supported).
    platforms: [.iOS(.v15), .macOS(.v12), .tvOS(.v15), .visionOS(.v1)],
    products: [
        .library(name: "ScoreTracker", targets: ["ScoreTracker"])
    ],
    dependencies: [
        .package(name: "Core", path: "../Core")
    ],
    targets: [
        .target(
            name: "ScoreTracker",
            dependencies: [.product(name: "TrackerCore", package: "Core")],
            exclude: privacyExclude,
            resources: privacyResources
        ),
        .testTarget(
            name: "ScoreTrackerTests",
            dependencies: [
                "ScoreTracker",
                .product(name: "TrackerCore", package: "Core"),
                .product(name: "TrackerCoreTestKit", package: "Core"),
            ]
        ),
    ],
    swiftLanguageModes: [.v6]
)
