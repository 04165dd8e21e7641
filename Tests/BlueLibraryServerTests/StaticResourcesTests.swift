import BlueLibraryTestSupport
import Foundation
import HTTPServer
import HTTPTestSupport
import Library
import TestThreads
import Testing

@testable import BlueLibraryServer

/// The static-resource route (`/app/`) and the browser redirect at `/`, over real sockets.
@Suite(.ownThreads) struct StaticResourcesTests {
    static func get(_ port: Int, _ path: String, method: String = "GET", headers: [String: String] = [:]) throws -> RawHTTPClient.Response {
        try RawHTTPClient.request(port: port, method: method, path: path, headers: headers)
    }

    /// The routes' answers without a socket (the tests of the parser's refusals and the
    /// framing go over one).
    static func get(_ app: InProcessClient, _ path: String, headers: [String: String] = [:]) -> RawHTTPClient.Response {
        app.request(path: path, headers: headers)
    }

    @Test func theAppIsServedWithItsHeaders() throws {
        let app = try TestApp.make()
        app.start()
        defer { app.shutdown() }
        let index = try Self.get(app.port, "/app/")
        #expect(index.status == 200)
        #expect(index.header("Content-Type") == "text/html; charset=utf-8")
        #expect(index.header("X-Content-Type-Options") == "nosniff")
        #expect(index.header("Cache-Control") == "no-cache")
        let policy = try #require(index.header("Content-Security-Policy"))
        #expect(policy.contains("script-src 'self';") && !policy.contains("unsafe-inline"))
        #expect(policy.contains("default-src 'none'"))
        let tag = try #require(index.header("ETag"))
        #expect(tag.hasPrefix("\"") && !tag.hasPrefix("W/"))
        #expect(index.text.contains("<title>BlueLibrary</title>"))
        // The same bytes by name.
        #expect(try Self.get(app.port, "/app/index.html").body == index.body)

        // Revalidation: 304 without a body, with the tag.
        let again = try Self.get(app.port, "/app/", headers: ["If-None-Match": tag])
        #expect(again.status == 304)
        #expect(again.body.isEmpty)
        #expect(again.header("ETag") == tag)
        #expect(try Self.get(app.port, "/app/", headers: ["If-None-Match": "\"other\""]).status == 200)

        // HEAD: the GET's head, no body.
        let head = try Self.get(app.port, "/app/", method: "HEAD")
        #expect(head.status == 200)
        #expect(head.body.isEmpty)
        #expect(head.header("Content-Length") == String(index.body.count))
        #expect(head.header("ETag") == tag)

        // Scripts and styles: their types, nosniff, no CSP (it is the page's).
        for (name, type) in [("main.js", "text/javascript; charset=utf-8"), ("app.css", "text/css; charset=utf-8")] {
            let file = try Self.get(app.port, "/app/" + name)
            #expect(file.status == 200, "\(name)")
            #expect(file.header("Content-Type") == type, "\(name)")
            #expect(file.header("X-Content-Type-Options") == "nosniff", "\(name)")
            #expect(file.header("ETag") != nil, "\(name)")
        }

        // Only GET and HEAD.
        let post = try Self.get(app.port, "/app/", method: "POST")
        #expect(post.status == 405)
        #expect(post.header("Allow") == "GET, HEAD")
    }

    @Test func theMountWithoutASlashRedirectsRelatively() throws {
        let app = try InMemoryApp.app()
        defer { app.shutdown() }
        let routes = InProcessClient(app)
        let response = Self.get(routes, "/app")
        #expect(response.status == 301)
        // Relative: under a proxy's prefix (/music/app) it resolves to /music/app/.
        #expect(response.header("Location") == "app/")
    }

    @Test func nothingOutsideTheDirectoryCanBeReached() throws {
        let app = try TestApp.make()
        app.start()
        defer { app.shutdown() }
        let attempts = [
            "/app/../openapi.yaml", "/app/..%2Fopenapi.yaml", "/app/%2e%2e%2fopenapi.yaml", "/app/%2E%2E/%2E%2E/etc/passwd",
            "/app/..%2F..%2F..%2F..%2Fetc%2Fpasswd", "/app/%2Fetc%2Fpasswd", "/app/.", "/app/..", "/app/index.html%00",
            "/app/index.html/", "/app//index.html", "/app/%5C..%5Copenapi.yaml", "/app/nothing-here.js", "/app/INDEX.HTML",
        ]
        for path in attempts {
            let response = try Self.get(app.port, path)
            // 404 (no such name) or 400 (a path the parser refuses): never a file.
            #expect(response.status == 404 || response.status == 400, "\(path): \(response.status)")
            #expect(!response.text.contains("openapi: ") && !response.text.contains("root:"), "\(path)")
        }
    }

