import Foundation
import TrackerCore
import TrackerCoreTestKit

// Wire encoding benchmark cases: throughput of the JSON.stringify-exact encoder on the contract
// examples, from a decoded `JSONValue` tree and from the typed snapshots' direct byte path,
// against Foundation's JSONSerialization on the same payloads.

/// Runs `body` in batches for about `seconds` and returns the median nanoseconds per call.
private func medianNsPerCall(seconds: Double = 0.4, _ body: () -> Void) -> Double {
    // Warm up, then size batches to roughly 5 ms.
    var batch = 1
    while true {
        let t = timeNs { for _ in 0..<batch { body() } }
        if t > 5_000_000 || batch >= 1 << 20 { break }
        batch *= 2
    }
    var samples: [Double] = []
    let deadline = MonotonicClock.nowNs() + UInt64(seconds * 1e9)
    while MonotonicClock.nowNs() < deadline || samples.count < 5 {
        samples.append(timeNs { for _ in 0..<batch { body() } } / Double(batch))
    }
    samples.sort()
    return Stats.percentile(samples, 0.5)
}

/// MB/s (10^6 bytes per second) for `bytes` produced in `ns`.
private func mbPerSecond(bytes: Int, ns: Double) -> Double { Double(bytes) / ns * 1_000 }

/// Keeps results alive so the optimizer cannot drop the work.
nonisolated(unsafe) private var sink = 0

private struct Payload {
    let name: String
    let tree: JSONValue
    let typed: (any WireEncodable)?
    let foundation: Any
    let bytes: Int
}

private func loadPayloads(_ paths: [String]) throws -> [Payload] {
    try paths.map { path in
        let raw = try ContractExamples.bytes(path)
        let tree = try WireJSON.decode(raw)
        let typed: (any WireEncodable)?
        if path.contains("/onboarding-run/") {
            typed = try OnboardingRunSnapshot(json: tree)
        } else if let v1 = try? PaywallPresentationSnapshot(json: tree) {
            typed = v1
        } else {
            typed = try PaywallPresentationSnapshotV1_1(json: tree)
        }
        let foundation = try JSONSerialization.jsonObject(with: Data(raw))
        return Payload(
            name: URL(fileURLWithPath: path).lastPathComponent, tree: tree, typed: typed,
            foundation: foundation, bytes: WireJSON.encode(tree).count)
    }
}

private func encodeFigures(_ payloads: [Payload]) -> [String: Double] {
    let total = payloads.reduce(0) { $0 + $1.bytes }
    let tree = medianNsPerCall { for p in payloads { sink &+= WireJSON.encode(p.tree).count } }
    var figures: [String: Double] = [
        "bytes": Double(total),
        "payloads": Double(payloads.count),
        "tree_mb_s": mbPerSecond(bytes: total, ns: tree),
        "tree_ns": tree,
    ]
    let typed = payloads.compactMap(\.typed)
    if typed.count == payloads.count {
        let direct = medianNsPerCall { for t in typed { sink &+= t.wireBytes().count } }
        figures["typed_direct_mb_s"] = mbPerSecond(bytes: total, ns: direct)
        figures["typed_direct_ns"] = direct
        let viaTree = medianNsPerCall { for t in typed { sink &+= WireJSON.encode(t.wireJSON()).count } }
        figures["typed_via_tree_mb_s"] = mbPerSecond(bytes: total, ns: viaTree)
    }
    let decode = medianNsPerCall {
        for p in payloads { if let v = try? WireJSON.decode(WireJSON.encode(p.tree)) { sink &+= v.isNull ? 0 : 1 } }
    }
    figures["encode_plus_decode_mb_s"] = mbPerSecond(bytes: total, ns: decode)
    return figures
}

private func foundationFigures(_ payloads: [Payload]) throws -> [String: Double] {
    let total = payloads.reduce(0) { $0 + $1.bytes }
    let ns = medianNsPerCall(seconds: 0.3) {
        for p in payloads { sink &+= (try? JSONSerialization.data(withJSONObject: p.foundation))?.count ?? 0 }
    }
    return ["bytes": Double(total), "mb_s": mbPerSecond(bytes: total, ns: ns), "ns": ns]
}

func wireBenchCases() -> [BenchCase] {
    let truncated = { try loadPayloads(ContractExamples.valid(.onboardingRun).filter { $0.hasSuffix("/truncated.json") }) }
    let others = {
        try loadPayloads(ContractExamples.allValid.filter { !$0.hasSuffix("/truncated.json") })
    }
    return [
        BenchCase(name: "wire.encode.truncated") { encodeFigures(try truncated()) },
        BenchCase(name: "wire.encode.foundation") { try foundationFigures(try truncated()) },
        BenchCase(name: "wire.encode.examples") { encodeFigures(try others()) },
        BenchCase(name: "wire.encode.examples.foundation") { try foundationFigures(try others()) },
    ]
}
