// The shared context type, its input patterns and the HTTP error code style (issue 16).
//
// New scenario ids:
// - CX1: a valid context has no problems and builds both generated `Context`s, with the library
//   version, in the wire order.
// - CX2: every invalid member is reported, in the contracts' member order, with its message.
// - CX3: a platform the contracts do not accept is reported and builds no wire context.
// - CX4: the input patterns accept and refuse what the contracts' patterns do.
// - CX5: `HTTPError.Code` values compare by spelling; one read from a spelling equals the member.
import Testing
import TrackerCore

@Suite struct RunContextTests {
    static let valid = RunContextInput(
        appVersion: "2.4.0", build: "412", platform: .ios, osVersion: "18.1",
        locale: "en-US", timezone: "America/New_York")

    @Test func CX1_validContextBuildsBothWireForms() throws {
        #expect(Self.valid.problems == [])
        let onboarding = try #require(Self.valid.onboardingRunContext(libraryVersion: "1.2.3"))
        #expect(onboarding.platform == .ios && onboarding.libraryVersion == "1.2.3")
        let expected =
            #"{"app_version":"2.4.0","build":"412","platform":"ios","os_version":"18.1","locale":"en-US","timezone":"America/New_York","library_version":"1.2.3"}"#
        #expect(String(decoding: onboarding.wireBytes(), as: UTF8.self) == expected)
        let paywall = try #require(Self.valid.paywallPresentationContext(libraryVersion: "1.2.3"))
        #expect(String(decoding: paywall.wireBytes(), as: UTF8.self) == expected)
        var nulls = Self.valid
        nulls.build = nil
        nulls.osVersion = nil
        #expect(nulls.problems == [])
        #expect(nulls.paywallPresentationContext(libraryVersion: "1")?.wireJSON()["build"] == .null)
    }

    @Test func CX2_everyProblemInContractOrder() {
        let bad = RunContextInput(
            appVersion: "", build: String(repeating: "b", count: 33), platform: Platform(rawValue: "tizen"),
            osVersion: "", locale: "english", timezone: "/Paris")
        #expect(
            bad.problems == [
                "appVersion must be 1 to 32 characters",
                "build must be null or 1 to 32 characters",
                "platform must be ios, android or web",
                "osVersion must be null or 1 to 32 characters",
                "locale must be a BCP 47 tag",
                "timezone must be an IANA name of at most 64 characters",
            ])
        // Lengths are code points, not UTF-16 units or grapheme clusters.
        var emoji = Self.valid
        emoji.appVersion = String(repeating: "\u{1F600}", count: 32)
        #expect(emoji.problems == [])
    }

    @Test func CX3_unknownPlatformIsReportedAndNeverSent() {
        var c = Self.valid
        c.platform = Platform(rawValue: "IOS")
        #expect(c.problems == ["platform must be ios, android or web"])
        #expect(c.onboardingRunContext(libraryVersion: "1") == nil)
        #expect(c.paywallPresentationContext(libraryVersion: "1") == nil)
        #expect(Platform.contractValues.map(\.rawValue) == ["ios", "android", "web"])
        #expect(Platform(rawValue: "android") == .android)
    }

    @Test func CX4_inputPatterns() {
        #expect(InputPatterns.isKey("a") && InputPatterns.isKey("Step_1.b:c-d") && InputPatterns.isKey(String(repeating: "k", count: 128)))
        #expect(
            !InputPatterns.isKey("") && !InputPatterns.isKey("_a") && !InputPatterns.isKey("a b")
                && !InputPatterns.isKey(String(repeating: "k", count: 129)))
        #expect(
            InputPatterns.isVersion("1.0.0+build") && !InputPatterns.isVersion("+1")
                && !InputPatterns.isVersion(String(repeating: "1", count: 65)))
        #expect(
            InputPatterns.isPropertyKey("plan_2") && !InputPatterns.isPropertyKey("Plan")
                && !InputPatterns.isPropertyKey(String(repeating: "p", count: 41)))
        for ok in ["en", "eng", "en-US", "zh-Hant-TW", "de-1996"] { #expect(InputPatterns.isLocale(ok), "\(ok)") }
        for bad in ["", "e", "engl", "en-", "en--US", "en_US", "en-123456789", "é-FR"] { #expect(!InputPatterns.isLocale(bad), "\(bad)") }
        for ok in ["UTC", "America/New_York", "Etc/GMT+5", "America/Argentina/Buenos_Aires", String(repeating: "A", count: 64)] {
            #expect(InputPatterns.isTimezone(ok), "\(ok)")
        }
        for bad in ["", "/UTC", "UTC/", "America//New_York", "1UTC", "Europe/Par is", "Europe/Zürich", String(repeating: "A", count: 65)] {
            #expect(!InputPatterns.isTimezone(bad), "\(bad)")
        }
        #expect(InputPatterns.utf16Length("\u{1F600}", 2...2) && InputPatterns.codePointLength("\u{1F600}", 1...1))
    }

    @Test func CX5_httpErrorCodesAreStableSpellings() {
        let e = HTTPError(.connectionFailed, "refused")
        #expect(e.code == .connectionFailed && e.code.rawValue == "connection-failed")
        #expect(HTTPError.Code(rawValue: "timeout") == .timeout)
        #expect(e.description == "connection-failed: refused")
        // A client's switch needs a default, so a code added later compiles unchanged.
        func kind(_ c: HTTPError.Code) -> String {
            switch c {
            case .timeout, .connectionFailed, .connectionLost: "retry"
            default: "other"
            }
        }
        #expect(kind(e.code) == "retry" && kind(HTTPError.Code(rawValue: "new-kind")) == "other")
    }
}
