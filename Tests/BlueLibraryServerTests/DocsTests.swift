import BlueLibraryTestSupport
import Foundation
import HTTPTestSupport
import TestThreads
import Testing

@testable import BlueLibraryServer

/// `/docs`: the readable API reference, generated from openapi.yaml by scripts/openapi-docs.py,
/// committed under Resources/docs and served by the static-resource route.
@Suite(.serialized, .timeLimit(.minutes(2)), .ownThreads) struct DocsTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../..").standardized
    static let page = root.appendingPathComponent("Sources/BlueLibraryServer/Resources/docs/index.html")

    /// The committed page is exactly what the script makes of the current spec (edit the spec,
    /// then run `scripts/openapi-docs.py openapi.yaml Sources/BlueLibraryServer/Resources/docs/index.html`).
    @Test func thePageIsInStepWithTheSpec() throws {
        let run = try ChildProcess.run(
            "/usr/bin/env", ["python3", Self.root.appendingPathComponent("scripts/openapi-docs.py").path, "--check",
                             Self.root.appendingPathComponent("openapi.yaml").path, Self.page.path],
            environment: ProcessInfo.processInfo.environment, mergeStderr: true)
        #expect(run.status == 0, "\(String(decoding: run.stdout, as: UTF8.self))")
    }

    /// Served from the server itself, open even with protectReads, with no script and nothing
    /// from another host; it names every operation of the spec.
    @Test func servedAtDocsWithEveryOperationAndOpenWithProtectReads() throws {
        let token = "docs-token-0123456789"
        let app = try TestApp.make { $0.token = AccessToken(token) }
        app.start()
        defer { app.shutdown() }
        let port = app.port
        let locked = try RawHTTPClient.request(port: port, method: "PATCH", path: "/settings",
                                               headers: ["Content-Type": "application/json", "Authorization": "Bearer \(token)"],
                                               body: Array(#"{"access": {"protectReads": true}}"#.utf8))
        #expect(locked.status == 200)
        #expect(try RawHTTPClient.request(port: port, path: "/albums").status == 401)

        let redirect = try RawHTTPClient.request(port: port, path: "/docs")
        #expect(redirect.status == 301)
        #expect(redirect.header("Location") == "docs/")
        let page = try RawHTTPClient.request(port: port, path: "/docs/")
        #expect(page.status == 200)
        #expect(page.header("Content-Type")?.hasPrefix("text/html") == true)
        let policy = try #require(page.header("Content-Security-Policy"))
        #expect(policy.contains("default-src 'none'") && !policy.contains("script-src"))
        let html = page.text
        #expect(!html.contains("<script"))
        #expect(Self.foreignReferences(in: html) == [], "the page must load and link nothing from another host")
        #expect(html.contains("href=\"docs.css\""))
        let spec = String(decoding: try SystemRoutes.loadSpec(), as: UTF8.self)
        let operationIDs = spec.split(separator: "\n").compactMap { line -> String? in
            let trimmed = line.trimmingCharacters(in: .whitespaces)
            return trimmed.hasPrefix("operationId: ") ? String(trimmed.dropFirst("operationId: ".count)) : nil
        }
        #expect(operationIDs.count > 50)
        let lowered = html.lowercased()
        for id in operationIDs {
            #expect(lowered.contains("id=\"op-\(id.lowercased())\""), "\(id) is not on the page")
        }
        #expect(html.contains("next: null") || html.contains("<code>next: null</code>"))
        let css = try RawHTTPClient.request(port: port, path: "/docs/docs.css")
        #expect(css.status == 200)
        #expect(css.header("Content-Type")?.hasPrefix("text/css") == true)
        #expect(try RawHTTPClient.request(port: port, path: "/docs/missing.html").status == 404)
        let etag = try #require(page.header("ETag"))
        #expect(try RawHTTPClient.request(port: port, path: "/docs/", headers: ["If-None-Match": etag]).status == 304)
    }

    /// Every example (parameters,
    /// bodies, response headers, schemas, `components/examples`) is on the page the server
    /// serves (scripts/check-docs-examples.py).
    @Test func servedPageShowsEveryExampleOfTheSpec() throws {
        let app = try TestApp.make()
        app.start()
        defer { app.shutdown() }
        let page = try RawHTTPClient.request(port: app.port, path: "/docs/")
        #expect(page.status == 200)
        let directory = try TemporaryDirectory()
        let served = directory.file("index.html")
        try Data(page.body).write(to: URL(fileURLWithPath: served))
        let run = try ChildProcess.run(
            "/usr/bin/env", ["python3", Self.root.appendingPathComponent("scripts/check-docs-examples.py").path,
                             Self.root.appendingPathComponent("openapi.yaml").path, served],
            environment: ProcessInfo.processInfo.environment, mergeStderr: true)
        let output = String(decoding: run.stdout, as: UTF8.self)
        #expect(run.status == 0, "\(output)")
        #expect(output.contains(" examples, 0 missing") && !output.hasPrefix("0 examples"), "\(output)")
    }

    /// The values of the `src=` and `href=` attributes (quoted or not, any case) that leave the
    /// server: a scheme (`https:`, `data:`, `javascript:`, ...) or a network path (`//host`, and
    /// `\\host`, which browsers read the same). The page's own links are relative.
    static func foreignReferences(in html: String) -> [String] {
        let attribute = /(?i)\b(?:src|href)\s*=\s*(?:"([^"]*)"|'([^']*)'|([^\s>"']+))/
        let leaves = /^\s*(?:[A-Za-z][A-Za-z0-9+.\-]*:|[\/\\]{2})/
        return html.matches(of: attribute).compactMap { match in
            let value = String(match.1 ?? match.2 ?? match.3 ?? "")
            return value.firstMatch(of: leaves) == nil ? nil : value
        }
    }

    /// The check above finds every kind of reference it must refuse, and passes the page's
    /// own kinds (fragments, relative files, `../`).
    @Test func foreignReferencesAreFound() {
        let html = ##"<a href="#op-x">x</a><link rel=stylesheet href=docs.css><a href="../openapi.yaml">spec</a>"##
            + ##"<img src="https://cdn.example/x.png"><a HREF='//other.example/'>o</a><script src=http://x/a.js></script>"##
            + ##"<img src = " data:,"><a href="\\host\x">h</a><a href="javascript:alert(1)">j</a>"##
        #expect(Self.foreignReferences(in: html) == [
            "https://cdn.example/x.png", "//other.example/", "http://x/a.js", " data:,", ##"\\host\x"##, "javascript:alert(1)",
        ])
        #expect(Self.foreignReferences(in: ##"<a href="#top">t</a><link href="docs.css">"##) == [])
    }
}
