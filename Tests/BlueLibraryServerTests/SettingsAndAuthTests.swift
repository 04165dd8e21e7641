#if canImport(Glibc)
import Glibc
#endif
import Crypto
import BlueLibraryTestSupport
import Foundation
import HTTPTestSupport
import Library
import Storage
import Synchronization
import TestThreads
import Testing

@testable import BlueLibraryServer

/// A clock for the lockout that moves only when told to.
final class AccessTestClock: Sendable {
    private let current = Mutex(Date(timeIntervalSince1970: 1_800_000_000))
    var now: Date { current.withLock { $0 } }
    func advance(seconds: Double) { current.withLock { $0 = $0.addingTimeInterval(seconds) } }
}

/// Collects log lines.
final class LogCollector: Sendable {
    private let lines = Mutex<[UInt8]>([])
    var text: String { String(decoding: lines.withLock { $0 }, as: UTF8.self) }
    func append(_ bytes: [UInt8]) { lines.withLock { $0 += bytes } }
}

/// `GET/PATCH /settings` and the passcode lock: answered in process by the app on the in-memory
/// store, and over a real socket with SQLite where an event stream, a restart or the database
/// file is part of what is shown.
@Suite(.serialized, .timeLimit(.minutes(3)), .ownThreads) struct SettingsAndAuthTests {
    static func call(_ endpoint: Endpoint, _ method: String, _ path: String, json: String? = nil,
                     headers: [String: String] = [:]) throws -> RawHTTPClient.Response {
        var headers = headers
        if json != nil { headers["Content-Type"] = "application/merge-patch+json" }
        return try endpoint.request(method: method, path: path, headers: headers, body: Array((json ?? "").utf8))
    }

    static let token = "correct-horse-battery-staple"
    static func bearer(_ token: String = token) -> [String: String] { ["Authorization": "Bearer \(token)"] }

    @Test func defaultsAndETag() throws {
        let app = try InMemoryApp.app()
        defer { app.shutdown() }
        let routes = Endpoint.inProcess(InProcessClient(app))
        let response = try Self.call(routes, "GET", "/settings")
        #expect(response.status == 200)
        let json = try response.json()
        #expect(json["schemaVersion"] as? Int == LibrarySettings.currentSchemaVersion)
        #expect((json["undo"] as? [String: Any])?["depth"] as? Int == 100)
        #expect((json["access"] as? [String: Any])?["passcodeEnabled"] as? Bool == false)
        #expect((json["paging"] as? [String: Any])?["maxLimit"] as? Int == 500)
        let etag = try #require(response.header("ETag"))
        #expect(try Self.call(routes, "GET", "/settings", headers: ["If-None-Match": etag]).status == 304)
        #expect(try Self.call(routes, "GET", "/settings?pretty", headers: ["If-None-Match": etag]).status == 304)
    }

    @Test func pagingSettingsApplyToTheListAtOnce() throws {
        let app = try InMemoryApp.app()  // the tutorial's five albums
        defer { app.shutdown() }
        let routes = Endpoint.inProcess(InProcessClient(app))
        func items(_ response: RawHTTPClient.Response) throws -> Int { (try response.json()["items"] as? [Any])?.count ?? -1 }
        let before = try Self.call(routes, "GET", "/albums")
        #expect(before.status == 200)
        #expect(try items(before) == 5)
        let tag = try #require(before.header("ETag"))

        let patched = try Self.call(routes, "PATCH", "/settings", json: #"{"paging": {"defaultLimit": 2, "maxLimit": 3}}"#)
        #expect(patched.status == 200, "\(patched.text)")
        // No restart: the default applies to the next request, not answered from the cached page.
        #expect(try Self.call(routes, "GET", "/albums", headers: ["If-None-Match": tag]).status == 200)
        let after = try Self.call(routes, "GET", "/albums")
        #expect(after.status == 200)
        #expect(try items(after) == 2)
        #expect(after.header("Link")?.contains("rel=\"next\"") == true)
        #expect(try items(Self.call(routes, "GET", "/albums?limit=3")) == 3)
        let tooMany = try Self.call(routes, "GET", "/albums?limit=4")
        #expect(tooMany.status == 400)
        #expect(tooMany.text.contains("from 1 to 3"), "\(tooMany.text)")

        // Raising them again works live too (up to the absolute ceiling of 500).
        let raised = try Self.call(routes, "PATCH", "/settings", json: #"{"paging": {"defaultLimit": 4, "maxLimit": 500}}"#)
        #expect(raised.status == 200)
        #expect(try items(Self.call(routes, "GET", "/albums")) == 4)
        #expect(try Self.call(routes, "GET", "/albums?limit=500").status == 200)
        #expect(try Self.call(routes, "GET", "/albums?limit=501").status == 400)
    }

    @Test func patchValidatesAsAWholeAndHonoursIfMatch() throws {
        let app = try TestApp.make()
        app.start()
        defer { app.shutdown() }
        let before = try Self.call(.port(app.port), "GET", "/settings")
        let etag = try #require(before.header("ETag"))

        let bad = try Self.call(.port(app.port), "PATCH", "/settings", json: #"{"undo": {"depth": 5}, "paging": {"maxLimit": 0}, "covers": {"fetchTimeoutSeconds": "soon"}}"#)
        #expect(bad.status == 422)
        let fields = (try bad.json()["errors"] as? [[String: Any]])?.compactMap { $0["field"] as? String } ?? []
        #expect(Set(fields) == ["paging.maxLimit", "covers.fetchTimeoutSeconds"])
        let unchanged = try Self.call(.port(app.port), "GET", "/settings")
        #expect(unchanged.header("ETag") == etag, "nothing applied")
        #expect(app.facade.undoLimit == 100)

        // Enabling the lock without a token is refused.
        let noToken = try Self.call(.port(app.port), "PATCH", "/settings", json: #"{"access": {"passcodeEnabled": true}}"#)
        #expect(noToken.status == 422)

        let events = try SSEClient(port: app.port)
        let ok = try Self.call(.port(app.port), "PATCH", "/settings", json: #"{"undo": {"depth": 5}, "paging": {"defaultLimit": 20}}"#,
                               headers: ["If-Match": etag])
        #expect(ok.status == 200, "\(ok.text)")
        let newTag = try #require(ok.header("ETag"))
        #expect(newTag != etag)
        #expect((try ok.json()["undo"] as? [String: Any])?["depth"] as? Int == 5)
        #expect(app.facade.undoLimit == 5, "undo depth applies without restart")
        let event = try #require(try events.next())
        #expect(event.name == "settings.changed")
        #expect(event.json["changed"] as? [String] == ["undo.depth", "paging.defaultLimit"])

        let stale = try Self.call(.port(app.port), "PATCH", "/settings", json: #"{"undo": {"depth": 6}}"#, headers: ["If-Match": etag])
        #expect(stale.status == 412)
        #expect(try Self.call(.port(app.port), "GET", "/settings").header("ETag") == newTag)
    }

    @Test func migratesAnOlderStoredDocument() throws {
        let directory = TestApp.temporaryDirectory()
        do {
            let store = try SQLiteAlbumStore(path: directory + "/bluelibrary.sqlite")
            try store.saveSettings(Array(#"{"schemaVersion": 1, "access": {"attemptCount": 4, "checkInterval": 30}, "undo": {"depth": 9}}"#.utf8))
        }
        let app = try TestApp.make { $0.dataDirectory = directory }
        app.start()
        defer { app.shutdown() }
        let json = try Self.call(.port(app.port), "GET", "/settings").json()
        #expect(json["schemaVersion"] as? Int == 2)
        #expect((json["access"] as? [String: Any])?["attemptLimit"] as? Int == 4)
        #expect((json["access"] as? [String: Any])?["checkIntervalSeconds"] as? Int == 30)
        #expect((json["undo"] as? [String: Any])?["depth"] as? Int == 9)
        #expect(app.facade.undoLimit == 9)
    }

    @Test func lockRequiresTokenThenLocksOutAndUnlocks() throws {
        let directory = TestApp.temporaryDirectory()
        let clock = AccessTestClock()
        let logs = LogCollector()
        var bodies: [String] = []
        do {
            let app = try TestApp.make({
                $0.dataDirectory = directory
                $0.token = AccessToken(Self.token)
                $0.accessClock = { clock.now }
                $0.accessLog = true
            }, logSink: { logs.append($0) })
            app.start()
            defer { app.shutdown() }
            let port = Endpoint.port(app.port)

            // Reads stay open; writes and settings need the token.
            #expect(try Self.call(port, "GET", "/albums").status == 200)
            let missing = try Self.call(port, "POST", "/albums", json: #"{"title": "T", "artist": "A"}"#)
            #expect(missing.status == 401)
            #expect(missing.header("WWW-Authenticate")?.hasPrefix("Bearer") == true)
            #expect(try Self.call(port, "GET", "/settings").status == 401)
            let settings = try Self.call(port, "GET", "/settings", headers: Self.bearer())
            #expect(settings.status == 200)
            bodies.append(settings.text)
            let patched = try Self.call(port, "PATCH", "/settings", json: #"{"access": {"attemptLimit": 3, "checkIntervalSeconds": 60}}"#,
                                        headers: Self.bearer())
            #expect(patched.status == 200, "\(patched.text)")
            bodies.append(patched.text)

            // Three wrong tokens: 401 each; then 429 (even with the right token) until the interval passes.
            for _ in 0..<3 {
                let wrong = try Self.call(port, "DELETE", "/albums/at/0", headers: Self.bearer("wrong-token-123"))
                #expect(wrong.status == 401)
                #expect(wrong.header("WWW-Authenticate")?.contains("invalid_token") == true)
                bodies.append(wrong.text)
            }
            let locked = try Self.call(port, "POST", "/albums", json: #"{"title": "T", "artist": "A"}"#, headers: Self.bearer())
            #expect(locked.status == 429)
            #expect(locked.header("Retry-After") == "60")
            bodies.append(locked.text)
            clock.advance(seconds: 45)
            #expect(try Self.call(port, "GET", "/settings", headers: Self.bearer()).header("Retry-After") == "15")
        }
        // The lock survives a restart (kept in the database)...
        let app = try TestApp.make({
            $0.dataDirectory = directory
            $0.accessClock = { clock.now }
        })
        app.start()
        defer { app.shutdown() }
        #expect(try Self.call(.port(app.port), "GET", "/settings", headers: Self.bearer()).status == 429)
        // ...and passes with the interval; the right token then works.
        clock.advance(seconds: 16)
        let unlocked = try Self.call(.port(app.port), "POST", "/albums", json: #"{"title": "After", "artist": "A"}"#, headers: Self.bearer())
        #expect(unlocked.status == 201, "\(unlocked.text)")
        bodies.append(unlocked.text)

        // The token appears in no response and no log line; the database holds only a slow hash.
        for body in bodies { #expect(!body.contains(Self.token)) }
        #expect(logs.text.contains("\"status\":429"), "the access log ran")
        #expect(!logs.text.contains(Self.token))
        let stored = try #require(try app.backend.records.tokenHash())
        #expect(stored.iterations >= 100_000)
        #expect(stored.salt.count == 16 && stored.hash.count == 32)
        #expect(stored.hash != Array(Self.token.utf8))
        #expect(PasswordHash.verify(token: Array(Self.token.utf8), salt: stored.salt, hash: stored.hash, iterations: stored.iterations))
        #expect(!PasswordHash.verify(token: Array("wrong-token-123".utf8), salt: stored.salt, hash: stored.hash, iterations: stored.iterations))
        let file = try Data(contentsOf: URL(fileURLWithPath: directory + "/bluelibrary.sqlite"))
        let wal = (try? Data(contentsOf: URL(fileURLWithPath: directory + "/bluelibrary.sqlite-wal"))) ?? Data()
        #expect(file.range(of: Data(Self.token.utf8)) == nil && wal.range(of: Data(Self.token.utf8)) == nil)
    }

    @Test func protectReads() throws {
        let app = try InMemoryApp.app { $0.token = AccessToken(Self.token) }
        defer { app.shutdown() }
        let routes = Endpoint.inProcess(InProcessClient(app))
        #expect(try Self.call(routes, "PATCH", "/settings", json: #"{"access": {"protectReads": true}}"#, headers: Self.bearer()).status == 200)
        #expect(try Self.call(routes, "GET", "/albums").status == 401)
        #expect(try Self.call(routes, "GET", "/albums", headers: Self.bearer()).status == 200)
        #expect(try Self.call(routes, "GET", "/healthz").status == 200)
    }

    @Test func tokenSetCommandReadsStdin() throws {
        let directory = TestApp.temporaryDirectory()
        let run = try ChildProcess.run(
            ServerProcess.executableURL.path, ["token", "set", "--data-dir", directory],
            environment: ProcessInfo.processInfo.environment, input: Array((Self.token + "\n").utf8), mergeStderr: true)
        let text = String(decoding: run.stdout, as: UTF8.self)
        #expect(run.status == 0, "\(text)")
        #expect(!text.contains(Self.token))

        let store = try SQLiteAlbumStore(path: directory + "/bluelibrary.sqlite")
        let stored = try #require(try store.tokenHash())
        #expect(PasswordHash.verify(token: Array(Self.token.utf8), salt: stored.salt, hash: stored.hash, iterations: stored.iterations))
        #expect(try SettingsService(store: store).current.access.passcodeEnabled)

        // The token is never taken from the command line.
        let (status, message) = try ServerProcess.run(["token", "set", Self.token, "--data-dir", directory])
        #expect(status != 0)
        #expect(message.contains("standard input"))
    }
}
