// The taxonomy as static members (issue 37 item 10), so that a call reads `score.track(.pollVote)`.
// Written by hand beside the generated `Events.swift`: SC199 fails when a schema is added without
// its member here.

extension EventDefinition {
    /// `ad_impression` (requires advertising): ``Events/AdImpression``.
    public static let adImpression = Events.shared.AdImpression
    /// `article_read` (requires analytics): ``Events/ArticleRead``.
    public static let articleRead = Events.shared.ArticleRead
    /// `minigame_play` (requires analytics): ``Events/MinigamePlay``.
    public static let minigamePlay = Events.shared.MinigamePlay
    /// `motm_submit` (requires analytics): ``Events/MotmSubmit``.
    public static let motmSubmit = Events.shared.MotmSubmit
    /// `player_rating` (requires analytics): ``Events/PlayerRating``.
    public static let playerRating = Events.shared.PlayerRating
    /// `poll_vote` (requires analytics): ``Events/PollVote``.
    public static let pollVote = Events.shared.PollVote
    /// `product_view` (requires analytics): ``Events/ProductView``.
    public static let productView = Events.shared.ProductView
    /// `profile_favourite_team` (requires analytics): ``Events/ProfileFavouriteTeam``.
    public static let profileFavouriteTeam = Events.shared.ProfileFavouriteTeam
    /// `social_share` (requires analytics): ``Events/SocialShare``.
    public static let socialShare = Events.shared.SocialShare
    /// `sports_prediction` (requires analytics): ``Events/SportsPrediction``.
    public static let sportsPrediction = Events.shared.SportsPrediction
    /// `streak_tick` (requires analytics): ``Events/StreakTick``.
    public static let streakTick = Events.shared.StreakTick
    /// `video_watch` (requires analytics): ``Events/VideoWatch``.
    public static let videoWatch = Events.shared.VideoWatch
}
