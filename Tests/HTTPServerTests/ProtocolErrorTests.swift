import Foundation
import HTTPTestSupport
import TestThreads
import Testing
@testable import HTTPServer

/// Requests the server must refuse, over real sockets. After a framing error the server
/// answers with a problem document and closes the connection.
@Suite(.ownThreads) struct ProtocolErrorTests {
    static var tightLimits: HTTPServerLimits {
        var limits = HTTPServerLimits.forTests
        limits.maxRequestLineBytes = 256
        limits.maxHeadBytes = 1024
        limits.maxHeaderCount = 10
        return limits
    }

    /// Sends `request` on a fresh connection, reads one response, and checks the connection
    /// is closed afterwards.
    func refusal(_ request: String, limits: HTTPServerLimits = tightLimits) throws -> RawHTTPClient.Response {
        let server = try TestServer(limits: limits)
        defer { server.stop() }
        let client = try server.client()
        try client.send(request)
        let response = try client.readResponse()
        #expect(response.header("Content-Type") == "application/problem+json")
        #expect(response.connectionTokens.contains("close"))
        #expect(response.count(of: "Connection") == 1)
        #expect(client.waitForClose(within: 3), "the connection is closed after \(response.status)")
        #expect(client.buffer.isEmpty)
        return response
    }

    @Test(arguments: [
        "GARBAGE\r\nHost: test\r\n\r\n",
        "GET /hello\r\nHost: test\r\n\r\n",
        "GET  /hello HTTP/1.1\r\nHost: test\r\n\r\n",
        "GET hello HTTP/1.1\r\nHost: test\r\n\r\n",
        "G(T /hello HTTP/1.1\r\nHost: test\r\n\r\n",
        "GET /hello FTP/1.1\r\nHost: test\r\n\r\n",
    ])
    func malformedRequestLineIs400AndCloses(request: String) throws {
        let response = try refusal(request)
        #expect(response.status == 400)
        #expect(response.text.contains("\"status\":400"))
    }

    @Test func unsupportedVersionIs505() throws {
        #expect(try refusal("GET /hello HTTP/2.0\r\nHost: test\r\n\r\n").status == 505)
    }

    @Test func http11WithoutHostIs400() throws {
        let response = try refusal("GET /hello HTTP/1.1\r\nAccept: */*\r\n\r\n")
        #expect(response.status == 400)
        #expect(response.text.contains("Host"))
    }

    @Test func contentLengthAndTransferEncodingTogetherIs400() throws {
        let response = try refusal(
            "POST /echo HTTP/1.1\r\nHost: test\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n")
        #expect(response.status == 400)
    }

