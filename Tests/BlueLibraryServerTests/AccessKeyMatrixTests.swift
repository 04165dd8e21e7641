import BlueLibraryTestSupport
import Foundation
import HTTPTestSupport
import Library
import Synchronization
import TestThreads
import Testing

@testable import BlueLibraryServer

/// Every route × every kind of caller, against the status the access table says, over real
/// sockets: on SQLite, and on PostgreSQL with two instances on one database (the keys made on
/// one are checked on the other; a revocation through one is seen by the other).
///
/// The table is ``AccessPolicy/rules`` (OpenAPISpecTests keeps openapi.yaml's `security`
/// equal to it, and the router equal to the spec): this test checks that the server does what
/// the table says, for each caller.
@Suite(.serialized, .timeLimit(.minutes(5)), .ownThreads)
struct AccessKeyMatrixTests {
    static let token = "matrix-admin-token-0123"

    /// `otherLibrary` is an admin key for `jazz` asked about `default`; `ownLibrary` the same key
    /// asked about `jazz` (and the view over `jazz` alone); `mixedView` the same key asked about
    /// a view over `default` and `jazz`.
    enum Caller: String, CaseIterable {
        case none, read, write, admin, expired, revoked, otherLibrary, ownLibrary, mixedView
    }

    /// What a caller must get on a route, from the rule alone.
    enum Expected: Equatable {
        /// The route's own answer: anything but a refusal of the lock (401, 403, 429).
        case admitted
        case status(Int)
    }

    static func expected(_ rule: AccessRule?, _ caller: Caller, pattern: String) -> Expected {
        guard let rule else { return .admitted }
        switch caller {
        case .none: return rule.target == .caller ? .admitted : .status(401)
        case .expired, .revoked: return .status(401)
        case .read: return rule.scope == .read ? .admitted : .status(403)
        case .write: return rule.scope <= .write ? .admitted : .status(403)
        case .admin: return .admitted
        case .otherLibrary:
            switch rule.target {
            case .library, .view: return .status(404)
            case .server: return .status(403)
            case .listing, .caller: return .admitted
            }
        case .ownLibrary:
            switch rule.target {
            // The bare routes are `default`'s (and /events without ?library=).
            case .library: return pattern.contains("{lib}") ? .admitted : .status(404)
            case .view, .listing, .caller: return .admitted
            case .server: return .status(403)
            }
        case .mixedView:
            switch rule.target {
            case .view: return .status(403)
            case .library: return .status(404)
            case .server: return .status(403)
            case .listing, .caller: return .admitted
            }
        }
    }

    /// A clock the test moves (keys expire by it).
    final class Clock: Sendable {
        let now = Mutex(Date())
        func advance(_ seconds: TimeInterval) { now.withLock { $0 += seconds } }
    }

    static func app(databaseURL: String?, clock: Clock) throws -> BlueLibraryApp {
        let app = try TestApp.make { config in
            config.token = AccessToken(token)
            config.seed = false
            config.accessClock = { clock.now.withLock { $0 } }
            config.accessPollInterval = .milliseconds(100)
            if let databaseURL {
                config.databaseURL = databaseURL
                config.databasePoolSize = 4
            }
        }
        app.start()
        return app
    }

    static func send(_ port: Int, _ method: String, _ path: String, key: String?, json: String? = nil) throws -> RawHTTPClient.Response {
        var headers: [String: String] = [:]
        if let key { headers["Authorization"] = "Bearer \(key)" }
        if json != nil { headers["Content-Type"] = "application/json" }
        // An event stream never ends: its head is the answer.
        guard path.hasSuffix("/events") else {
            return try RawHTTPClient.request(port: port, method: method, path: path, headers: headers, body: Array((json ?? "").utf8))
        }
        let client = try RawHTTPClient(port: port, receiveTimeout: 10)
        var head = "\(method) \(path) HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n"
        for (name, value) in headers { head += "\(name): \(value)\r\n" }
        try client.send(head + "\r\n")
        return try client.readResponse(isHead: true)
    }

    /// Makes a key with the admin token; its secret.
    static func makeKey(_ port: Int, _ body: String) throws -> String {
        let response = try send(port, "POST", "/keys", key: token, json: body)
        #expect(response.status == 201, "\(response.text)")
        return try #require(try response.json()["secret"] as? String)
    }

