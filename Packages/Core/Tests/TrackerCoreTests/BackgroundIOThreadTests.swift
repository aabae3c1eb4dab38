import Foundation
import Testing
import TrackerCore
import TrackerCoreTestKit

// Task executors exist from macOS 15 / iOS 18 / tvOS 18 / visionOS 2 (the package floors are
// lower): every test here is marked so (a suite itself cannot be).
@Suite struct BackgroundIOThreadTests {
    @available(macOS 15.0, iOS 18.0, tvOS 18.0, visionOS 2.0, *)
    @Test func stepsSpawnedForIORunOnTheIOThreadAndStayThereAcrossAwaits() async {
        let io = BackgroundIOThread.shared
        #expect(!io.isCurrent)
        let seen: [Bool] = await withCheckedContinuation { c in
            SystemScheduler.shared.spawnIO {
                var seen = [io.isCurrent]
                await Task.yield()
                seen.append(io.isCurrent)
                // Nonisolated async work awaited by the step runs there too.
                seen.append(await Self.isOnIOThread())
                c.resume(returning: seen)
            }
        }
        #expect(seen == [true, true, true])
    }

    private static func isOnIOThread() async -> Bool { BackgroundIOThread.shared.isCurrent }

    @available(macOS 15.0, iOS 18.0, tvOS 18.0, visionOS 2.0, *)
    @Test func aPauseSuspendsTheStepOnTheIOThreadAndIsRefusedElsewhere() async {
        // Off the I/O thread the system scheduler does not pause (nor does the manual clock).
        #expect(await SystemScheduler.shared.pauseIO(microseconds: 1) == false)
        #expect(await ManualClock().pauseIO(microseconds: 1) == false)
        let result: (Bool, Bool) = await withCheckedContinuation { c in
            SystemScheduler.shared.spawnIO {
                let paused = await SystemScheduler.shared.pauseIO(microseconds: 1)
                c.resume(returning: (paused, BackgroundIOThread.shared.isCurrent))
            }
        }
        #expect(result == (true, true))
    }

    @available(macOS 15.0, iOS 18.0, tvOS 18.0, visionOS 2.0, *)
    @Test func otherStepsRunWhileOneIsPaused() async {
        // A thread of the test's own: the first step stays paused after the test.
        let io = BackgroundIOThread(name: "test.io")
        let ended = Locked(false)
        await withCheckedContinuation { (paused: CheckedContinuation<Void, Never>) in
            Task.detached(executorPreference: io) {
                paused.resume()
                await io.pause(microseconds: 600_000_000)
                ended.withLock { $0 = true }
            }
        }
        // Enqueued once the first step's job has run up to its pause (jobs run one at a time).
        let ran: Bool = await withCheckedContinuation { c in
            Task.detached(executorPreference: io) { c.resume(returning: io.isCurrent) }
        }
        #expect(ran)
        #expect(!ended.withLock { $0 })
    }
}
