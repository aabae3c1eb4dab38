/// The policy in force, resolved once at construction.
struct ResolvedPrivacy: Sendable, Equatable {
    var requested: String
    var mode: PrivacyMode
    var region: String?
    var startingConsent: ConsentState
    var retentionHours: Int
    var dropsDeviceSignals: Bool
    var declared: Bool

    /// The tracker's own retention cap.
    static let trackerRetentionHours = 72

    static let gdprCountries: Set<String> = [
        "AT", "BE", "BG", "CY", "CZ", "DE", "DK", "EE", "ES", "FI", "FR", "GR", "HR", "HU", "IE", "IT", "LT",
        "LU", "LV", "MT", "NL", "PL", "PT", "RO", "SE", "SI", "SK", "IS", "LI", "NO", "GB", "UK", "CH",
    ]

    /// Trims and upper-cases `raw`; `nil` unless it is two letters, optionally `-` and a subdivision.
    static func normaliseRegion(_ raw: String?) -> String? {
        guard let raw else { return nil }
        let text = raw.trimmingSpaces().uppercased()
        let scalars = Array(text.unicodeScalars)
        guard scalars.count >= 2 else { return nil }
        func isLetter(_ s: Unicode.Scalar) -> Bool { s.value >= 65 && s.value <= 90 }
        func isAlnum(_ s: Unicode.Scalar) -> Bool { isLetter(s) || (s.value >= 48 && s.value <= 57) }
        guard isLetter(scalars[0]), isLetter(scalars[1]) else { return nil }
        if scalars.count == 2 { return text }
        guard scalars[2] == "-", scalars.count >= 4, scalars.count <= 6, scalars[3...].allSatisfy(isAlnum) else { return nil }
        return text
    }

    static func policy(forRegion region: String) -> PrivacyMode {
        let country = String(region.prefix(2))
        if region == "CA-QC" { return .quebec }
        if gdprCountries.contains(country) { return .gdpr }
        if country == "BR" { return .lgpd }
        if country == "US" { return .cpra }
        return .off
    }

    static func resolve(_ options: PrivacyOptions?) -> ResolvedPrivacy {
        guard let options else { return table(.off, requested: "off", region: nil) }
        var mode = options.mode
        var region: String?
        if mode == .auto {
            if options.region != nil {
                region = normaliseRegion(options.region)
            } else if let provider = options.regionProvider {
                region = normaliseRegion(provider())
            }
            mode = region.map(policy(forRegion:)) ?? .gdpr
        }
        var p = table(mode, requested: options.mode.rawValue, region: region)
        if let o = options.overrides {
            if let c = o.startingConsent { p.startingConsent = c }
            if let h = o.retentionMaxHours { p.retentionHours = max(0, min(h, trackerRetentionHours)) }
            if let d = o.dropDeviceSignals { p.dropsDeviceSignals = d }
        }
        return p
    }

    static func table(_ mode: PrivacyMode, requested: String, region: String?) -> ResolvedPrivacy {
        switch mode {
        case .gdpr, .auto:
            return ResolvedPrivacy(
                requested: requested, mode: .gdpr, region: region, startingConsent: .none,
                retentionHours: 24, dropsDeviceSignals: true, declared: true)
        case .quebec:
            return ResolvedPrivacy(
                requested: requested, mode: .quebec, region: region, startingConsent: .none,
                retentionHours: 24, dropsDeviceSignals: true, declared: true)
        case .lgpd:
            return ResolvedPrivacy(
                requested: requested, mode: .lgpd, region: region, startingConsent: .none,
                retentionHours: 48, dropsDeviceSignals: true, declared: true)
        case .cpra:
            return ResolvedPrivacy(
                requested: requested, mode: .cpra, region: region,
                startingConsent: ConsentState(analytics: true, personalization: true, advertising: false),
                retentionHours: min(168, trackerRetentionHours), dropsDeviceSignals: false, declared: true)
        case .off:
            return ResolvedPrivacy(
                requested: requested, mode: .off, region: region, startingConsent: .none,
                retentionHours: trackerRetentionHours, dropsDeviceSignals: false, declared: false)
        }
    }
}

extension String {
    func trimmingSpaces() -> String {
        var s = Substring(self)
        while let f = s.first, f.isWhitespace { s.removeFirst() }
        while let l = s.last, l.isWhitespace { s.removeLast() }
        return String(s)
    }
}
