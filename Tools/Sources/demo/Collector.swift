import Foundation

/// The collector the demo sends to: started here on a free loopback port, or given by URL.
final class CollectorProcess: @unchecked Sendable {
    let baseURL: String
    let dbPath: String?
    private let process: Process?
    private let lines = NSCondition()
    private var verdictLines: [String] = []

    /// Uses a collector that already runs.
    init(url: String) {
        baseURL = url.hasSuffix("/") ? String(url.dropLast()) : url
        dbPath = nil
        process = nil
    }

    /// Starts `collector serve --port 0` (the binary next to this one) with a fresh database.
    init(binary: String, dbPath: String) throws {
        self.dbPath = dbPath
        let p = Process()
        p.executableURL = URL(fileURLWithPath: binary)
        p.arguments = ["serve", "--port", "0", "--db", dbPath]
        let out = Pipe()
        p.standardOutput = out
        p.standardError = FileHandle.standardError
        try p.run()
        process = p
        let reader = LineReader(out.fileHandleForReading)
        guard let first = reader.next(), let range = first.range(of: "http://") else {
            throw DemoError("the collector did not start")
        }
        baseURL = String(first[range.lowerBound...]).trimmingCharacters(in: .whitespaces)
        let thread = Thread { [self] in
            while let line = reader.next() {
                lines.lock()
                verdictLines.append(line)
                lines.broadcast()
                lines.unlock()
            }
        }
        thread.start()
    }

    /// The verdict lines printed so far, once at least `count` arrived (bounded wait).
    func verdicts(atLeast count: Int, timeoutSeconds: Double = 10) -> [String] {
        let deadline = Date().addingTimeInterval(timeoutSeconds)
        lines.lock()
        defer { lines.unlock() }
        while verdictLines.count < count, lines.wait(until: deadline) {}
        return verdictLines
    }

    var verdictCount: Int {
        lines.lock()
        defer { lines.unlock() }
        return verdictLines.count
    }

    func stop() {
        guard let process, process.isRunning else { return }
        kill(process.processIdentifier, SIGTERM)
        process.waitUntilExit()
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