    /// Text files go gzipped to a client that accepts gzip, with their own ETag (304 for it),
    /// and as they are to one that does not; both say `Vary: Accept-Encoding`; a PNG never is.
    @Test func textFilesGoGzippedToClientsThatAcceptIt() throws {
        let app = try InMemoryApp.app()
        defer { app.shutdown() }
        let routes = InProcessClient(app)
        for path in ["/app/", "/app/main.js", "/app/app.css", "/docs/"] {
            let plain = Self.get(routes, path)
            let gzipped = Self.get(routes, path, headers: ["Accept-Encoding": "gzip, deflate, br"])
            #expect(plain.status == 200 && gzipped.status == 200, "\(path)")
            #expect(plain.header("Content-Encoding") == nil && gzipped.header("Content-Encoding") == "gzip", "\(path)")
            #expect(plain.header("Vary") == "Accept-Encoding" && gzipped.header("Vary") == "Accept-Encoding", "\(path)")
            #expect(plain.header("Content-Type") == gzipped.header("Content-Type"), "\(path)")
            #expect(gzipped.body.count < plain.body.count / 2, "\(path): \(gzipped.body.count) of \(plain.body.count) bytes")
            let decoded = try ChildProcess.run(
                "/usr/bin/env", ["gzip", "-dc"], environment: ProcessInfo.processInfo.environment, input: gzipped.body)
            #expect(decoded.status == 0 && decoded.stdout == plain.body, "\(path) decodes to the file")
            let tag = try #require(gzipped.header("ETag"))
            #expect(tag != plain.header("ETag"), "\(path): another representation, another tag")
            let revalidated = Self.get(routes, path, headers: ["Accept-Encoding": "gzip", "If-None-Match": tag])
            #expect(revalidated.status == 304 && revalidated.header("Vary") == "Accept-Encoding", "\(path)")
            #expect(Self.get(routes, path, headers: ["If-None-Match": tag]).status == 200, "\(path): the plain form is not that tag")
            for refused in ["identity", "gzip;q=0, *", "br", ""] {
                #expect(Self.get(routes, path, headers: ["Accept-Encoding": refused]).header("Content-Encoding") == nil, "\(path) \(refused)")
            }
        }
        // Only text, and only when gzip makes it smaller.
        let text = Array(String(repeating: "<p>Kind of Blue</p>", count: 50).utf8)
        let files = try StaticResources(contents: ["index.html": text, "cover.png": text, "tiny.js": Array("x".utf8)]).files
        #expect(files["index.html"]?.gzipped != nil)
        #expect(files["cover.png"]?.gzipped == nil && files["cover.png"]?.response.headers["Vary"] == nil, "not text")
        #expect(files["tiny.js"]?.gzipped == nil, "gzip would be larger")
    }

    @Test(arguments: [
        ("gzip", true), ("GZIP", true), ("x-gzip", true), ("deflate, gzip;q=0.5", true), ("*", true), ("br;q=1, *;q=0.1", true),
        ("gzip;q=0", false), ("gzip;q=0.000, *", false), ("*;q=0", false), ("identity", false), ("", false), ("br", false),
        ("gzip;q=2", false), ("gzip;q=abc", false), ("gzip ; q=1.0", true), ("gzip;level=1", true),
    ])
    func acceptEncodingAllowsGzip(_ header: String, _ allows: Bool) {
        #expect(ContentCoding.acceptsGzip(header) == allows)
    }

    @Test func browsersAreSentToTheAppAndCurlGetsTheIndex() throws {
        let app = try InMemoryApp.app()
        defer { app.shutdown() }
        let routes = InProcessClient(app)
        let browser = Self.get(routes, "/", headers: [
            "Accept": "text/html,application/xhtml+xml,application/xml;q=0.9,image/avif,image/webp,*/*;q=0.8",
        ])
        #expect(browser.status == 302)
        #expect(browser.header("Location") == "app/")
        #expect(browser.header("Vary") == "Accept")

        for accept in ["*/*", "application/json", "text/html;q=0, */*"] {
            let response = Self.get(routes, "/", headers: ["Accept": accept])
            #expect(response.status == 200, "\(accept)")
            #expect(response.header("Content-Type") == "application/json", "\(accept)")
            #expect(response.header("Vary") == "Accept", "\(accept)")
            #expect(response.text.contains("\"/app/\""), "\(accept)")
        }
        #expect(Self.get(routes, "/").status == 200)
    }

