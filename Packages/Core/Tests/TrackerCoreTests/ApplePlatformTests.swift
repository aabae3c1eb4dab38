import Foundation
import Testing
import TrackerCoreTestKit

@testable import TrackerCore

// Issue 17 (every package builds into an iOS/macOS/tvOS/visionOS app): the platform-independent
// decisions behind the Apple builds, driven on Linux.
//
// New scenarios:
//   AP1  plain http to a non-loopback host is refused before any I/O (insecure-http)
//   AP2  plain http to a loopback address goes through
//   AP3  what counts as loopback (and what does not)
//   AP4  the host is taken after the user info and before the port
//   AP5  a host app opts in for named hosts only
//   AP6  an HTTPSink posting to a refused http URL gets a transient outcome (nothing lost)
//   AP7  https is never affected by the plain-http policy
//   AP8  a libcurl older than required fails every request with libcurl-unsupported, no thread
//   AP9  the Apple requirements name each missing feature (HTTP/2, AppleSecTrust, https)
//   AP10 the libcurl linked here meets this platform's requirements
//   AP11 a transport with CA certificates of its own (the trust fallback) still sends
//   AP12 AtomicCell adds from several threads without losing one, and wraps
//   AP13 Core's privacy manifest declares exactly the categories its sources use
//   AP14 the audit flags a used but undeclared category, and a package with no manifest
//   AP15 the audit flags a declared but unused category, and unknown reason codes
//   AP16 comments and string literals do not count as uses
//   AP17 every manifest has the deployment floors; the Linux branch names no binary target
//        and no checksum is committed (a released Core pins its https URL and checksum)
//   (AP18-AP21: the privacy manifest test of each other package)
//   AP22 the standard storage location per platform (Application Support, Caches on tvOS,
//        backup exclusion, complete-until-first-user-authentication on iOS and visionOS)
//   AP23 an SDK folder name cannot escape its base directory
//   AP24 a read refused because protected data is unavailable is told apart from other failures
//   AP25 durableSync flushes a file and reports a bad descriptor
//   AP30 (issue 27) the audit of collected data types: an undeclared or stale entry, an unknown
//        type or purpose, tracking without NSPrivacyTracking, missing evidence, no manifest
//   AP26 (issue 27) a default store's folder per platform: Caches on tvOS, Application Support on
//        iOS, visionOS and macOS (under Rocalytics/), the package's own folder on Linux
//   AP31 (issue 38) a non-sandboxed Mac app's folder is under its bundle id (the user's Application
//        Support is shared by every app); a sandboxed one's and iOS's are unchanged
@Suite struct ApplePlatformTests {
    @Test func AP1_plainHTTPToAnotherHostIsRefusedBeforeIO() async {
        let transport = CurlTransport()
        defer { transport.shutdown() }
        // TEST-NET-1: a connect attempt would hang until the timeout; the refusal is immediate.
        let error = await httpError { try await transport.send(HTTPRequest(url: "http://192.0.2.1/v1/events", timeoutMs: 60_000)) }
        #expect(error?.code == .insecureHTTP)
        #expect(error?.message.contains("https") == true)
        let named = await httpError { try await transport.send(HTTPRequest(url: "HTTP://collector.example.com/x")) }
        #expect(named?.code == .insecureHTTP)
    }

    @Test func AP2_plainHTTPToLoopbackGoesThrough() async throws {
        let server = try LoopbackHTTPServer { _ in .respond(status: 200, body: "ok") }
        defer { server.stop() }
        let transport = CurlTransport()
        defer { transport.shutdown() }
        let response = try await transport.send(HTTPRequest(url: server.baseURL + "/x"))
        #expect(response.status == 200)
    }

    @Test func AP3_loopbackAddresses() {
        for host in ["127.0.0.1", "127.255.3.4", "localhost", "LocalHost", "[::1]", "::1", "[0:0:0:0:0:0:0:1]", "[::ffff:127.0.0.1]"] {
            #expect(PlainHTTPPolicy.isLoopback(host), "\(host)")
        }
        for host in [
            "127.1", "2130706433", "128.0.0.1", "10.0.0.1", "localhost.example.com", "127.0.0.1.nip.io",
            "example.com", "[::2]", "[::ffff:10.0.0.1]", "", "localhost.",
        ] {
            #expect(!PlainHTTPPolicy.isLoopback(host), "\(host)")
        }
    }

