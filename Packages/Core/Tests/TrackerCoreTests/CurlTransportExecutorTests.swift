import Foundation
import Testing
import TrackerCore
import TrackerCoreTestKit

/// The name of the thread running the caller (the transport's loop thread is "tracker.curl").
private func currentThreadName() -> String? {
    Thread.current.name
}

private let loopThreadName = "tracker.curl"

/// Sends made by tasks that prefer ``CurlTransport/taskExecutor``: they run on the loop thread.
// Task executors exist from macOS 15 / iOS 18 / tvOS 18 / visionOS 2 (the package floors are
// lower): every test here is marked so (a suite itself cannot be).
@Suite struct CurlTransportExecutorTests {
    @available(macOS 15.0, iOS 18.0, tvOS 18.0, visionOS 2.0, *)
    @Test func sendsUnderThePreferenceRunOnTheLoopThread() async throws {
        let transport = CurlTransport()
        defer { transport.shutdown() }
        let server = try LoopbackHTTPServer { request in .respond(status: 200, body: request.body) }
        defer { server.stop() }
        let url = server.baseURL
        let threads = try await withTaskExecutorPreference(transport.taskExecutor) {
            var threads = [currentThreadName()]
            for i in 0..<20 {
                let response = try await transport.send(HTTPRequest(url: url + "/s", method: "POST", body: Array("\(i)".utf8)))
                #expect(response.status == 200)
                #expect(response.body == Array("\(i)".utf8))
                threads.append(currentThreadName())
            }
            return threads
        }
        #expect(threads.allSatisfy { $0 == loopThreadName })
        #expect(server.requestCount == 20)
        #expect(server.connectionCount == 1)
    }

