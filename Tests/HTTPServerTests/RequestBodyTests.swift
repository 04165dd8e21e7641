import Foundation
import TestThreads
import Testing
@testable import HTTPServer

/// Request bodies over real sockets: `Expect: 100-continue`, chunked transfer coding, limits.
@Suite(.ownThreads) struct RequestBodyTests {
    static var smallLimits: HTTPServerLimits {
        var limits = HTTPServerLimits.forTests
        limits.maxBodyBytes = 1024
        return limits
    }

    static func makeServer() throws -> TestServer {
        try TestServer(limits: smallLimits) { routes in
            routes.add(.post, "/tiny", options: RouteOptions(maxBodyBytes: 10)) { request, _ in
                HTTPResponse(contentType: "text/plain", bytes: request.body)
            }
            routes.add(.post, "/roomy", options: RouteOptions(execution: .workerPool, maxBodyBytes: 4096)) { request, _ in
                HTTPResponse(contentType: "text/plain", bytes: Array(String(request.body.count).utf8))
            }
        }
    }

    @Test func expectContinueGets100BeforeTheBody() throws {
        let server = try Self.makeServer()
        defer { server.stop() }
        let client = try server.client()

        try client.send(
            "POST /echo HTTP/1.1\r\nHost: test\r\nContent-Type: text/plain\r\nContent-Length: 11\r\nExpect: 100-continue\r\n\r\n")
        let interim = try client.readResponse()
        #expect(interim.version == "HTTP/1.1")
        #expect(interim.status == 100)
        #expect(client.buffer.isEmpty, "nothing but the 100 before the body is sent")

        try client.send("hello there")
        let final = try client.readResponse()
        #expect(final.status == 200)
        #expect(final.text == "hello there")
        #expect(final.header("Content-Type") == "text/plain")
    }

    @Test func expectContinueWithOversizedBodyGets413Without100() throws {
        let server = try Self.makeServer()
        defer { server.stop() }
        let client = try server.client()

        try client.send("POST /echo HTTP/1.1\r\nHost: test\r\nContent-Length: 100000\r\nExpect: 100-continue\r\n\r\n")
        let response = try client.readResponse()
        #expect(response.status == 413)
        #expect(response.header("Content-Type") == "application/problem+json")
        #expect(response.connectionTokens.contains("close"))
        #expect(client.waitForClose(within: 3))
    }

    @Test func chunkedBodyWithTrailerIsDecoded() throws {
        let server = try Self.makeServer()
        defer { server.stop() }
        let client = try server.client()

        try client.send("POST /echo HTTP/1.1\r\nHost: test\r\nTransfer-Encoding: chunked\r\n\r\n")
        // Pieces split inside sizes, data and CRLFs, to exercise the incremental decoder.
        let pieces = [
            "5\r\nhel", "lo\r", "\n9;ext=1\r\n, chunk", "ed\r\n", "A\r\n wor", "ld!!!!\r\n",
            "0\r\nX-Checksum: abc\r\n", "\r\n",
        ]
        for piece in pieces {
            try client.send(piece)
            Thread.sleep(forTimeInterval: 0.01)  // a trickling client, not a wait
        }
        let response = try client.readResponse()
        #expect(response.status == 200)
        #expect(response.text == "hello, chunked world!!!!")

        // The connection is still in step afterwards.
        try client.send("GET /say?word=next HTTP/1.1\r\nHost: test\r\n\r\n")
        #expect(try client.readResponse().text == "next")
    }

    @Test(arguments: [
        "zz\r\nhello\r\n0\r\n\r\n",  // size is not hex
        "5\r\nhelloXX0\r\n\r\n",  // data not followed by CRLF
        "\r\nhello\r\n0\r\n\r\n",  // empty size line
    ])
    func malformedChunkIs400(body: String) throws {
        let server = try Self.makeServer()
        defer { server.stop() }
        let client = try server.client()

        try client.send("POST /echo HTTP/1.1\r\nHost: test\r\nTransfer-Encoding: chunked\r\n\r\n" + body)
        let response = try client.readResponse()
        #expect(response.status == 400)
        #expect(response.header("Content-Type") == "application/problem+json")
        #expect(client.waitForClose(within: 3))
    }

    @Test func contentLengthOverLimitIs413() throws {
        let server = try Self.makeServer()
        defer { server.stop() }
        let client = try server.client()

        try client.send("POST /echo HTTP/1.1\r\nHost: test\r\nContent-Length: 1025\r\n\r\n")
        let response = try client.readResponse()
        #expect(response.status == 413)
        #expect(response.text.contains("1024"))
        #expect(client.waitForClose(within: 3))
    }

    @Test func bodyAtLimitIsAccepted() throws {
        let server = try Self.makeServer()
        defer { server.stop() }
        let client = try server.client()

        let body = [UInt8](repeating: UInt8(ascii: "x"), count: 1024)
        try client.send("POST /echo HTTP/1.1\r\nHost: test\r\nContent-Length: 1024\r\n\r\n".bytes + body)
        let response = try client.readResponse()
        #expect(response.status == 200)
        #expect(response.body == body)
    }

    @Test func chunkedBodyOverLimitIs413() throws {
        let server = try Self.makeServer()
        defer { server.stop() }
        let client = try server.client()

        let chunk = "190\r\n" + String(repeating: "y", count: 400) + "\r\n"  // 3 x 400 > 1024
        try client.send(
            "POST /echo HTTP/1.1\r\nHost: test\r\nTransfer-Encoding: chunked\r\n\r\n" + chunk + chunk + chunk + "0\r\n\r\n")
        let response = try client.readResponse()
        #expect(response.status == 413)
        #expect(client.waitForClose(within: 3))
    }

    @Test func routeLevelMaxBodyBytesIsHonoured() throws {
        let server = try Self.makeServer()
        defer { server.stop() }

        let small = try server.client()
        try small.send("POST /tiny HTTP/1.1\r\nHost: test\r\nContent-Length: 10\r\n\r\n0123456789")
        let accepted = try small.readResponse()
        #expect(accepted.status == 200)
        #expect(accepted.text == "0123456789")

        let big = try server.client()
        try big.send("POST /tiny HTTP/1.1\r\nHost: test\r\nContent-Length: 11\r\n\r\n")
        #expect(try big.readResponse().status == 413)

        let chunked = try server.client()
        try chunked.send("POST /tiny HTTP/1.1\r\nHost: test\r\nTransfer-Encoding: chunked\r\n\r\n6\r\nabcdef\r\n6\r\nghijkl\r\n0\r\n\r\n")
        #expect(try chunked.readResponse().status == 413)

        // A route may also allow more than the server default.
        let roomy = try server.client()
        let body = [UInt8](repeating: UInt8(ascii: "z"), count: 3000)
        try roomy.send("POST /roomy HTTP/1.1\r\nHost: test\r\nContent-Length: 3000\r\n\r\n".bytes + body)
        let roomyResponse = try roomy.readResponse()
        #expect(roomyResponse.status == 200)
        #expect(roomyResponse.text == "3000")
    }
}
