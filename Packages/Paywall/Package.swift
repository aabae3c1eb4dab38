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
    name: "Paywall",
    // The same floors as Core (watchOS is not supported).
    platforms: [.iOS(.v15), .macOS(.v12), .tvOS(.v15), .visionOS(.v1)],
    products: [
        // The tracker (re-exports the observer API below).
        .library(name: "PaywallTracker", targets: ["PaywallTracker"]),
        // The host-facing observer protocol and its value types, with no dependency, for paywall
        // host SDKs that want to call an observer without linking the tracker.
        .library(name: "PaywallObserverAPI", targets: ["PaywallObserverAPI"]),
    ],
    dependencies: [
        .package(name: "Core", path: "../Core")
    ],
    targets: [
        .target(name: "PaywallObserverAPI"),
        .target(
            name: "PaywallTracker",
            dependencies: ["PaywallObserverAPI", .product(name: "TrackerCore", package: "Core")],
            exclude: privacyExclude,
            resources: privacyResources
        ),
        .testTarget(
            name: "PaywallTrackerTests",
            dependencies: ["PaywallTracker", .product(name: "TrackerCoreTestKit", package: "Core")]
        ),
        // The examples are compiled and run by this test target.
        .testTarget(
            name: "PaywallExamples",
            dependencies: ["PaywallTracker", .product(name: "TrackerCoreTestKit", package: "Core")],
            path: "Examples"
        ),
    ],
    swiftLanguageModes: [.v6]
)
