// swift-tools-version:6.0
import PackageDescription

let package = Package(
    name: "Core",
    products: [
        .library(name: "TrackerCore", targets: ["TrackerCore"]),
        .library(name: "TrackerCoreTestKit", targets: ["TrackerCoreTestKit"]),
    ],
    targets: [
        .target(name: "TrackerCore"),
        .target(name: "TrackerCoreTestKit", dependencies: ["TrackerCore"]),
        .testTarget(name: "TrackerCoreTests", dependencies: ["TrackerCore", "TrackerCoreTestKit"]),
    ],
    swiftLanguageModes: [.v6]
)