    @Test func invalidContentLengthIs400() throws {
        #expect(try refusal("POST /echo HTTP/1.1\r\nHost: test\r\nContent-Length: -1\r\n\r\n").status == 400)
        #expect(
            try refusal("POST /echo HTTP/1.1\r\nHost: test\r\nContent-Length: 3\r\nContent-Length: 4\r\n\r\nabcd").status
                == 400)
    }

    @Test func unsupportedTransferEncodingIs501() throws {
        #expect(try refusal("POST /echo HTTP/1.1\r\nHost: test\r\nTransfer-Encoding: gzip\r\n\r\n").status == 501)
    }

    @Test func oversizedHeaderBlockIs431() throws {
        let big = String(repeating: "a", count: 2000)
        #expect(try refusal("GET /hello HTTP/1.1\r\nHost: test\r\nX-Big: \(big)\r\n\r\n").status == 431)
    }

    @Test func oversizedHeaderBlockStillArrivingIs431() throws {
        // No end of head yet, but already more than the limit.
        var request = "GET /hello HTTP/1.1\r\nHost: test\r\n"
        for i in 0..<9 { request += "X-Filler-\(i): \(String(repeating: "b", count: 150))\r\n" }
        #expect(try refusal(request).status == 431)
    }

    @Test func emptyLinesBeforeTheRequestLineCountAgainstTheHeadLimit() throws {
        // A few are tolerated (RFC 9112 §2.2); an endless stream must not grow the buffer.
        let server = try TestServer(limits: Self.tightLimits)
        defer { server.stop() }
        let tolerated = try server.client()
        try tolerated.send("\r\n\r\nGET /hello HTTP/1.1\r\nHost: test\r\n\r\n")
        #expect(try tolerated.readResponse().status == 200)

        let response = try refusal(String(repeating: "\r\n", count: 2000))
        #expect(response.status == 431)
    }

    @Test(arguments: [
        // An empty Transfer-Encoding beside a Content-Length, and alone (RFC 9112 §6.1).
        "POST /echo HTTP/1.1\r\nHost: test\r\nTransfer-Encoding: \r\nContent-Length: 5\r\n\r\nhello",
        "POST /echo HTTP/1.1\r\nHost: test\r\nTransfer-Encoding:\r\n\r\n5\r\nhello\r\n0\r\n\r\n",
        // Anything after the chunk size but a valid extension (RFC 9112 §7.1.1).
        "POST /echo HTTP/1.1\r\nHost: test\r\nTransfer-Encoding: chunked\r\n\r\n2 0\r\nab\r\n0\r\n\r\n",
        "POST /echo HTTP/1.1\r\nHost: test\r\nTransfer-Encoding: chunked\r\n\r\n2;a b\r\nab\r\n0\r\n\r\n",
        // Bare LF in chunk lines (RFC 9112 §7.1).
        "POST /echo HTTP/1.1\r\nHost: test\r\nTransfer-Encoding: chunked\r\n\r\n2\nab\r\n0\r\n\r\n",
        "POST /echo HTTP/1.1\r\nHost: test\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nab\n0\r\n\r\n",
        // HTTP/1.0 with Transfer-Encoding, even asking for keep-alive (RFC 9112 §6.1).
        "POST /echo HTTP/1.0\r\nConnection: keep-alive\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nab\r\n0\r\n\r\nGET /hello HTTP/1.0\r\n\r\n",
        // Two Host fields (RFC 9112 §3.2).
        "GET /hello HTTP/1.1\r\nHost: test\r\nHost: other\r\n\r\n",
    ])
    func framingLeniencyIs400AndCloses(request: String) throws {
        let response = try refusal(request)
        #expect(response.status == 400)
    }

    @Test func trailerFieldsCountAgainstTheHeadLimits() throws {
        let chunked = "POST /echo HTTP/1.1\r\nHost: test\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nab\r\n0\r\n"
        // Head and trailers together over maxHeadBytes (1024).
        let big = "X-Big: \(String(repeating: "t", count: 1000))\r\n"
        #expect(try refusal(chunked + big + "\r\n").status == 431)
        // Head fields (2) and trailer fields together over maxHeaderCount (10).
        let many = (0..<9).map { "X-T\($0): \($0)\r\n" }.joined()
        #expect(try refusal(chunked + many + "\r\n").status == 431)
        // Within both, the body is accepted.
        let server = try TestServer(limits: Self.tightLimits)
        defer { server.stop() }
        let client = try server.client()
        try client.send(chunked + "X-T: 1\r\n\r\n")
        #expect(try client.readResponse().text == "ab")
    }

    @Test func requestLineTooLongIs414() throws {
        let path = "/" + String(repeating: "p", count: 400)
        #expect(try refusal("GET \(path) HTTP/1.1\r\nHost: test\r\n\r\n").status == 414)
    }

    @Test func requestLineTooLongWithoutLineEndIs414() throws {
        // The line has not ended yet, but it is already too long.
        let path = "/" + String(repeating: "p", count: 400)
        #expect(try refusal("GET \(path)").status == 414)
    }

    @Test func tooManyHeadersIs431() throws {
        var request = "GET /hello HTTP/1.1\r\nHost: test\r\n"
        for i in 0..<12 { request += "X-H\(i): \(i)\r\n" }
        let response = try refusal(request + "\r\n")
        #expect(response.status == 431)
    }

    @Test func headersUpToTheLimitAreAccepted() throws {
        let server = try TestServer(limits: Self.tightLimits)
        defer { server.stop() }
        let client = try server.client()
        var request = "GET /hello HTTP/1.1\r\nHost: test\r\n"
        for i in 0..<9 { request += "X-H\(i): \(i)\r\n" }
        try client.send(request + "\r\n")
        #expect(try client.readResponse().status == 200)
    }
}
