import Foundation
import HTTPTestSupport
import TestThreads
import Testing
@testable import HTTPServer

/// Slow and idle clients are dropped after their timeout without holding anyone else up: a
/// stalled or trickled head and a stalled or slow body get the 408 problem response the docs
/// (docs/operating.md, HTTP limits) promise, then an orderly close; an idle keep-alive connection is closed without one.
/// Timings here only bound how long a failing test waits; when a timeout fires (not before,
/// not after) is unit-tested with an injected clock.
@Suite(.ownThreads) struct TimeoutTests {
    @Test func stalledHeadIsDroppedWhileOthersAreServed() throws {
        var limits = HTTPServerLimits.forTests
        limits.headTimeout = .milliseconds(500)
        limits.idleTimeout = .seconds(10)
        let server = try TestServer(limits: limits)
        defer { server.stop() }

        let slow = try server.client()
        try slow.send("GET /hello HTTP/1.1\r\nHo")

        // Another client is served normally during the stall.
        let other = try server.client()
        try other.send("GET /say?word=served HTTP/1.1\r\nHost: test\r\n\r\n")
        let served = try other.readResponse()
        #expect(served.status == 200)
        #expect(served.text == "served")

        // Then the stalled one is answered 408 and closed.
        Self.expect408(try slow.readResponse(), detail: "The request head did not arrive in time.")
        #expect(slow.waitForClose(within: 4), "a stalled head is dropped after headTimeout")

        // The other connection was not affected.
        try other.send("GET /say?word=still HTTP/1.1\r\nHost: test\r\n\r\n")
        #expect(try other.readResponse().text == "still")
    }

    @Test func trickledHeadIsDroppedAfterHeadTimeout() throws {
        // A byte every 100 ms keeps the connection busy but never finishes the head.
        var limits = HTTPServerLimits.forTests
        limits.headTimeout = .milliseconds(500)
        limits.idleTimeout = .seconds(10)
        let server = try TestServer(limits: limits)
        defer { server.stop() }

        let slow = try server.client()
        var dropped = false
        for byte in "GET /hello HTTP/1.1\r\nX-Slow: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa".utf8 {
            guard slow.trySend([byte]) else { break }
            if slow.waitForClose(within: 0.1) { dropped = true; break }
        }
        #expect(dropped, "a slowloris client is dropped before it finishes its head")
        // What arrived before the close is the 408.
        Self.expect408(try slow.readResponse(), detail: "The request head did not arrive in time.")
    }

    @Test func idleKeepAliveConnectionIsClosedAfterIdleTimeout() throws {
        var limits = HTTPServerLimits.forTests
        limits.idleTimeout = .milliseconds(500)
        limits.headTimeout = .seconds(10)
        let server = try TestServer(limits: limits)
        defer { server.stop() }

        let client = try server.client()
        try client.send("GET /hello HTTP/1.1\r\nHost: test\r\n\r\n")
        let response = try client.readResponse()
        #expect(response.status == 200)
        #expect(!response.connectionTokens.contains("close"))

        #expect(client.waitForClose(within: 4), "an idle keep-alive connection is closed")
        #expect(client.buffer.isEmpty, "closed without a response")
    }

    @Test func bodySlowerThanTheMinimumRateGets408() throws {
        // The body keeps coming (no stall), but far below the minimum rate once the grace
        // period is over: dropped like a slow head. bodyTimeout alone would wait 30 s.
        var limits = HTTPServerLimits.forTests
        limits.bodyTimeout = .seconds(30)
        limits.minBodyBytesPerSecond = 1_000_000
        limits.bodyRateGracePeriod = .milliseconds(200)
        let server = try TestServer(limits: limits)
        defer { server.stop() }

        let client = try server.client(timeout: 10)
        try client.send("POST /echo HTTP/1.1\r\nHost: test\r\nContent-Length: 100000\r\n\r\nabc")
        Self.expect408(
            try client.readResponse(), detail: "The request body did not arrive in time, or arrived too slowly.")
        #expect(client.waitForClose(within: 5))

        // A body sent at full speed is not affected.
        let fast = try server.client()
        let body = [UInt8](repeating: UInt8(ascii: "f"), count: 100_000)
        try fast.send("POST /echo HTTP/1.1\r\nHost: test\r\nContent-Length: 100000\r\n\r\n".bytes + body)
        #expect(try fast.readResponse().body == body)
    }

    @Test func stalledBodyIsDropped() throws {
        var limits = HTTPServerLimits.forTests
        limits.bodyTimeout = .milliseconds(500)
        let server = try TestServer(limits: limits)
        defer { server.stop() }

        let client = try server.client()
        try client.send("POST /echo HTTP/1.1\r\nHost: test\r\nContent-Length: 10\r\n\r\nabc")
        Self.expect408(
            try client.readResponse(), detail: "The request body did not arrive in time, or arrived too slowly.")
        #expect(client.waitForClose(within: 4), "a body that stops arriving is dropped")
    }

    /// The 408 problem response, with `Connection: close`.
    static func expect408(_ response: RawHTTPClient.Response, detail: String, sourceLocation: SourceLocation = #_sourceLocation) {
        #expect(response.status == 408, "got \(response.statusLine)", sourceLocation: sourceLocation)
        #expect(response.header("Content-Type") == "application/problem+json", sourceLocation: sourceLocation)
        #expect(response.connectionTokens.contains("close"), sourceLocation: sourceLocation)
        #expect(response.text.contains(detail), "got \(response.text)", sourceLocation: sourceLocation)
    }
}
