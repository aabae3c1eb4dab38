import CTrackerCurlShim

#if canImport(Darwin)
    import Foundation
#elseif canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif
#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// `curl_global_init`, once per process, before the first handle is made.
private let curlGlobalInit: Bool = {
    curl_global_init(Int(CURL_GLOBAL_DEFAULT)) == CURLE_OK
}()

/// One request in flight: its easy handle, the response being collected and the continuation
/// to resume.
///
/// Thread confinement (why `@unchecked Sendable` is sound):
/// - `continuation` is written once by the sending task before the transfer is submitted, and
///   read afterwards only by whoever completes it (the loop thread, or `submit` when it refuses).
/// - `cancelRequested` and `submitted` are read and written only under the engine's lock.
/// - `status`, `responseHeaders`, `body` and `tooLarge` are touched only by libcurl callbacks
///   on the loop thread (and by `prepare` before submission).
final class CurlTransfer: @unchecked Sendable {
    let handle: UnsafeMutableRawPointer
    let maxResponseBytes: Int
    var headerList: UnsafeMutablePointer<curl_slist>?
    var continuation: UnsafeContinuation<HTTPResponse, any Error>?
    var cancelRequested = false
    var submitted = false
    var responseHeaders: [HTTPHeader] = []
    var body: [UInt8] = []
    var tooLarge = false

    init(handle: UnsafeMutableRawPointer, maxResponseBytes: Int) {
        self.handle = handle
        self.maxResponseBytes = maxResponseBytes
    }
}

/// The `curl_multi` loop behind ``CurlTransport``.
///
/// The multi handle is used only on the loop thread, except for `curl_multi_wakeup`, which
/// libcurl documents as callable from any thread. Everything shared with other threads lives in
/// `state`, behind a mutex; that is why the class is `@unchecked Sendable`.
///
/// The engine is also a `TaskExecutor` (``CurlTransport/taskExecutor``): jobs enqueued on it run
/// on the loop thread between two rounds of `curl_multi_perform`, so a task that prefers it
/// submits its transfers and is resumed by their completion without any thread switch. Once the
/// loop has ended, jobs go to the global concurrent executor instead; none is ever dropped.
final class CurlEngine: @unchecked Sendable {
    private struct State {
        var adds: [CurlTransfer] = []
        var cancels: [CurlTransfer] = []
        /// Jobs of tasks that prefer this engine as their executor, in arrival order.
        var jobs: [UnownedJob] = []
        var idleHandles: [UnsafeMutableRawPointer] = []
        var shutdown = false
        /// The loop has ended: later jobs go to the global executor, handles are no longer pooled.
        var finished = false
        /// The loop sleeps in (or is about to enter) `curl_multi_poll` and must be woken for new
        /// work. Set only by the loop, under the lock, once it found the inbox empty; cleared by
        /// the first submitter that wakes it and by the loop's next drain. While it is false the
        /// loop is running and will look at the inbox before it sleeps, so nobody needs to wake it.
        var sleeping = false
        /// The timeout of the loop's latest sleep in `curl_multi_poll` (see ``pollTimeoutMs(activeTransfers:)``).
        var sleepTimeoutMs: Int32 = 0
    }

    private let multi: UnsafeMutableRawPointer?
    private let options: CurlTransport.Options
    private let spinNs: UInt64
    private let state = Locked(State())
    /// Set (under the lock) when the inbox gains work; read lock-free while spinning.
    private let inboxSignal = AtomicCell(0)

    /// `start: false` (the libcurl check failed) makes an engine that refuses everything and
    /// starts no thread.
    init(options: CurlTransport.Options, start: Bool = true) {
        self.options = options
        self.spinNs = UInt64(max(0, options.idleSpinMicroseconds)) * 1000
        let multi = start && curlGlobalInit ? curl_multi_init() : nil
        self.multi = multi
        if let multi {
            _ = ctracker_multi_setopt_long(multi, CURLMOPT_MAX_TOTAL_CONNECTIONS, max(1, options.maxConnections))
            _ = ctracker_multi_setopt_long(multi, CURLMOPT_MAX_HOST_CONNECTIONS, max(1, options.maxConnectionsPerHost))
            _ = ctracker_multi_setopt_long(multi, CURLMOPT_MAXCONNECTS, max(1, options.maxConnections))
            NativeThread.start { [self] in self.run() }
        } else {
            state.withLock {
                $0.shutdown = true
                $0.finished = true
            }
        }
    }

