import Essentials
import HTTPServer
import TestThreads
import Testing

@testable import BlueLibraryServer

@Suite(.ownThreads) struct ForwardedHeadersTests {
    func respond(peer: String, trusted: [String], headers: HTTPHeaders,
                 family: ForwardedHeaderFamily = .xForwarded) throws -> RequestContext {
        let middleware = ForwardedHeadersMiddleware(trustedProxies: trusted.compactMap(IPAddressRange.init), family: family)
        let capture = ContextCapture()
        _ = try middleware.handle(HTTPRequest(method: .get, target: "/", headers: headers),
                                  context: RequestContext(peerAddress: IPAddress(peer)!, host: "internal:8080"), next: capture)
        return try #require(capture.seen)
    }

    @Test func trustedProxyHeadersSetClientSchemeAndHost() throws {
        let context = try respond(
            peer: "10.0.0.5", trusted: ["10.0.0.0/8"],
            headers: ["X-Forwarded-For": "203.0.113.7, 10.0.0.9", "X-Forwarded-Proto": "https", "X-Forwarded-Host": "music.example"])
        // The rightmost untrusted hop is the client; the trusted 10.0.0.9 is skipped.
        #expect(context.clientAddress == "203.0.113.7")
        #expect(context.scheme == "https")
        #expect(context.host == "music.example")
    }

    @Test func anIPv4MappedPeerIsTheIPv4Address() throws {
        // A dual-stack listener reports IPv4 clients as ::ffff:a.b.c.d.
        let trusted = try respond(peer: "::ffff:10.0.0.5", trusted: ["10.0.0.0/8"], headers: ["X-Forwarded-For": "203.0.113.7"])
        #expect(trusted.clientAddress == "203.0.113.7")
        let untrusted = try respond(peer: "::ffff:198.51.100.4", trusted: ["10.0.0.0/8"], headers: ["X-Forwarded-For": "1.2.3.4"])
        #expect(untrusted.clientAddress == "198.51.100.4")
        #expect(untrusted.forwardedClientAddress == nil)
    }

    @Test func untrustedPeersCannotSpoofTheirAddress() throws {
        let context = try respond(
            peer: "198.51.100.4", trusted: ["10.0.0.0/8"],
            headers: ["X-Forwarded-For": "1.2.3.4", "X-Forwarded-Proto": "https"])
        #expect(context.clientAddress == "198.51.100.4")
        #expect(context.scheme == "http")
        #expect(context.host == "internal:8080")
    }

    @Test func spoofedLeftmostEntriesAreIgnored() throws {
        // A client sends its own X-Forwarded-For; the proxy appends the real address.
        let context = try respond(peer: "127.0.0.1", trusted: ["127.0.0.1"], headers: ["X-Forwarded-For": "6.6.6.6, 192.0.2.10"])
        #expect(context.clientAddress == "192.0.2.10")
    }

    @Test func onlyTheConfiguredFamilyIsRead() throws {
        let headers: HTTPHeaders = ["Forwarded": "for=\"[2001:db8::17]:4711\";proto=https;host=lib.example",
                                    "X-Forwarded-For": "9.9.9.9"]
        let rfc7239 = try respond(peer: "127.0.0.1", trusted: ["127.0.0.0/8"], headers: headers, family: .forwarded)
        #expect(rfc7239.clientAddress == "2001:db8::17")
        #expect(rfc7239.scheme == "https")
        #expect(rfc7239.host == "lib.example")
        let x = try respond(peer: "127.0.0.1", trusted: ["127.0.0.0/8"], headers: headers)
        #expect(x.clientAddress == "9.9.9.9")
        #expect(x.scheme == "http")
        #expect(x.host == "internal:8080")
    }
}

/// The innermost responder of a middleware test: remembers the context it was given.
final class ContextCapture: HTTPResponder, @unchecked Sendable {
    // Only touched synchronously by the test that owns it.
    var seen: RequestContext?
    func respond(to request: HTTPRequest, context: RequestContext) throws -> HTTPReply {
        seen = context
        return .response(HTTPResponse())
    }
}

@Suite(.ownThreads) struct AbsoluteURLTests {
    @Test func plausibleHostsMakeAbsoluteURLsAndOthersRelativeOnes() {
        var context = RequestContext(peerAddress: IPAddress("127.0.0.1")!, host: "library.example:8080")
        #expect(RequestInput.absoluteURL("/albums/x", context) == "http://library.example:8080/albums/x")
        context.host = "[::1]:8080"
        #expect(RequestInput.absoluteURL("/albums/x", context) == "http://[::1]:8080/albums/x")
        for hostile in ["evil.example/phish?", "a b", "x\"><script>", ""] {
            context.host = hostile
            #expect(RequestInput.absoluteURL("/albums/x", context) == "/albums/x", "\(hostile)")
        }
    }
}
