import Foundation

/// A JSON Schema that captured payloads are validated against by `make validate-payloads`.
///
/// The capture folder of a schema is its ``name``; `Tools/scripts/validate-payloads.py` validates
/// the files in `<capture dir>/<name>/` against `Packages/*/Contracts/<name>.schema.json`. Another
/// package adds a schema by declaring a value with the base name of its schema file.
public struct CapturedSchema: Sendable, Hashable, CustomStringConvertible {
    /// Base name of the schema file (without `.schema.json`), also the capture folder name.
    public let name: String

    /// A schema named after its file `<name>.schema.json` in some package's `Contracts/` folder.
    public init(name: String) { self.name = name }

    /// Onboarding run snapshot, contract v1 (`onboarding-run.schema.json`).
    public static let onboardingRunV1 = CapturedSchema(name: "onboarding-run")
    /// Paywall presentation snapshot, contract v1 (`paywall-presentation.schema.json`).
    public static let paywallPresentationV1 = CapturedSchema(name: "paywall-presentation")
    /// Paywall presentation snapshot, contract v1.1 (`paywall-presentation.v1_1.schema.json`).
    public static let paywallPresentationV1_1 = CapturedSchema(name: "paywall-presentation.v1_1")

    public var description: String { name }
}

/// Records payloads that tests send, so that `make validate-payloads` can check each one against
/// its JSON Schema.
///
/// When the environment variable `TRACKER_CAPTURE_DIR` is set (the Makefile exports it during
/// tests), ``record(_:schema:)`` writes the bytes to `$TRACKER_CAPTURE_DIR/<schema>/<unique>.json`;
/// otherwise it does nothing. Safe to call from any thread or task.
public enum PayloadCapture {
    /// The environment variable naming the capture folder.
    public static let environmentVariable = "TRACKER_CAPTURE_DIR"

    private static let state = CaptureState()

    /// The capture folder, or `nil` when capture is off.
    public static var directory: String? {
        guard let dir = ProcessInfo.processInfo.environment[environmentVariable], !dir.isEmpty else { return nil }
        return dir
    }

    /// Writes `bytes` as one captured payload of `schema`. Returns the file written, or `nil` when
    /// capture is off. A write failure is reported on standard error and otherwise ignored, so
    /// that capture never changes a test's outcome (validation then misses that payload).
    @discardableResult
    public static func record(_ bytes: [UInt8], schema: CapturedSchema) -> String? {
        guard let dir = directory else { return nil }
        return record(bytes, schema: schema, in: dir)
    }

    /// Writes `bytes` as one captured payload of `schema` under `dir` (whatever the environment
    /// says), like ``record(_:schema:)``; its own tests use it so that they run under a plain
    /// `swift test` too.
    @discardableResult
    public static func record(_ bytes: [UInt8], schema: CapturedSchema, in dir: String) -> String? {
        let folder = URL(fileURLWithPath: dir).appendingPathComponent(schema.name, isDirectory: true)
        let n = state.next()
        let file = folder.appendingPathComponent("\(state.prefix)-\(n).json")
        do {
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            try Data(bytes).write(to: file, options: .atomic)
            return file.path
        } catch {
            FileHandle.standardError.write(Data("PayloadCapture: cannot write \(file.path): \(error)\n".utf8))
            return nil
        }
    }
}

/// A process-wide counter behind a lock, and a prefix unique to this process.
private final class CaptureState: @unchecked Sendable {
    private let lock = NSLock()
    private var counter = 0
    /// Process id and start time, so that parallel test processes never collide.
    let prefix = "\(ProcessInfo.processInfo.processIdentifier)-\(UInt64(Date().timeIntervalSince1970 * 1_000_000))"

    func next() -> Int {
        lock.lock()
        defer { lock.unlock() }
        counter += 1
        return counter
    }
}