    // MARK: - Any thread

    /// Makes a transfer for `request` on a pooled (or new) easy handle, options set.
    func prepare(_ request: HTTPRequest) throws(HTTPError) -> CurlTransfer {
        let pooled: UnsafeMutableRawPointer?? = state.withLock { s in
            if s.shutdown { return .none }
            return .some(s.idleHandles.popLast())
        }
        guard let pooled else { throw HTTPError(.shutdown, "the transport was shut down") }
        guard let handle = pooled ?? makeHandle() else { throw HTTPError(.other, "libcurl could not make an easy handle") }
        let transfer = CurlTransfer(handle: handle, maxResponseBytes: max(0, request.maxResponseBytes))
        if !configure(transfer, request) {
            discard(transfer)
            throw HTTPError(.other, "libcurl refused an option")
        }
        return transfer
    }

    /// Hands a prepared transfer (its continuation set) to the loop.
    func submit(_ transfer: CurlTransfer) {
        let refusal: HTTPError? = state.withLock { s in
            if transfer.cancelRequested { return HTTPError(.cancelled, "the task was cancelled") }
            if s.shutdown { return HTTPError(.shutdown, "the transport was shut down") }
            transfer.submitted = true
            s.adds.append(transfer)
            signal(&s)
            return nil
        }
        if let refusal {
            let continuation = transfer.continuation
            transfer.continuation = nil
            recycle(transfer)
            continuation?.resume(throwing: refusal)
        }
    }

    /// Aborts `transfer` if it is still running (called from a task cancellation handler).
    func cancel(_ transfer: CurlTransfer) {
        state.withLock { s in
            transfer.cancelRequested = true
            guard transfer.submitted, !s.shutdown else { return }
            s.cancels.append(transfer)
            signal(&s)
        }
    }

    /// Asks the loop to stop; it fails what is in flight and releases everything.
    func shutdown() {
        state.withLock { s in
            guard !s.shutdown else { return }
            s.shutdown = true
            signal(&s)
        }
    }

    /// Tells the loop that the inbox has work (call under the lock, after adding it). The loop is
    /// woken with `curl_multi_wakeup` only when it sleeps; while it runs it looks at the inbox
    /// anyway before sleeping. Waking under the lock also keeps the wake-up away from a closed
    /// multi handle: `sleeping` is never true once the loop has left for its clean-up.
    private func signal(_ s: inout State) {
        inboxSignal.store(1)
        if s.sleeping {
            s.sleeping = false
            if let multi { _ = curl_multi_wakeup(multi) }
        }
    }

    // MARK: - Handle set-up

    /// A new easy handle with the options every request shares (set once; pooled handles keep
    /// them because they are never reset).
    private func makeHandle() -> UnsafeMutableRawPointer? {
        guard let h = curl_easy_init() else { return nil }
        var ok = true
        func check(_ code: CURLcode) { if code != CURLE_OK { ok = false } }
        check(ctracker_easy_setopt_string(h, CURLOPT_PROTOCOLS_STR, "http,https"))
        check(ctracker_easy_setopt_string(h, CURLOPT_REDIR_PROTOCOLS_STR, "http,https"))
        check(ctracker_easy_setopt_long(h, CURLOPT_FOLLOWLOCATION, 0))
        check(ctracker_easy_setopt_long(h, CURLOPT_NOSIGNAL, 1))
        // TLS verification is always on; there is deliberately no way to turn it off.
        check(ctracker_easy_setopt_long(h, CURLOPT_SSL_VERIFYPEER, 1))
        check(ctracker_easy_setopt_long(h, CURLOPT_SSL_VERIFYHOST, 2))
        if let agent = options.userAgent {
            check(ctracker_easy_setopt_string(h, CURLOPT_USERAGENT, agent))
        }
        if let pem = options.trustAnchorsPEM {
            // The fallback trust store: these CA certificates replace the platform's (libcurl
            // copies the blob). Verification stays on.
            pem.withUnsafeBytes { raw in
                check(ctracker_easy_setopt_cainfo_blob(h, raw.baseAddress, raw.count))
            }
        }
        check(ctracker_easy_setopt_data_cb(h, CURLOPT_WRITEFUNCTION, curlWriteCallback))
        check(ctracker_easy_setopt_data_cb(h, CURLOPT_HEADERFUNCTION, curlHeaderCallback))
        guard ok else {
            curl_easy_cleanup(h)
            return nil
        }
        return h
    }

