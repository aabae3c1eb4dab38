import Foundation
import Synchronization
import TrackerCore
import TrackerCoreTestKit

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Suite-wide settings: `SOAK=1` makes the crash and property loops much longer; `RELIABILITY_SEED`
/// replays a run (every test prints the seed it used).
enum Soak {
    static let enabled = ProcessInfo.processInfo.environment["SOAK"] == "1"
    static func scale(_ n: Int, soak: Int) -> Int { enabled ? soak : n }

    /// `RELIABILITY_SEED`, when set: every seeded test then runs with that seed alone (replay).
    static var replaySeed: UInt64? { ProcessInfo.processInfo.environment["RELIABILITY_SEED"].flatMap(UInt64.init) }

    /// The seed of a single-seed test (the SIGKILL campaigns): `RELIABILITY_SEED` when set, else
    /// a fresh one. Printed for replay.
    static func seed(_ test: String) -> UInt64 {
        let s = replaySeed ?? UInt64.random(in: 1...UInt64(UInt32.max))
        print("[reliability] \(test) seed=\(s) (replay: RELIABILITY_SEED=\(s))")
        return s
    }

    /// The seeds every run of a property test uses, in CI as anywhere: the same on every run, so
    /// that a change that breaks one of them fails every time.
    static let fixedSeeds: [UInt64] = [0x0000_5EED, 0x00C0_FFEE, 0x7A11_0C47]

    /// The seeds of a property test (a parameterized `@Test(arguments:)`): ``fixedSeeds`` plus
    /// one rotating extra drawn fresh for this run, or `RELIABILITY_SEED` alone when set. Each is
    /// printed with the line that replays it.
    static func seeds(_ test: String) -> [UInt64] {
        if let s = replaySeed {
            print("[reliability] \(test) seed=\(s) (from RELIABILITY_SEED)")
            return [s]
        }
        let extra = UInt64.random(in: 1...UInt64(UInt32.max))
        print(
            "[reliability] \(test) seeds=\(fixedSeeds.map(String.init).joined(separator: ",")) fixed, \(extra) rotating (replay one: RELIABILITY_SEED=<seed>)"
        )
        return fixedSeeds + [extra]
    }
}

/// A fresh private temporary directory, removed by `remove()`.
struct TempDir {
    let path: String
    init(_ name: String) {
        var template = Array((NSTemporaryDirectory() + "/reliability-\(name)-XXXXXX").utf8CString)
        let made = template.withUnsafeMutableBufferPointer { mkdtemp($0.baseAddress!) }
        path = made.map { String(cString: $0) } ?? (NSTemporaryDirectory() + "/reliability-\(name)-\(UUID().uuidString)")
        try? FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    }
    func remove() { try? FileManager.default.removeItem(atPath: path) }
}

/// The `crashworker` executable, built next to the test bundle (the test target depends on it).
enum WorkerBinary {
    static var path: String {
        let exe = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0]
        var dir = URL(fileURLWithPath: exe).deletingLastPathComponent()
        // xctest bundles on Linux are plain executables, but step out of any `.xctest` directory.
        while dir.path.hasSuffix(".xctest") || dir.path.contains(".xctest/") { dir = dir.deletingLastPathComponent() }
        return dir.appendingPathComponent("crashworker").path
    }
}

/// A child process with its standard output on a pipe (read line by line, blocking) and its
/// standard error in a file.
final class Child {
    let pid: pid_t
    private let stdoutFd: Int32
    private var buffer: [UInt8] = []
    private var eof = false

