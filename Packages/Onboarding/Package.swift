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
    name: "Onboarding",
    // The same floors as Core (watchOS is not supported).
    platforms: [.iOS(.v15), .macOS(.v12), .tvOS(.v15), .visionOS(.v1)],
    products: [
        .library(name: "OnboardingTracker", targets: ["OnboardingTracker"])
    ],
    dependencies: [
        .package(name: "Core", path: "../Core")
    ],
    targets: [
        .target(
            name: "OnboardingTracker",
            dependencies: [.product(name: "TrackerCore", package: "Core")],
            exclude: privacyExclude,
            resources: privacyResources
        ),
        // The README's hand-coded onboarding, compiled as a module and run by the tests (S158, S159).
        .target(name: "OnboardingExamples", dependencies: ["OnboardingTracker"], path: "Examples"),
        .testTarget(
            name: "OnboardingTrackerTests",
            dependencies: [
                "OnboardingTracker", "OnboardingExamples",
                .product(name: "TrackerCore", package: "Core"),
                .product(name: "TrackerCoreTestKit", package: "Core"),
            ]
        ),
    ],
    swiftLanguageModes: [.v6]
)