    /// Sets every per-request option. Each one is set on every request (to its neutral value
    /// when unused) so nothing carries over from the handle's previous request.
    private func configure(_ transfer: CurlTransfer, _ request: HTTPRequest) -> Bool {
        let h = transfer.handle
        var ok = true
        func check(_ code: CURLcode) { if code != CURLE_OK { ok = false } }

        check(ctracker_easy_setopt_string(h, CURLOPT_URL, request.url))
        let total = max(1, request.timeoutMs)
        let connect = max(1, min(request.connectTimeoutMs ?? total, total))
        check(ctracker_easy_setopt_long(h, CURLOPT_TIMEOUT_MS, Int(clamping: total)))
        check(ctracker_easy_setopt_long(h, CURLOPT_CONNECTTIMEOUT_MS, Int(clamping: connect)))
        // Lets libcurl refuse early when Content-Length already says too much (0 = no limit;
        // the write callback enforces the cap in every case).
        check(ctracker_easy_setopt_off(h, CURLOPT_MAXFILESIZE_LARGE, curl_off_t(transfer.maxResponseBytes)))
        check(ctracker_easy_setopt_long(h, CURLOPT_NOBODY, 0))
        check(ctracker_easy_setopt_string(h, CURLOPT_CUSTOMREQUEST, nil))

        let method = request.method
        if let body = request.body {
            check(ctracker_easy_setopt_off(h, CURLOPT_POSTFIELDSIZE_LARGE, curl_off_t(body.count)))
            if body.isEmpty {
                check(ctracker_easy_setopt_string(h, CURLOPT_COPYPOSTFIELDS, ""))
            } else {
                body.withUnsafeBytes { raw in
                    check(ctracker_easy_setopt_pointer(h, CURLOPT_COPYPOSTFIELDS, UnsafeMutableRawPointer(mutating: raw.baseAddress)))
                }
            }
            if method != "POST" { check(ctracker_easy_setopt_string(h, CURLOPT_CUSTOMREQUEST, method)) }
        } else {
            switch method {
            case "GET": check(ctracker_easy_setopt_long(h, CURLOPT_HTTPGET, 1))
            case "HEAD": check(ctracker_easy_setopt_long(h, CURLOPT_NOBODY, 1))
            case "POST":
                check(ctracker_easy_setopt_off(h, CURLOPT_POSTFIELDSIZE_LARGE, 0))
                check(ctracker_easy_setopt_string(h, CURLOPT_COPYPOSTFIELDS, ""))
            default:
                check(ctracker_easy_setopt_long(h, CURLOPT_HTTPGET, 1))
                check(ctracker_easy_setopt_string(h, CURLOPT_CUSTOMREQUEST, method))
            }
        }

        var list: UnsafeMutablePointer<curl_slist>?
        var sawExpect = false
        for header in request.headers {
            if !sawExpect, header.name.utf8.count == 6, header.name.lowercased() == "expect" { sawExpect = true }
            // "Name;" is libcurl's spelling of a header with an empty value.
            let line = header.value.isEmpty ? "\(header.name);" : "\(header.name): \(header.value)"
            guard let next = curl_slist_append(list, line) else {
                ok = false
                break
            }
            list = next
        }
        if !sawExpect, request.body != nil, let next = curl_slist_append(list, "Expect:") {
            // No `Expect: 100-continue` round trip for larger bodies.
            list = next
        }
        transfer.headerList = list
        check(ctracker_easy_setopt_pointer(h, CURLOPT_HTTPHEADER, list.map { UnsafeMutableRawPointer($0) }))

        let context = Unmanaged.passUnretained(transfer).toOpaque()
        check(ctracker_easy_setopt_pointer(h, CURLOPT_WRITEDATA, context))
        check(ctracker_easy_setopt_pointer(h, CURLOPT_HEADERDATA, context))
        return ok
    }

    /// Returns the transfer's handle to the pool (keeping its shared options) and frees its
    /// header list; past the pool's size the handle is closed.
    private func recycle(_ transfer: CurlTransfer) {
        let h = transfer.handle
        // No dangling pointers stay behind in a pooled handle.
        _ = ctracker_easy_setopt_pointer(h, CURLOPT_HTTPHEADER, nil)
        _ = ctracker_easy_setopt_pointer(h, CURLOPT_WRITEDATA, nil)
        _ = ctracker_easy_setopt_pointer(h, CURLOPT_HEADERDATA, nil)
        freeHeaderList(transfer)
        let keep = state.withLock { s in
            guard !s.finished, s.idleHandles.count < options.pooledHandles else { return false }
            s.idleHandles.append(transfer.handle)
            return true
        }
        if !keep { curl_easy_cleanup(h) }
    }

