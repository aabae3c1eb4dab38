import Foundation
import OnboardingTracker
import PaywallTracker
import ScoreTracker
import Testing
import TrackerCore
import TrackerCoreTestKit

#if canImport(Glibc)
    import Glibc
#endif

/// File-system faults under each tracker's real file storage (issue 14): a full disk (on write,
/// on sync), a read-only file system, I/O errors, and space returning; through the
/// fault-injecting layer (`FaultyFileSystem`) and, when the suite runs as root, on a real full
/// tmpfs. No recording call throws or crashes, each failure is reported as a `storage`
/// diagnostic, and what was stored before the fault survives a relaunch.
///
/// Scenarios: R30 Score under each fault then space returning, R31 onboarding under each fault,
/// R32 paywall under each fault, R33 Score on a real full tmpfs (root only), R34 Score's identity
/// write on a full disk.
@Suite struct FileFaultTrackerTests {
    static let faults: [(String, FaultyFileSystem.Condition)] = [
        ("ENOSPC on write", .diskFull), ("ENOSPC on write and sync", .diskFull(syncFails: true)),
        ("EROFS", .readOnly), ("EIO", .ioError),
    ]

    private func scoreClient(_ dir: String, _ diags: DiagnosticLog) -> (ScoreClient, ManualClock) {
        let clock = ManualClock()
        let client = ScoreClient(
            configuration: ScoreConfiguration(
                publishableKey: "pk_test_faults", siteId: "faults", endpoint: "https://score.example/", appVersion: "1.0", os: "Linux",
                initialConsent: .all, store: FileScoreStore(directory: dir), transport: RecordingTransport(statuses: { _ in 500 }),
                clock: clock, scheduler: clock, onDiagnostic: diags.handler))
        return (client, clock)
    }

    private func run(_ clock: ManualClock, ms: Int64, stepMs: Int64 = 50) async {
        for _ in 0..<Int(ms / stepMs) {
            await clock.settle()
            await clock.advance(byMs: stepMs)
        }
        await clock.settle()
    }

    /// Longer than the Score writer's longest retry of a failed write (30 s), so that a retry
    /// after the space returned has run.
    static let retryWindowMs: Int64 = 35_000

    @Test func R30_scoreUnderEachFaultThenSpaceReturning() async {
        for (name, condition) in Self.faults {
            let dir = TempDir("score-fault")
            defer { dir.remove() }
            let diags = DiagnosticLog()
            let (client, clock) = scoreClient(dir.path, diags)
            for i in 0..<5 { client.track("before", properties: ["n": i]) }
            await run(clock, ms: 200)
            let fs = FaultyFileSystem(directory: dir.path, condition: condition)
            for i in 0..<5 { client.track("during", properties: ["n": i]) }
            await run(clock, ms: 200)
            #expect(fs.totalFailures > 0, "\(name): the fault was never hit")
            #expect(diags.all.contains { $0.code == "storage" }, "\(name): no storage diagnostic")
            #expect(client.inspect().queue.depth == 10, "\(name): events recorded on a faulty disk stay queued in memory")
            fs.set(.healthy)
            for i in 0..<5 { client.track("after", properties: ["n": i]) }
            await run(clock, ms: Self.retryWindowMs, stepMs: 500)
            fs.uninstall()
            let (relaunched, c2) = scoreClient(dir.path, DiagnosticLog())
            await c2.settle()
            let depth = relaunched.inspect().queue.depth
            #expect(depth >= 10, "\(name): \(depth) events after a relaunch, the 5 before and 5 after the fault at least")
            // Issue 14 item 6: events recorded on a faulty disk are written once it recovers.
            #expect(depth == 15, "\(name): \(depth) of 15 events after a relaunch")
        }
    }

    @Test func R34_scoreIdentityWriteUnderAFullDisk() async {
        let dir = TempDir("score-identity-fault")
        defer { dir.remove() }
        let diags = DiagnosticLog()
        let (client, clock) = scoreClient(dir.path, diags)
        await run(clock, ms: 200)
        let fs = FaultyFileSystem(directory: dir.path, condition: .diskFull)
        client.identify(userId: "fan_9", traits: [:], replayAnonymousEvents: false)
        await run(clock, ms: 200)
        #expect(fs.failures(.write) > 0, "the identity write never reached the fault layer")
        #expect(diags.all.contains { $0.code == "storage" })
        #expect(client.inspect().identity.userId == "fan_9")  // kept in memory
        fs.uninstall()
        let (relaunched, c2) = scoreClient(dir.path, DiagnosticLog())
        await c2.settle()
        #expect(IDs.isLowercaseUUID(relaunched.inspect().identity.anonymousId))
    }

    static let options = StartOptions(
        onboarding: OnboardingInput(key: "fault_flow", version: "1"),
        manifest: ["welcome", "goal", "plan"].map { ManifestStepInput(stepKey: $0) })

