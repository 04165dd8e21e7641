import Foundation
import HTTPTestSupport
import TestThreads
import Testing
@testable import HTTPServer

/// Connection management over real sockets: keep-alive, pipelining, HTTP/1.0, `Connection: close`,
/// HEAD framing and the `Date` header.
@Suite(.ownThreads) struct ConnectionTests {
    @Test func keepAliveServesTwoRequestsOnOneConnection() throws {
        let server = try TestServer()
        defer { server.stop() }
        let client = try server.client()

        try client.send("GET /say?word=first HTTP/1.1\r\nHost: test\r\n\r\n")
        let first = try client.readResponse()
        #expect(first.status == 200)
        #expect(first.text == "first")
        #expect(!first.connectionTokens.contains("close"))

        try client.send("GET /say?word=second HTTP/1.1\r\nHost: test\r\n\r\n")
        let second = try client.readResponse()
        #expect(second.status == 200)
        #expect(second.text == "second")
        #expect(!second.connectionTokens.contains("close"))
        #expect(client.buffer.isEmpty)

        // The connection stays open after keep-alive responses: a third request is served on it.
        try client.send("GET /say?word=third HTTP/1.1\r\nHost: test\r\n\r\n")
        #expect(try client.readResponse().text == "third")
    }

    @Test func pipelinedRequestsAreAnsweredInOrderAcrossTheWorkerPool() throws {
        let gate = Gate()
        let server = try TestServer { routes in
            routes.add(.get, "/slow", options: .workerPool) { _, _ in
                gate.pass()
                return HTTPResponse(contentType: "text/plain", bytes: "slow".bytes)
            }
        }
        defer { server.stop() }
        let client = try server.client()

        try client.send(
            "GET /say?word=one HTTP/1.1\r\nHost: test\r\n\r\n"
                + "GET /slow HTTP/1.1\r\nHost: test\r\n\r\n"
                + "POST /echo HTTP/1.1\r\nHost: test\r\nContent-Length: 5\r\n\r\nthree"
                + "GET /say?word=four HTTP/1.1\r\nHost: test\r\n\r\n")

        let one = try client.readResponse()
        #expect(one.status == 200)
        #expect(one.text == "one")
        #expect(gate.waitForArrival(), "the slow handler runs")
        // Requests three and four are answered inline, but must wait for two: no response
        // overtakes the one still on the worker pool, so they arrive in request order.
        gate.open()

        let two = try client.readResponse()
        #expect(two.text == "slow")
        let three = try client.readResponse()
        #expect(three.text == "three")
        let four = try client.readResponse()
        #expect(four.text == "four")
        #expect([one, two, three, four].allSatisfy { $0.status == 200 })
        #expect(client.buffer.isEmpty)
    }

    @Test func pipelinedRequestsContinueAfterLargeResponsesAreFlushed() throws {
        // Responses larger than maxQueuedResponseBytes make the connection stop reading
        // pipelined requests until the output drains; it must then carry on by itself.
        var limits = HTTPServerLimits.forTests
        limits.maxQueuedResponseBytes = 1000
        let big = [UInt8](repeating: UInt8(ascii: "b"), count: 5000)
        let server = try TestServer(limits: limits) { routes in
            routes.add(.get, "/big") { _, _ in HTTPResponse(contentType: "text/plain", bytes: big) }
            routes.add(.get, "/big-worker", options: .workerPool) { _, _ in
                HTTPResponse(contentType: "text/plain", bytes: big)
            }
        }
        defer { server.stop() }
        let client = try server.client(timeout: 2)

        try client.send(
            "GET /big HTTP/1.1\r\nHost: test\r\n\r\n" + "GET /big-worker HTTP/1.1\r\nHost: test\r\n\r\n"
                + "GET /big HTTP/1.1\r\nHost: test\r\n\r\n" + "GET /say?word=last HTTP/1.1\r\nHost: test\r\n\r\n")
        for _ in 0..<3 {
            let response = try client.readResponse()
            #expect(response.status == 200)
            #expect(firstDifference(response.body, big) == nil)
        }
        let last = try client.readResponse()
        #expect(last.status == 200)
        #expect(last.text == "last")
    }

