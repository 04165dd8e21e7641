import Essentials
import Foundation
import HTTPTestSupport
import TestThreads
import Testing
@testable import HTTPServer

/// The server measures every connection timeout on the clock its configuration names: with a
/// `ManualClock`, a timeout fires when the test moves the clock past it, not when real time
/// passes. (The rules themselves are unit-tested in `ConnectionStateTests`.)
@Suite(.ownThreads) struct InjectedClockTests {
    private static func server(
        clock: ManualClock, limits: HTTPServerLimits, acceptProbe: AcceptProbe? = nil
    ) throws -> HTTPServer {
        var routes = RouterBuilder()
        routes.add(.get, "/hello") { _, _ in HTTPResponse(contentType: "text/plain", bytes: Array("hello\n".utf8)) }
        let server = try HTTPServer(
            configuration: .init(host: "127.0.0.1", port: 0, eventLoops: 1, workerThreads: 1, limits: limits, clock: clock),
            router: routes.build(), errorRenderer: .standard, logger: { _, _ in }, headCheck: nil, acceptProbe: acceptProbe)
        server.start()
        return server
    }

    /// Moves `clock` ten seconds at a time until the server closes `client` (or 5 s of real
    /// time pass; the timeouts here are a minute, so only the injected clock can fire them). True if it closed.
    private static func advanceUntilClosed(_ client: RawHTTPClient, _ clock: ManualClock) -> Bool {
        let giveUp = Date().addingTimeInterval(5)
        while Date() < giveUp {
            clock.advance(by: .seconds(10))
            if client.waitForClose(within: 0.05) { return true }
        }
        return false
    }

    @Test func headTimeoutRunsOnTheInjectedClock() throws {
        let clock = ManualClock()
        var limits = HTTPServerLimits()
        limits.headTimeout = .seconds(60)
        limits.idleTimeout = .seconds(3600)
        let server = try Self.server(clock: clock, limits: limits)
        defer { server.shutdown(grace: .seconds(2)) }

        let client = try RawHTTPClient(port: server.port)
        try client.send("GET /hello HTTP/1.1\r\nHo")
        #expect(Self.advanceUntilClosed(client, clock), "the head timeout fires once the clock passes it")
        let text = String(decoding: client.buffer, as: UTF8.self)
        #expect(text.hasPrefix("HTTP/1.1 408 "), "got \(text.debugDescription)")
    }

    @Test func idleTimeoutRunsOnTheInjectedClock() throws {
        let clock = ManualClock()
        var limits = HTTPServerLimits()
        limits.idleTimeout = .seconds(60)
        let server = try Self.server(clock: clock, limits: limits)
        defer { server.shutdown(grace: .seconds(2)) }

        let client = try RawHTTPClient(port: server.port)
        try client.send("GET /hello HTTP/1.1\r\nHost: test\r\n\r\n")
        #expect(try client.readResponse().status == 200)
        #expect(Self.advanceUntilClosed(client, clock), "an idle keep-alive connection closes once the clock passes idleTimeout")
        #expect(client.buffer.isEmpty, "closed without a response")
    }

    @Test func theAcceptPauseRunsOnTheInjectedClock() throws {
        let clock = ManualClock()
        let probe = AcceptProbe()
        var limits = HTTPServerLimits()
        limits.acceptRetryDelay = .seconds(3600)
        let server = try Self.server(clock: clock, limits: limits, acceptProbe: probe)
        defer { server.shutdown(grace: .seconds(2)) }

        // Accept fails for want of descriptors: the loop pauses accepting for an hour.
        probe.failAccepts(with: EMFILE)
        let waiting = try RawHTTPClient(port: server.port)
        try waiting.send("GET /hello HTTP/1.1\r\nHost: test\r\n\r\n")
        #expect(eventually { probe.attempts > 0 })
        probe.failAccepts(with: 0)
        // An hour on the server's clock later, the waiting client is accepted and served.
        clock.advance(by: .seconds(3600))
        #expect(try waiting.readResponse().status == 200)
    }
}