    @Test func AP4_hostIsTakenAfterUserInfoAndBeforeThePort() throws {
        #expect(PlainHTTPPolicy.host(ofURL: "http://127.0.0.1:8080/p?q#f") == "127.0.0.1")
        #expect(PlainHTTPPolicy.host(ofURL: "http://user:pw@127.0.0.1:1/") == "127.0.0.1")
        #expect(PlainHTTPPolicy.host(ofURL: "http://[::1]:80/x") == "[::1]")
        #expect(PlainHTTPPolicy.host(ofURL: "http://localhost") == "localhost")
        // A loopback address in the user info does not make the request local.
        #expect(PlainHTTPPolicy.host(ofURL: "http://127.0.0.1@evil.example/") == "evil.example")
        #expect(throws: HTTPError.self) { try CurlTransport.checkPlainHTTP("http://127.0.0.1@evil.example/", .loopbackOnly) }
        #expect(throws: HTTPError.self) { try CurlTransport.checkPlainHTTP("http://127.0.0.1:80@evil.example:80/", .loopbackOnly) }
        try CurlTransport.checkPlainHTTP("http://evil.example@127.0.0.1/", .loopbackOnly)
    }

    @Test func AP5_hostsOptInByName() throws {
        let policy = PlainHTTPPolicy.loopbackAnd(hosts: ["staging.lan", "[FD00::5]"])
        #expect(policy.allows(host: "staging.lan"))
        #expect(policy.allows(host: "STAGING.LAN"))
        #expect(policy.allows(host: "[fd00::5]"))
        #expect(policy.allows(host: "127.0.0.1"))
        #expect(!policy.allows(host: "other.lan"))
        #expect(!policy.allows(host: "staging.lan.evil.example"))
        #expect(!PlainHTTPPolicy.loopbackOnly.allows(host: "staging.lan"))
        try CurlTransport.checkPlainHTTP("http://staging.lan:8080/v1", policy)
        #expect(CurlTransport.Options().plainHTTP == .loopbackOnly, "the default refuses")
    }

    @Test func AP6_aSinkPostingToARefusedURLStaysTransient() async {
        let sink = HTTPSink<JSONValue>(url: "http://collector.example.com/v1/runs")
        let result = await sink.send(["n": 1])
        #expect(result.outcome == .transient)
        #expect(result.reason == "transport: insecure-http")
    }

    @Test func AP7_httpsIsNotAffected() throws {
        try CurlTransport.checkPlainHTTP("https://collector.example.com/v1", .loopbackOnly)
        try CurlTransport.checkPlainHTTP("HTTPS://collector.example.com/v1", .loopbackOnly)
    }

    static func info(
        version: UInt32 = 0x08_16_00, ssl: Bool = true, http2: Bool = true,
        protocols: [String] = ["http", "https"], features: [String] = ["SSL", "HTTP2", "AppleSecTrust"]
    ) -> LibcurlInfo {
        LibcurlInfo(
            versionNumber: version, version: LibcurlRequirements.text(version), sslVersion: ssl ? "OpenSSL/3.5.9" : nil,
            hasSSL: ssl, hasHTTP2: http2, protocols: protocols, featureNames: features)
    }

    @Test func AP8_anOldLibcurlFailsEveryRequestClearly() async throws {
        let server = try LoopbackHTTPServer { _ in .respond(status: 200, body: "ok") }
        defer { server.stop() }
        let transport = CurlTransport(options: .init(), libcurl: Self.info(version: 0x07_50_00), requirements: .linux)
        #expect(transport.libcurlProblem?.code == .libcurlUnsupported)
        #expect(transport.libcurlProblem?.message == "libcurl 7.80.0 is older than 7.85.0")
        let error = await httpError { try await transport.send(HTTPRequest(url: server.baseURL + "/x")) }
        #expect(error == transport.libcurlProblem)
        #expect(server.requests.isEmpty, "nothing was sent")
    }