    @Test(arguments: ["/say?word=inline", "/slow?word=worker"])
    func halfClosedClientStillGetsItsResponse(target: String) throws {
        let server = try TestServer { routes in
            routes.add(.get, "/slow", options: .workerPool) { request, _ in
                Thread.sleep(forTimeInterval: 0.05)  // a slow handler (the half-close overtakes it), not a wait
                return HTTPResponse(contentType: "text/plain", bytes: Array((request.query("word") ?? "").utf8))
            }
        }
        defer { server.stop() }
        let client = try server.client()
        try client.send(
            "GET /say?word=first HTTP/1.1\r\nHost: test\r\n\r\nGET \(target) HTTP/1.1\r\nHost: test\r\n\r\n")
        client.shutdownWrite()
        #expect(try client.readResponse().text == "first")
        let second = try client.readResponse()
        #expect(second.status == 200)
        #expect(second.text == String(target.split(separator: "=").last!))
        #expect(client.waitForClose(within: 3))
    }

    @Test func http10RequestGetsHTTP10ResponseAndClose() throws {
        let server = try TestServer()
        defer { server.stop() }
        let client = try server.client()

        try client.send("GET /hello HTTP/1.0\r\n\r\n")
        let response = try client.readResponse()
        #expect(response.version == "HTTP/1.0")
        #expect(response.status == 200)
        #expect(response.text == "hello, world\n")
        #expect(response.connectionTokens.contains("close"))
        #expect(client.waitForClose(within: 3))
    }

    @Test func http10KeepAliveStaysOpen() throws {
        let server = try TestServer()
        defer { server.stop() }
        let client = try server.client()

        try client.send("GET /say?word=a HTTP/1.0\r\nConnection: keep-alive\r\n\r\n")
        let first = try client.readResponse()
        #expect(first.version == "HTTP/1.0")
        #expect(first.text == "a")
        #expect(first.connectionTokens == ["keep-alive"])
        #expect(first.header("Content-Length") == "1")

        try client.send("GET /say?word=b HTTP/1.0\r\nConnection: keep-alive\r\n\r\n")
        let second = try client.readResponse()
        #expect(second.text == "b")
        #expect(second.connectionTokens == ["keep-alive"])
    }

    @Test func connectionCloseIsHonoured() throws {
        let server = try TestServer()
        defer { server.stop() }
        let client = try server.client()

        try client.send("GET /hello HTTP/1.1\r\nHost: test\r\nConnection: close\r\n\r\n")
        let response = try client.readResponse()
        #expect(response.status == 200)
        #expect(response.version == "HTTP/1.1")
        #expect(response.connectionTokens.contains("close"))
        #expect(client.waitForClose(within: 3))
        #expect(client.buffer.isEmpty)
    }

    @Test func headOnGetRouteSendsHeadersButNoBody() throws {
        let server = try TestServer()
        defer { server.stop() }
        let client = try server.client()

        try client.send("GET /hello HTTP/1.1\r\nHost: test\r\n\r\n")
        let get = try client.readResponse()

        try client.send("HEAD /hello HTTP/1.1\r\nHost: test\r\n\r\n")
        let head = try client.readResponse(isHead: true)
        #expect(head.status == 200)
        #expect(head.header("Content-Length") == String("hello, world\n".utf8.count))
        #expect(head.header("Content-Type") == get.header("Content-Type"))
        #expect(head.body.isEmpty)

        // Stray body bytes after the HEAD response would corrupt this one.
        try client.send("GET /say?word=after HTTP/1.1\r\nHost: test\r\n\r\n")
        let after = try client.readResponse()
        #expect(after.status == 200)
        #expect(after.text == "after")
        #expect(client.buffer.isEmpty)
    }

    @Test func dateHeaderIsPresentAndWellFormed() throws {
        let server = try TestServer()
        defer { server.stop() }
        let client = try server.client()

        try client.send("GET /hello HTTP/1.1\r\nHost: test\r\n\r\n")
        let response = try client.readResponse()
        #expect(response.count(of: "Date") == 1)
        let value = try #require(response.header("Date"))
        #expect(value.wholeMatch(of: #/(Mon|Tue|Wed|Thu|Fri|Sat|Sun), \d\d (Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec) \d{4} \d\d:\d\d:\d\d GMT/#) != nil,
                "IMF-fixdate, got \(value)")
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss 'GMT'"
        let date = try #require(formatter.date(from: value))
        #expect(abs(date.timeIntervalSinceNow) < 120, "the Date header is the current time, got \(value)")
    }

    @Test func dateFormatterMatchesKnownInstant() {
        // The example of RFC 9110 §5.6.7.
        #expect(HTTPDate.format(secondsSince1970: 784_111_777) == "Sun, 06 Nov 1994 08:49:37 GMT")
    }
}
