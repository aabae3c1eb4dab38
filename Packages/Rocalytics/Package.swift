// swift-tools-version:6.0
import PackageDescription

// The umbrella (issue 37 item 1): one import and one call for an app that uses the Rocalytics
// client, the onboarding tracker and the paywall tracker together. It is the one package that
// depends on more than Core; an app that needs only one surface depends on that package alone, so
// Onboarding and Paywall still never link the client.
let package = Package(
    name: "Rocalytics",
    // The same floors as the packages it joins (watchOS is not supported).
    platforms: [.iOS(.v15), .macOS(.v12), .tvOS(.v15), .visionOS(.v1)],
    products: [
        .library(name: "RocalyticsKit", targets: ["RocalyticsKit"])
    ],
    dependencies: [
        .package(name: "Core", path: "../Core"),
        .package(name: "Onboarding", path: "../Onboarding"),
        .package(name: "Paywall", path: "../Paywall"),
        .package(name: "RocalyticsClient", path: "../RocalyticsClient"),
    ],
    targets: [
        .target(
            name: "RocalyticsKit",
            dependencies: [
                .product(name: "TrackerCore", package: "Core"),
                .product(name: "OnboardingTracker", package: "Onboarding"),
                .product(name: "PaywallTracker", package: "Paywall"),
                .product(name: "RocalyticsClient", package: "RocalyticsClient"),
            ]
        ),
        .testTarget(
            name: "RocalyticsKitTests",
            dependencies: [
                "RocalyticsKit",
                .product(name: "TrackerCoreTestKit", package: "Core"),
                .product(name: "RocalyticsClientTestSupport", package: "RocalyticsClient"),
            ]
        ),
    ],
    swiftLanguageModes: [.v6]
)
