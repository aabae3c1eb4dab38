import CollectorKit
import Foundation
import Testing
import TrackerCore
import TrackerCoreTestKit

/// Onboarding-run contract section 13.4: the three worked examples, from their example runs,
/// ingested through the collector as they were generated (one send per entry plus one on
/// completion, each received 300 ms after it left), funnel read at 2026-01-12T00:00:00.000Z.
@Suite struct FunnelTests {
    /// One expected row: label, still in the flow (nil = —), saw it, skipped (nil = —), quit here, quit rate (nil = —).
    struct Row: Equatable, CustomStringConvertible {
        var label: String, still: Int?, saw: Int, skipped: Int?, quit: Int, rate: Int?
        var description: String {
            "\(label) \(still.map(String.init) ?? "—") \(saw) \(skipped.map(String.init) ?? "—") \(quit) \(rate.map { "\($0)%" } ?? "—")"
        }
    }

    static let now = Fixtures.ms("2026-01-12T00:00:00.000Z")

    /// Ingests the example runs `prefix-r1…rN` and returns the collector's funnel for (key, "1").
    func funnel(_ prefix: String, runs: Int, key: String) throws -> Funnel {
        let c = try Fixtures.collector()
        for i in 1...runs {
            let final = try Fixtures.example("onboarding-run/\(prefix)-r\(i).json")
            let seq = final["seq"]!.intValue!
            if seq > 1 {
                // The first send: the first entry only, still open, received 300 ms after it left.
                let started = final["started_at"]!
                let first = final["steps"]!.arrayValue![0].with("exited_at", .null).with("answers", .array([]))
                let firstSend = final.with("seq", 1).with("status", "in_progress").with("completed_at", .null)
                    .with("sent_at", started).with("steps", .array([first]))
                let v = c.ingestOnboardingRun(
                    body: Fixtures.bytes(firstSend), sender: "device", receivedAtMs: Fixtures.ms(started.stringValue!) + 300)
                #expect(v.outcome == .accepted, "\(prefix)-r\(i) first send: \(v.reason ?? "")")
            }
            let v = c.ingestOnboardingRun(
                body: Fixtures.bytes(final), sender: "device", receivedAtMs: Fixtures.ms(final["sent_at"]!.stringValue!) + 300)
            #expect(v.outcome == .accepted, "\(prefix)-r\(i): \(v.reason ?? "")")
        }
        let funnels = try c.funnels(nowMs: Self.now)
        #expect(funnels.count == 1)
        let f = try #require(funnels.first)
        #expect(f.key == key && f.version == "1")
        return f
    }

    func rows(_ f: Funnel) -> [Row] {
        f.positions.flatMap { p in
            [Row(label: p.label, still: p.stillInFlow, saw: p.sawIt, skipped: p.skipped, quit: p.quitHere, rate: p.quitRatePercent)]
                + p.alternatives.map {
                    Row(label: "↳ " + $0.stepKey, still: nil, saw: $0.sawIt, skipped: nil, quit: $0.quitHere, rate: $0.quitRatePercent)
                }
        }
    }

    @Test func derivedSkip_13_4_1() throws {
        let f = try funnel("funnel-derived-skip", runs: 6, key: "example-skip")
        let expected: [Row] = [
            Row(label: "welcome", still: 6, saw: 6, skipped: 0, quit: 1, rate: 17),
            Row(label: "goal", still: 4, saw: 4, skipped: 0, quit: 0, rate: 0),
            Row(label: "experience", still: 4, saw: 2, skipped: 2, quit: 1, rate: 50),
            Row(label: "permissions", still: 3, saw: 2, skipped: 1, quit: 1, rate: 50),
            Row(label: "summary", still: 2, saw: 2, skipped: 0, quit: 0, rate: 0),
        ]
        #expect(rows(f) == expected)
        let totals: [Int] = [f.started, f.completed, f.quit, f.stillInProgress]
        #expect(totals == [6, 2, 3, 1])
    }

