import ScoreTracker
import SwiftUI
import WidgetKit

/// A widget that records its own timeline refreshes through Score: proof that the SDKs link
/// and run inside an app extension (extension-safe API only).
struct RefreshEntry: TimelineEntry {
    let date: Date
}

struct Provider: TimelineProvider {
    func placeholder(in context: Context) -> RefreshEntry { RefreshEntry(date: Date()) }

    func getSnapshot(in context: Context, completion: @escaping (RefreshEntry) -> Void) {
        completion(RefreshEntry(date: Date()))
    }

    func getTimeline(in context: Context, completion: @escaping (Timeline<RefreshEntry>) -> Void) {
        // WidgetKit's completion is not Sendable; it is called exactly once, from the task.
        let done = OnceCompletion(call: completion)
        Task {
            if let directory = try? await Tracking.directory("score-widget") {
                let score = Tracking.score(directory: directory)
                score.setConsent(analytics: true, personalization: false, advertising: false)
                score.track("widget_refreshed")
                try? await score.flush()
            }
            // The app's identity (shared keychain access group): no second roca id, no second install.
            _ = Tracking.rocalytics()
            done.call(Timeline(entries: [RefreshEntry(date: Date())], policy: .after(Date().addingTimeInterval(3600))))
        }
    }
}

struct OnceCompletion<T>: @unchecked Sendable {
    let call: (T) -> Void
}

struct TrackerExampleWidgetView: View {
    let entry: RefreshEntry
    var body: some View { Text(entry.date, style: .time) }
}

@main
struct TrackerExampleWidget: Widget {
    var body: some WidgetConfiguration {
        StaticConfiguration(kind: "TrackerExampleWidget", provider: Provider()) { entry in
            TrackerExampleWidgetView(entry: entry)
        }
        .configurationDisplayName("Tracker example")
        .supportedFamilies([.systemSmall])
    }
}