    @Test func AP9_appleRequirementsNameEachMissingFeature() {
        #expect(LibcurlRequirements.apple.check(Self.info()) == nil)
        let problems = LibcurlRequirements.apple.problems(
            Self.info(version: 0x08_11_00, http2: false, protocols: ["http"], features: ["SSL"]))
        #expect(
            problems == [
                "libcurl 8.17.0 is older than 8.22.0",
                "libcurl was built without HTTP/2 (nghttp2)",
                "libcurl does not speak https",
                "libcurl lacks the AppleSecTrust feature",
            ])
        #expect(LibcurlRequirements.linux.problems(Self.info(ssl: false, http2: false, features: [])) == ["libcurl was built without TLS"])
    }

    @Test func AP10_theLinkedLibcurlMeetsThisPlatformsRequirements() {
        let linked = LibcurlInfo.linked
        #expect(linked.hasSSL)
        #expect(linked.protocols.contains("https"))
        #expect(LibcurlRequirements.current.problems(linked) == [])
        #expect(CurlTransport.shared.libcurlProblem == nil)
    }

    @Test func AP11_ownTrustAnchorsStillSend() async throws {
        let server = try LoopbackHTTPServer { _ in .respond(status: 200, body: "ok") }
        defer { server.stop() }
        let pem = Array("-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n".utf8)
        let transport = CurlTransport(options: .init(trustAnchorsPEM: pem))
        defer { transport.shutdown() }
        let response = try await transport.send(HTTPRequest(url: server.baseURL + "/x"))
        #expect(response.status == 200)
    }

    @Test func AP12_atomicCellAddsAndWraps() async {
        let cell = AtomicCell(UInt64.max)
        #expect(cell.wrappingAddRelaxed(2) == 1)
        cell.store(0)
        await withTaskGroup(of: Void.self) { group in
            for _ in 0..<8 { group.addTask { for _ in 0..<10_000 { cell.wrappingAddRelaxed(1) } } }
        }
        #expect(cell.load() == 80_000)
    }

    @Test func AP13_coresPrivacyManifestMatchesItsSources() throws {
        let root = PackagePaths.packageRoot(#filePath)
        // TrackerCore sends nothing of its own: what travels is what the trackers and the
        // Rocalytics client hand it, declared in their manifests (issue 27, item 6).
        #expect(PrivacyManifestAudit.problems(packageRoot: root, collects: []) == [])
        let data = try #require(FileManager.default.contents(atPath: root + "/Sources/TrackerCore/PrivacyInfo.xcprivacy"))
        #expect(
            PrivacyManifestAudit.declaredCategories(manifest: data) == [
                "NSPrivacyAccessedAPICategoryFileTimestamp": ["C617.1"],
                "NSPrivacyAccessedAPICategorySystemBootTime": ["35F9.1"],
            ])
    }

    @Test func AP14_anUndeclaredUseIsFlagged() {
        let used = PrivacyManifestAudit.categoriesUsed(inSource: "let d = UserDefaults.standard\nvar st = stat()\n")
        #expect(used == [.userDefaults: ["UserDefaults"], .fileTimestamp: ["stat"]])
        let problems = PrivacyManifestAudit.compare(
            used: used, declared: ["NSPrivacyAccessedAPICategoryFileTimestamp": ["C617.1"]], hasManifest: true, packageManifest: nil)
        #expect(problems == ["NSPrivacyAccessedAPICategoryUserDefaults is used (UserDefaults) but not declared"])
        let none = PrivacyManifestAudit.compare(used: used, declared: [:], hasManifest: false, packageManifest: nil)
        #expect(none.first == "sources use required-reason APIs but the package has no PrivacyInfo.xcprivacy")
    }

    @Test func AP15_aDeclarationWithoutUseOrWithAWrongReasonIsFlagged() {
        let problems = PrivacyManifestAudit.compare(
            used: [.fileTimestamp: ["fstat"]],
            declared: ["NSPrivacyAccessedAPICategoryFileTimestamp": ["35F9.1"], "NSPrivacyAccessedAPICategoryDiskSpace": ["E174.1"]],
            hasManifest: true, packageManifest: "resources: [.copy(\"PrivacyInfo.xcprivacy\")] exclude = [\"PrivacyInfo.xcprivacy\"]")
        #expect(
            problems == [
                "NSPrivacyAccessedAPICategoryDiskSpace is declared but no source uses it",
                "35F9.1 is not a reason Apple accepts for NSPrivacyAccessedAPICategoryFileTimestamp",
            ])
        let undeclaredResource = PrivacyManifestAudit.compare(used: [:], declared: [:], hasManifest: true, packageManifest: "targets: []")
        #expect(undeclaredResource.count == 1)
    }

    @Test func AP16_commentsAndStringsAreNotUses() {
        let source = """
            // fstat(fd, &st) would read the size
            /* UserDefaults.standard */
            let label = "systemUptime"
            let fstatLike = 1
            """
        #expect(PrivacyManifestAudit.categoriesUsed(inSource: source).isEmpty)
        #expect(
            PrivacyManifestAudit.categoriesUsed(inSource: "clock_gettime(CLOCK_MONOTONIC, &ts)") == [.systemBootTime: ["CLOCK_MONOTONIC"]])
    }

    @Test func AP17_manifestsDeclareTheFloorsAndLinuxNamesNoBinaryTarget() throws {
        let repo = PackagePaths.repositoryRoot(#filePath)
        var checked = 0
        for name in ["Core", "Onboarding", "Paywall", "RocalyticsClient", "Score"] {
            // A released package stands alone: only the packages present are checked.
            guard let text = try? String(contentsOfFile: "\(repo)/Packages/\(name)/Package.swift", encoding: .utf8) else { continue }
            checked += 1
            #expect(text.contains("platforms: [.iOS(.v15), .macOS(.v12), .tvOS(.v15), .visionOS(.v1)]"), "\(name)")
            #expect(!text.contains(".watchOS("), "\(name): watchOS is not supported")
            // The monorepo names no checksum; a release pins one, with its https URL, in the
            // released Core only (Tools/release/release.sh; test-release.sh checks it).
            if text.contains("checksum:") {
                #expect(name == "Core", "\(name): only Core has a binary target")
                #expect(text.contains("url: \"https://"), "\(name): a pinned checksum comes with its https URL")
            }
        }
        #expect(checked >= 1)
        let core = try String(contentsOfFile: PackagePaths.packageRoot(#filePath) + "/Package.swift", encoding: .utf8)
        let linux = try #require(core.range(of: "#if os(Linux)")).upperBound
        let other = try #require(core.range(of: "#else", range: linux..<core.endIndex))
        let linuxBranch = core[linux..<other.lowerBound]
        #expect(linuxBranch.contains(".systemLibrary("))
        #expect(!linuxBranch.contains("binaryTarget"))
        if !core.contains("checksum:") {
            #expect(!core.contains("url: \"http"), "no URL binary target until a release pins it")
            #expect(core.contains("path: \"Artifacts/CTrackerLibcurl.xcframework\""), "the monorepo builds its own XCFramework")
        }
        let platform = try String(
            contentsOfFile: PackagePaths.packageRoot(#filePath) + "/Sources/TrackerCore/Platform.swift", encoding: .utf8)
        // Whitespace aside (the formatter indents the directive's body).
        #expect(platform.filter { !$0.isWhitespace }.contains("#ifos(watchOS)#error("))
    }

    @Test func AP22_standardStorageLocations() {
        #expect(
            StorageLocation.standard(for: .iOS)
                == StorageLocation(base: .applicationSupport, excludedFromBackup: true, protection: .completeUntilFirstUserAuthentication))
        #expect(StorageLocation.standard(for: .visionOS) == StorageLocation.standard(for: .iOS))
        #expect(
            StorageLocation.standard(for: .macOS) == StorageLocation(base: .applicationSupport, excludedFromBackup: true, protection: nil))
        #expect(StorageLocation.standard(for: .tvOS).base == .caches)
        #expect(StorageLocation.standard(for: .linux) == StorageLocation(base: .hostProvided, excludedFromBackup: false, protection: nil))
        #expect(StorageLocation.Platform.current == .linux)
    }

    @Test func AP23_folderNamesCannotEscape() {
        #expect(
            StorageLocation.folder("score", under: "/var/app/Library/Application Support/")
                == "/var/app/Library/Application Support/Rocalytics/score")
        #expect(StorageLocation.folder("../../etc", under: "/b") == "/b/Rocalytics/....etc")
        #expect(StorageLocation.folder("..", under: "/b") == "/b/Rocalytics/default")
        #expect(StorageLocation.folder("a/b", under: "/b") == "/b/Rocalytics/ab")
    }

    @Test func AP24_lockedReadsAreToldApart() {
        for platform in [StorageLocation.Platform.iOS, .tvOS, .visionOS, .macOS] {
            #expect(StorageLocation.readFailure(errno: 1, platform: platform) == .protectedDataUnavailable)
            #expect(StorageLocation.readFailure(errno: 13, platform: platform) == .protectedDataUnavailable)
            #expect(StorageLocation.readFailure(errno: 5, platform: platform) == .other)
        }
        #expect(StorageLocation.readFailure(errno: 1, platform: .linux) == .other)
    }

    @Test func AP30_collectedDataTypesAreAudited() throws {
        let analytics: Set<String> = ["NSPrivacyCollectedDataTypePurposeAnalytics"]
        let user = CollectedData(type: "NSPrivacyCollectedDataTypeUserID", linked: true, purposes: analytics, evidence: "\"userId\"")
        let device = CollectedData(type: "NSPrivacyCollectedDataTypeDeviceID", linked: true, purposes: analytics)
        let sources = "w.write(\"userId\")"
        #expect(PrivacyManifestAudit.compareCollected(expected: [user], declared: [user], tracking: false, sources: sources) == [])
        #expect(
            PrivacyManifestAudit.compareCollected(expected: [user, device], declared: [user], tracking: false, sources: sources) == [
                "\(device) is collected but not declared"
            ])
        #expect(
            PrivacyManifestAudit.compareCollected(expected: [user], declared: [user, device], tracking: false, sources: sources) == [
                "\(device) is declared but the package does not collect it so"
            ])
        var unlinked = user
        unlinked.linked = false
        #expect(
            PrivacyManifestAudit.compareCollected(expected: [user], declared: [unlinked], tracking: false, sources: sources) == [
                "\(unlinked) is declared but the package does not collect it so", "\(user) is collected but not declared",
            ])
        #expect(
            PrivacyManifestAudit.compareCollected(expected: [user], declared: [user], tracking: false, sources: "") == [
                "NSPrivacyCollectedDataTypeUserID: the sources no longer contain \"\\\"userId\\\"\"; is it still collected?"
            ])
        let odd = CollectedData(
            type: "NSPrivacyCollectedDataTypeUserId", linked: true, tracking: true, purposes: ["NSPrivacyCollectedDataTypePurposeFun"])
        let problems = PrivacyManifestAudit.compareCollected(expected: [odd], declared: [odd], tracking: false, sources: "")
        #expect(problems.contains("NSPrivacyCollectedDataTypeUserId is not a collected data type"))
        #expect(problems.contains("NSPrivacyCollectedDataTypePurposeFun is not a collection purpose"))
        #expect(problems.contains("NSPrivacyCollectedDataTypeUserId is used for tracking but NSPrivacyTracking is not true"))
        #expect(
            PrivacyManifestAudit.compareCollected(expected: [user], declared: nil, tracking: nil, sources: sources) == [
                "the package collects data but has no PrivacyInfo.xcprivacy"
            ])
        #expect(PrivacyManifestAudit.compareCollected(expected: [], declared: nil, tracking: nil, sources: "") == [])
        // Read from a manifest: the four keys of each entry, or nothing.
        let plist = """
            <?xml version="1.0" encoding="UTF-8"?>
            <plist version="1.0"><dict><key>NSPrivacyTracking</key><false/><key>NSPrivacyCollectedDataTypes</key><array>
            <dict><key>NSPrivacyCollectedDataType</key><string>NSPrivacyCollectedDataTypeUserID</string>
            <key>NSPrivacyCollectedDataTypeLinked</key><true/><key>NSPrivacyCollectedDataTypeTracking</key><false/>
            <key>NSPrivacyCollectedDataTypePurposes</key><array><string>NSPrivacyCollectedDataTypePurposeAnalytics</string></array></dict>
            </array></dict></plist>
            """
        let read = try #require(PrivacyManifestAudit.declaredCollection(manifest: Data(plist.utf8)))
        #expect(read.tracking == false)
        #expect(read.entries.count == 1)
        #expect(read.entries.first.map { $0.type == user.type && $0.linked && !$0.tracking && $0.purposes == analytics } == true)
        let missingKey = plist.replacingOccurrences(of: "<key>NSPrivacyCollectedDataTypeLinked</key><true/>", with: "")
        #expect(PrivacyManifestAudit.declaredCollection(manifest: Data(missingKey.utf8)) == nil)
    }

    @Test func AP26_defaultStoreFoldersPerPlatform() {
        let system = StorageLocation.SystemDirectories(
            applicationSupport: "/app/Library/Application Support", caches: "/app/Library/Caches")
        func folder(_ p: StorageLocation.Platform, _ s: StorageLocation.SystemDirectories? = system) -> String {
            StorageLocation.defaultFolder("score-site", platform: p, system: s, hostFolder: "/home/u/.local/share/score-tracker/site")
        }
        #expect(folder(.tvOS) == "/app/Library/Caches/Rocalytics/score-site")
        for p in [StorageLocation.Platform.iOS, .visionOS, .macOS] {
            #expect(folder(p) == "/app/Library/Application Support/Rocalytics/score-site")
        }
        #expect(folder(.linux) == "/home/u/.local/share/score-tracker/site")
        #expect(folder(.iOS, nil) == "/home/u/.local/share/score-tracker/site")
        #expect(StorageLocation.standard(for: .tvOS).basePath(system: system, hostProvided: "/h") == "/app/Library/Caches")
        #expect(StorageLocation.standard(for: .linux).basePath(system: system, hostProvided: "/h") == "/h")
    }

    @Test func AP25_durableSyncFlushesAndReportsBadDescriptors() throws {
        let dir = NSTemporaryDirectory() + "ap25-\(UUID().uuidString)"
        try FileIO.ensureDirectory(dir)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let fd = open(dir + "/f", O_WRONLY | O_CREAT, 0o600)
        #expect(fd >= 0)
        #expect(durableSync(fd) == 0)
        close(fd)
        #expect(durableSync(-1) == -1)
    }

    @Test func AP31_aMacAppOutsideTheSandboxKeepsItsFilesUnderItsBundleId() {
        // Non-sandboxed: ~/Library/Application Support is every app's; two apps must not share a folder.
        let shared = "/Users/u/Library/Application Support"
        func folder(_ id: String?, base: String = shared, platform: StorageLocation.Platform = .macOS) -> String {
            let system = StorageLocation.SystemDirectories(applicationSupport: base, caches: "/Users/u/Library/Caches", appIdentifier: id)
            return StorageLocation.defaultFolder("score-site", platform: platform, system: system, hostFolder: "/h")
        }
        #expect(folder("com.example.a") == "\(shared)/com.example.a/Rocalytics/score-site")
        #expect(folder("com.example.a") != folder("com.example.b"))
        #expect(folder("") == "\(shared)/unidentified/Rocalytics/score-site")
        #expect(folder(nil) == "\(shared)/Rocalytics/score-site")  // built by hand: no identifier to use
        #expect(folder("../..") == "\(shared)/unidentified/Rocalytics/score-site")
        #expect(folder("a/../b") == "\(shared)/a..b/Rocalytics/score-site")
        // Sandboxed: the container is the app's own, the path stays as it was.
        let container = "/Users/u/Library/Containers/com.example.a/Data/Library/Application Support"
        #expect(folder("com.example.a", base: container) == "\(container)/Rocalytics/score-site")
        // iOS, visionOS: the app's own directories.
        let app = "/app/Library/Application Support"
        #expect(folder("com.example.a", base: app, platform: .iOS) == "\(app)/Rocalytics/score-site")
        #expect(folder("com.example.a", base: app, platform: .visionOS) == "\(app)/Rocalytics/score-site")
        #expect(StorageLocation.appFolder(basePath: shared + "/", platform: .macOS, appIdentifier: "x") == shared + "/x")
    }
}
