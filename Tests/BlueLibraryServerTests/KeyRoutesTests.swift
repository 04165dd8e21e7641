import BlueLibraryTestSupport
import Crypto
import Essentials
import Foundation
import HTTPServer
import HTTPTestSupport
import Library
import ServerRecords
import SQLite
import Synchronization
import TestThreads
import Testing

@testable import BlueLibraryServer
@testable import Storage

/// `/keys` over real sockets: what is stored (a hash, never the secret), changes taking effect
/// at once, who-am-I, lists that show what a key may read, lockouts per address and per key,
/// and a database from before keys.
@Suite(.serialized, .timeLimit(.minutes(3)), .ownThreads)
struct KeyRoutesTests {
    static let token = "keys-admin-token-0123"

    /// A locked app reached from `127.0.0.1` as a trusted proxy: `X-Forwarded-For` names the client.
    static func app(_ adjust: (inout ServeConfiguration) -> Void = { _ in }) throws -> BlueLibraryApp {
        let app = try TestApp.make { config in
            config.token = AccessToken(token)
            config.seed = false
            config.trustedProxies = [IPAddressRange("127.0.0.1/32")!]
            adjust(&config)
        }
        app.start()
        return app
    }

    static func send(_ app: BlueLibraryApp, _ method: String, _ path: String, key: String?, json: String? = nil,
                     from client: String = "192.0.2.1") throws -> RawHTTPClient.Response {
        var headers = ["X-Forwarded-For": client]
        if let key { headers["Authorization"] = "Bearer \(key)" }
        if json != nil { headers["Content-Type"] = "application/json" }
        return try RawHTTPClient.request(port: app.port, method: method, path: path, headers: headers, body: Array((json ?? "").utf8))
    }

