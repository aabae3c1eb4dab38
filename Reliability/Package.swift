// swift-tools-version:6.0
import PackageDescription

// The reliability and security suite (issue 8): crash durability through a child process killed
// with SIGKILL, hostile input, concurrency and secret-leak checks across every tracker.
let package = Package(
    name: "Reliability",
    // Host tools and suites, never linked into an app: on a Mac they need macOS 15 (Mutex, Atomic).
    platforms: [.macOS(.v15)],
    dependencies: [
        .package(name: "Core", path: "../Packages/Core"),
        .package(name: "Onboarding", path: "../Packages/Onboarding"),
        .package(name: "Paywall", path: "../Packages/Paywall"),
        .package(name: "Score", path: "../Packages/Score"),
        .package(name: "RocalyticsClient", path: "../Packages/RocalyticsClient"),
    ],
    targets: [
        // The child process the crash harness kills: records into file storage, sends to a
        // loopback server, prints a progress line after each persist point.
        .executableTarget(
            name: "crashworker",
            dependencies: [
                .product(name: "TrackerCore", package: "Core"),
                // Its seeded generator (SplitMix64), the same as the tests'.
                .product(name: "TrackerCoreTestKit", package: "Core"),
                .product(name: "OnboardingTracker", package: "Onboarding"),
                .product(name: "PaywallTracker", package: "Paywall"),
                .product(name: "ScoreTracker", package: "Score"),
                // The client's recorded purchase (issue 37): its fixture platform stands in for the Keychain.
                .product(name: "RocalyticsClient", package: "RocalyticsClient"),
                .product(name: "RocalyticsClientTestSupport", package: "RocalyticsClient"),
            ]
        ),
        .testTarget(
            name: "ReliabilityTests",
            dependencies: [
                "crashworker",
                .product(name: "TrackerCore", package: "Core"),
                .product(name: "TrackerCoreTestKit", package: "Core"),
                .product(name: "OnboardingTracker", package: "Onboarding"),
                .product(name: "PaywallTracker", package: "Paywall"),
                .product(name: "ScoreTracker", package: "Score"),
            ]
        ),
    ],
    swiftLanguageModes: [.v6]
)
