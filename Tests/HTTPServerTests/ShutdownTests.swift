import Foundation
import HTTPTestSupport
import TestThreads
import Testing
#if canImport(Glibc)
import Glibc
#endif
@testable import HTTPServer

/// Graceful shutdown and the connection limit, over real sockets.
@Suite(.ownThreads) struct ShutdownTests {
    /// Polls until connecting to `port` is refused. True if it was within `seconds`.
    func becomesRefused(port: Int, within seconds: Int64) -> Bool {
        eventually(timeout: .seconds(seconds)) { RawHTTPClient.probe(port: port) == ECONNREFUSED }
    }

    @Test(arguments: [1, 2])
    func shutdownFinishesInFlightRequestAndStopsAccepting(eventLoops: Int) throws {
        let gate = Gate()
        let server = try TestServer(eventLoops: eventLoops) { routes in
            routes.add(.get, "/slow", options: .workerPool) { _, _ in
                gate.pass()
                return HTTPResponse(contentType: "text/plain", bytes: "finished".bytes)
            }
        }
        defer {
            gate.open()
            server.stop()
        }
        // Idle keep-alive connections, spread over the loops by the kernel: a loop that has
        // only these must not count as drained twice and end the shutdown early.
        var idle: [RawHTTPClient] = []
        for _ in 0..<16 {
            let other = try server.client()
            try other.send("GET /hello HTTP/1.1\r\nHost: test\r\n\r\n")
            #expect(try other.readResponse().status == 200)
            idle.append(other)
        }
        let client = try server.client()
        try client.send("GET /slow HTTP/1.1\r\nHost: test\r\n\r\n")
        try #require(gate.waitForArrival())

        let shutdown = BackgroundThread { server.server.shutdown(grace: .seconds(5)) }
        #expect(becomesRefused(port: server.port, within: 3), "the listening port closes at once")
        for other in idle { #expect(other.waitForClose(within: 3), "idle connections are closed at once") }
        #expect(server.server.isDraining)
        #expect(!shutdown.isFinished, "shutdown waits for the in-flight request")

        // The in-flight request is answered whole: shutdown waited for it.
        gate.open()
        let response = try client.readResponse()
        #expect(response.status == 200)
        #expect(response.text == "finished")
        #expect(response.connectionTokens.contains("close"))
        #expect(client.waitForClose(within: 3))
        #expect(shutdown.join(seconds: 4), "shutdown returns once the request is done")
    }

    @Test func shutdownFinishesOpenStream() throws {
        let writers = Handoff<HTTPStreamWriter>()
        let closed = Handoff<Bool>()
        let server = try TestServer { routes in
            routes.add(.get, "/events") { _, _ in
                HTTPResponse(body: .stream(HTTPStreamBody { writer in
                    writer.onClose { closed.put(true) }
                    writers.put(writer)
                }))
            }
        }
        defer { server.stop() }
        let client = try server.client()
        try client.send("GET /events HTTP/1.1\r\nHost: test\r\n\r\n")
        let writer = try #require(writers.take())
        writer.write("data: before\n\n".bytes)

        let shutdown = BackgroundThread { server.server.shutdown(grace: .seconds(5)) }
        let response = try client.readResponse()
        #expect(response.status == 200)
        #expect(response.chunks?.map { String(decoding: $0, as: UTF8.self) } == ["data: before\n\n"])
        #expect(client.waitForClose(within: 3))
        #expect(closed.take() == true, "the stream's onClose runs")
        #expect(shutdown.join(seconds: 4), "shutdown does not wait out the grace period for a stream")
    }

    @Test func shutdownClosesIdleKeepAliveConnections() throws {
        let server = try TestServer()
        defer { server.stop() }
        let client = try server.client()
        try client.send("GET /hello HTTP/1.1\r\nHost: test\r\n\r\n")
        let response = try client.readResponse()
        #expect(!response.connectionTokens.contains("close"))

        let shutdown = BackgroundThread { server.server.shutdown(grace: .seconds(5)) }
        #expect(client.waitForClose(within: 3), "an idle connection is closed at once")
        #expect(client.buffer.isEmpty)
        #expect(shutdown.join(seconds: 4), "shutdown does not wait out the grace period for idle connections")
        #expect(server.server.connectionCount == 0)
    }

    @Test func shutdownClosesKeepAliveConnectionOnceItsResponseIsWritten() throws {
        // The response is still being written (the client does not read) when shutdown
        // starts; once it is out, the connection must close rather than sit idle.
        let file = try ResponseBodyTests.makeFile(size: 12 * 1024 * 1024)  // more than the kernel buffers hold
        defer { try? FileManager.default.removeItem(atPath: file.path) }
        let server = try TestServer { routes in
            routes.add(.get, "/file") { _, _ in
                HTTPResponse(body: .file(HTTPFileBody(path: file.path, length: file.bytes.count)))
            }
        }
        defer { server.stop() }
        let client = try server.client(receiveBufferSize: 4096)
        try client.send("GET /file HTTP/1.1\r\nHost: test\r\n\r\n")
        #expect(client.waitForBytes(), "the response has started")

        let shutdown = BackgroundThread { server.server.shutdown(grace: .seconds(5)) }
        #expect(eventually { server.server.isDraining }, "shutdown has begun")
        let response = try client.readResponse()
        #expect(response.status == 200)
        #expect(firstDifference(response.body, file.bytes) == nil)
        #expect(client.waitForClose(within: 2), "closed once the response is out")
        #expect(shutdown.join(seconds: 2), "shutdown does not wait out the grace period")
    }

    @Test func shutdownClosesWhatIsLeftAfterGrace() throws {
        let gate = Gate()
        let server = try TestServer { routes in
            routes.add(.get, "/slow", options: .workerPool) { _, _ in
                gate.pass()
                return HTTPResponse(contentType: "text/plain", bytes: "late".bytes)
            }
        }
        defer {
            gate.open()
            server.stop()
        }
        let client = try server.client()
        try client.send("GET /slow HTTP/1.1\r\nHost: test\r\n\r\n")
        try #require(gate.waitForArrival())
        let shutdown = BackgroundThread { server.server.shutdown(grace: .milliseconds(300)) }
        #expect(client.waitForClose(within: 3), "after the grace period the connection is closed")
        gate.open()
        #expect(shutdown.join(seconds: 4))
    }

    @Test func connectionsOverTheLimitGet503() throws {
        var limits = HTTPServerLimits.forTests
        limits.maxConnections = 2
        let server = try TestServer(limits: limits)
        defer { server.stop() }

        let first = try server.client()
        let second = try server.client()
        for client in [first, second] {
            try client.send("GET /hello HTTP/1.1\r\nHost: test\r\n\r\n")
            #expect(try client.readResponse().status == 200)
        }

        let third = try server.client()
        let refused = try third.readResponse()
        #expect(refused.status == 503)
        #expect(refused.header("Content-Type") == "application/problem+json")
        #expect(refused.header("Retry-After") != nil)
        #expect(refused.connectionTokens.contains("close"))
        #expect(third.waitForClose(within: 3))

        // The two admitted connections still work, and a slot frees up when one leaves.
        try first.send("GET /say?word=ok HTTP/1.1\r\nHost: test\r\nConnection: close\r\n\r\n")
        #expect(try first.readResponse().text == "ok")
        #expect(first.waitForClose(within: 3))
        // (The server may not have seen the first leave yet: a new connection is refused until it has.)
        let admitted = try eventually(timeout: .seconds(5), pollingEvery: .milliseconds(20)) {
            let fourth = try server.client()
            guard fourth.trySend("GET /say?word=again HTTP/1.1\r\nHost: test\r\n\r\n".bytes),
                let response = try? fourth.readResponse(), response.status == 200
            else { return false }
            #expect(response.text == "again")
            return true
        }
        #expect(admitted, "a freed slot admits a new connection")
    }
}