    /// `environment`: variables added to this process's for the child (say `LD_PRELOAD`).
    init(_ executable: String, _ args: [String], stderrPath: String, environment: [String: String] = [:]) throws {
        var fds: [Int32] = [0, 0]
        guard pipe(&fds) == 0 else { throw ChildError("pipe") }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addclose(&actions, fds[0])
        posix_spawn_file_actions_adddup2(&actions, fds[1], 1)
        posix_spawn_file_actions_addclose(&actions, fds[1])
        posix_spawn_file_actions_addopen(&actions, 2, stderrPath, O_WRONLY | O_CREAT | O_APPEND, 0o600)
        let argv: [UnsafeMutablePointer<CChar>?] = ([executable] + args).map { strdup($0) } + [nil]
        defer { for p in argv { free(p) } }
        var child: pid_t = 0
        var envp: [UnsafeMutablePointer<CChar>?] = []
        var e = environ
        while let entry = e.pointee {
            let text = String(cString: entry)
            if let eq = text.firstIndex(of: "="), environment[String(text[..<eq])] == nil { envp.append(strdup(entry)) }
            e += 1
        }
        for (k, v) in environment { envp.append(strdup("\(k)=\(v)")) }
        envp.append(nil)
        defer { for p in envp { free(p) } }
        let rc = posix_spawn(&child, executable, &actions, nil, argv, envp)
        close(fds[1])
        guard rc == 0 else {
            close(fds[0])
            throw ChildError("posix_spawn \(executable): \(rc)")
        }
        pid = child
        stdoutFd = fds[0]
    }

    /// The next line, or `nil` at end of output. Blocks until a line or EOF arrives.
    func readLine() -> String? {
        while true {
            if let nl = buffer.firstIndex(of: 10) {
                let line = String(decoding: buffer[..<nl], as: UTF8.self)
                buffer.removeSubrange(...nl)
                return line
            }
            if eof {
                // A partial last line (cut by the kill) is not a complete announcement.
                buffer.removeAll()
                return nil
            }
            var chunk = [UInt8](repeating: 0, count: 65_536)
            let n = chunk.withUnsafeMutableBytes { read(stdoutFd, $0.baseAddress!, $0.count) }
            if n < 0 && errno == EINTR { continue }
            if n <= 0 { eof = true } else { buffer += chunk[0..<n] }
        }
    }

    /// SIGKILL, then reaps the process. Returns the lines still in the pipe (printed before the kill).
    func kill() -> [String] {
        #if canImport(Glibc)
            _ = Glibc.kill(pid, SIGKILL)
        #else
            _ = Darwin.kill(pid, SIGKILL)
        #endif
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
        var rest: [String] = []
        while let l = readLine() { rest.append(l) }
        close(stdoutFd)
        return rest
    }
}

struct ChildError: Error, CustomStringConvertible {
    let description: String
    init(_ d: String) { description = d }
}

/// What the loopback server saw, with a condition the harness waits on (never a sleep).
final class Received: @unchecked Sendable {
    struct Entry {
        var generation: Int
        var path: String
        var body: [UInt8]
        var status: Int
    }
    private let cond = NSCondition()
    private var entries: [Entry] = []
    private var generation = 0

    func setGeneration(_ g: Int) {
        cond.lock()
        generation = g
        cond.unlock()
    }

    /// Records a request and returns the index it got.
    func add(path: String, body: [UInt8], status: Int) {
        cond.lock()
        entries.append(Entry(generation: generation, path: path, body: body, status: status))
        cond.broadcast()
        cond.unlock()
    }

    var count: Int {
        cond.lock()
        defer { cond.unlock() }
        return entries.count
    }
    var all: [Entry] {
        cond.lock()
        defer { cond.unlock() }
        return entries
    }

    /// Waits (bounded by `deadline`) until `done(entries)` holds; returns whether it did.
    func wait(until deadline: Date, _ done: ([Entry]) -> Bool) -> Bool {
        cond.lock()
        defer { cond.unlock() }
        while !done(entries) {
            if !cond.wait(until: deadline) { return done(entries) }
        }
        return true
    }
}

/// Runs `work` on the manual clock and moves the clock in 100 ms steps until it finishes
/// (bounded waits inside the trackers run on the clock's timers). `nil` if it never finishes.
func onClock<T: Sendable>(_ clock: ManualClock, _ work: @escaping @Sendable () async -> T) async -> T? {
    let box = Locked<T?>(nil)
    clock.spawn {
        let r = await work()
        box.withLock { $0 = r }
    }
    for _ in 0..<2_000 {
        await clock.settle()
        if let v = box.value { return v }
        await clock.advance(byMs: 100)
    }
    return nil
}
