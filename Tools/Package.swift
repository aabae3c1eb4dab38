// swift-tools-version:6.0
import PackageDescription

let package = Package(
    name: "Tools",
    products: [
        .executable(name: "codegen", targets: ["codegen"]),
        .executable(name: "bench", targets: ["bench"]),
    ],
    dependencies: [
        .package(name: "Core", path: "../Packages/Core"),
        .package(name: "Score", path: "../Packages/Score"),
    ],
    targets: [
        .executableTarget(name: "codegen", dependencies: [.product(name: "TrackerCore", package: "Core")]),
        .target(name: "CBenchCurl", linkerSettings: [.linkedLibrary("curl")]),
        .executableTarget(
            name: "bench",
            dependencies: [
                "CBenchCurl",
                .product(name: "TrackerCore", package: "Core"),
                .product(name: "TrackerCoreTestKit", package: "Core"),
                .product(name: "ScoreTracker", package: "Score"),
            ]
        ),
    ],
    swiftLanguageModes: [.v6]
)
