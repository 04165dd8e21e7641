import BlueLibraryTestSupport
import Foundation
import HTTPTestSupport
import Testing

@testable import BlueLibraryServer

/// `/docs`: the readable API reference, generated from openapi.yaml by scripts/openapi-docs.py,
/// committed under Resources/docs and served by the static-resource route.
@Suite(.serialized, .timeLimit(.minutes(2))) struct DocsTests {
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
        #expect(!html.contains("http://") || !html.contains("src=\"http"))
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
}
