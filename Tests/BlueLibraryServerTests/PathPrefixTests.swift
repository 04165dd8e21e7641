import BlueLibraryTestSupport
import Essentials
import Foundation
import HTTPServer
import HTTPTestSupport
import Synchronization
import TestThreads
import Testing

@testable import BlueLibraryServer

/// Behind a proxy that serves the server under a path prefix (`/music/`)
/// and says so in `X-Forwarded-Prefix`, every URL the server writes starts with the prefix, so
/// a client that follows `Link` and `Location` stays under it. The header is believed from
/// trusted proxies only, and only when it is a plain path.
@Suite(.serialized, .timeLimit(.minutes(2)), .ownThreads) struct PathPrefixTests {
    /// `http://host:port/path?query` → `/path?query`.
    static func pathAndQuery(of url: String, origin: String) throws -> String {
        try #require(url.hasPrefix(origin), "\(url) is not on \(origin)")
        return String(url.dropFirst(origin.count))
    }

    /// The target of `Link: <...>; rel="next"`, if any.
    static func nextLink(_ response: RawHTTPClient.Response) -> String? {
        guard let link = response.header("Link"), link.hasPrefix("<"), let close = link.firstIndex(of: ">") else { return nil }
        return String(link[link.index(after: link.startIndex)..<close])
    }

    @Test func aCursorWalkThatFollowsLinkThroughNginxStaysUnderThePrefix() throws {
        let app = try TestApp.make { $0.trustedProxies = [IPAddressRange("127.0.0.1/32")!] }
        app.start()
        defer { app.shutdown() }
        let proxy = try NginxProxy(upstreamPort: app.port, pathPrefix: "/music/", forwardsPrefix: true)
        let origin = "http://127.0.0.1:\(proxy.port)"
        func get(_ path: String, headers: [String: String] = [:]) throws -> RawHTTPClient.Response {
            try RawHTTPClient.request(port: proxy.port, path: path, headers: headers)
        }
        func post(_ path: String, _ json: String) throws -> RawHTTPClient.Response {
            try RawHTTPClient.request(port: proxy.port, method: "POST", path: path,
                                      headers: ["Content-Type": "application/json"],
                                      body: Array(json.utf8))
        }

        // The paging loop of docs/api.md: follow Link until there is none. A client that tries to
        // set its own prefix gets nginx's (proxy_set_header replaces it).
        var next: String? = "/music/albums?limit=2&sort=title"
        var titles: [String] = []
        var pages = 0
        while let path = next {
            let page = try get(path, headers: ["X-Forwarded-Prefix": "/evil"])
            try #require(page.status == 200, "\(path): \(page.statusLine) \(page.text)")
            let items = try #require(try page.json()["items"] as? [[String: Any]])
            titles += items.compactMap { $0["title"] as? String }
            pages += 1
            next = try Self.nextLink(page).map { link in
                #expect(link.hasPrefix("\(origin)/music/albums?"), "Link leaves /music/: \(link)")
                return try Self.pathAndQuery(of: link, origin: origin)
            }
            try #require(pages <= 10, "the walk does not end")
        }
        #expect(titles.count == 5 && pages == 3, "\(titles) in \(pages) pages")

        // The same under /libraries/{lib}/albums.
        let libraryPage = try get("/music/libraries/default/albums?limit=2")
        #expect(Self.nextLink(libraryPage)?.hasPrefix("\(origin)/music/libraries/default/albums?limit=2&cursor=") == true,
                "\(libraryPage.header("Link") ?? "no Link")")

        // Location of what is created: an album, a library, a view, an album added to a view.
        let album = try post("/music/albums", #"{"title": "Low", "artist": "David Bowie"}"#)
        #expect(album.status == 201)
        #expect(album.header("Location")?.hasPrefix("\(origin)/music/albums/") == true, "\(album.header("Location") ?? "none")")
        let library = try post("/music/libraries", #"{"id": "jazz"}"#)
        #expect(library.header("Location") == "\(origin)/music/libraries/jazz", "\(library.header("Location") ?? "none")")
        let view = try post("/music/views", #"{"id": "all", "sources": ["default", "jazz"]}"#)
        #expect(view.status == 201, "\(view.text)")
        #expect(view.header("Location") == "\(origin)/music/views/all", "\(view.header("Location") ?? "none")")
        let viewPage = try get("/music/views/all/albums?limit=2")
        #expect(Self.nextLink(viewPage)?.hasPrefix("\(origin)/music/views/all/albums?limit=2&cursor=") == true,
                "\(viewPage.header("Link") ?? "no Link")")
        let added = try post("/music/views/all/albums", #"{"title": "Kind of Blue", "artist": "Miles Davis"}"#)
        #expect(added.status == 201, "\(added.text)")
        #expect(added.header("Location")?.hasPrefix("\(origin)/music/libraries/") == true, "\(added.header("Location") ?? "none")")

        // The index at / links under the prefix; / sends a browser to app/ and /docs to docs/,
        // relative, which resolve under it.
        let index = try get("/music/", headers: ["Accept": "application/json"])
        let links = try #require(try index.json()["links"] as? [[String: Any]])
        let hrefs = links.compactMap { $0["href"] as? String }
        #expect(!hrefs.isEmpty && hrefs.allSatisfy { $0.hasPrefix("/music/") }, "\(hrefs)")
        for href in hrefs where !href.contains("{") {
            #expect(try get(href).status == 200, "\(href) through the proxy")
        }
        let browser = try get("/music/", headers: ["Accept": "text/html"])
        #expect(browser.status == 302 && browser.header("Location") == "app/")
        let docs = try get("/music/docs")
        #expect(docs.status == 301 && docs.header("Location") == "docs/", "\(docs.statusLine) \(docs.header("Location") ?? "")")
        #expect(try get("/music/docs/").status == 200)
    }

    @Test func aPrefixFromAClientThatIsNoTrustedProxyIsIgnored() throws {
        let app = try TestApp.make { $0.trustedProxies = [IPAddressRange("127.0.0.1/32")!] }
        app.start()
        defer { app.shutdown() }
        // 127.0.0.2 is not trusted: its X-Forwarded-* and X-Forwarded-Prefix count for nothing.
        let client = try RawHTTPClient(port: app.port, source: "127.0.0.2")
        try client.send("GET /albums?limit=2 HTTP/1.1\r\nHost: lib.test\r\nX-Forwarded-Prefix: /evil\r\nX-Forwarded-Host: evil.test\r\n\r\n")
        let page = try client.readResponse()
        #expect(Self.nextLink(page)?.hasPrefix("http://lib.test/albums?limit=2&cursor=") == true, "\(page.header("Link") ?? "no Link")")
        let body = #"{"title": "Low", "artist": "David Bowie"}"#
        try client.send("POST /albums HTTP/1.1\r\nHost: lib.test\r\nX-Forwarded-Prefix: /evil\r\nContent-Type: application/json\r\nContent-Length: \(body.utf8.count)\r\n\r\n\(body)")
        let created = try client.readResponse()
        #expect(created.status == 201, "\(created.text)")
        #expect(created.header("Location")?.hasPrefix("http://lib.test/albums/") == true, "\(created.header("Location") ?? "none")")
        try client.send("GET / HTTP/1.1\r\nHost: lib.test\r\nX-Forwarded-Prefix: /evil\r\n\r\n")
        let index = try client.readResponse()
        #expect(!index.text.contains("/evil"), "\(index.text)")

        // From the trusted peer (127.0.0.1) the same header is believed.
        let trusted = try RawHTTPClient.request(port: app.port, path: "/albums?limit=2", headers: ["X-Forwarded-Prefix": "/music"])
        #expect(Self.nextLink(trusted)?.hasPrefix("http://127.0.0.1:\(app.port)/music/albums?limit=2&cursor=") == true,
                "\(trusted.header("Link") ?? "no Link")")
    }

    @Test func onlyPlainPathsArePrefixes() {
        let accepted: [(String, String)] = [
            ("/music", "/music"), ("/music/", "/music"), ("/", ""), ("/a/b-c_d.e~f", "/a/b-c_d.e~f"), ("/my%20music", "/my%20music"),
            ("/v1.2", "/v1.2"), ("/" + String(repeating: "a", count: 255), "/" + String(repeating: "a", count: 255)),
        ]
        for (value, prefix) in accepted {
            #expect(ForwardedHeadersMiddleware.pathPrefix(value) == prefix, "\(value)")
        }
        let refused = [
            "", "music", "//evil.example", "/a//b", "/..", "/a/../b", "/a/.", "/./a", "/%2e%2e/x", "/a%2Fb", "/a%5cb", "/a%2", "/a%zz",
            "/a\r\nSet-Cookie: x", "/a\nb", "/a b", "/a?b", "/a#b", "/a>; rel=\"x\"", "/a,b", "/a;b", "/a\"b", "/é", "/a\\b",
            "http://evil.example/", "/" + String(repeating: "a", count: 256),
        ]
        for value in refused {
            #expect(ForwardedHeadersMiddleware.pathPrefix(value) == nil, "\(value.debugDescription)")
        }
    }

    /// Captures log lines.
    final class Lines: Sendable {
        let lines = Mutex<[String]>([])
        var sink: @Sendable ([UInt8]) -> Void { { bytes in self.lines.withLock { $0.append(String(decoding: bytes, as: UTF8.self)) } } }
        var all: [String] { lines.withLock { $0 } }
    }

    @Test func aBadPrefixFromATrustedProxyIsIgnoredAndLoggedOnceAsAWarning() throws {
        let lines = Lines()
        let middleware = ForwardedHeadersMiddleware(
            trustedProxies: [IPAddressRange("10.0.0.0/8")!], logger: JSONLogger(level: .info, sink: lines.sink))
        func prefix(_ value: String, peer: String = "10.0.0.5", family: ForwardedHeaderFamily = .xForwarded) throws -> String {
            var middleware = middleware
            middleware.family = family
            let capture = ContextCapture()
            _ = try middleware.handle(HTTPRequest(method: .get, target: "/", headers: ["X-Forwarded-Prefix": value]),
                                      context: RequestContext(peerAddress: IPAddress(peer)!, host: "internal:8080"), next: capture)
            return try #require(capture.seen).pathPrefix
        }
        #expect(try prefix("/music/") == "/music")
        #expect(try prefix("/music", peer: "198.51.100.4") == "", "an untrusted peer's prefix is ignored")
        #expect(try prefix("/music", family: .forwarded) == "", "RFC 7239 has no prefix: with `forwarded` the header is not read")
        #expect(try prefix("/../admin") == "")
        #expect(try prefix("//evil.example") == "")
        // Two refused: the first is a warning, the second a debug line (below this logger's level).
        let logged = lines.all
        #expect(logged.count == 1, "\(logged)")
        #expect(logged.first?.contains("\"level\":\"warning\"") == true && logged.first?.contains("X-Forwarded-Prefix") == true
                    && logged.first?.contains("/../admin") == true, "\(logged)")
    }
}
