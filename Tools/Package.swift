// swift-tools-version:6.0
import PackageDescription

let package = Package(
    name: "Tools",
    products: [
        .executable(name: "codegen", targets: ["codegen"]),
        .executable(name: "bench", targets: ["bench"]),
        .executable(name: "score-rss", targets: ["score-rss"]),
        .executable(name: "collector", targets: ["collector"]),
        .executable(name: "demo", targets: ["demo"]),
    ],
    dependencies: [
        .package(name: "Core", path: "../Packages/Core"),
        .package(name: "Onboarding", path: "../Packages/Onboarding"),
        .package(name: "Paywall", path: "../Packages/Paywall"),
        .package(name: "RocalyticsClient", path: "../Packages/RocalyticsClient"),
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
                .product(name: "OnboardingTracker", package: "Onboarding"),
                .product(name: "PaywallTracker", package: "Paywall"),
                .product(name: "ScoreTracker", package: "Score"),
            ]
        ),
        .executableTarget(
            name: "score-rss",
            dependencies: [
                "CBenchCurl",
                .product(name: "TrackerCore", package: "Core"),
                .product(name: "ScoreTracker", package: "Score"),
            ]
        ),
        // Debian's libsqlite3-dev, linked through a prefixed module name.
        .systemLibrary(name: "CCollectorSQLite", path: "Sources/CCollectorSQLite"),
        .target(
            name: "CollectorKit",
            dependencies: ["CCollectorSQLite", .product(name: "TrackerCore", package: "Core")]
        ),
        .executableTarget(name: "collector", dependencies: ["CollectorKit"]),
        .executableTarget(
            name: "demo",
            dependencies: [
                .product(name: "TrackerCore", package: "Core"),
                .product(name: "OnboardingTracker", package: "Onboarding"),
                .product(name: "PaywallTracker", package: "Paywall"),
                .product(name: "RocalyticsClient", package: "RocalyticsClient"),
                .product(name: "ScoreTracker", package: "Score"),
            ]
        ),
        .testTarget(
            name: "CollectorTests",
            dependencies: [
                "CollectorKit",
                .product(name: "TrackerCore", package: "Core"),
                .product(name: "TrackerCoreTestKit", package: "Core"),
            ]
        ),
    ],
    swiftLanguageModes: [.v6]
)
