#if canImport(Darwin)
    import Foundation

    extension SystemContext {
        /// The raw facts from the OS (every decision is in ``SystemContext/context(_:)``).
        static func appleFacts() -> Facts {
            let info = Bundle.main.infoDictionary ?? [:]
            let v = ProcessInfo.processInfo.operatingSystemVersion
            let os = v.patchVersion == 0 ? "\(v.majorVersion).\(v.minorVersion)" : "\(v.majorVersion).\(v.minorVersion).\(v.patchVersion)"
            return Facts(
                appVersion: info["CFBundleShortVersionString"] as? String, build: info["CFBundleVersion"] as? String,
                platform: .ios, osVersion: os, localeIdentifier: Locale.current.identifier,
                timeZoneIdentifier: TimeZone.current.identifier)
        }
    }
#endif
