import Foundation

/// Every child process the demo started and its temporary folder, cleaned up exactly once:
/// on success, on failure, and on SIGINT/SIGTERM (see ``installSignalHandlers()``).
final class Cleanup: @unchecked Sendable {
    static let shared = Cleanup()

    private let lock = NSLock()
    private var children: [Process] = []
    private var folders: [String] = []
    private var done = false
    private var signalSources: [DispatchSourceSignal] = []

    /// Registers a started child process.
    func adopt(_ process: Process) {
        lock.lock()
        defer { lock.unlock() }
        children.append(process)
    }

    /// Registers a folder to remove.
    func remove(atExit folder: String) {
        lock.lock()
        defer { lock.unlock() }
        folders.append(folder)
    }

    /// Stops every child still running (SIGTERM, then SIGKILL after 3 s) and removes the folders.
    /// Idempotent; safe from a signal source's queue.
    func run() {
        lock.lock()
        if done {
            lock.unlock()
            return
        }
        done = true
        let children = self.children
        let folders = self.folders
        lock.unlock()
        for child in children where child.isRunning { kill(child.processIdentifier, SIGTERM) }
        let deadline = Date().addingTimeInterval(3)
        for child in children {
            while child.isRunning, Date() < deadline { usleep(10_000) }
            if child.isRunning {
                kill(child.processIdentifier, SIGKILL)
                child.waitUntilExit()
            }
        }
        for folder in folders { try? FileManager.default.removeItem(atPath: folder) }
    }

    /// On SIGINT (Ctrl-C) or SIGTERM: cleans up, then exits 130 or 143.
    func installSignalHandlers() {
        for sig in [SIGINT, SIGTERM] {
            signal(sig, SIG_IGN)  // delivered to the dispatch source instead
            let source = DispatchSource.makeSignalSource(signal: sig, queue: .global())
            source.setEventHandler { [self] in
                FileHandle.standardError.write(
                    Data("\ndemo: \(sig == SIGINT ? "interrupted" : "terminated"), stopping the child processes\n".utf8))
                run()
                exit(128 + sig)
            }
            source.resume()
            lock.lock()
            signalSources.append(source)
            lock.unlock()
        }
    }
}

/// A child process whose standard output is read line by line as it comes.
final class Child: @unchecked Sendable {
    let process = Process()
    private let lines = NSCondition()
    private var received: [String] = []
    private var closed = false
    let name: String

    /// Starts `binary` with `arguments`; each output line goes to `echo` as well.
    init(name: String, binary: String, arguments: [String], echo: (@Sendable (String) -> Void)? = nil) throws {
        self.name = name
        process.executableURL = URL(fileURLWithPath: binary)
        process.arguments = arguments
        let out = Pipe()
        process.standardOutput = out
        process.standardError = FileHandle.standardError
        try process.run()
        Cleanup.shared.adopt(process)
        let reader = LineReader(out.fileHandleForReading)
        let thread = Thread { [self] in
            while let line = reader.next() {
                echo?(line)
                lines.lock()
                received.append(line)
                lines.broadcast()
                lines.unlock()
            }
            lines.lock()
            closed = true
            lines.broadcast()
            lines.unlock()
        }
        thread.start()
    }

    var pid: Int32 { process.processIdentifier }

    /// The first output line containing `text`, waiting at most `timeoutSeconds` (nil: not seen,
    /// or the output closed first).
    func waitForLine(containing text: String, timeoutSeconds: Double) -> String? {
        let deadline = Date().addingTimeInterval(timeoutSeconds)
        lines.lock()
        defer { lines.unlock() }
        while true {
            if let line = received.first(where: { $0.contains(text) }) { return line }
            if closed || !lines.wait(until: deadline) { return received.first(where: { $0.contains(text) }) }
        }
    }

    /// Waits for the process to end (bounded); nil when it is still running.
    func waitForExit(timeoutSeconds: Double) -> Int32? {
        let deadline = Date().addingTimeInterval(timeoutSeconds)
        while process.isRunning, Date() < deadline { usleep(10_000) }
        if process.isRunning { return nil }
        return process.terminationStatus
    }
}

/// Reads lines from a pipe without waiting for it to close.
final class LineReader: @unchecked Sendable {
    private let handle: FileHandle
    private var buffer = Data()
    init(_ handle: FileHandle) { self.handle = handle }

    func next() -> String? {
        while true {
            if let nl = buffer.firstIndex(of: 10) {
                let line = String(decoding: buffer[buffer.startIndex..<nl], as: UTF8.self)
                buffer.removeSubrange(buffer.startIndex...nl)
                return line
            }
            let chunk = handle.availableData
            if chunk.isEmpty {
                if buffer.isEmpty { return nil }
                defer { buffer.removeAll() }
                return String(decoding: buffer, as: UTF8.self)
            }
            buffer.append(chunk)
        }
    }
}

struct DemoError: Error, CustomStringConvertible {
    let description: String
    init(_ d: String) { description = d }
}
