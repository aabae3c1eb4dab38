// SwiftUI integration (issue 37 item 7): thin. When a step is entered and exited is decided by
// Core's portable `ViewPresence` (tested on Linux); nothing is recorded while Xcode Previews
// render (Core's `RuntimeEnvironment.isXcodePreview`).
#if canImport(SwiftUI)
    import SwiftUI
    import TrackerCore

    @available(iOS 15, macOS 12, tvOS 15, visionOS 1, *)
    private struct OnboardingStepModifier: ViewModifier {
        let stepKey: String
        let run: OnboardingRun?
        let answers: () -> [AnswerInput]?
        @State private var presence = ViewPresence()

        func body(content: Content) -> some View {
            content
                .onAppear {
                    guard presence.appear(), !RuntimeEnvironment.isXcodePreview else { return }
                    run?.enterStep(stepKey)
                }
                .onDisappear {
                    guard presence.disappear(), !RuntimeEnvironment.isXcodePreview else { return }
                    run?.exitStep(stepKey, answers: answers())
                }
        }
    }

    @available(iOS 15, macOS 12, tvOS 15, visionOS 1, *)
    extension View {
        /// Makes this view an onboarding step of `run`: `enterStep` when it appears, `exitStep`
        /// with `answers()` (read at that moment) when it disappears. Once per appearance, however
        /// many times SwiftUI calls `onAppear` while it is shown; nothing while Xcode Previews
        /// render, or when `run` is `nil`.
        public func onboardingStep(
            _ stepKey: String, run: OnboardingRun?, answers: @escaping () -> [AnswerInput]? = { nil }
        ) -> some View {
            modifier(OnboardingStepModifier(stepKey: stepKey, run: run, answers: answers))
        }
    }
#endif