    /// Closes the transfer's handle instead of pooling it (after a failed set-up).
    private func discard(_ transfer: CurlTransfer) {
        curl_easy_cleanup(transfer.handle)
        freeHeaderList(transfer)
    }

    private func freeHeaderList(_ transfer: CurlTransfer) {
        if let list = transfer.headerList {
            curl_slist_free_all(list)
            transfer.headerList = nil
        }
    }

    // MARK: - Loop thread

    private func run() {
        guard let multi else { return }
        ctracker_name_current_thread("tracker.curl")
        var active: [UnsafeMutableRawPointer: CurlTransfer] = [:]
        var adds: [CurlTransfer] = []
        var cancels: [CurlTransfer] = []
        var jobs: [UnownedJob] = []
        var stop = false
        var running: Int32 = 0
        var easy: UnsafeMutableRawPointer?
        var result = CURLE_OK

        while true {
            state.withLock { s in
                swap(&adds, &s.adds)
                swap(&cancels, &s.cancels)
                swap(&jobs, &s.jobs)
                stop = s.shutdown
                s.sleeping = false
                inboxSignal.storeRelaxed(0)
            }
            if !jobs.isEmpty {
                // One batch per round: a task that keeps re-enqueueing itself cannot starve the
                // transfers. What the batch submits is picked up right away, so a request made
                // by a job is on the wire before the loop next sleeps; jobs enqueued by the batch
                // wait for the next round (and keep the loop from sleeping).
                runJobs(jobs)
                jobs.removeAll(keepingCapacity: true)
                state.withLock { s in
                    adds.append(contentsOf: s.adds)
                    s.adds.removeAll(keepingCapacity: true)
                    cancels.append(contentsOf: s.cancels)
                    s.cancels.removeAll(keepingCapacity: true)
                    stop = s.shutdown
                    inboxSignal.storeRelaxed(s.jobs.isEmpty ? 0 : 1)
                }
            }
            for transfer in adds {
                if curl_multi_add_handle(multi, transfer.handle) == CURLM_OK {
                    active[transfer.handle] = transfer
                } else {
                    finish(transfer, .failure(HTTPError(.other, "curl_multi_add_handle failed")))
                }
            }
            adds.removeAll(keepingCapacity: true)
            for transfer in cancels {
                guard let current = active[transfer.handle], current === transfer else { continue }
                active[transfer.handle] = nil
                curl_multi_remove_handle(multi, transfer.handle)
                finish(transfer, .failure(HTTPError(.cancelled, "the task was cancelled; the transfer was aborted")))
            }
            cancels.removeAll(keepingCapacity: true)
            if stop { break }

            curl_multi_perform(multi, &running)
            var completed = false
            while ctracker_multi_next_done(multi, &easy, &result) == 1 {
                guard let handle = easy, let transfer = active.removeValue(forKey: handle) else { continue }
                curl_multi_remove_handle(multi, handle)
                complete(transfer, result)
                completed = true
            }
            if completed, active.isEmpty, spinNs > 0 { spinForWork() }
            // libcurl shortens the timeout to its own next deadline (transfer timeouts). With
            // nothing in flight there is no deadline: the loop sleeps until work wakes it.
            let timeout = Self.pollTimeoutMs(activeTransfers: active.count)
            let sleep = state.withLock { s in
                guard s.adds.isEmpty, s.cancels.isEmpty, s.jobs.isEmpty, !s.shutdown else { return false }
                s.sleeping = true
                s.sleepTimeoutMs = timeout
                return true
            }
            if sleep { curl_multi_poll(multi, nil, 0, timeout, nil) }
        }

        // Failing the transfers resumes their tasks; those preferring this engine land in
        // `jobs`, which are handed on below with any that arrived after the last round.
        for (handle, transfer) in active {
            curl_multi_remove_handle(multi, handle)
            finish(transfer, .failure(HTTPError(.shutdown, "the transport was shut down")))
        }
        let (lateAdds, lateJobs, idle) = state.withLock { s in
            s.finished = true
            s.cancels = []
            // Empty in practice: `submit` refuses once `shutdown` is set.
            let lateAdds = s.adds
            s.adds = []
            let lateJobs = s.jobs
            s.jobs = []
            let idle = s.idleHandles
            s.idleHandles = []
            return (lateAdds, lateJobs, idle)
        }
        for transfer in lateAdds { finish(transfer, .failure(HTTPError(.shutdown, "the transport was shut down"))) }
        for handle in idle { curl_easy_cleanup(handle) }
        curl_multi_cleanup(multi)
        for job in lateJobs { forward(job) }
    }