    /// The README's example: a back-to-back sender runs on the transport's loop thread.
    @available(macOS 15.0, iOS 18.0, tvOS 18.0, visionOS 2.0, *)
    @Test func readmeExampleSendsABatchOverOneConnection() async throws {
        let server = try LoopbackHTTPServer { _ in .respond(status: 200) }
        defer { server.stop() }
        let url = server.baseURL + "/events"
        let bodies = (1...3).map { Array(#"{"n":\#($0)}"#.utf8) }
        let transport = CurlTransport()
        let statuses = try await withTaskExecutorPreference(transport.taskExecutor) {
            var statuses: [Int] = []
            for body in bodies {
                let response = try await transport.send(HTTPRequest(url: url, method: "POST", body: body))
                statuses.append(response.status)
            }
            return statuses
        }
        transport.shutdown()
        #expect(statuses == [200, 200, 200])
        #expect(server.requestCount == 3)
        #expect(server.connectionCount == 1)
    }

    @available(macOS 15.0, iOS 18.0, tvOS 18.0, visionOS 2.0, *)
    @Test func aTaskCreatedWithThePreferenceRunsOnTheLoopThread() async throws {
        let transport = CurlTransport()
        defer { transport.shutdown() }
        let server = try LoopbackHTTPServer { _ in .respond(status: 204) }
        defer { server.stop() }
        let url = server.baseURL
        let (status, thread) = try await Task(executorPreference: transport.taskExecutor) {
            let response = try await transport.send(HTTPRequest(url: url))
            return (response.status, currentThreadName())
        }.value
        #expect(status == 204)
        #expect(thread == loopThreadName)
    }

    @available(macOS 15.0, iOS 18.0, tvOS 18.0, visionOS 2.0, *)
    @Test func cancellingATaskUnderThePreferenceThrowsCancelled() async throws {
        let transport = CurlTransport()
        defer { transport.shutdown() }
        let server = try LoopbackHTTPServer { _ in .hang }
        defer { server.stop() }
        let url = server.baseURL + "/hang"
        let task = Task {
            await withTaskExecutorPreference(transport.taskExecutor) {
                let error = await httpError { try await transport.send(HTTPRequest(url: url, timeoutMs: 30_000)) }
                return (error, currentThreadName())
            }
        }
        _ = await server.waitForRequests(count: 1)
        var outcome: (HTTPError?, String?)?
        let ms = await elapsedMs {
            task.cancel()
            outcome = await task.value
        }
        #expect(outcome?.0?.code == .cancelled)
        #expect(outcome?.1 == loopThreadName)
        #expect(ms < 15_000)  // well under the 30 s timeout: the cancellation ended it (a tight wall-clock bound fails on a loaded machine)
    }

    /// The cancellation comes from a job on the loop thread itself (the group's parent task),
    /// so nobody wakes the loop: it must see the cancellation before it sleeps again.
    @available(macOS 15.0, iOS 18.0, tvOS 18.0, visionOS 2.0, *)
    @Test func cancellingFromTheLoopThreadAbortsTheTransfer() async throws {
        let transport = CurlTransport()
        defer { transport.shutdown() }
        let server = try LoopbackHTTPServer { _ in .hang }
        defer { server.stop() }
        let url = server.baseURL + "/hang"
        let (error, cancellerThread) = await withTaskExecutorPreference(transport.taskExecutor) {
            await withTaskGroup(of: HTTPError?.self) { group in
                group.addTask { await httpError { try await transport.send(HTTPRequest(url: url, timeoutMs: 30_000)) } }
                _ = await server.waitForRequests(count: 1)
                let thread = currentThreadName()
                group.cancelAll()
                return (await group.next() ?? nil, thread)
            }
        }
        #expect(cancellerThread == loopThreadName)
        #expect(error?.code == .cancelled)
    }

    @available(macOS 15.0, iOS 18.0, tvOS 18.0, visionOS 2.0, *)
    @Test func alreadyCancelledTaskUnderThePreferenceSendsNothing() async throws {
        let transport = CurlTransport()
        defer { transport.shutdown() }
        let server = try LoopbackHTTPServer { _ in .respond(status: 200) }
        defer { server.stop() }
        let url = server.baseURL
        let error = await Task(executorPreference: transport.taskExecutor) {
            withUnsafeCurrentTask { $0?.cancel() }
            return await httpError { try await transport.send(HTTPRequest(url: url)) }
        }.value
        #expect(error?.code == .cancelled)
        #expect(server.connectionCount == 0)
    }

    @available(macOS 15.0, iOS 18.0, tvOS 18.0, visionOS 2.0, *)
    @Test func timeoutUnderThePreferenceFiresWithinItsBound() async throws {
        let transport = CurlTransport()
        defer { transport.shutdown() }
        let server = try LoopbackHTTPServer { _ in .hang }
        defer { server.stop() }
        let url = server.baseURL + "/slow"
        var error: HTTPError?
        let ms = await elapsedMs {
            error = await withTaskExecutorPreference(transport.taskExecutor) {
                await httpError { try await transport.send(HTTPRequest(url: url, timeoutMs: 150)) }
            }
        }
        #expect(error?.code == .timeout)
        #expect(ms >= 140)
        #expect(ms < 20_000)  // a guard against a hang only: nothing but the 150 ms bound ends it
    }

    /// The task is resumed while the loop ends: its job cannot run on the loop thread any more
    /// and is handed to the global executor, as is every later job of the task.
    @available(macOS 15.0, iOS 18.0, tvOS 18.0, visionOS 2.0, *)
    @Test func shutdownReleasesATaskWaitingUnderThePreference() async throws {
        let transport = CurlTransport()
        let server = try LoopbackHTTPServer { _ in .hang }
        defer { server.stop() }
        let url = server.baseURL
        let task = Task(executorPreference: transport.taskExecutor) {
            let error = await httpError { try await transport.send(HTTPRequest(url: url, timeoutMs: 30_000)) }
            await Task.yield()
            let later = await httpError { try await transport.send(HTTPRequest(url: url)) }
            return (error, later, currentThreadName())
        }
        _ = await server.waitForRequests(count: 1)
        transport.shutdown()
        let (error, later, thread) = await task.value
        #expect(error?.code == .shutdown)
        #expect(later?.code == .shutdown)
        #expect(thread != loopThreadName)
    }

    @available(macOS 15.0, iOS 18.0, tvOS 18.0, visionOS 2.0, *)
    @Test func aTaskPreferringAShutDownTransportRunsToCompletion() async throws {
        let transport = CurlTransport()
        transport.shutdown()
        let server = try LoopbackHTTPServer { _ in .respond(status: 200) }
        defer { server.stop() }
        let url = server.baseURL
        let outcome = await withTaskExecutorPreference(transport.taskExecutor) {
            var errors: [HTTPError.Code?] = []
            for _ in 0..<3 {
                await Task.yield()
                errors.append(await httpError { try await transport.send(HTTPRequest(url: url)) }?.code)
            }
            let children = await withTaskGroup(of: Int.self) { group in
                for i in 0..<10 {
                    group.addTask {
                        await Task.yield()
                        return i
                    }
                }
                return await group.reduce(0, +)
            }
            return (errors, children)
        }
        #expect(outcome.0 == [.shutdown, .shutdown, .shutdown])
        #expect(outcome.1 == 45)
        #expect(server.connectionCount == 0)
    }

    @available(macOS 15.0, iOS 18.0, tvOS 18.0, visionOS 2.0, *)
    @Test func manyConcurrentTasksUnderThePreferenceComplete() async throws {
        let transport = CurlTransport()
        defer { transport.shutdown() }
        let server = try LoopbackHTTPServer { request in .respond(status: 200, body: request.body) }
        defer { server.stop() }
        let url = server.baseURL
        // Plain tasks share the transport meanwhile.
        let plain = Task {
            try await withThrowingTaskGroup(of: Bool.self) { group in
                for i in 0..<20 {
                    group.addTask {
                        let body = Array("plain \(i)".utf8)
                        return try await transport.send(HTTPRequest(url: url + "/p", method: "POST", body: body)).body == body
                    }
                }
                return try await group.reduce(true) { $0 && $1 }
            }
        }
        let results = try await withTaskExecutorPreference(transport.taskExecutor) {
            try await withThrowingTaskGroup(of: (Int, [UInt8], String?).self) { group in
                for i in 0..<100 {
                    group.addTask {
                        let response = try await transport.send(HTTPRequest(url: url + "/c", method: "POST", body: Array("\(i)".utf8)))
                        return (i, response.body, currentThreadName())
                    }
                }
                var out: [Int: ([UInt8], String?)] = [:]
                for try await (i, body, thread) in group { out[i] = (body, thread) }
                return out
            }
        }
        #expect(try await plain.value)
        #expect(results.count == 100)
        #expect(results.allSatisfy { $0.value.0 == Array("\($0.key)".utf8) })
        #expect(results.allSatisfy { $0.value.1 == loopThreadName })
        #expect(server.requestCount == 120)
    }

    @available(macOS 15.0, iOS 18.0, tvOS 18.0, visionOS 2.0, *)
    @Test func sharedTransportOffersItsExecutor() async throws {
        let server = try LoopbackHTTPServer { _ in .respond(status: 200, body: "ok") }
        defer { server.stop() }
        let url = server.baseURL
        let body = try await withTaskExecutorPreference(CurlTransport.shared.taskExecutor) {
            try await CurlTransport.shared.send(HTTPRequest(url: url)).body
        }
        #expect(body == Array("ok".utf8))
    }
}
