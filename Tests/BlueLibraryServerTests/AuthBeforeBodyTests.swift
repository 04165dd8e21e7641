import BlueLibraryTestSupport
import Foundation
import HTTPTestSupport
import TestThreads
import Testing

@testable import BlueLibraryServer

/// A protected request that will be refused gets its 401/429 from the head, before any body
/// byte is read and without `100 Continue`; then the connection is closed.
@Suite(.serialized, .timeLimit(.minutes(2)), .ownThreads) struct AuthBeforeBodyTests {
    static let token = "correct-horse-battery-staple"

    static func hugeUpload(_ port: Int, authorization: String?) throws -> (RawHTTPClient.Response, RawHTTPClient) {
        let client = try RawHTTPClient(port: port, receiveTimeout: 20)
        var head = "PUT /archive HTTP/1.1\r\nHost: lib\r\nContent-Type: application/json\r\nContent-Length: 1000000000\r\nExpect: 100-continue\r\n"
        if let authorization { head += "Authorization: \(authorization)\r\n" }
        // No body byte is ever sent: the answer can only come from the head.
        try client.send(head + "\r\n")
        return (try client.readResponse(), client)
    }

    @Test func refusedFromTheHeadWithoutContinueAndClosed() throws {
        let app = try TestApp.make {
            $0.token = AccessToken(Self.token)
            $0.maxArchiveBytes = 1 << 30
        }
        app.start()
        defer { app.shutdown() }

        let (missing, first) = try Self.hugeUpload(app.port, authorization: nil)
        #expect(missing.status == 401, "\(missing.statusLine)")
        #expect(missing.header("Connection")?.lowercased() == "close")
        #expect(first.isClosedByServer())

        // A wrong token (decided by a hash off the event loop) is refused the same way.
        let (wrong, second) = try Self.hugeUpload(app.port, authorization: "Bearer wrong-token-xyz")
        #expect(wrong.status == 401, "\(wrong.statusLine)")
        #expect(wrong.header("WWW-Authenticate")?.contains("invalid_token") == true)
        #expect(second.isClosedByServer())

        // The right token gets 100 Continue: the body is wanted.
        let (right, _) = try Self.hugeUpload(app.port, authorization: "Bearer \(Self.token)")
        #expect(right.status == 100, "\(right.statusLine)")
    }

    @Test func aLockedAddressGets429FromTheHead() throws {
        let app = try TestApp.make { $0.token = AccessToken(Self.token) }
        app.start()
        defer { app.shutdown() }
        let limit = app.settings.current.access.attemptLimit
        for _ in 0..<limit {
            _ = try Self.hugeUpload(app.port, authorization: "Bearer wrong-token-xyz")
        }
        let (locked, client) = try Self.hugeUpload(app.port, authorization: "Bearer \(Self.token)")
        #expect(locked.status == 429, "\(locked.statusLine)")
        #expect(locked.header("Retry-After") != nil)
        #expect(client.isClosedByServer())
    }
}
