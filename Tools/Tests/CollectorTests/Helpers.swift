import CollectorKit
import Foundation
import TrackerCore
import TrackerCoreTestKit

/// Shared fixtures: the contracts directory, example files, an in-memory collector.
enum Fixtures {
    static var contracts: String { ContractExamples.contractsDirectory }

    static func example(_ relative: String) throws -> JSONValue {
        try WireJSON.decode(ContractExamples.bytes(contracts + "/examples/" + relative))
    }

    static func collector() throws -> Collector {
        try Collector(databasePath: ":memory:", contractsDirectory: contracts, clock: ManualClock())
    }

    static func bytes(_ value: JSONValue) -> [UInt8] { WireJSON.encode(value) }

    /// Epoch ms of a contract timestamp.
    static func ms(_ text: String) -> Int64 { Timestamp.parse(text)! }
}

extension JSONValue {
    /// A copy with `key` set (or removed with `nil`) at the top level.
    func with(_ key: String, _ value: JSONValue?) -> JSONValue {
        guard case .object(var o) = self else { return self }
        o[key] = value
        return .object(o)
    }

    /// A copy with the member at a path of object keys set.
    func with(path: [String], _ value: JSONValue?) -> JSONValue {
        guard let first = path.first else { return value ?? .null }
        guard case .object(var o) = self else { return self }
        if path.count == 1 {
            o[first] = value
        } else {
            o[first] = (o[first] ?? .object(JSONObject())).with(path: Array(path.dropFirst()), value)
        }
        return .object(o)
    }
}
