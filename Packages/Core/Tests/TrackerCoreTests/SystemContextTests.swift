import Testing
import TrackerCore

/// `ContextSource.system` (issue 37 item 1): the portable decisions behind it, tested on Linux.
///
/// Scenarios: S232 locale identifiers to BCP 47 tags (RocalyticsClient's table, plus POSIX
/// `LANG` values); S233 the context from raw facts: fallbacks (no app version, empty zone) and
/// contract lengths, and a valid context for an Apple device's facts; S234 on a host the
/// contracts do not know (Linux), `.system` reads a context whose platform is reported, so a
/// start with it is refused rather than sent with an invented platform.
@Suite struct SystemContextTests {
    @Test func S232_localeIdentifiersToBCP47() {
        let cases: [(String, String)] = [
            ("en_US", "en-US"), ("en-US", "en-US"), ("fr_FR@rg=gbzzzz", "fr-FR"), ("zh-Hans_CN", "zh-Hans-CN"),
            ("de-DE-u-co-phonebk", "de-DE"), ("en_US@calendar=buddhist", "en-US"), ("ja-JP-u-ca-japanese-nu-latn", "ja-JP"),
            ("EN_gb", "en-GB"), ("es_419", "es-419"), ("pt", "pt"), ("", "en-US"), ("en_US_POSIX", "en-US"),
            ("sr-latn-RS", "sr-Latn-RS"), ("en_US.UTF-8", "en-US"), ("de_DE.ISO-8859-1@euro", "de-DE"), ("C", "en-US"),
            ("POSIX", "en-US"), ("C.UTF-8", "en-US"),
        ]
        for (raw, tag) in cases { #expect(SystemContext.bcp47(fromLocaleIdentifier: raw) == tag, "\(raw)") }
        #expect(SystemContext.timeZone("") == "UTC" && SystemContext.timeZone("Europe/Paris") == "Europe/Paris")
    }

    @Test func S233_theContextFromRawFacts() {
        let device = SystemContext.Facts(
            appVersion: "2.4.0", build: "412", platform: .ios, osVersion: "18.1", localeIdentifier: "fr_FR@rg=gbzzzz",
            timeZoneIdentifier: "Europe/Paris")
        let c = SystemContext.context(device)
        let expected = RunContextInput(
            appVersion: "2.4.0", build: "412", platform: .ios, osVersion: "18.1", locale: "fr-FR", timezone: "Europe/Paris")
        #expect(c == expected)
        #expect(c.problems.isEmpty, "\(c.problems)")

        let bare = SystemContext.Facts(
            appVersion: "", build: nil, platform: .ios, osVersion: String(repeating: "9", count: 40), localeIdentifier: "",
            timeZoneIdentifier: "")
        let b = SystemContext.context(bare)
        #expect(b.appVersion == SystemContext.unknownAppVersion && b.build == nil && b.locale == "en-US" && b.timezone == "UTC")
        #expect(b.osVersion?.count == 32)
        #expect(b.problems.isEmpty, "\(b.problems)")
    }

    #if os(Linux)
        @Test func S234_onLinuxThePlatformIsReportedNotInvented() throws {
            let read = try ContextSource.system.read()
            #expect(read.platform.rawValue == "linux")
            #expect(!read.problems.isEmpty)
            #expect(read.appVersion == SystemContext.unknownAppVersion)
            #expect(!read.timezone.isEmpty && !read.locale.isEmpty)
        }
    #endif
}
