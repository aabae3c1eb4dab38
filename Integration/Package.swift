// swift-tools-version:6.0
import PackageDescription

// The integrations an app wires, compiled and run end to end (issue 13 item 2): every package by
// path, tests only. `Examples` holds the README's snippets that join two packages (the client's
// examples are the RocalyticsClient package's own files, linked here so that the parts that need
// the trackers are compiled: `ClientExample.swift` step 4 everywhere, `AppleSetupExample.swift`
// step 2 in an Apple build, as it needs UIKit); `make test-all` runs `IntegrationTests`.
let package = Package(
    name: "Integration",
    // The same floors as the packages it joins (watchOS is not supported).
    platforms: [.iOS(.v15), .macOS(.v12), .tvOS(.v15), .visionOS(.v1)],
    dependencies: [
        .package(name: "Core", path: "../Packages/Core"),
        .package(name: "Onboarding", path: "../Packages/Onboarding"),
        .package(name: "Paywall", path: "../Packages/Paywall"),
        .package(name: "RocalyticsClient", path: "../Packages/RocalyticsClient"),
        .package(name: "Score", path: "../Packages/Score"),
        .package(name: "Rocalytics", path: "../Packages/Rocalytics"),
    ],
    targets: [
        // The README's integration snippets. Compiled for (and run by) the test target only.
        .target(
            name: "IntegrationExamples",
            dependencies: [
                .product(name: "TrackerCore", package: "Core"),
                .product(name: "OnboardingTracker", package: "Onboarding"),
                .product(name: "PaywallTracker", package: "Paywall"),
                .product(name: "RocalyticsClient", package: "RocalyticsClient"),
                .product(name: "ScoreTracker", package: "Score"),
                .product(name: "RocalyticsKit", package: "Rocalytics"),
            ],
            path: "Examples"
        ),
        .testTarget(
            name: "IntegrationTests",
            dependencies: [
                "IntegrationExamples",
                .product(name: "TrackerCore", package: "Core"),
                .product(name: "TrackerCoreTestKit", package: "Core"),
                .product(name: "OnboardingTracker", package: "Onboarding"),
                .product(name: "PaywallTracker", package: "Paywall"),
                .product(name: "RocalyticsClient", package: "RocalyticsClient"),
                .product(name: "RocalyticsClientTestSupport", package: "RocalyticsClient"),
                .product(name: "ScoreTracker", package: "Score"),
                .product(name: "RocalyticsKit", package: "Rocalytics"),
            ]
        ),
    ],
    swiftLanguageModes: [.v6]
)
