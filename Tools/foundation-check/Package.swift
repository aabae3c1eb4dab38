// swift-tools-version:6.0
import PackageDescription

// Four small programs, each linking one tracker package only (Core; Onboarding, Paywall or Score
// with Core), built by `Tools/scripts/check-no-foundation.sh` (run by `make test-all`), which fails
// when a Linux binary links any Foundation library (issue 36 item 5). Never linked into an app.
let package = Package(
    name: "FoundationCheck",
    platforms: [.macOS(.v15)],
    dependencies: [
        .package(name: "Core", path: "../../Packages/Core"),
        .package(name: "Onboarding", path: "../../Packages/Onboarding"),
        .package(name: "Paywall", path: "../../Packages/Paywall"),
        .package(name: "Score", path: "../../Packages/Score"),
    ],
    targets: [
        .executableTarget(name: "core-only", dependencies: [.product(name: "TrackerCore", package: "Core")]),
        .executableTarget(
            name: "onboarding-only", dependencies: [.product(name: "OnboardingTracker", package: "Onboarding")]),
        .executableTarget(name: "paywall-only", dependencies: [.product(name: "PaywallTracker", package: "Paywall")]),
        .executableTarget(name: "score-only", dependencies: [.product(name: "ScoreTracker", package: "Score")]),
    ],
    swiftLanguageModes: [.v6]
)
