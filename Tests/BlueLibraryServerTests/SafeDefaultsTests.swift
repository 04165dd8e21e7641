#if canImport(Glibc)
import Glibc
#endif
import BlueLibraryTestSupport
import Foundation
import HTTPTestSupport
import Library
import TestThreads
import Testing

@testable import BlueLibraryServer

/// Safe by default: loopback unless told, a warning when exposed without a token, `/metrics`
/// behind `protectReads`, CORS only for the origins configured, one version string.
@Suite(.serialized, .timeLimit(.minutes(3)), .ownThreads) struct SafeDefaultsTests {
    static let token = "safe-defaults-token-1"
    static let warning = "without a token: anyone who can reach this port may change the library"

    // MARK: Listening address

    @Test func listeningBeyondLoopbackWithoutATokenWarnsAtStart() throws {
        let exposed = try ServerProcess(arguments: ["--host", "0.0.0.0"], dataDirectory: TestApp.temporaryDirectory())
        let line = try #require(exposed.logLines().first { $0.contains(Self.warning) }, "\(exposed.logText)")
        let entry = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
        #expect(entry["level"] as? String == "warning")
        #expect(entry["host"] as? String == "0.0.0.0")
        #expect(line.contains("bluelibrary token set"))

        // With a token, or on loopback, nothing to warn about.
        let locked = try ServerProcess(arguments: ["--host", "0.0.0.0"], environment: ["BLUELIBRARY_TOKEN": Self.token],
                                       dataDirectory: TestApp.temporaryDirectory())
        let loopback = try ServerProcess(dataDirectory: TestApp.temporaryDirectory())
        for server in [locked, loopback] {
            #expect(try RawHTTPClient.request(port: server.port, path: "/healthz").status == 200)
            #expect(!server.logText.contains(Self.warning), "\(server.logText)")
        }
    }

    @Test func aStoredTokenWithWriteProtectionOffStillWarns() throws {
        let directory = TestApp.temporaryDirectory()
        let first = try ServerProcess(environment: ["BLUELIBRARY_TOKEN": Self.token], dataDirectory: directory)
        let off = try RawHTTPClient.request(
            port: first.port, method: "PATCH", path: "/settings",
            headers: ["Authorization": "Bearer \(Self.token)", "Content-Type": "application/merge-patch+json"],
            body: Array(#"{"access": {"passcodeEnabled": false}}"#.utf8))
        #expect(off.status == 200, "\(off.text)")
        first.signal(SIGTERM)
        #expect(first.waitForExit(timeout: 20) == 0)

        // The hash is still stored, but anyone may write: exposed, so it says so.
        let exposed = try ServerProcess(arguments: ["--host", "0.0.0.0"], dataDirectory: directory)
        #expect(eventually { exposed.logText.contains("write protection is off") }, "\(exposed.logText)")
        let line = try #require(exposed.logLines().first { $0.contains("write protection is off") }, "\(exposed.logText)")
        #expect(line.contains("passcodeEnabled"))
        #expect(line.contains(#""level":"warning""#) || line.contains(#""level": "warning""#), "\(line)")
    }

    @Test func theWarningRuleCoversEveryLoopbackSpelling() {
        for host in ["127.0.0.1", "127.1.2.3", "::1", "::ffff:127.0.0.1"] {
            #expect(BlueLibraryApp.exposureWarning(host: host, hasToken: false, passcodeEnabled: false) == nil, "\(host)")
        }
        for host in ["0.0.0.0", "::", "10.0.0.5", "192.168.1.2"] {
            #expect(BlueLibraryApp.exposureWarning(host: host, hasToken: false, passcodeEnabled: false) != nil, "\(host)")
            #expect(BlueLibraryApp.exposureWarning(host: host, hasToken: true, passcodeEnabled: false) != nil, "\(host)")
            #expect(BlueLibraryApp.exposureWarning(host: host, hasToken: true, passcodeEnabled: true) == nil, "\(host)")
        }
    }

    @Test func theBinaryListensOnLoopbackWhenNotTold() throws {
        let directory = TestApp.temporaryDirectory()
        // Not ServerProcess: it passes --host itself.
        let process = try RunningChild(
            ServerProcess.executableURL.path, ["serve", "--port", "0", "--data-dir", directory],
            environment: ChildProcess.environment(dropping: { $0.hasPrefix("BLUELIBRARY_") }, adding: [:]), captureOutput: true)
        defer {
            process.terminate()
            process.waitUntilExit()
            if let fd = process.output { close(fd) }
        }
        // The first line it writes is the seeding line or "listening"; read until "listening".
        let text = process.readOutput { $0.contains("\"message\":\"listening\"") }
        #expect(text.contains("\"host\":\"127.0.0.1\""), "\(text)")
        #expect(!text.contains(Self.warning))
    }

    // MARK: /metrics and protectReads

    @Test func metricsFollowProtectReads() throws {
        let app = try TestApp.make { $0.token = AccessToken(Self.token) }
        app.start()
        defer { app.shutdown() }
        let bearer = ["Authorization": "Bearer \(Self.token)"]
        // Locked for writes only: metrics are read like everything else.
        #expect(try RawHTTPClient.request(port: app.port, path: "/metrics").status == 200)
        let patch = try RawHTTPClient.request(
            port: app.port, method: "PATCH", path: "/settings",
            headers: bearer.merging(["Content-Type": "application/merge-patch+json"]) { a, _ in a },
            body: Array(#"{"access": {"protectReads": true}}"#.utf8))
        #expect(patch.status == 200)
        let refused = try RawHTTPClient.request(port: app.port, path: "/metrics")
        #expect(refused.status == 401)
        #expect(refused.header("WWW-Authenticate")?.hasPrefix("Bearer") == true)
        let scraped = try RawHTTPClient.request(port: app.port, path: "/metrics", headers: bearer)
        #expect(scraped.status == 200)
        #expect(scraped.text.contains("bluelibrary_http_requests_total"))
        // Probes and the contract stay open.
        for path in ["/healthz", "/readyz", "/openapi.yaml"] {
            #expect(try RawHTTPClient.request(port: app.port, path: path).status == 200, "\(path)")
        }
    }

    // MARK: CORS

    static let origin = "https://app.example.com"

    @Test func withoutConfigurationNoResponseCarriesCORSHeaders() throws {
        let app = try TestApp.make()
        app.start()
        defer { app.shutdown() }
        let get = try RawHTTPClient.request(port: app.port, path: "/albums", headers: ["Origin": Self.origin])
        #expect(get.status == 200)
        #expect(!get.headers.contains { $0.name.lowercased().hasPrefix("access-control-") })
        let preflight = try RawHTTPClient.request(
            port: app.port, method: "OPTIONS", path: "/albums",
            headers: ["Origin": Self.origin, "Access-Control-Request-Method": "POST"])
        #expect(preflight.status == 405)
        #expect(!preflight.headers.contains { $0.name.lowercased().hasPrefix("access-control-") })
    }

    @Test func aListedOriginGetsPreflightAndHeadersOthersDoNot() throws {
        let app = try TestApp.make {
            $0.corsOrigins = [Self.origin, "http://localhost:5173"]
            $0.token = AccessToken(Self.token)
        }
        app.start()
        defer { app.shutdown() }

        // A preflight for a protected write, without the token (browsers never send it there)
        let preflight = try RawHTTPClient.request(
            port: app.port, method: "OPTIONS", path: "/albums/at/0",
            headers: ["Origin": Self.origin, "Access-Control-Request-Method": "PATCH",
                      "Access-Control-Request-Headers": "authorization, if-match, content-type"])
        #expect(preflight.status == 204)
        #expect(preflight.header("Access-Control-Allow-Origin") == Self.origin)
        let methods = (preflight.header("Access-Control-Allow-Methods") ?? "").lowercased()
        for method in ["get", "post", "put", "patch", "delete"] { #expect(methods.contains(method)) }
        let headers = (preflight.header("Access-Control-Allow-Headers") ?? "").lowercased()
        for header in ["authorization", "if-match", "if-none-match", "idempotency-key", "content-type", "last-event-id"] {
            #expect(headers.contains(header), "\(header)")
        }
        #expect(preflight.header("Access-Control-Max-Age") != nil)
        #expect(preflight.header("Vary")?.contains("Origin") == true)
        #expect(preflight.header("Access-Control-Allow-Credentials") == nil)

        // The real request from that origin: allowed origin and exposed headers, on success and on refusal
        let list = try RawHTTPClient.request(port: app.port, path: "/albums?limit=2", headers: ["Origin": Self.origin])
        #expect(list.status == 200)
        #expect(list.header("Access-Control-Allow-Origin") == Self.origin)
        let exposed = (list.header("Access-Control-Expose-Headers") ?? "").lowercased()
        for header in ["etag", "link", "location", "retry-after", "x-request-id"] { #expect(exposed.contains(header), "\(header)") }
        #expect(list.header("Vary")?.contains("Origin") == true)
        let refused = try RawHTTPClient.request(
            port: app.port, method: "POST", path: "/undo", headers: ["Origin": "http://localhost:5173"])
        #expect(refused.status == 401)
        #expect(refused.header("Access-Control-Allow-Origin") == "http://localhost:5173")
        // A refusal decided from the head alone (before any body byte) carries them too.
        let early = try RawHTTPClient(port: app.port)
        try early.send("POST /albums HTTP/1.1\r\nHost: x\r\nOrigin: \(Self.origin)\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n")
        let earlyAnswer = try early.readResponse()
        #expect(earlyAnswer.status == 401)
        #expect(earlyAnswer.header("Access-Control-Allow-Origin") == Self.origin)
        let created = try RawHTTPClient.request(
            port: app.port, method: "POST", path: "/albums",
            headers: ["Origin": Self.origin, "Authorization": "Bearer \(Self.token)", "Content-Type": "application/json"],
            body: Array(#"{"title": "Low", "artist": "David Bowie"}"#.utf8))
        #expect(created.status == 201)
        #expect(created.header("Access-Control-Allow-Origin") == Self.origin)
        #expect(created.header("Location") != nil)

        // Another origin (or one that differs only by scheme or port): nothing allowed
        for other in ["https://evil.example", "http://app.example.com", "https://app.example.com:8443"] {
            let get = try RawHTTPClient.request(port: app.port, path: "/albums", headers: ["Origin": other])
            #expect(get.status == 200)
            #expect(get.header("Access-Control-Allow-Origin") == nil, "\(other)")
            #expect(get.header("Vary")?.contains("Origin") == true)
            let otherPreflight = try RawHTTPClient.request(
                port: app.port, method: "OPTIONS", path: "/albums", headers: ["Origin": other, "Access-Control-Request-Method": "POST"])
            #expect(otherPreflight.status != 204)
            #expect(otherPreflight.header("Access-Control-Allow-Origin") == nil)
        }
        // A plain OPTIONS (no preflight) is not taken for one.
        let plain = try RawHTTPClient.request(port: app.port, method: "OPTIONS", path: "/albums", headers: ["Origin": Self.origin])
        #expect(plain.status == 405)
    }

    @Test func aPreflightIsAnsweredWhenReadsAreProtected() throws {
        let app = try TestApp.make {
            $0.corsOrigins = [Self.origin]
            $0.token = AccessToken(Self.token)
        }
        app.start()
        defer { app.shutdown() }
        let bearer = ["Authorization": "Bearer \(Self.token)"]
        let patch = try RawHTTPClient.request(
            port: app.port, method: "PATCH", path: "/settings",
            headers: bearer.merging(["Content-Type": "application/merge-patch+json"]) { a, _ in a },
            body: Array(#"{"access": {"protectReads": true}}"#.utf8))
        #expect(patch.status == 200)

        // The browser's preflight for a GET with Authorization carries no token: it gets its 204.
        let preflight = try RawHTTPClient.request(
            port: app.port, method: "OPTIONS", path: "/albums",
            headers: ["Origin": Self.origin, "Access-Control-Request-Method": "GET",
                      "Access-Control-Request-Headers": "authorization"])
        #expect(preflight.status == 204)
        #expect(preflight.header("Access-Control-Allow-Origin") == Self.origin)
        #expect((preflight.header("Access-Control-Allow-Headers") ?? "").lowercased().contains("authorization"))
        // Also when the request declares a body, so the access check runs on its head before the
        // middleware chain (browsers send none, but a preflight is a preflight either way).
        let withBody = try RawHTTPClient.request(
            port: app.port, method: "OPTIONS", path: "/albums",
            headers: ["Origin": Self.origin, "Access-Control-Request-Method": "GET"], body: Array("{}".utf8))
        #expect(withBody.status == 204)
        #expect(withBody.header("Access-Control-Allow-Origin") == Self.origin)
        // Then the real request: refused without the token, served with it, both readable by the page.
        let refused = try RawHTTPClient.request(port: app.port, path: "/albums", headers: ["Origin": Self.origin])
        #expect(refused.status == 401)
        #expect(refused.header("Access-Control-Allow-Origin") == Self.origin)
        let list = try RawHTTPClient.request(port: app.port, path: "/albums", headers: bearer.merging(["Origin": Self.origin]) { a, _ in a })
        #expect(list.status == 200)
        #expect(list.header("Access-Control-Allow-Origin") == Self.origin)

        // Any other OPTIONS still needs the token: no preflight header, or an origin not listed.
        let plain = try RawHTTPClient.request(port: app.port, method: "OPTIONS", path: "/albums", headers: ["Origin": Self.origin])
        #expect(plain.status == 401)
        let other = try RawHTTPClient.request(
            port: app.port, method: "OPTIONS", path: "/albums",
            headers: ["Origin": "https://evil.example", "Access-Control-Request-Method": "GET"])
        #expect(other.status == 401)
        #expect(other.header("Access-Control-Allow-Origin") == nil)
        let otherWithBody = try RawHTTPClient.request(
            port: app.port, method: "OPTIONS", path: "/albums",
            headers: ["Origin": "https://evil.example", "Access-Control-Request-Method": "GET"], body: Array("{}".utf8))
        #expect(otherWithBody.status == 401)
    }

    @Test func corsOriginsAreParsedStrictly() throws {
        let parsed = try ServeConfiguration.parse(
            arguments: ["--cors-origins", "https://App.Example.com, http://localhost:5173,http://[::1]:8080,https://b.example:443,http://c.example:80"],
            environment: [:])
        #expect(parsed.corsOrigins == ["https://app.example.com", "http://localhost:5173", "http://[::1]:8080", "https://b.example", "http://c.example"])
        let fromEnvironment = try ServeConfiguration.parse(arguments: [], environment: ["BLUELIBRARY_CORS_ORIGINS": "https://a.example"])
        #expect(fromEnvironment.corsOrigins == ["https://a.example"])
        for bad in ["*", "app.example.com", "https://app.example.com/", "ftp://x.example", "https://x.example:0", "https://u@x.example",
                    "https://x.example:99999", "null"] {
            #expect(throws: ConfigurationError.self, "\(bad)") { try ServeConfiguration.parse(arguments: ["--cors-origins", bad], environment: [:]) }
        }
        #expect(ServeConfiguration.helpText.contains("BLUELIBRARY_CORS_ORIGINS"))
    }

    // MARK: Version

    @Test func oneVersionStringForTheCommandTheIndexAndTheContract() throws {
        let (status, output) = try ServerProcess.run(["--version"])
        #expect(status == 0)
        #expect(output == "bluelibrary \(BlueLibraryVersion.current)\n")
        #expect(try ServerProcess.run(["version"]).1 == output)

        let app = try TestApp.make()
        app.start()
        defer { app.shutdown() }
        #expect(try RawHTTPClient.request(port: app.port, path: "/").json()["version"] as? String == BlueLibraryVersion.current)
        // The contract's info.version is kept equal to it (the spec is a static file).
        let spec = String(decoding: try SystemRoutes.loadSpec(), as: UTF8.self)
        #expect(spec.contains("\ninfo:\n  title: BlueLibrary\n  version: \(BlueLibraryVersion.current)\n"))
        // And the changelog has a section for it.
        let changelog = try String(contentsOfFile: Self.repositoryRoot + "/CHANGELOG.md", encoding: .utf8)
        #expect(changelog.contains("## \(BlueLibraryVersion.current)"))
    }

    static var repositoryRoot: String {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent().path
    }
}
