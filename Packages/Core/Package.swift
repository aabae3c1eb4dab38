// swift-tools-version:6.0
import PackageDescription

let package = Package(
    name: "Core",
    products: [
        .library(name: "TrackerCore", targets: ["TrackerCore"]),
        .library(name: "TrackerCoreTestKit", targets: ["TrackerCoreTestKit"]),
    ],
    targets: [
        // libcurl (Debian: libcurl4-openssl-dev). Module names are global: keep the prefix.
        .systemLibrary(
            name: "CTrackerLibcurl",
            pkgConfig: "libcurl",
            providers: [.apt(["libcurl4-openssl-dev"])]
        ),
        // Typed, non-variadic wrappers over curl_easy_setopt / getinfo / curl_multi_setopt.
        .target(name: "CTrackerCurlShim", dependencies: ["CTrackerLibcurl"]),
        .target(name: "TrackerCore", dependencies: ["CTrackerCurlShim"]),
        .target(name: "TrackerCoreTestKit", dependencies: ["TrackerCore"]),
        .testTarget(name: "TrackerCoreTests", dependencies: ["TrackerCore", "TrackerCoreTestKit"]),
    ],
    swiftLanguageModes: [.v6]
)
