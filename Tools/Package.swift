// swift-tools-version:6.0
import PackageDescription

let package = Package(
    name: "Tools",
    // Host tools and suites, never linked into an app: on a Mac they need macOS 15 (Mutex, Atomic).
    platforms: [.macOS(.v15)],
    products: [
        .executable(name: "codegen", targets: ["codegen"]),
        .executable(name: "bench", targets: ["bench"]),
        .executable(name: "score-rss", targets: ["score-rss"]),
        .executable(name: "collector", targets: ["collector"]),
        .executable(name: "demo", targets: ["demo"]),
        .executable(name: "sample-app", targets: ["sample-app"]),
    ],
    dependencies: [
        .package(name: "Core", path: "../Packages/Core"),
        .package(name: "Onboarding", path: "../Packages/Onboarding"),
        .package(name: "Paywall", path: "../Packages/Paywall"),
        .package(name: "RocalyticsClient", path: "../Packages/RocalyticsClient"),
        .package(name: "Score", path: "../Packages/Score"),
    ],
    targets: [
        // Depends on nothing it generates (Core's contract types, Score's taxonomy): it reads the
        // schemas with its own JSON parser, so it builds and runs even when a generated file is broken.
        .executableTarget(name: "codegen"),
        .target(name: "CBenchCurl", linkerSettings: [.linkedLibrary("curl")]),
        // The benches' own arithmetic (no SDK dependency), tested by BenchSupportTests.
        .target(name: "BenchSupport"),
        .executableTarget(
            name: "bench",
            dependencies: [
                "BenchSupport",
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
        // An app integrating the four surfaces, run as a real process by the demo and its test.
        .executableTarget(
            name: "sample-app",
            dependencies: [
                .product(name: "TrackerCore", package: "Core"),
                .product(name: "OnboardingTracker", package: "Onboarding"),
                .product(name: "PaywallTracker", package: "Paywall"),
                .product(name: "RocalyticsClient", package: "RocalyticsClient"),
                .product(name: "ScoreTracker", package: "Score"),
            ]
        ),
        // Starts the collector and the sample app as child processes; reads the collector's API
        // (CollectorKit for the status answer's reading, the one `collector status` prints).
        .executableTarget(name: "demo", dependencies: ["CollectorKit", .product(name: "TrackerCore", package: "Core")]),
        // The generators' tests: no Core dependency either (they run with a broken generated file).
        .testTarget(name: "CodegenTests", dependencies: ["codegen"]),
        .testTarget(name: "BenchSupportTests", dependencies: ["BenchSupport"]),
        .testTarget(
            name: "DemoTests",
            dependencies: [
                "CollectorKit",
                .product(name: "TrackerCore", package: "Core"),
                .product(name: "TrackerCoreTestKit", package: "Core"),
            ],
            // DM5's plain ingest, run by python3 from its source path.
            exclude: ["Fixtures"]
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
