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
    name: "RocalyticsClient",
    // The same floors as Core (watchOS is not supported).
    platforms: [.iOS(.v15), .macOS(.v12), .tvOS(.v15), .visionOS(.v1)],
    products: [
        .library(name: "RocalyticsClient", targets: ["RocalyticsClient"]),
        // Stand-ins for tests and previews: in-memory secure store, fixture platform, recording transport.
        .library(name: "RocalyticsClientTestSupport", targets: ["RocalyticsClientTestSupport"]),
    ],
    dependencies: [
        .package(name: "Core", path: "../Core")
    ],
    targets: [
        .target(
            name: "RocalyticsClient",
            dependencies: [.product(name: "TrackerCore", package: "Core")],
            exclude: privacyExclude,
            resources: privacyResources
        ),
        .target(
            name: "RocalyticsClientTestSupport",
            dependencies: [
                "RocalyticsClient", .product(name: "TrackerCore", package: "Core"),
                .product(name: "TrackerCoreTestKit", package: "Core"),
            ]
        ),
        // The README's examples, in Swift. Compiled for (and run by) the test target only.
        .target(
            name: "RocalyticsClientExamples",
            dependencies: ["RocalyticsClient", .product(name: "TrackerCore", package: "Core")],
            path: "Examples"
        ),
        .testTarget(
            name: "RocalyticsClientTests",
            dependencies: [
                "RocalyticsClient",
                "RocalyticsClientTestSupport",
                "RocalyticsClientExamples",
                .product(name: "TrackerCore", package: "Core"),
                .product(name: "TrackerCoreTestKit", package: "Core"),
            ],
            exclude: ["Fixtures"]
        ),
    ],
    swiftLanguageModes: [.v6]
)
