import PaywallTracker

// Links the paywall tracker (and Core) only.
print(String(describing: PaywallPresentationTracker.self))
