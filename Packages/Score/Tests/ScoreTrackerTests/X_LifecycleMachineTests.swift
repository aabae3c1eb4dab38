import Testing

@testable import ScoreTracker

// The start-up load's, the queue writer's and the log sync's machines, driven without I/O
// (issue 28 item 3; the flush's machine is tested in S_FlushMachineTests):
//   SC178 — the load: claimed once; waited for while reading and while a quick load's check
//           runs; done after; a careful load never checks.
//   SC179 — the writer: started once per idle spell; naps through the nap table, then exits;
//           no naps where the scheduler cannot pause; a sync due first; the sync timer armed
//           once; failures back off (100 ms doubling to 30 s), diagnosed once per run; a
//           read-only store known at the load is not diagnosed again.
//   SC180 — the sync: one task at a time, another sync when appends came meanwhile; due
//           50 ms after the last one; a failure diagnosed once per run; the timer syncs only
//           when the writer is not running.
@Suite struct LifecycleMachineTests {
    @Test func SC178_loadMachine() {
        var m = LoadMachine()
        #expect(!m.loaded)
        let r1 = m.claim()
        #expect(r1 == .run)
        let r2 = m.claim()
        #expect(r2 == .wait)  // an early inspect() while the step reads
        m.merged(quick: true, checking: true)
        #expect(m.loaded && m.loadedQuickly && m.checkPending)
        let r3 = m.claim()
        #expect(r3 == .wait)
        m.checkEnded()
        #expect(m.phase == .merged(quick: true, checking: false))
        let r4 = m.claim()
        #expect(r4 == .done)

        var careful = LoadMachine()
        _ = careful.claim()
        careful.merged(quick: false, checking: true)  // only a quick load has a check
        #expect(careful.loaded && !careful.loadedQuickly && !careful.checkPending)
        let r5 = careful.claim()
        #expect(r5 == .done)
    }

    @Test func SC179_writerMachineRunsNapsAndExits() {
        var m = QueueWriterMachine(napsUs: [250, 500])
        let r6 = m.claim(hasWork: false)
        #expect(!r6)
        let r7 = m.claim(hasWork: true)
        #expect(r7)
        let r8 = m.claim(hasWork: true)
        #expect(!r8)  // one writer at a time
        let r9 = m.backlogEmpty(unsynced: false, syncWaitMs: 0, syncTimerArmed: false)
        #expect(r9 == .nap(microseconds: 250))
        m.napEnded(paused: true)
        let r10 = m.backlogEmpty(unsynced: false, syncWaitMs: 0, syncTimerArmed: false)
        #expect(r10 == .nap(microseconds: 500))
        m.tookWork()  // work came during the nap: the naps start over
        let r11 = m.backlogEmpty(unsynced: false, syncWaitMs: 0, syncTimerArmed: false)
        #expect(r11 == .nap(microseconds: 250))
        m.napEnded(paused: true)
        m.napEnded(paused: true)
        // Unsynced appends due now are synced first; not due: the timer is armed at the exit.
        let r12 = m.backlogEmpty(unsynced: true, syncWaitMs: 0, syncTimerArmed: false)
        #expect(r12 == .syncFirst)
        let r13 = m.backlogEmpty(unsynced: true, syncWaitMs: 30, syncTimerArmed: false)
        #expect(r13 == .exit(armSyncTimerMs: 30))
        #expect(m.phase == .idle && !m.running)
        let r14 = m.claim(hasWork: true)
        #expect(r14)
        let r15 = m.backlogEmpty(unsynced: true, syncWaitMs: 30, syncTimerArmed: true)
        #expect(r15 == .nap(microseconds: 250))
        m.napEnded(paused: false)  // this scheduler cannot pause: no more naps
        let r16 = m.backlogEmpty(unsynced: true, syncWaitMs: 30, syncTimerArmed: true)
        #expect(r16 == .exit(armSyncTimerMs: nil))
        let r17 = m.claim(hasWork: true)
        #expect(r17)
        let r18 = m.backlogEmpty(unsynced: false, syncWaitMs: 0, syncTimerArmed: false)
        #expect(r18 == .exit(armSyncTimerMs: nil))
    }

    @Test func SC179_writerMachineBacksOffAfterAFailure() {
        var m = QueueWriterMachine(napsUs: [])
        let r19 = m.claim(hasWork: true)
        #expect(r19)
        var delays: [Int64] = []
        var firsts: [Bool] = []
        for _ in 0..<12 {
            let (first, delay) = m.appendFailed(retryMs: 100, retryMaxMs: 30_000)
            firsts.append(first)
            delays.append(delay)
            #expect(m.failing && m.phase == .backingOff)
            let r20 = m.claim(hasWork: true)
            #expect(!r20)  // not before the retry timer
            m.retryTimerFired()
            let r21 = m.claim(hasWork: true)
            #expect(r21)
        }
        #expect(firsts == [true] + Array(repeating: false, count: 11))
        #expect(delays == [100, 200, 400, 800, 1_600, 3_200, 6_400, 12_800, 25_600, 30_000, 30_000, 30_000])
        m.appended()
        #expect(!m.failing && m.failures == 0)
        let r22 = m.appendFailed(retryMs: 100, retryMaxMs: 30_000)
        #expect(r22 == (true, 100))

        var readOnly = QueueWriterMachine(napsUs: [])
        readOnly.knownFailing()
        #expect(readOnly.failing)
        _ = readOnly.claim(hasWork: true)
        let r23 = readOnly.appendFailed(retryMs: 100, retryMaxMs: 30_000)
        #expect(r23.first == false)
    }

    @Test func SC180_syncMachine() {
        var m = QueueSyncMachine(intervalMs: 50)
        #expect(m.waitMs(now: 1_000) <= 0)  // never synced: due
        m.appended()
        #expect(m.unsynced)
        let r24 = m.claim(now: 1_000)
        #expect(r24)
        #expect(!m.unsynced && m.running)
        #expect(m.waitMs(now: 1_020) == 30)
        m.appended()
        let r25 = m.claim(now: 1_060)
        #expect(!r25)  // one task at a time: it syncs again instead
        let r26 = m.syncEnded(ok: true)
        #expect(r26 == (false, true))
        let r27 = m.syncEnded(ok: false)
        #expect(r27 == (true, false))
        #expect(!m.running && m.failing)
        m.appended()
        let r28 = m.claim(now: 1_200)
        #expect(r28)
        let r29 = m.syncEnded(ok: false)
        #expect(r29 == (false, false))  // the same run of failures
        let r30 = m.claim(now: 1_300)
        #expect(r30)
        let r31 = m.syncEnded(ok: true)
        #expect(r31 == (false, false))
        #expect(!m.failing)
        // The idle writer's timer.
        m.appended()
        m.armTimer()
        #expect(m.timerArmed)
        let r32 = m.timerFired(writerRunning: true)
        #expect(!r32)  // the running writer syncs before it idles
        #expect(!m.timerArmed)
        m.armTimer()
        let r33 = m.timerFired(writerRunning: false)
        #expect(r33)
        _ = m.claim(now: 1_400)
        m.armTimer()
        let r34 = m.timerFired(writerRunning: false)
        #expect(!r34)  // nothing unsynced
    }
}