    @Test func theAppStaysOpenWhenReadsAreProtected() throws {
        let token = "correct-horse-battery-staple"
        let app = try TestApp.make { $0.token = AccessToken(token) }
        app.start()
        defer { app.shutdown() }
        let patched = try RawHTTPClient.request(
            port: app.port, method: "PATCH", path: "/settings",
            headers: ["Content-Type": "application/merge-patch+json", "Authorization": "Bearer \(token)"],
            body: Array(#"{"access": {"protectReads": true}}"#.utf8))
        #expect(patched.status == 200)
        #expect(try Self.get(app.port, "/albums").status == 401)
        #expect(try Self.get(app.port, "/app/").status == 200)
        #expect(try Self.get(app.port, "/app/main.js").status == 200)
        #expect(try Self.get(app.port, "/app").status == 301)
        #expect(try Self.get(app.port, "/", headers: ["Accept": "text/html"]).status == 302)
        // Only reads: a write under the mount still needs the token.
        #expect(try Self.get(app.port, "/app/", method: "POST").status == 401)
        // The open mount is no way around the token: dot segments are not resolved to a route.
        for path in ["/app/../albums", "/app/%2e%2e/albums", "/app/..%2Falbums", "/app/./../undo"] {
            let response = try Self.get(app.port, path)
            #expect(response.status == 404 || response.status == 400, "\(path): \(response.status)")
            #expect(!response.text.contains("\"items\""), "\(path)")
        }
        // Over the socket with the lock on: dot segments, encoded slashes and names that merely
        // start with a mount's letters reach no data without the token (401, or 404 when the
        // open prefix routes nowhere); with the token, the same paths still give no album list.
        let sneaky = [
            "/app/../albums", "/docs/../albums", "/docs/..%2Falbums", "/app/..%2Falbums", "/appfoo", "/apple",
            "/apple/albums", "/app%2F..%2Falbums", "/docs%2F..%2Falbums", "/app/./../albums", "/app//../albums",
        ]
        for path in sneaky {
            let response = try Self.get(app.port, path)
            #expect(response.status == 401 || response.status == 404, "\(path): \(response.status)")
            #expect(!response.text.contains("\"items\""), "\(path)")
            let authorized = try Self.get(app.port, path, headers: ["Authorization": "Bearer \(token)"])
            #expect(authorized.status == 404, "\(path) with the token: \(authorized.status)")
        }
        #expect(try Self.get(app.port, "/albums", headers: ["Authorization": "Bearer \(token)"]).status == 200)
        // A path that merely starts with the mount's letters is not open.
        #expect(!AccessPolicy.isAlwaysOpen("/apple"))
        #expect(AccessPolicy.isAlwaysOpen("/app/x.js") && AccessPolicy.isAlwaysOpen("/app"))
    }

    @Test func contentTypesByExtension() {
        let cases = [
            ("index.html", "text/html; charset=utf-8"), ("a.CSS", "text/css; charset=utf-8"), ("m.js", "text/javascript; charset=utf-8"),
            ("m.mjs", "text/javascript; charset=utf-8"), ("x.svg", "image/svg+xml"), ("x.png", "image/png"),
            ("spec.json", "application/json"), ("openapi.yaml", "application/yaml"), ("noextension", "application/octet-stream"),
            (".hidden", "application/octet-stream"), ("x.exe", "application/octet-stream"),
        ]
        for (name, type) in cases { #expect(StaticResources.contentType(forName: name) == type, "\(name)") }
    }

    @Test func aDirectoryIsReadOnceAndMustBeFlatWithAnIndex() throws {
        let directory = try TemporaryDirectory()
        try Data("<p>hi</p>".utf8).write(to: URL(fileURLWithPath: directory.file("index.html")))
        try Data("body{}".utf8).write(to: URL(fileURLWithPath: directory.file("a.css")))
        let resources = try StaticResources(directory: directory.url, contentSecurityPolicy: "default-src 'none'")
        #expect(Set(resources.files.keys) == ["index.html", "a.css"])
        #expect(resources.totalBytes == 15)
        #expect(resources.files["index.html"]?.response.headers["Content-Security-Policy"] == "default-src 'none'")
        #expect(resources.files["a.css"]?.response.headers["Content-Security-Policy"] == nil)
        // Changing the file afterwards changes nothing served: it was read at start.
        try Data("<p>changed</p>".utf8).write(to: URL(fileURLWithPath: directory.file("index.html")))
        if case let .bytes(bytes) = resources.files["index.html"]?.response.body {
            #expect(bytes == Array("<p>hi</p>".utf8))
        } else {
            Issue.record("the index is not held in memory")
        }

        try FileManager.default.createDirectory(atPath: directory.file("sub"), withIntermediateDirectories: false)
        #expect(throws: ConfigurationError.self) { try StaticResources(directory: directory.url) }

        let empty = try TemporaryDirectory()
        #expect(throws: ConfigurationError.self) { try StaticResources(directory: empty.url) }
        #expect(throws: ConfigurationError.self) { try StaticResources(directory: empty.url.appendingPathComponent("missing")) }
    }

    /// The whole app stays small (its budget: under 175 KB uncompressed; it was 100 KB until
    /// the search keys, the batches of several albums and the Libraries dialog took it to 117 KB,
    /// 125 KB until views, import and export with progress, the virtualised cover strip and
    /// draggable list rows took it to 145 KB, and 150 KB until far jumps by offset, the first
    /// page asked for before the rest loads, and a view's order and filter in the dialog took it
    /// to 168 KB).
    @Test func theAppIsUnder175KB() throws {
        let app = try StaticResources(bundleDirectory: "app")
        #expect(app.totalBytes < 175_000, "the app is \(app.totalBytes) bytes")
        #expect(app.files["index.html"] != nil && app.files["main.js"] != nil)
    }
}
