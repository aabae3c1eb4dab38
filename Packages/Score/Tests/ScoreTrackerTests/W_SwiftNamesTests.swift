import Testing
import TrackerCore
import TrackerCoreTestKit

@testable import ScoreTracker

/// Issue 37 item 10 (Score's part): Swift-native spellings first; the integration guide's keep
/// compiling (GuideSnippets, run by `guideSnippetsRun`).
@Suite struct W_SwiftNamesTests {
    /// SC199 — the Swift-native spellings send exactly what the guide's spellings send. Deprecated:
    /// the guide's spellings are (issue 37 item 10).
    @available(*, deprecated)
    @Test func SC199_swiftNativeSpellingsEqualTheGuides() async {
        func run(native: Bool) async -> (bodies: [String], inspect: String) {
            let h = Harness()
            let pii: PiiOptions =
                native
                ? .classify([PiiRule(field: "email", action: .hash), PiiRule(field: "phone", action: .redact)])
                : .Classify(rules: [PiiRule(field: "email", action: .hash_), PiiRule(field: "phone", action: .redact)])
            let c = h.client(pii: pii, granted: true)
            if native {
                c.track(.pollVote, properties: ["pollId": "motm-r12", "email": "fan@example.com"])
                c.track(.adImpression, delivery: .critical)
                c.track("custom_badge_tap", properties: ["badgeId": "b1"], requires: [.analytics])
                c.trackAdvertising("ad_click", properties: ["phone": "+33"])
                c.screen("match_centre", properties: ["tab": "live"])
            } else {
                c.track(Events.shared.PollVote, props: ["pollId": "motm-r12", "email": "fan@example.com"])
                c.track(Events.shared.AdImpression, delivery: .critical)
                c.track("custom_badge_tap", props: ["badgeId": "b1"], requires: [.analytics])
                c.trackAdvertising("ad_click", props: ["phone": "+33"])
                c.screen("match_centre", props: ["tab": "live"])
            }
            await h.flush(c)
            return (h.tx.eventRequests.map(\.bodyText), native ? c.inspectJSON() : c.inspectJson())
        }
        let native = await run(native: true)
        let guide = await run(native: false)
        #expect(native.bodies.count == 1)
        #expect(native.bodies == guide.bodies)
        #expect(native.inspect == guide.inspect)
        #expect(native.bodies.first?.contains(#""email":"h:141e28bb""#) == true)
        #expect(PiiAction.hash_ == .hash)
        #expect(PiiOptions.Denylist(keys: ["a"]) == .denylist(["a"]))
        // Every definition of the taxonomy has its static member and the guide's instance member.
        let statics: [EventDefinition] = [
            .adImpression, .articleRead, .minigamePlay, .motmSubmit, .playerRating, .pollVote, .productView,
            .profileFavouriteTeam, .socialShare, .sportsPrediction, .streakTick, .videoWatch,
        ]
        #expect(statics == Events.shared.all)
        #expect(statics == EventDefinition.all)
        let guideMembers: [EventDefinition] = [
            Events.shared.AdImpression, Events.shared.ArticleRead, Events.shared.MinigamePlay, Events.shared.MotmSubmit,
            Events.shared.PlayerRating, Events.shared.PollVote, Events.shared.ProductView, Events.shared.ProfileFavouriteTeam,
            Events.shared.SocialShare, Events.shared.SportsPrediction, Events.shared.StreakTick, Events.shared.VideoWatch,
        ]
        #expect(guideMembers == statics)
    }
}