    static func makeKey(_ app: BlueLibraryApp, _ body: String) throws -> (id: String, secret: String) {
        let response = try send(app, "POST", "/keys", key: token, json: body)
        #expect(response.status == 201, "\(response.text)")
        let json = try response.json()
        return (try #require(json["id"] as? String), try #require(json["secret"] as? String))
    }

    @Test func aKeyIsShownOnceStoredAsAHashAndChangesTakeEffectAtOnce() throws {
        let app = try Self.app()
        defer { app.shutdown() }
        let created = try Self.send(app, "POST", "/keys", key: Self.token, json: #"{"name": " backup ", "scopes": ["read"]}"#)
        #expect(created.status == 201, "\(created.text)")
        let json = try created.json()
        let id = try #require(json["id"] as? String)
        #expect(created.header("Location")?.hasSuffix("/keys/\(id)") == true)
        let secret = try #require(json["secret"] as? String)
        #expect(json["name"] as? String == "backup" && json["libraries"] is NSNull && json["expiresAt"] is NSNull)
        #expect(secret.hasPrefix(id + "_") && KeySecret.parse(secret) != nil)
        // Never shown again; stored as its SHA-256 only.
        let listed = try Self.send(app, "GET", "/keys", key: Self.token)
        #expect(listed.status == 200 && listed.text.contains(id) && !listed.text.contains(secret) && !listed.text.contains("\"secret\""))
        #expect(listed.text.contains("\"id\":\"token\""), "the passcode is the admin key token: \(listed.text)")
        let stored = try #require(try app.backend.records.accessKeys().first { $0.id == id })
        #expect(stored.secret.algorithm == TokenHash.sha256 && stored.secret.hash == SHA256.hash(Array(secret.utf8)))
        // A write is refused (403), a read answers; more scope takes effect at once.
        #expect(try Self.send(app, "POST", "/albums", key: secret, json: #"{"title": "T", "artist": "A"}"#).status == 403)
        #expect(try Self.send(app, "PATCH", "/keys/\(id)", key: Self.token, json: #"{"scopes": ["write"]}"#).status == 200)
        #expect(try Self.send(app, "POST", "/albums", key: secret, json: #"{"title": "T", "artist": "A"}"#).status == 201)
        // Who am I.
        let me = try Self.send(app, "GET", "/keys/self", key: secret).json()
        #expect((me["key"] as? [String: Any])?["id"] as? String == id && me["scopes"] as? [String] == ["read", "write"])
        #expect(me["locked"] as? Bool == true && me["libraries"] is NSNull)
        let anonymous = try Self.send(app, "GET", "/keys/self", key: nil).json()
        #expect(anonymous["key"] is NSNull && anonymous["scopes"] as? [String] == ["read"], "reads are open")
        // Reads are open, but a key sent with one must be right.
        let wrong = id + "_" + String(repeating: "w", count: 43)
        #expect(try Self.send(app, "GET", "/albums", key: wrong).status == 401)
        #expect(try Self.send(app, "GET", "/albums", key: secret).status == 200)
        // A bad body names every field; a key that is not there is 404.
        let bad = try Self.send(app, "POST", "/keys", key: Self.token,
                                json: #"{"scopes": ["owner"], "libraries": ["Jazz"], "expiresAt": "2001-01-01T00:00:00Z", "secret": "x"}"#)
        let fields = Set(((try bad.json()["errors"] as? [[String: Any]]) ?? []).compactMap { $0["field"] as? String })
        #expect(bad.status == 422 && fields == ["scopes[0]", "libraries[0]", "expiresAt", "secret"], "\(bad.text)")
        #expect(try Self.send(app, "POST", "/keys", key: Self.token, json: "{}").status == 422)
        #expect(try Self.send(app, "GET", "/keys/bl_zzzzzzzz", key: Self.token).status == 404)
        // Revoked: refused at once.
        #expect(try Self.send(app, "DELETE", "/keys/\(id)", key: Self.token).status == 204)
        #expect(try Self.send(app, "GET", "/keys/self", key: secret).status == 401)
        // The last admin key for every library stays while the lock is on.
        let last = try Self.send(app, "DELETE", "/keys/token", key: Self.token)
        #expect(last.status == 409 && last.text.contains("last-admin-key"), "\(last.text)")
        #expect(try Self.send(app, "PATCH", "/keys/token", key: Self.token, json: #"{"libraries": ["default"]}"#).status == 409)
        let admin = try Self.makeKey(app, #"{"name": "admin", "scopes": ["admin"]}"#)
        #expect(try Self.send(app, "DELETE", "/keys/token", key: admin.secret).status == 204)
        #expect(try Self.send(app, "GET", "/settings", key: Self.token).status == 401, "the passcode went with its key")
        #expect(try Self.send(app, "GET", "/settings", key: admin.secret).status == 200)
    }

    @Test func aKeyForOneLibrarySeesOnlyItAndMovesNowhereElse() throws {
        let app = try Self.app()
        defer { app.shutdown() }
        #expect(try Self.send(app, "PATCH", "/settings", key: Self.token, json: #"{"access": {"protectReads": true}}"#).status == 200)
        for id in ["jazz", "rock"] {
            #expect(try Self.send(app, "POST", "/libraries", key: Self.token, json: #"{"id": "\#(id)"}"#).status == 201)
        }
        for (view, sources) in [("jazz-only", #"["jazz"]"#), ("mixed", #"["jazz", "rock"]"#)] {
            #expect(try Self.send(app, "POST", "/views", key: Self.token, json: #"{"id": "\#(view)", "sources": \#(sources)}"#).status == 201)
        }
        let jazz = try Self.makeKey(app, #"{"name": "jazz", "scopes": ["write"], "libraries": ["jazz"]}"#)
        let libraries = try Self.send(app, "GET", "/libraries", key: jazz.secret)
        #expect(libraries.status == 200 && libraries.header("Vary") == "Authorization")
        #expect(((try libraries.json()["libraries"] as? [[String: Any]]) ?? []).compactMap { $0["id"] as? String } == ["jazz"])
        let views = try Self.send(app, "GET", "/views", key: jazz.secret).json()
        #expect(((views["views"] as? [[String: Any]]) ?? []).compactMap { $0["id"] as? String } == ["jazz-only"])
        #expect(try Self.send(app, "GET", "/views/mixed/albums", key: jazz.secret).status == 403)
        #expect(try Self.send(app, "GET", "/views/jazz-only/albums", key: jazz.secret).status == 200)
        let rock = try Self.send(app, "GET", "/libraries/rock/albums", key: jazz.secret)
        #expect(rock.status == 404 && rock.text.contains("library-not-found"), "as if rock did not exist: \(rock.text)")
        // A move to a library the key may not write to: that library "does not exist".
        let added = try Self.send(app, "POST", "/libraries/jazz/albums", key: jazz.secret, json: #"{"title": "Kind of Blue", "artist": "Miles Davis"}"#)
        let albumID = try #require(try added.json()["id"] as? String)
        let move = try Self.send(app, "POST", "/libraries/jazz/albums/\(albumID)/move", key: jazz.secret, json: #"{"library": "rock"}"#)
        #expect(move.status == 422 && move.text.contains("library-not-found"), "\(move.text)")
        let batch = try Self.send(app, "POST", "/libraries/jazz/batch", key: jazz.secret,
                                  json: #"{"operations": [{"op": "move", "id": "\#(albumID)", "library": "rock"}]}"#)
        #expect(batch.status == 422 && batch.text.contains("operations[0].library") && batch.text.contains("library-not-found"), "\(batch.text)")
        #expect(try Self.send(app, "GET", "/libraries/jazz/albums/\(albumID)", key: jazz.secret).status == 200, "still in jazz")
        // An undo that would take an album out of a library the key may not change stays for
        // a key that may (an admin moved one from jazz to rock).
        #expect(try Self.send(app, "POST", "/libraries/jazz/albums/\(albumID)/move", key: Self.token, json: #"{"library": "rock"}"#).status == 200)
        let undo = try Self.send(app, "POST", "/libraries/jazz/undo", key: jazz.secret)
        #expect(undo.status == 409 && !undo.text.contains("rock"), "\(undo.text)")
        #expect(try Self.send(app, "POST", "/libraries/jazz/undo", key: Self.token).status == 200)
        #expect(try Self.send(app, "GET", "/libraries/jazz/albums/\(albumID)", key: jazz.secret).status == 200, "back in jazz")
        // An archive holding an album id of a library the key may not see: refused without
        // naming that library.
        #expect(try Self.send(app, "POST", "/libraries/rock/albums", key: Self.token, json: #"{"title": "Paranoid", "artist": "Black Sabbath"}"#).status == 201)
        let rockArchive = try Self.send(app, "GET", "/libraries/rock/archive", key: Self.token)
        let jazzAdmin = try Self.makeKey(app, #"{"name": "jazz admin", "scopes": ["admin"], "libraries": ["jazz"]}"#)
        let replaced = try Self.send(app, "PUT", "/libraries/jazz/archive", key: jazzAdmin.secret, json: rockArchive.text)
        #expect(replaced.status == 409 && !replaced.text.contains("rock"), "\(replaced.text)")
        // Server-wide routes need a key for every library.
        #expect(try Self.send(app, "GET", "/metrics", key: jazz.secret).status == 403)
        let me = try Self.send(app, "GET", "/keys/self", key: jazz.secret).json()
        #expect(me["libraries"] as? [String] == ["jazz"])
    }

    @Test func guessesLockTheAddressAndTheKeyButNotTheirHolders() throws {
        let app = try Self.app()
        defer { app.shutdown() }
        let reader = try Self.makeKey(app, #"{"name": "reader", "scopes": ["read"]}"#)
        let writer = try Self.makeKey(app, #"{"name": "writer", "scopes": ["write"]}"#)
        let album = #"{"title": "T", "artist": "A"}"#
        // 20 wrong secrets from one address (unknown ids): it is locked out after the limit (5)...
        var statuses: [Int] = []
        for n in 0..<20 {
            let wrong = "bl_guessing_" + String(repeating: Character(String(n % 10)), count: 43)
            statuses.append(try Self.send(app, "POST", "/albums", key: wrong, json: album, from: "198.51.100.7").status)
        }
        #expect(statuses.prefix(4).allSatisfy { $0 == 401 } && statuses.suffix(15).allSatisfy { $0 == 429 }, "\(statuses)")
        // ...but a right key from that address still works, and the passcode does not.
        #expect(try Self.send(app, "POST", "/albums", key: writer.secret, json: album, from: "198.51.100.7").status == 201)
        #expect(try Self.send(app, "POST", "/albums", key: Self.token, json: album, from: "198.51.100.7").status == 429)
        // Wrong secrets for one key id from many addresses lock that key id for wrong secrets...
        let guessed = reader.id + "_" + String(repeating: "x", count: 43)
        var keyStatuses: [Int] = []
        for n in 0..<8 {
            keyStatuses.append(try Self.send(app, "GET", "/settings", key: guessed, from: "203.0.113.\(n + 1)").status)
        }
        #expect(keyStatuses.prefix(5).allSatisfy { $0 == 401 } && keyStatuses.suffix(3).allSatisfy { $0 == 429 }, "\(keyStatuses)")
        let locked = try Self.send(app, "GET", "/settings", key: guessed, from: "203.0.113.99")
        #expect(locked.status == 429 && locked.text.contains("this key id"), "\(locked.text)")
        // ...while its holder, anywhere, is not locked out.
        let me = try Self.send(app, "GET", "/keys/self", key: reader.secret, from: "203.0.113.99")
        #expect(me.status == 200, "\(me.text)")
        // A right key from the locked address works at a bounded rate: a burst is cut off.
        var burst: [Int] = []
        for _ in 0..<100 { burst.append(try Self.send(app, "GET", "/keys/self", key: writer.secret, from: "198.51.100.7").status) }
        let throttled = try Self.send(app, "GET", "/keys/self", key: writer.secret, from: "198.51.100.7")
        #expect(burst.prefix(10).allSatisfy { $0 == 200 } && burst.contains(429), "\(burst)")
        #expect(throttled.status == 429 && throttled.text.contains("at most 10 requests a second"), "\(throttled.text)")
        #expect(try Self.send(app, "GET", "/keys/self", key: writer.secret, from: "198.51.100.8").status == 200, "other addresses are not")
        // A key text broken inside a character where its id ends (55 bytes): refused, no trap.
        let broken = "bl_abcdefg\u{E9}" + String(repeating: "A", count: 43)
        #expect(broken.utf8.count == 55)
        #expect(try Self.send(app, "GET", "/settings", key: broken, from: "192.0.2.200").status == 401)
    }

    @Test func theAccessLogAndTheMetricsNameTheKeyNeverItsSecret() throws {
        let log = LogLines()
        let app = try TestApp.make({ config in
            config.token = AccessToken(Self.token)
            config.seed = false
            config.accessLog = true
        }, logSink: log.append)
        app.start()
        defer { app.shutdown() }
        let reader = try Self.makeKey(app, #"{"name": "reader", "scopes": ["read"]}"#)
        #expect(try Self.send(app, "PATCH", "/settings", key: Self.token, json: #"{"access": {"protectReads": true}}"#).status == 200)
        for _ in 0..<3 { #expect(try Self.send(app, "GET", "/albums", key: reader.secret).status == 200) }
        #expect(try Self.send(app, "GET", "/albums", key: reader.id + "_" + String(repeating: "y", count: 43)).status == 401)
        let metrics = try Self.send(app, "GET", "/metrics", key: Self.token).text
        #expect(metrics.contains(#"bluelibrary_key_requests_total{key="\#(reader.id)"} 3"#), "\(metrics)")
        #expect(eventually { log.requests(path: "/albums") == [200, 200, 200, 401] })
        let lines = log.text.split(separator: "\n").filter { $0.contains(#""path":"/albums""#) }
        #expect(lines.count == 4 && lines.allSatisfy { $0.contains(#""key":"\#(reader.id)""#) }, "\(lines)")
        #expect(!log.text.contains(reader.secret) && !log.text.contains(String(reader.secret.dropFirst(12))) && !log.text.contains(Self.token))
    }

    @Test func anExpiredPasscodeIsRefusedAndTheLockKeepsAnAdminThatNeverExpires() throws {
        let clock = AccessKeyMatrixTests.Clock()
        let app = try Self.app { $0.accessClock = { clock.now.withLock { $0 } } }
        defer { app.shutdown() }
        let soon = ISO8601DateFormatter().string(from: clock.now.withLock { $0 }.addingTimeInterval(60))
        // The passcode is the only admin key: it may not get an expiry...
        let refused = try Self.send(app, "PATCH", "/keys/token", key: Self.token, json: #"{"expiresAt": "\#(soon)"}"#)
        #expect(refused.status == 409 && refused.text.contains("last-admin-key"), "\(refused.text)")
        // ...nor may an expiring admin key be the one left.
        let expiring = try Self.makeKey(app, #"{"name": "temp admin", "scopes": ["admin"], "expiresAt": "\#(soon)"}"#)
        #expect(try Self.send(app, "DELETE", "/keys/token", key: expiring.secret).status == 409)
        let admin = try Self.makeKey(app, #"{"name": "admin", "scopes": ["admin"]}"#)
        #expect(try Self.send(app, "PATCH", "/keys/token", key: admin.secret, json: #"{"expiresAt": "\#(soon)"}"#).status == 200)
        #expect(try Self.send(app, "GET", "/settings", key: Self.token).status == 200)
        clock.advance(120)
        let expired = try Self.send(app, "GET", "/settings", key: Self.token)
        #expect(expired.status == 401 && expired.text.contains("expired"), "\(expired.text)")
        #expect(try Self.send(app, "GET", "/settings", key: expiring.secret).status == 401)
        #expect(try Self.send(app, "GET", "/settings", key: admin.secret).status == 200)
    }

    /// A database from before keys: its token becomes the admin key `token`, its lockouts stay.
    @Test func aDatabaseWithTheOldTokenUpgradesToAnAdminKey() throws {
        let directory = TestApp.temporaryDirectory()
        let oldToken = "the-old-token-0123456789"
        do {
            let connection = try Connection(path: directory + "/bluelibrary.sqlite")
            try Schema.migrator(first: 10).migrate(connection)
            let made = try PasswordHash.make(token: Array(oldToken.utf8), iterations: 1000)
            try connection.run(
                "INSERT INTO access_token (id, algorithm, salt, hash, iterations, updated_at) VALUES (1, 'pbkdf2-sha256', ?1, ?2, ?3, 1700000000000)",
                [.blob(made.salt), .blob(made.hash), .integer(Int64(made.iterations))])
            try connection.run(#"INSERT INTO settings (id, document, updated_at) VALUES (1, '{"schemaVersion": 2, "access": {"passcodeEnabled": true}}', 1)"#, [])
        }
        let app = try TestApp.make { config in
            config.seed = false
            config.dataDirectory = directory
        }
        app.start()
        defer { app.shutdown() }
        let me = try RawHTTPClient.request(port: app.port, path: "/keys/self", headers: ["Authorization": "Bearer \(oldToken)"])
        #expect(me.status == 200, "\(me.text)")
        let key = try #require(try me.json()["key"] as? [String: Any])
        #expect(key["id"] as? String == "token" && key["scopes"] as? [String] == ["admin"] && key["libraries"] is NSNull)
        #expect(try RawHTTPClient.request(port: app.port, method: "POST", path: "/albums", headers: ["Content-Type": "application/json"],
                                          body: Array(#"{"title": "T", "artist": "A"}"#.utf8)).status == 401, "the lock stays on")
        let tables = try app.backend.records.accessKeys().map(\.id)
        #expect(tables == ["token"])
    }
}
