// swift-tools-version:6.0
import PackageDescription

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
            exclude: []
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