    @Test func alternativeScreens_13_4_2() throws {
        let f = try funnel("funnel-alternative-screens", runs: 5, key: "example-slot")
        let expected: [Row] = [
            Row(label: "welcome", still: 5, saw: 5, skipped: 0, quit: 0, rate: 0),
            Row(label: "goal", still: 5, saw: 5, skipped: 0, quit: 1, rate: 20),
            Row(label: "slot plan", still: 4, saw: 4, skipped: 0, quit: 1, rate: 25),
            Row(label: "↳ plan_quick", still: nil, saw: 2, skipped: nil, quit: 0, rate: 0),
            Row(label: "↳ plan_detailed", still: nil, saw: 2, skipped: nil, quit: 1, rate: 50),
            Row(label: "summary", still: 3, saw: 3, skipped: 0, quit: 0, rate: 0),
        ]
        #expect(rows(f) == expected)
        let totals: [Int] = [f.started, f.completed, f.quit, f.stillInProgress]
        #expect(totals == [5, 3, 2, 0])
    }

    @Test func mergeBack_13_4_3() throws {
        let f = try funnel("funnel-merge-back", runs: 5, key: "example-merge")
        let expected: [Row] = [
            Row(label: "welcome", still: 5, saw: 5, skipped: 0, quit: 0, rate: 0),
            Row(label: "goal", still: 5, saw: 5, skipped: 0, quit: 0, rate: 0),
            Row(label: "slot routine", still: 5, saw: 5, skipped: 0, quit: 2, rate: 40),
            Row(label: "↳ routine_a1", still: nil, saw: 2, skipped: nil, quit: 1, rate: 50),
            Row(label: "↳ routine_b1", still: nil, saw: 3, skipped: nil, quit: 1, rate: 33),
            Row(label: "routine_a2", still: 3, saw: 1, skipped: 2, quit: 0, rate: 0),
            Row(label: "summary", still: 3, saw: 3, skipped: 0, quit: 0, rate: 0),
        ]
        #expect(rows(f) == expected)
        let totals: [Int] = [f.started, f.completed, f.quit, f.stillInProgress]
        #expect(totals == [5, 3, 2, 0])
        // The rendered report carries the same figures.
        let text = f.rendered()
        #expect(text.contains("Totals: Started 5 · Completed 3 · Quit 2 · Still in progress 0"))
        #expect(text.contains("↳ routine_b1"))
    }

    @Test func receiveTimesFollowTheFirstAndLastAcceptedSnapshot() throws {
        let c = try Fixtures.collector()
        let r5 = try Fixtures.example("onboarding-run/funnel-derived-skip-r5.json")
        _ = c.ingestOnboardingRun(body: Fixtures.bytes(r5), sender: "d", receivedAtMs: Fixtures.ms("2026-01-11T23:00:00.300Z"))
        let run = try #require(try c.storedRuns().first)
        #expect(run.firstReceivedAtMs == Fixtures.ms("2026-01-11T23:00:00.300Z"))
        // Exactly 24 h after the last receive the run counts as quit (inclusive), a millisecond before it does not.
        let at = run.lastReceivedAtMs + Collector.quitAfterMs
        #expect(try c.funnels(nowMs: at - 1).first?.quit == 0)
        #expect(try c.funnels(nowMs: at).first?.quit == 1)
    }

    @Test func truncatedRunHasNoLastSeen() throws {
        let c = try Fixtures.collector()
        let t = try Fixtures.example("onboarding-run/truncated.json")
        // Re-labelled in progress (still truncated, last entry closed: allowed by the truncated form of rule 6).
        let open = t.with("status", "in_progress").with("completed_at", .null).with("seq", 501)
        #expect(c.ingestOnboardingRun(body: Fixtures.bytes(open), sender: "d", receivedAtMs: 0).outcome == .accepted)
        let f = try #require(try c.funnels(nowMs: Collector.quitAfterMs).first)
        #expect(f.quit == 1)
        #expect(f.positions.allSatisfy { $0.quitHere == 0 })
    }
}