    @Test func R31_onboardingUnderEachFault() async {
        for (name, condition) in Self.faults {
            let dir = TempDir("onboarding-fault")
            defer { dir.remove() }
            let clock = ManualClock()
            let diags = DiagnosticLog()
            func tracker(_ clock: ManualClock) -> OnboardingRunTracker {
                OnboardingRunTracker(
                    configuration: OnboardingRunConfiguration(
                        sink: RecordingSink<OnboardingRunSnapshot>(destination: "https://collector.example/onboarding"),
                        context: .value(
                            RunContextInput(
                                appVersion: "1.0", build: nil, platform: .ios, osVersion: "18", locale: "en-US",
                                timezone: "Europe/Paris")),
                        storage: FileKeyValueStorage(directory: dir.path), debounceMs: 0, persistTimeoutMs: 600_000,
                        storageReadTimeoutMs: 600_000,
                        onDiagnostic: diags.handler, clock: clock, scheduler: clock, registry: HandoffRegistry()))
            }
            let t = tracker(clock)
            let r = t.start(Self.options)
            r.enterStep("welcome")
            _ = await StoredFileDamageTests.realTime {
                await t.idle()
                return true
            }
            let fs = FaultyFileSystem(directory: dir.path, condition: condition)
            r.exitStep("welcome")
            r.enterStep("goal")
            let settled = await StoredFileDamageTests.realTime {
                await t.idle()
                return true
            }
            #expect(settled != nil, "\(name): idle() never finished")
            #expect(fs.totalFailures > 0, "\(name): the fault was never hit")
            #expect(diags.all.contains { $0.code == "storage" }, "\(name): no storage diagnostic")
            fs.uninstall()
            // What was stored before the fault is still there: the run resumes (at welcome or later).
            let c2 = ManualClock()
            let again = tracker(c2)
            let options = Self.options
            let step = await StoredFileDamageTests.realTime { await again.resume(expected: options)?.currentStepKey ?? "none" }
            #expect(step == "welcome" || step == "goal", "\(name): resumed at \(step ?? "never")")
        }
    }

    @Test func R32_paywallUnderEachFault() async {
        let context = RunContextInput(
            appVersion: "1.0.0", build: nil, platform: .ios, osVersion: "18.1", locale: "en-US", timezone: "Europe/Paris")
        for (name, condition) in Self.faults {
            let dir = TempDir("paywall-fault")
            defer { dir.remove() }
            let clock = ManualClock()
            let diags = DiagnosticLog()
            // The sink takes nothing, so every write has entries to store: a snapshot is sent beside
            // its write (issue 36), and an accepted one can settle before its write starts, which
            // then only removes the key (ENOSPC on write and sync was then never hit).
            let sink = RecordingSink<PaywallSnapshot>(destination: "https://collector.example/paywall", always: .transient)
            let t = PaywallPresentationTracker(
                configuration: PaywallTrackerConfiguration(
                    sink: sink, context: .value(context), storage: FileKeyValueStorage(directory: dir.path), clock: clock, scheduler: clock,
                    onDiagnostic: diags.handler))
            _ = await StoredFileDamageTests.realTime {
                await t.idle()
                return true
            }
            let fs = FaultyFileSystem(directory: dir.path, condition: condition)
            let p = t.start(
                PaywallPresentationInfo(
                    moment: "after_onboarding", paywallId: "pw_1", renderMode: .elements,
                    billing: .store, surface: .present))
            p?.shown()
            p?.end(.dismissed)
            let settled = await StoredFileDamageTests.realTime {
                await t.idle()
                return true
            }
            #expect(settled != nil, "\(name): idle() never finished")
            #expect(fs.totalFailures > 0, "\(name): the fault was never hit")
            #expect(diags.all.contains { $0.code == "storage" }, "\(name): no storage diagnostic")
            fs.uninstall()
        }
    }

    /// A real full file system: a 256 KiB tmpfs, filled to the last byte, then space returned.
    @Test func R33_scoreOnARealFullTmpfs() async throws {
        guard getuid() == 0 else {
            print("[reliability] R33 skipped: mounting a tmpfs needs root (uid \(getuid()))")
            return
        }
        let mountPoint = TempDir("tmpfs")
        defer { mountPoint.remove() }
        guard Self.shell("/bin/mount", ["-t", "tmpfs", "-o", "size=256k,mode=0700", "tmpfs", mountPoint.path]) == 0 else {
            print("[reliability] R33 skipped: mount -t tmpfs failed (no CAP_SYS_ADMIN in this container?)")
            return
        }
        defer { _ = Self.shell("/bin/umount", [mountPoint.path]) }
        let dir = mountPoint.path + "/score"
        let diags = DiagnosticLog()
        let (client, clock) = scoreClient(dir, diags)
        for i in 0..<5 { client.track("before", properties: ["n": i]) }
        await run(clock, ms: 200)
        // Fill every remaining byte.
        let filler = mountPoint.path + "/filler"
        let fd = open(filler, O_WRONLY | O_CREAT, 0o600)
        let chunk = [UInt8](repeating: 0xAB, count: 4096)
        var size = 4096
        while size >= 1 {
            let n = chunk.withUnsafeBytes { write(fd, $0.baseAddress!, size) }
            if n < 0 { size /= 2 }
        }
        close(fd)
        // More than the free end of the log's last page (tmpfs allocates whole pages).
        let during = 40
        for i in 0..<during { client.track("during", properties: ["n": i, "pad": String(repeating: "x", count: 200)]) }
        await run(clock, ms: 200)
        #expect(diags.all.contains { $0.code == "storage" }, "no storage diagnostic on a full tmpfs")
        #expect(client.inspect().queue.depth == 5 + during)
        unlink(filler)
        for i in 0..<5 { client.track("after", properties: ["n": i]) }
        await run(clock, ms: Self.retryWindowMs, stepMs: 500)
        let (relaunched, c2) = scoreClient(dir, DiagnosticLog())
        await c2.settle()
        let depth = relaunched.inspect().queue.depth
        #expect(depth >= 10, "\(depth) events after a relaunch")
        #expect(depth == 10 + during, "\(depth) of \(10 + during) events after a relaunch")
        print("[reliability] R33 full tmpfs: \(depth) of \(10 + during) events after a relaunch")
    }

    static func shell(_ tool: String, _ args: [String]) -> Int32 {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: tool)
        p.arguments = args
        p.standardOutput = FileHandle.nullDevice
        p.standardError = FileHandle.nullDevice
        do { try p.run() } catch { return -1 }
        p.waitUntilExit()
        return p.terminationStatus
    }
}
