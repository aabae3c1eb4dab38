import Synchronization
import TrackerCore

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// The lines the worker prints (one per line, space-separated fields). The harness reads them.
///
/// - `READY` — the tracker was created, its stored state read (and, for onboarding, resumed).
/// - `P <n>` — persist point n: everything recorded so far has been written durably.
/// - `R <runId> <lastStepKey>` — onboarding: a run was resumed.
/// - `S <runId>` — onboarding: a run was started.
/// - `D <code>` — a diagnostic was reported (codes only; messages go to standard error).
/// - `SP <id,id,…>` — Score: add records of these event ids are durable.
/// - `SX <id,id,…>` — Score: removal records of these event ids are durable.
/// - `SC <id,id,…>` — Score: the queue log was compacted to exactly these ids.
/// - `T <seq> <ns>` — Score (`score-reclaim`): `track()` of the event with prop `seq` returned at
///   that `CLOCK_MONOTONIC` time.
/// - `END` — the scripted steps are done; the process keeps delivering until killed.
enum WorkerLine {
    static let ready = "READY"
    static let end = "END"
}

/// Writes whole lines to standard output with `write(2)`, unbuffered, one writer at a time, so
/// that every line printed before a SIGKILL reaches the harness intact.
enum Out {
    private static let lock = Locked(())

    static func line(_ text: String) {
        var bytes = Array(text.utf8)
        bytes.append(10)
        lock.withLock { _ in
            var written = 0
            while written < bytes.count {
                let n = bytes.withUnsafeBytes { write(1, $0.baseAddress! + written, bytes.count - written) }
                if n < 0 {
                    if errno == EINTR { continue }
                    return
                }
                written += n
            }
        }
    }
}

/// Waits forever (the harness kills the process).
enum Parking {
    static func park() async {
        await withUnsafeContinuation { (_: UnsafeContinuation<Void, Never>) in }
    }
}

/// Known test secrets: the harness scans every output for them.
enum Secrets {
    static let publishableKey = "pk_SECRET_crashworker_7f3a"
    static let token = "tok_SECRET_crashworker_91bd"
    static let email = "fan@example.com"
}