    /// Whether the loop sleeps (or is about to) in `curl_multi_poll`, that sleep's timeout, and
    /// whether the loop has ended: what the tests of the idle wake-up logic look at.
    var loopState: (sleeping: Bool, timeoutMs: Int32, finished: Bool) {
        state.withLock { ($0.sleeping, $0.sleepTimeoutMs, $0.finished) }
    }

    /// How long the loop may sleep in `curl_multi_poll` when its inbox is empty.
    ///
    /// With transfers in flight, one second at most (libcurl shortens it to its own next
    /// deadline). With none, libcurl has no deadline of its own and the loop waits until a
    /// submitter, a cancellation, an executor job or `shutdown` wakes it (`curl_multi_wakeup`):
    /// an idle transport wakes no thread. (`Int32.max` ms is about 24.8 days; a spurious return
    /// only costs one more round.)
    static func pollTimeoutMs(activeTransfers: Int) -> Int32 {
        activeTransfers > 0 ? 1000 : Int32.max
    }

    /// Runs jobs of tasks preferring this engine, on the loop thread.
    private func runJobs(_ jobs: [UnownedJob]) {
        guard #available(macOS 15.0, iOS 18.0, watchOS 11.0, tvOS 18.0, visionOS 2.0, *) else {
            preconditionFailure("jobs arrive only through the TaskExecutor conformance")
        }
        let executor = asUnownedTaskExecutor()
        for job in jobs { job.runSynchronously(on: executor) }
    }

    /// Hands a job to the global concurrent executor (after the loop has ended). The task keeps
    /// its preference for this engine, so each of its later jobs comes back here and is handed
    /// on the same way.
    private func forward(_ job: UnownedJob) {
        guard #available(macOS 15.0, iOS 18.0, watchOS 11.0, tvOS 18.0, visionOS 2.0, *) else {
            preconditionFailure("jobs arrive only through the TaskExecutor conformance")
        }
        globalConcurrentExecutor.enqueue(ExecutorJob(job))
    }

    /// Right after the last transfer finished, a sequential caller usually submits its next
    /// request within microseconds. Spinning briefly for it saves a sleep/wake round trip of the
    /// loop thread (and the wake-up write); submitters see that the loop is not sleeping and do
    /// not wake it. The loop looks at the inbox under the lock afterwards in any case.
    private func spinForWork() {
        let deadline = MonotonicClock.nowNs() &+ spinNs
        while inboxSignal.load() == 0, MonotonicClock.nowNs() < deadline {
            sched_yield()
        }
    }

    private func complete(_ transfer: CurlTransfer, _ code: CURLcode) {
        guard code == CURLE_OK else {
            finish(transfer, .failure(Self.error(for: code, tooLarge: transfer.tooLarge)))
            return
        }
        var status = 0
        _ = ctracker_easy_getinfo_long(transfer.handle, CURLINFO_RESPONSE_CODE, &status)
        let response = HTTPResponse(status: status, headers: transfer.responseHeaders, body: transfer.body)
        finish(transfer, .success(response))
    }

    private func finish(_ transfer: CurlTransfer, _ outcome: Result<HTTPResponse, HTTPError>) {
        let continuation = transfer.continuation
        transfer.continuation = nil
        transfer.body = []
        transfer.responseHeaders = []
        // Resume first so the caller's thread wakes while the handle is being reset.
        switch outcome {
        case .success(let response): continuation?.resume(returning: response)
        case .failure(let error): continuation?.resume(throwing: error)
        }
        recycle(transfer)
    }

    /// Maps a libcurl result to an ``HTTPError``. Messages are libcurl's generic texts only.
    static func error(for code: CURLcode, tooLarge: Bool) -> HTTPError {
        let text = curl_easy_strerror(code).map { String(cString: $0) } ?? "curl error"
        let message = "\(text) (curl \(code.rawValue))"
        if tooLarge || code == CURLE_FILESIZE_EXCEEDED {
            return HTTPError(.responseTooLarge, "the response body exceeded the size cap")
        }
        switch code {
        case CURLE_OPERATION_TIMEDOUT:
            return HTTPError(.timeout, message)
        case CURLE_COULDNT_CONNECT, CURLE_COULDNT_RESOLVE_HOST, CURLE_COULDNT_RESOLVE_PROXY:
            return HTTPError(.connectionFailed, message)
        case CURLE_GOT_NOTHING, CURLE_RECV_ERROR, CURLE_SEND_ERROR, CURLE_PARTIAL_FILE,
            CURLE_HTTP2, CURLE_HTTP2_STREAM, CURLE_HTTP3, CURLE_WEIRD_SERVER_REPLY:
            return HTTPError(.connectionLost, message)
        case CURLE_SSL_CONNECT_ERROR, CURLE_PEER_FAILED_VERIFICATION, CURLE_SSL_CERTPROBLEM,
            CURLE_SSL_CIPHER, CURLE_SSL_CACERT_BADFILE, CURLE_SSL_ISSUER_ERROR,
            CURLE_SSL_PINNEDPUBKEYNOTMATCH, CURLE_SSL_INVALIDCERTSTATUS, CURLE_SSL_SHUTDOWN_FAILED,
            CURLE_USE_SSL_FAILED, CURLE_SSL_ENGINE_NOTFOUND, CURLE_SSL_ENGINE_SETFAILED,
            CURLE_SSL_ENGINE_INITFAILED, CURLE_SSL_CRL_BADFILE, CURLE_SSL_CLIENTCERT:
            return HTTPError(.tls, message)
        case CURLE_URL_MALFORMAT:
            return HTTPError(.invalidURL, message)
        case CURLE_UNSUPPORTED_PROTOCOL:
            return HTTPError(.unsupportedScheme, message)
        default:
            return HTTPError(.other, message)
        }
    }
}

