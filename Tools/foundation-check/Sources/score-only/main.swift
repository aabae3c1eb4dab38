import ScoreTracker

// Links the Score tracker (and Core) only.
print(String(describing: ScoreClient.self))
