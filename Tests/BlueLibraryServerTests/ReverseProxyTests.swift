import BlueLibraryTestSupport
import Essentials
import Foundation
import HTTPTestSupport
import Synchronization
import TestThreads
import Testing

@testable import BlueLibraryServer

/// The server behind a real nginx, configured by `deploy/nginx.conf.example`.
@Suite(.serialized, .timeLimit(.minutes(2)), .ownThreads) struct ReverseProxyTests {
    /// Captures the access log lines.
    final class LogLines: Sendable {
        let lines = Mutex<[String]>([])
        var sink: @Sendable ([UInt8]) -> Void {
            { bytes in self.lines.withLock { $0.append(String(decoding: bytes, as: UTF8.self)) } }
        }
        func entry(requestID: String) -> String? {
            lines.withLock { $0.first { $0.contains("\"requestId\":\"\(requestID)\"") } }
        }
    }

    func startApp(trusting: Bool, log: LogLines) throws -> BlueLibraryApp {
        let app = try TestApp.make({ config in
            config.accessLog = true
            if trusting { config.trustedProxies = [IPAddressRange("127.0.0.1/32")!] }
        }, logSink: log.sink)
        app.start()
        return app
    }

    @Test func trustedProxyGivesClientAddressSchemeAndHost() throws {
        let log = LogLines()
        let app = try startApp(trusting: true, log: log)
        defer { app.shutdown() }
        let proxy = try NginxProxy(upstreamPort: app.port, tls: true)

        // A client on 127.0.0.2 that tries to spoof its address: nginx appends the real one.
        let client = try RawHTTPClient(port: proxy.port, source: "127.0.0.2")
        try client.send("GET /healthz HTTP/1.1\r\nHost: library.test:\(proxy.port)\r\nX-Forwarded-For: 203.0.113.9\r\n\r\n")
        let health = try client.readResponse()
        #expect(health.status == 200)
        let requestID = try #require(health.header("X-Request-Id"))
        #expect(eventually { log.entry(requestID: requestID) != nil }, "the request is logged")
        let line = try #require(log.entry(requestID: requestID))
        #expect(line.contains("\"client\":\"127.0.0.2\""), "the rightmost untrusted hop, not the spoofed one: \(line)")

        // Over TLS at the proxy: Location and Link carry https and the external host.
        let tlsPort = try #require(proxy.tlsPort)
        let created = try Curl.run(["-X", "POST", "-H", "Content-Type: application/json", "--data", #"{"title":"Low","artist":"David Bowie"}"#,
                                    "https://127.0.0.1:\(tlsPort)/albums"])
        #expect(created.hasPrefix("HTTP/1.1 201"))
        #expect(created.contains("Location: https://127.0.0.1:\(tlsPort)/albums/"), "\(created)")
        // A client's own X-Forwarded-Prefix is cleared by the shipped config: the trusted proxy
        // would otherwise hand it on, and the server would write it into every Link.
        let listed = try Curl.run(["-H", "X-Forwarded-Prefix: /evil", "https://127.0.0.1:\(tlsPort)/albums?limit=2"])
        #expect(listed.contains("Link: <https://127.0.0.1:\(tlsPort)/albums?limit=2&cursor="), "\(listed)")
    }

    @Test func untrustedProxyHeadersAreIgnored() throws {
        let log = LogLines()
        let app = try startApp(trusting: false, log: log)
        defer { app.shutdown() }
        let proxy = try NginxProxy(upstreamPort: app.port, tls: true)
        let client = try RawHTTPClient(port: proxy.port, source: "127.0.0.2")
        try client.send("GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Forwarded-For: 203.0.113.9\r\n\r\n")
        let requestID = try #require(try client.readResponse().header("X-Request-Id"))
        #expect(eventually { log.entry(requestID: requestID) != nil }, "the request is logged")
        let line = try #require(log.entry(requestID: requestID))
        #expect(line.contains("\"client\":\"127.0.0.1\""), "the peer (nginx) itself: \(line)")
        let tlsPort = try #require(proxy.tlsPort)
        let created = try Curl.run(["-X", "POST", "-H", "Content-Type: application/json", "--data", #"{"title":"Low","artist":"David Bowie"}"#,
                                    "https://127.0.0.1:\(tlsPort)/albums"])
        #expect(created.contains("Location: http://127.0.0.1:\(tlsPort)/albums/"), "scheme not believed: \(created)")
    }

    @Test func uploadsNearTheLimitPassAndKeepAliveHolds() throws {
        let log = LogLines()
        let app = try startApp(trusting: true, log: log)
        defer { app.shutdown() }
        let proxy = try NginxProxy(upstreamPort: app.port)
        let client = try RawHTTPClient(port: proxy.port)
        // An album padded with whitespace to just under 1 MiB passes both nginx and the server.
        let album = Array(#"{"title": "Big", "artist": "Padding"}"#.utf8)
        let body = album + Array(repeating: UInt8(ascii: " "), count: 1_048_000 - album.count)
        try client.send(Array("POST /albums HTTP/1.1\r\nHost: lib\r\nContent-Type: application/json\r\nContent-Length: \(body.count)\r\n\r\n".utf8) + body)
        #expect(try client.readResponse().status == 201)
        // Keep-alive: more requests on the same client connection, through pooled upstream connections.
        for _ in 0..<5 {
            try client.send("GET /albums?limit=1 HTTP/1.1\r\nHost: lib\r\n\r\n")
            #expect(try client.readResponse().status == 200)
        }
        #expect(app.server.connectionCount <= 2, "nginx reuses its upstream connections")
        // Over the limit: refused by nginx before it reaches the server.
        let big = try RawHTTPClient(port: proxy.port)
        try big.send("POST /albums HTTP/1.1\r\nHost: lib\r\nContent-Type: application/json\r\nContent-Length: 2000000\r\n\r\n")
        #expect(try big.readResponse().status == 413)
    }

    @Test func eventsStreamThroughTheProxyWithoutBuffering() throws {
        let log = LogLines()
        let app = try startApp(trusting: true, log: log)
        defer { app.shutdown() }
        let proxy = try NginxProxy(upstreamPort: app.port)
        let subscriber = try RawHTTPClient(port: proxy.port, receiveTimeout: 5)
        try subscriber.send("GET /events HTTP/1.1\r\nHost: lib\r\nAccept: text/event-stream\r\n\r\n")
        let head = try subscriber.readResponse(isHead: true)
        #expect(head.status == 200)
        #expect(head.header("Content-Type")?.hasPrefix("text/event-stream") == true)
        // A change made straight at the server reaches the subscriber through nginx at once:
        // with buffering on, nginx would hold the small frame back.
        let body = Array(#"{"title": "Station to Station", "artist": "David Bowie"}"#.utf8)
        #expect(try RawHTTPClient.request(port: app.port, method: "POST", path: "/albums",
                                          headers: ["Content-Type": "application/json"], body: body).status == 201)
        var received = ""
        while !received.contains("event: album.added") {
            guard let chunk = try subscriber.readChunk() else { break }
            received += String(decoding: chunk, as: UTF8.self)
        }
        #expect(received.contains("event: album.added"))
        #expect(received.contains("data: {"))
    }
}