@available(macOS 15.0, iOS 18.0, watchOS 11.0, tvOS 18.0, visionOS 2.0, *)
extension CurlEngine: TaskExecutor {
    /// Queues `job` for the loop thread (waking the loop if it sleeps), or hands it to the global
    /// concurrent executor once the loop has ended.
    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        let queued = state.withLock { s in
            guard !s.finished else { return false }
            s.jobs.append(job)
            signal(&s)
            return true
        }
        if !queued { forward(job) }
    }
}

/// CURLOPT_WRITEFUNCTION: appends to the body, or fails the transfer past the size cap.
private let curlWriteCallback: ctracker_curl_data_cb = { data, size, count, context in
    guard let context else { return 0 }
    let transfer = Unmanaged<CurlTransfer>.fromOpaque(context).takeUnretainedValue()
    let length = size * count
    if transfer.body.count + length > transfer.maxResponseBytes {
        transfer.tooLarge = true
        return 0
    }
    if length > 0, let data {
        transfer.body.append(contentsOf: UnsafeRawBufferPointer(start: data, count: length))
    }
    return length
}

/// CURLOPT_HEADERFUNCTION: collects `name: value` lines of the final response.
private let curlHeaderCallback: ctracker_curl_data_cb = { data, size, count, context in
    let length = size * count
    guard let context, let data else { return length }
    let transfer = Unmanaged<CurlTransfer>.fromOpaque(context).takeUnretainedValue()
    let line = UnsafeRawBufferPointer(start: data, count: length)
    if line.starts(with: "HTTP/".utf8) {
        // A new status line (after a 1xx answer, say): only the last response's headers count.
        transfer.responseHeaders.removeAll(keepingCapacity: true)
        return length
    }
    guard let colon = line.firstIndex(of: UInt8(ascii: ":")) else { return length }
    func isSpace(_ b: UInt8) -> Bool { b == 0x20 || b == 0x09 || b == 0x0D || b == 0x0A }
    var start = colon + 1
    var end = length
    while start < end, isSpace(line[start]) { start += 1 }
    while end > start, isSpace(line[end - 1]) { end -= 1 }
    let name = String(decoding: line[..<colon], as: UTF8.self)
    let value = String(decoding: line[start..<end], as: UTF8.self)
    transfer.responseHeaders.append(HTTPHeader(name, value))
    return length
}
