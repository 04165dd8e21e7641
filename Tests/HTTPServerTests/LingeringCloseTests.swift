import Foundation
import HTTPTestSupport
import TestThreads
import Testing
@testable import HTTPServer

/// After an error response with input still coming, the server closes the way nginx does:
/// it shuts down its write side, then reads and discards what the client sends, within a
/// time and size bound, so the client sees the response and an orderly end, not a reset.
@Suite(.ownThreads) struct LingeringCloseTests {
    static func limits(lingerMaxBytes: Int = 4 * 1024 * 1024, lingerTimeout: Duration = .seconds(5)) -> HTTPServerLimits {
        var limits = HTTPServerLimits.forTests
        limits.maxBodyBytes = 1024
        limits.lingerMaxBytes = lingerMaxBytes
        limits.lingerTimeout = lingerTimeout
        return limits
    }

    /// Sends a head announcing a body far over the limit, then `bodyBytes` of it, on another
    /// thread (the sender blocks once the server stops reading). The flag says if every byte went out.
    static func sendOversizedUpload(_ client: RawHTTPClient, bodyBytes: Int) -> (BackgroundThread, Handoff<Bool>) {
        let sentAll = Handoff<Bool>()
        let head = "POST /echo HTTP/1.1\r\nHost: test\r\nContent-Length: 100000000\r\n\r\n".bytes
        let body = [UInt8](repeating: UInt8(ascii: "u"), count: bodyBytes)
        nonisolated(unsafe) let client = client
        let thread = BackgroundThread { [sentAll] in
            sentAll.put(client.trySend(head + body))
        }
        return (thread, sentAll)
    }

    @Test func errorResponseToALargeBodyIsReadWholeAndEndsWithoutReset() throws {
        let server = try TestServer(limits: Self.limits())
        defer { server.stop() }
        let client = try server.client()

        // Given a client that sends 1 MiB of a body the server refuses at the head
        let (sender, sentAll) = Self.sendOversizedUpload(client, bodyBytes: 1024 * 1024)

        // Then it reads the whole 413, and the connection ends with a FIN, not a reset
        let response = try client.readResponse()
        #expect(response.status == 413)
        #expect(response.connectionTokens.contains("close"))
        #expect(client.readUntilEnd() == .eof)
        // and the server read (and dropped) the rest, so the upload itself did not fail.
        #expect(sender.join(seconds: 10))
        #expect(sentAll.take() == true)
    }

    @Test func malformedRequestFollowedByMoreInputEndsWithoutReset() throws {
        let server = try TestServer(limits: Self.limits())
        defer { server.stop() }
        let client = try server.client()

        try client.send("GET /hello FTP/1.1\r\nHost: test\r\n\r\n" + String(repeating: "x", count: 200_000))
        let response = try client.readResponse()
        #expect(response.status == 400)
        #expect(client.readUntilEnd() == .eof)
    }

    @Test func lingeringStopsAfterLingerMaxBytes() throws {
        let server = try TestServer(limits: Self.limits(lingerMaxBytes: 64 * 1024))
        defer { server.stop() }
        let client = try server.client()

        // A client that never stops sending is cut off once the bound is discarded.
        let (sender, sentAll) = Self.sendOversizedUpload(client, bodyBytes: 16 * 1024 * 1024)
        #expect(try client.readResponse().status == 413)
        #expect(sender.join(seconds: 20), "the upload ends: the server closed")
        #expect(sentAll.take() == false, "the server did not read 16 MiB")
    }

    @Test func lingeringStopsAfterLingerTimeout() throws {
        let server = try TestServer(limits: Self.limits(lingerTimeout: .milliseconds(200)))
        defer { server.stop() }
        let client = try server.client()

        // A client that neither sends nor closes is let go after lingerTimeout.
        try client.send("POST /echo HTTP/1.1\r\nHost: test\r\nContent-Length: 5000\r\n\r\n")
        #expect(try client.readResponse().status == 413)
        #expect(eventually { server.server.connectionCount == 0 }, "the connection is let go")
    }
}
