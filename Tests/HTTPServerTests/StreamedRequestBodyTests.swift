import Essentials
import Foundation
import Synchronization
import TestThreads
import Testing
@testable import HTTPServer

/// Routes with `RouteOptions.streamsBody`: the body reaches the responder as it arrives, never
/// whole, and never more than a window ahead of it.
@Suite(.ownThreads) struct StreamedRequestBodyTests {
    static let window = 64 * 1024

    /// What `/stream` saw.
    struct Seen: Sendable {
        var count = 0
        var hash = FNV1a.offsetBasis
        var peak = 0
        var failure: HTTPRequestBodyStream.Failure?
    }

    static func makeServer(seen: Handoff<Seen>) throws -> TestServer {
        var limits = HTTPServerLimits.forTests
        limits.maxBodyBytes = 1024
        return try TestServer(limits: limits) { routes in
            let options = RouteOptions(execution: .workerPool, maxBodyBytes: 64 << 20, streamsBody: true, bodyStreamWindow: window)
            routes.add(.post, "/stream", options: options) { request, _ in
                var result = Seen()
                let stream = try #require(request.bodyStream)
                #expect(request.body.isEmpty)
                do throws(HTTPRequestBodyStream.Failure) {
                    while let chunk = try stream.next() {
                        chunk.withUnsafeBytes { FNV1a.update(&result.hash, with: $0) }
                        result.count += chunk.count
                        usleep(200)  // a consumer slower than loopback, so the window fills
                    }
                } catch {
                    result.failure = error
                }
                result.peak = stream.peakQueuedBytes
                seen.put(result)
                // A body the server rejected or that stalled: the server's answer (RouteOptions.streamsBody).
                if let rejection = stream.rejection { throw rejection }
                return HTTPResponse(contentType: "text/plain", bytes: Array("\(result.count)".utf8))
            }
            routes.add(.post, "/refuse", options: options) { _, _ in
                HTTPResponse(status: .unsupportedMediaType, contentType: "text/plain", bytes: Array("no".utf8))
            }
        }
    }

    static func body(_ count: Int) -> [UInt8] {
        var generator: UInt64 = 42
        return (0..<count).map { _ in
            generator = generator &* 6_364_136_223_846_793_005 &+ 1
            return UInt8(truncatingIfNeeded: generator >> 33)
        }
    }

    static func fnv(_ bytes: [UInt8]) -> UInt64 { FNV1a.hash(bytes) }

    @Test func aDeclaredLengthIsNotReservedUpFront() throws {
        let decoder = try HTTPBodyDecoder(framing: .length(1 << 30), limit: 1 << 30)
        #expect(decoder.body.capacity < 1 << 20, "\(decoder.body.capacity) bytes reserved for a body not sent yet")
    }

    @Test func aLargeBodyStreamsWithinTheWindowAndTheConnectionStaysOpen() throws {
        let seen = Handoff<Seen>()
        let server = try Self.makeServer(seen: seen)
        defer { server.stop() }
        let client = try server.client(timeout: 20)
        let payload = Self.body(4 << 20)
        try client.send("POST /stream HTTP/1.1\r\nHost: test\r\nContent-Length: \(payload.count)\r\n\r\n")
        try client.send(payload)
        let response = try client.readResponse()
        #expect(response.status == 200)
        #expect(response.text == "\(payload.count)")
        let result = try #require(seen.take(seconds: 20))
        #expect(result.failure == nil)
        #expect(result.count == payload.count && result.hash == Self.fnv(payload))
        #expect(result.peak <= Self.window + 128 * 1024, "peak \(result.peak) bytes waited for the responder")
        // Keep-alive holds after a streamed body.
        try client.send("GET /hello HTTP/1.1\r\nHost: test\r\n\r\n")
        #expect(try client.readResponse().status == 200)
    }

    @Test func aChunkedBodyStreamsAndItsLimitCountsEveryChunk() throws {
        let seen = Handoff<Seen>()
        let server = try Self.makeServer(seen: seen)
        defer { server.stop() }
        let client = try server.client(timeout: 20)
        let payload = Self.body(300_000)
        var wire = Array("POST /stream HTTP/1.1\r\nHost: test\r\nTransfer-Encoding: chunked\r\n\r\n".utf8)
        var offset = 0
        while offset < payload.count {
            let n = min(7_000, payload.count - offset)
            wire += Array((String(n, radix: 16) + "\r\n").utf8) + payload[offset..<(offset + n)] + [0x0D, 0x0A]
            offset += n
        }
        wire += Array("0\r\n\r\n".utf8)
        try client.send(wire)
        let response = try client.readResponse()
        #expect(response.status == 200)
        let result = try #require(seen.take(seconds: 20))
        #expect(result.count == payload.count && result.hash == Self.fnv(payload))
    }

    @Test func aTruncatedBodyFailsTheStream() throws {
        let seen = Handoff<Seen>()
        let server = try Self.makeServer(seen: seen)
        defer { server.stop() }
        let client = try server.client()
        try client.send("POST /stream HTTP/1.1\r\nHost: test\r\nContent-Length: 100000\r\n\r\n" + String(repeating: "x", count: 10))
        client.shutdownWrite()
        let result = try #require(seen.take(seconds: 10))
        #expect(result.failure == .truncated)
        #expect(result.count == 10)
    }

    /// A client that starts a streamed body and goes quiet: the responder (a worker thread) must
    /// not wait for the rest forever, as it would if every flush cleared the deadline.
    @Test func aStalledStreamedBodyGets408AndFailsTheStream() throws {
        let seen = Handoff<Seen>()
        let server = try Self.makeServer(seen: seen)  // bodyTimeout 3 s in the test limits
        defer { server.stop() }
        let client = try server.client(timeout: 15)
        try client.send("POST /stream HTTP/1.1\r\nHost: test\r\nContent-Length: 100000\r\n\r\n" + String(repeating: "x", count: 10))
        let response = try client.readResponse()
        #expect(response.status == 408)
        let result = try #require(seen.take(seconds: 10), "the responder still waits for the body")
        #expect(result.failure != nil)
        #expect(result.count == 10)
    }

    @Test func anAnswerBeforeTheBodyEndsClosesTheConnection() throws {
        let server = try Self.makeServer(seen: Handoff<Seen>())
        defer { server.stop() }
        let client = try server.client()
        try client.send("POST /refuse HTTP/1.1\r\nHost: test\r\nContent-Length: 100000\r\n\r\n" + String(repeating: "x", count: 10))
        let response = try client.readResponse()
        #expect(response.status == 415)
        #expect(response.connectionTokens.contains("close"))
        #expect(client.waitForClose(within: 5))
    }
}
