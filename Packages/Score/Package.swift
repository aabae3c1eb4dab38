// swift-tools-version:6.0
import PackageDescription

let package = Package(
    name: "Score",
    products: [
        .library(name: "ScoreTracker", targets: ["ScoreTracker"]),
    ],
    dependencies: [
        .package(name: "Core", path: "../Core"),
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
