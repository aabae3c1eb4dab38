import Testing
import TrackerCore
import TrackerCoreTestKit

/// Issue 37 item 10: durations as `TimeInterval` (seconds), converted to the whole milliseconds the
/// delivery counts in.
@Suite struct TimeIntervalTests {
    /// S260 — seconds to whole milliseconds: nearest, halves away from zero; NaN is 0; out of range
    /// clamps. Whole milliseconds round-trip exactly.
    @Test func S260_secondsRoundToTheNearestMillisecond() {
        #expect(Milliseconds.from(seconds: 0.5) == 500)
        #expect(Milliseconds.from(seconds: 1) == 1_000)
        #expect(Milliseconds.from(seconds: 0.0005) == 1)
        #expect(Milliseconds.from(seconds: 0.0004) == 0)
        #expect(Milliseconds.from(seconds: 0.0015) == 2)
        #expect(Milliseconds.from(seconds: 2.4994) == 2_499)
        #expect(Milliseconds.from(seconds: -0.0005) == -1)
        #expect(Milliseconds.from(seconds: 0) == 0)
        #expect(Milliseconds.from(seconds: .nan) == 0)
        #expect(Milliseconds.from(seconds: .infinity) == .max)
        #expect(Milliseconds.from(seconds: -.infinity) == .min)
        #expect(Milliseconds.from(seconds: 1e300) == .max)
        for ms: Int64 in [0, 1, 20, 999, 1_000, 15_000, 60_000, 86_400_000] {
            #expect(Milliseconds.from(seconds: Milliseconds.seconds(ms)) == ms)
        }
        let foundationStyle: TimeInterval = 1.5
        #expect(Milliseconds.from(seconds: foundationStyle) == 1_500)
    }

    /// S261 — `RetryPolicy` in seconds gives the same delays as the deprecated milliseconds form;
    /// its defaults are unchanged (1 s doubling to 60 s). Deprecated: it calls the `…Ms` form.
    @available(*, deprecated)
    @Test func S261_retryPolicyInSecondsEqualsTheMillisecondForm() {
        #expect(RetryPolicy() == RetryPolicy(initialDelayMs: 1_000, factor: 2, maxDelayMs: 60_000))
        #expect(RetryPolicy(initialDelay: 0.02, factor: 2, maxDelay: 0.2) == RetryPolicy(initialDelayMs: 20, factor: 2, maxDelayMs: 200))
        let p = RetryPolicy(initialDelay: 1.5, factor: 2, maxDelay: 10)
        #expect((1...5).map { p.delayMs(afterFailures: $0) } == [1_500, 3_000, 6_000, 10_000, 10_000])
        #expect(p.initialDelay == 1.5 && p.maxDelay == 10 && p.initialDelayMs == 1_500 && p.maxDelayMs == 10_000)
        var q = RetryPolicy(factor: 3)
        q.initialDelay = 0.0004  // rounds to 0 ms
        q.maxDelay = 0.25
        #expect(q.initialDelayMs == 0 && q.maxDelayMs == 250 && q.factor == 3)
    }

    /// S262 — `HTTPSink(url:timeout:)` bounds each request by the same milliseconds as
    /// `HTTPSink(url:timeoutMs:)`, the TypeScript README's spelling (kept).
    @Test func S262_httpSinkTimeoutInSeconds() async {
        let tx = RecordingTransport(always: .status(200, body: #"{"outcome":"accepted"}"#))
        let seconds = HTTPSink<JSONValue>(url: "https://collector.test/runs", timeout: 2.5, transport: tx)
        let ms = HTTPSink<JSONValue>(url: "https://collector.test/runs", timeoutMs: 2_500, transport: tx)
        #expect(seconds.timeoutMs == 2_500 && seconds.timeout == 2.5)
        #expect(HTTPSink<JSONValue>(url: "https://collector.test/runs").timeoutMs == 15_000)
        _ = await seconds.send(["a": 1])
        _ = await ms.send(["a": 1])
        #expect(tx.requests.map(\.timeoutMs) == [2_500, 2_500])
        #expect(tx.requests[0] == tx.requests[1])
    }

    /// S264 — a request's bounds read and set in seconds are its milliseconds (a custom transport
    /// handing them to an API in seconds); the milliseconds stay what the transports read.
    @Test func S264_requestTimeoutsInSeconds() {
        var request = HTTPRequest(url: "https://collector.test/runs", timeoutMs: 15_000)
        #expect(request.timeout == 15 && request.connectTimeout == nil)
        request.timeout = 2.5
        request.connectTimeout = 0.0006
        #expect(request.timeoutMs == 2_500 && request.connectTimeoutMs == 1)
        #expect(request.connectTimeout == 0.001)
        request.connectTimeout = nil
        #expect(request.connectTimeoutMs == nil)
    }
}