/// Behind the shipped nginx config a client cannot pick its own address with `Forwarded` or
/// `X-Forwarded-For`, so the lockout counts its guesses.
@Suite(.serialized, .timeLimit(.minutes(2)), .ownThreads) struct ForwardedSpoofingTests {
    static let token = "correct-horse-battery-staple"

    @Test func spoofedForwardedHeadersDoNotEscapeTheLockout() throws {
        let app = try TestApp.make { config in
            config.trustedProxies = [IPAddressRange("127.0.0.1/32")!]
            config.token = AccessToken(Self.token)
        }
        app.start()
        defer { app.shutdown() }
        let proxy = try NginxProxy(upstreamPort: app.port)
        func call(_ headers: String, token: String, source: String = "127.0.0.2") throws -> RawHTTPClient.Response {
            let client = try RawHTTPClient(port: proxy.port, source: source)
            try client.send("DELETE /albums/at/0 HTTP/1.1\r\nHost: lib\r\nAuthorization: Bearer \(token)\r\n\(headers)\r\n")
            return try client.readResponse()
        }
        let limit = app.settings.current.access.attemptLimit
        // Every guess claims another address in both header families (and a victim's address).
        for attempt in 0..<limit {
            let spoof = "Forwarded: for=198.51.100.\(attempt);proto=https\r\nX-Forwarded-For: 203.0.113.\(attempt), 127.0.0.3\r\n"
            let response = try call(spoof, token: "wrong-token-\(attempt)-xyz")
            #expect(response.status == 401, "guess \(attempt): \(response.status)")
        }
        let next = try call("Forwarded: for=198.51.100.200\r\nX-Forwarded-For: 203.0.113.200\r\n", token: "wrong-token-last-xyz")
        #expect(next.status == 429, "the lockout triggered after \(limit) failures: \(next.status)")
        let right = try call("Forwarded: for=198.51.100.201\r\n", token: Self.token)
        #expect(right.status == 429, "the locked address stays locked, whatever it claims")
        // The address the guesses named (127.0.0.3) is not locked out.
        let victim = try call("", token: Self.token, source: "127.0.0.3")
        #expect(victim.status == 200 || victim.status == 204, "victim: \(victim.status)")
    }
}