    /// One key per caller kind (made on `port`), with the lock protecting reads too and the
    /// lockout out of the way (revoked keys are wrong keys: they count).
    static func callers(_ port: Int, clock: Clock) throws -> [Caller: String?] {
        let settings = try send(port, "PATCH", "/settings", key: token, json: #"{"access": {"protectReads": true, "attemptLimit": 1000}}"#)
        #expect(settings.status == 200, "\(settings.text)")
        #expect(try send(port, "POST", "/libraries", key: token, json: #"{"id": "jazz"}"#).status == 201)
        for (view, sources) in [("all", #"["default"]"#), ("jazz-only", #"["jazz"]"#), ("mixed", #"["default", "jazz"]"#)] {
            #expect(try send(port, "POST", "/views", key: token, json: #"{"id": "\#(view)", "sources": \#(sources)}"#).status == 201)
        }
        let revoked = try makeKey(port, #"{"name": "revoked", "scopes": ["read"]}"#)
        let revokedID = String(revoked.prefix(11))
        #expect(try send(port, "DELETE", "/keys/\(revokedID)", key: token).status == 204)
        let expiry = Date(timeInterval: 60, since: clock.now.withLock { $0 })
        let expired = try makeKey(port, #"{"name": "expired", "scopes": ["admin"], "expiresAt": "\#(ISO8601DateFormatter().string(from: expiry))"}"#)
        let jazz = try makeKey(port, #"{"name": "jazz only", "scopes": ["admin"], "libraries": ["jazz"]}"#)
        let keys: [Caller: String?] = [
            .none: nil,
            .read: try makeKey(port, #"{"name": "reader", "scopes": ["read"]}"#),
            .write: try makeKey(port, #"{"name": "writer", "scopes": ["write"]}"#),
            .admin: try makeKey(port, #"{"name": "admin", "scopes": ["admin"]}"#),
            .otherLibrary: jazz, .ownLibrary: jazz, .mixedView: jazz,
            .expired: expired, .revoked: revoked,
        ]
        clock.advance(120)
        return keys
    }

    /// Every route of `app` (the router, kept equal to openapi.yaml) for every caller, each
    /// request sent to `port` (the app itself, or another instance on its database).
    static func checkEveryRoute(of app: BlueLibraryApp, at port: Int, keys: [Caller: String?]) throws {
        // Admin last: its deletes (a view, a library's albums) come after everyone else's reads.
        let order: [Caller] = [.none, .expired, .revoked, .otherLibrary, .mixedView, .read, .write, .ownLibrary, .admin]
        var checked = 0
        for caller in order {
            for route in app.router.routeTable {
                let method = route.method.rawValue
                let (library, view) = switch caller {
                case .ownLibrary: ("jazz", "jazz-only")
                case .mixedView: ("default", "mixed")
                default: ("default", "all")
                }
                let path = route.pattern.replacingOccurrences(of: "{lib}", with: library)
                    .replacingOccurrences(of: "{id}", with: "01HZY8Q6V9T3X2K7M4N5P6R7S8").replacingOccurrences(of: "{index}", with: "0")
                    .replacingOccurrences(of: "{view}", with: view).replacingOccurrences(of: "{file}", with: "index.html")
                let rule = AccessPolicy.rule(method: route.method, path: Substring(path), pattern: route.pattern)
                let json = ["POST", "PUT", "PATCH"].contains(method) ? "{}" : nil
                let response = try send(port, method, path, key: keys[caller] ?? nil, json: json)
                let where_ = "\(caller.rawValue): \(method) \(route.pattern) → \(response.status) \(response.text.prefix(200))"
                switch expected(rule, caller, pattern: route.pattern) {
                case .admitted:
                    #expect(![401, 403, 429].contains(response.status), "\(where_)")
                case let .status(status):
                    #expect(response.status == status, "\(where_)")
                    if status == 404, !path.hasSuffix("/events") {
                        let type = (try? response.json()["type"] as? String) ?? ""
                        #expect(type.hasSuffix("library-not-found") || type.hasSuffix("view-not-found"), "\(where_)")
                    }
                }
                checked += 1
            }
        }
        #expect(checked == order.count * app.router.routeTable.count)
    }

    @Test func onSQLiteEveryRouteAnswersEachCallerAsTheTableSays() throws {
        let clock = Clock()
        let app = try Self.app(databaseURL: nil, clock: clock)
        defer { app.shutdown() }
        let keys = try Self.callers(app.port, clock: clock)
        try Self.checkEveryRoute(of: app, at: app.port, keys: keys)
    }

    @Test func onTwoPostgreSQLInstancesKeysAndRevocationsAreOne() throws {
        let url = try PostgresServer.shared().makeDatabase()
        let clock = Clock()
        let a = try Self.app(databaseURL: url, clock: clock)
        defer { a.shutdown() }
        let b = try Self.app(databaseURL: url, clock: clock)
        defer { b.shutdown() }
        // Keys made through A, every route asked of B.
        let keys = try Self.callers(a.port, clock: clock)
        let reader = try #require(keys[.read] ?? nil)
        #expect(eventually { (try? Self.send(b.port, "GET", "/albums", key: nil).status) == 401 }, "B knows A's settings")
        #expect(eventually { (try? Self.send(b.port, "GET", "/albums", key: reader).status) == 200 }, "B knows A's new key")
        try Self.checkEveryRoute(of: b, at: b.port, keys: keys)
        // Revoked through A: B refuses it once its access signal moved (polled every 100 ms here,
        // every second by default).
        #expect(try Self.send(a.port, "DELETE", "/keys/\(reader.prefix(11))", key: Self.token).status == 204)
        #expect(eventually(timeout: .seconds(5)) { (try? Self.send(b.port, "GET", "/albums", key: reader).status) == 401 },
                "B stops taking a key revoked through A")
    }
}
