// swift-tools-version:6.0
import PackageDescription

// libcurl is chosen on the build host (a manifest is evaluated on the host, so `#if os(...)` here
// names the machine that builds, not the device the app runs on):
// - Linux: Debian's system library (libcurl4-openssl-dev), unchanged.
// - Apple hosts (Xcode, `swift build` on a Mac): our own static `CTrackerLibcurl.xcframework`
//   (curl with OpenSSL 3, Apple SecTrust verification and nghttp2, HTTP and HTTPS only), built
//   locally with `make curl-apple` into `Artifacts/` until a release pins it by URL and checksum.
//   A URL binary target is downloaded at resolution even behind `.when(platforms:)`, so the Linux
//   branch never names one.
#if os(Linux)
    let libcurl: Target = .systemLibrary(
        name: "CTrackerLibcurl",
        pkgConfig: "libcurl",
        providers: [.apt(["libcurl4-openssl-dev"])]
    )
    // On Linux a resource makes SwiftPM add a Foundation-importing `Bundle.module` accessor: the
    // privacy manifest is only declared on Apple hosts, and left out of the target here.
    let privacyResources: [Resource]? = nil
    let privacyExclude = ["PrivacyInfo.xcprivacy"]
    // pkg-config's `libcurl` names what the system library links.
    let libcurlLinks: [LinkerSetting] = []
#else
    let libcurl: Target = .binaryTarget(
        name: "CTrackerLibcurl",
        path: "Artifacts/CTrackerLibcurl.xcframework"
    )
    let privacyResources: [Resource]? = [.copy("PrivacyInfo.xcprivacy")]
    let privacyExclude: [String] = []
    // What the static libcurl (with OpenSSL and nghttp2) needs from the OS. The XCFramework's module
    // map names these too (`link framework`), but that takes effect only where a Swift file imports
    // `CTrackerLibcurl`, and the shim includes <curl/curl.h> textually: declare them here, on the
    // target that calls curl. `make check-apple` checks this list against the module map and the
    // build's options (no `z`: build.sh configures curl --without-zlib, and OpenSSL without zlib).
    // `linkedFramework(_:_:)`: PackageDescription 5.0 (developer.apple.com/documentation/packagedescription).
    let libcurlLinks: [LinkerSetting] = [
        .linkedFramework("Security"),
        .linkedFramework("CoreFoundation"),
        .linkedFramework("SystemConfiguration"),
    ]
#endif

let package = Package(
    name: "Core",
    // watchOS is not supported (no BSD sockets for libcurl there): TrackerCore stops a watchOS
    // build with an #error.
    platforms: [.iOS(.v15), .macOS(.v12), .tvOS(.v15), .visionOS(.v1)],
    products: [
        .library(name: "TrackerCore", targets: ["TrackerCore"]),
        .library(name: "TrackerCoreTestKit", targets: ["TrackerCoreTestKit"]),
    ],
    targets: [
        // Module names are global: keep the prefix.
        libcurl,
        // Typed, non-variadic wrappers over curl_easy_setopt / getinfo / curl_multi_setopt.
        .target(name: "CTrackerCurlShim", dependencies: ["CTrackerLibcurl"], linkerSettings: libcurlLinks),
        .target(
            name: "TrackerCore",
            dependencies: ["CTrackerCurlShim"],
            exclude: privacyExclude,
            resources: privacyResources
        ),
        .target(name: "TrackerCoreTestKit", dependencies: ["TrackerCore"]),
        .testTarget(name: "TrackerCoreTests", dependencies: ["TrackerCore", "TrackerCoreTestKit"]),
    ],
    swiftLanguageModes: [.v6]
)
