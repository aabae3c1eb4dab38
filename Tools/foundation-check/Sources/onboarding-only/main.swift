import OnboardingTracker

// Links the onboarding tracker (and Core) only.
print(String(describing: OnboardingRunTracker.self))
