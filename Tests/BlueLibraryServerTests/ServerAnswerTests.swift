import BlueLibraryTestSupport
import Foundation
import HTTPTestSupport
import Synchronization
import TestThreads
import Testing

@testable import BlueLibraryServer

/// The answers the server makes before a request reaches a route (401 and
/// 429 from the head, 413 for a body over the limit, 400 for a head that cannot be parsed, 408)
/// carry `X-Request-Id` and have their access log line, like every other response.
@Suite(.serialized, .timeLimit(.minutes(2)), .ownThreads) struct ServerAnswerTests {
    static let token = "correct-horse-battery-staple"

    /// Captures the access log.
    final class Log: Sendable {
        let lines = Mutex<[String]>([])
        var sink: @Sendable ([UInt8]) -> Void { { bytes in self.lines.withLock { $0.append(String(decoding: bytes, as: UTF8.self)) } } }
        /// The access log line of `requestID`, once it is written.
        func request(_ requestID: String) -> String? {
            var found: String?
            _ = eventually(timeout: .seconds(5)) {
                found = lines.withLock { $0.first { $0.contains("\"message\":\"request\"") && $0.contains("\"requestId\":\"\(requestID)\"") } }
                return found != nil
            }
            return found
        }
    }

    static func startApp(_ log: Log, token: Bool = true) throws -> BlueLibraryApp {
        let app = try TestApp.make({ config in
            config.accessLog = true
            if token { config.token = AccessToken(Self.token) }
            config.maxArchiveBytes = 1 << 20
            config.limits.headTimeout = .milliseconds(500)
            config.limits.bodyTimeout = .seconds(1)
        }, logSink: log.sink)
        app.start()
        return app
    }

    /// Sends `head` (and nothing more) and reads the answer.
    static func answer(_ port: Int, _ head: String) throws -> RawHTTPClient.Response {
        let client = try RawHTTPClient(port: port, receiveTimeout: 10)
        try client.send(head)
        return try client.readResponse()
    }

    /// `response` has a request id, and the access log has its line with its status.
    static func expectStampedAndLogged(_ response: RawHTTPClient.Response, status: Int, _ log: Log, method: String? = nil,
                                       sourceLocation: SourceLocation = #_sourceLocation) throws {
        #expect(response.status == status, "\(response.statusLine) \(response.text)", sourceLocation: sourceLocation)
        let id = try #require(response.header("X-Request-Id"), "\(response.statusLine) has no X-Request-Id", sourceLocation: sourceLocation)
        let line = try #require(log.request(id), "no access log line for \(response.statusLine)", sourceLocation: sourceLocation)
        #expect(line.contains("\"status\":\(status)"), "\(line)", sourceLocation: sourceLocation)
        if let method { #expect(line.contains("\"method\":\"\(method)\""), "\(line)", sourceLocation: sourceLocation) }
    }

    @Test func refusalsFromTheHeadCarryARequestIdAndAreLogged() throws {
        let log = Log()
        let app = try Self.startApp(log)
        defer { app.shutdown() }
        let upload = "POST /albums HTTP/1.1\r\nHost: lib\r\nContent-Type: application/json\r\nContent-Length: 100\r\n"

        // 401 from the head (no token), the body never read.
        let missing = try Self.answer(app.port, upload + "\r\n")
        try Self.expectStampedAndLogged(missing, status: 401, log, method: "POST")
        // The proxy's (or client's) own id is kept, as for any request.
        let named = try Self.answer(app.port, upload + "X-Request-Id: upload-17\r\n\r\n")
        #expect(named.status == 401 && named.header("X-Request-Id") == "upload-17")
        #expect(log.request("upload-17") != nil)

        // A wrong token is decided off the event loop: the same.
        try Self.expectStampedAndLogged(try Self.answer(app.port, upload + "Authorization: Bearer wrong-token-xyz\r\n\r\n"), status: 401, log)
        // Until the address is locked out: 429 from the head.
        var locked: RawHTTPClient.Response?
        for _ in 0..<20 {
            let answer = try Self.answer(app.port, upload + "Authorization: Bearer wrong-token-xyz\r\n\r\n")
            if answer.status == 429 {
                locked = answer
                break
            }
        }
        try Self.expectStampedAndLogged(try #require(locked, "no lockout"), status: 429, log)
    }

    @Test func framingErrorsAndTimeoutsCarryARequestIdAndAreLogged() throws {
        let log = Log()
        let app = try Self.startApp(log, token: false)
        defer { app.shutdown() }

        // 413: a Content-Length over the limit, refused from the head.
        let tooLarge = try Self.answer(app.port, "POST /albums HTTP/1.1\r\nHost: lib\r\nContent-Type: application/json\r\nContent-Length: 5000000\r\n\r\n")
        try Self.expectStampedAndLogged(tooLarge, status: 413, log, method: "POST")
        #expect(tooLarge.header("Content-Type") == "application/problem+json")

        // 400: a head that cannot be parsed (no request to name: method "-").
        try Self.expectStampedAndLogged(try Self.answer(app.port, "GET /albums HTTP/1.1\r\nno colon here\r\n\r\n"), status: 400, log, method: "-")

        // 408: half a head, then nothing.
        try Self.expectStampedAndLogged(try Self.answer(app.port, "GET /albums HTTP/1.1\r\nHost: lib\r\n"), status: 408, log)

        // A streamed body (PUT /archive) over its limit, chunked so that only its bytes tell:
        // the responder already has the request, and answers the server's 413 itself.
        let upload = try RawHTTPClient(port: app.port, receiveTimeout: 10)
        try upload.send("PUT /archive HTTP/1.1\r\nHost: lib\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n")
        let chunk = Array(String(format: "%x\r\n", 64 * 1024).utf8) + [UInt8](repeating: 0x20, count: 64 * 1024) + Array("\r\n".utf8)
        for _ in 0..<17 { try upload.send(chunk) }
        let streamedTooLarge = try upload.readResponse()
        try Self.expectStampedAndLogged(streamedTooLarge, status: 413, log, method: "PUT")
        #expect(streamedTooLarge.header("Content-Type") == "application/problem+json")

        // A streamed body that stalls: 408, answered the same way.
        try Self.expectStampedAndLogged(
            try Self.answer(app.port, "PUT /archive HTTP/1.1\r\nHost: lib\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n{\"albums\""),
            status: 408, log, method: "PUT")

        // 408 while the body is awaited: the request is known.
        try Self.expectStampedAndLogged(
            try Self.answer(app.port, "POST /albums HTTP/1.1\r\nHost: lib\r\nContent-Type: application/json\r\nContent-Length: 50\r\n\r\n{"),
            status: 408, log, method: "POST")
    }
}
