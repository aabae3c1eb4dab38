import Foundation
import Synchronization
import TrackerCore

/// Writes every Rocalytics API request the collector answers (`/functions/v1/…` and the install
/// ping) to a folder, one JSON file each, for `Tools/scripts/validate-openapi.py` to check against
/// the API's published description (issue 39, item 1). `collector serve` turns it on when
/// `TRACKER_CAPTURE_DIR` is set (the Makefile exports it during the tests), so the demo's and the
/// sample app's requests are validated by `make validate-openapi`.
///
/// Each file is `{"method","url","headers":[[name,value],…],"body":JSON or null,"body_text":text of a
/// body that is not JSON or null,"response":{"status","body"}}`,
/// the layout RocalyticsClient's replay tests capture too. The `Host`, `Content-Length`,
/// `Connection` and `User-Agent` headers are left out.
public final class RequestCapture: Sendable {
    /// The capture folder's name under the capture directory: the base name of the description
    /// (`Packages/RocalyticsClient/Contracts/rocalytics-openapi.yaml`).
    public static let folderName = "rocalytics-openapi"

    /// Where the files go (`<capture dir>/rocalytics-openapi`).
    public let folder: String
    private let prefix: String
    private let counter = Mutex(0)

    /// A capture into `<directory>/rocalytics-openapi`.
    public init(directory: String) {
        folder = URL(fileURLWithPath: directory).appendingPathComponent(Self.folderName).path
        prefix = "collector-\(ProcessInfo.processInfo.processIdentifier)-\(UInt64(Date().timeIntervalSince1970 * 1_000_000))"
    }

    /// The capture `TRACKER_CAPTURE_DIR` asks for, or `nil` when it is unset or empty.
    public static func fromEnvironment() -> RequestCapture? {
        guard let dir = ProcessInfo.processInfo.environment["TRACKER_CAPTURE_DIR"], !dir.isEmpty else { return nil }
        return RequestCapture(directory: dir)
    }

    /// Whether `path` is a route of the Rocalytics API (what the description may list).
    public static func isRocalyticsRoute(_ path: String) -> Bool { path.hasPrefix("/functions/v1/") || path == "/install" }

    private static let leftOut: Set<String> = ["host", "content-length", "connection", "user-agent"]

    /// Writes `request` and the collector's `response`; a write failure is printed on standard
    /// error and otherwise ignored (the request was answered all the same).
    public func record(_ request: HTTPServerRequest, response: HTTPServerResponse) {
        let n = counter.withLock { n -> Int in
            n += 1
            return n
        }
        // A body that is not JSON is kept as text beside a null body.
        func json(_ bytes: [UInt8]) -> JSONValue { bytes.isEmpty ? .null : (try? WireJSON.decode(bytes)) ?? .null }
        func text(_ bytes: [UInt8]) -> JSONValue {
            bytes.isEmpty || (try? WireJSON.decode(bytes)) != nil ? .null : .string(String(decoding: bytes, as: UTF8.self))
        }
        let headers = request.headers.filter { !Self.leftOut.contains($0.name.lowercased()) }.map {
            JSONValue.array([.string($0.name), .string($0.value)])
        }
        let capture: JSONValue = [
            "method": .string(request.method),
            "url": .string(request.path + (request.query.isEmpty ? "" : "?" + request.query)),
            "headers": .array(headers),
            "body": json(request.body),
            "body_text": text(request.body),
            "response": ["status": .number(Double(response.status)), "body": json(response.body)],
        ]
        let file = URL(fileURLWithPath: folder).appendingPathComponent("\(prefix)-\(n).json")
        do {
            try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
            try Data(WireJSON.encode(capture)).write(to: file, options: .atomic)
        } catch {
            FileHandle.standardError.write(Data("collector: cannot write the capture \(file.path): \(error)\n".utf8))
        }
    }
}
