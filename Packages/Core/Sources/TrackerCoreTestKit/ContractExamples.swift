import Foundation

/// The contract example files of `Packages/Core/Contracts/examples/`.
public enum ContractExamples {
    /// The contracts that have an example folder.
    public enum Contract: String, Sendable, CaseIterable {
        /// `examples/onboarding-run/`.
        case onboardingRun = "onboarding-run"
        /// `examples/paywall-presentation/`.
        case paywallPresentation = "paywall-presentation"
        /// `examples/paywall-presentation-v1_1/`.
        case paywallPresentationV1_1 = "paywall-presentation-v1_1"
    }

    /// `Packages/Core/Contracts/`.
    public static var contractsDirectory: String {
        PackagePaths.packageRoot(#filePath) + "/Contracts"
    }

    /// Absolute paths of the valid examples of `contract` (not `invalid/`), sorted by name.
    public static func valid(_ contract: Contract) -> [String] {
        files(in: contractsDirectory + "/examples/" + contract.rawValue)
    }

    /// Absolute paths of the `invalid/` examples of `contract`, sorted by name.
    public static func invalid(_ contract: Contract) -> [String] {
        files(in: contractsDirectory + "/examples/" + contract.rawValue + "/invalid")
    }

    /// Every valid example of every contract.
    public static var allValid: [String] { Contract.allCases.flatMap { valid($0) } }

    /// The bytes of a file.
    public static func bytes(_ path: String) throws -> [UInt8] {
        [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))
    }

    /// FNV-1a 64-bit hash of `bytes` as 16 lowercase hex digits: the form codegen records as
    /// `schema-fnv1a64` in each generated file (codegen keeps its own copy, as it depends on
    /// nothing), and a fixture's pin in its `SOURCE.md`.
    public static func fnv1a64(_ bytes: [UInt8]) -> String {
        var h: UInt64 = 0xcbf2_9ce4_8422_2325
        for b in bytes { h = (h ^ UInt64(b)) &* 0x0000_0100_0000_01b3 }
        let hex = String(h, radix: 16)
        return String(repeating: "0", count: 16 - hex.count) + hex
    }

    private static func files(in dir: String) -> [String] {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: dir)) ?? []
        return names.filter { $0.hasSuffix(".json") }.sorted().map { dir + "/" + $0 }
    }
}
