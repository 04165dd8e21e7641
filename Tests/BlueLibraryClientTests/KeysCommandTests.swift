import BlueLibraryClient
import BlueLibraryTestSupport
import Foundation
import HTTPTestSupport
import TestThreads
import Testing

/// `bluelibrary keys ...`: the built executable against the real app in-process (locked with
/// the suite's token, the admin key `token`), and `keys create --data-dir`, which writes a key
/// into a data directory with no server (and a running server on it learns the key).
@Suite(.serialized, .timeLimit(.minutes(2)), .ownThreads) final class KeysCommandTests {
    let server: LiveServer

    init() throws { server = try LiveServer(.locked) }

    func run(_ arguments: [String], key: String? = nil) throws -> CommandRun {
        var environment = server.environment
        if let key { environment["BLUELIBRARY_CLIENT_TOKEN"] = key }
        return try CommandRun.bluelibrary(arguments, environment: environment)
    }

    func json(_ text: String) throws -> [String: Any] {
        try #require(try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any])
    }

    /// The id of a key (its first 11 characters).
    func id(of secret: String) -> String { String(secret.prefix(11)) }

    @Test func helpAndUsageMistakes() throws {
        let help = try run(["keys", "--help"])
        #expect(help.status == 0 && help.stdout.contains("bluelibrary keys <command>") && help.stdout.contains("Offline create"))
        #expect(help.stdout.contains("5 the key lacks the scope"))
        #expect(try run(["help"]).stdout.contains("keys"))
        #expect(try run(["albums", "--help"]).stdout.contains("(403"))

        let mistakes: [([String], String)] = [
            (["keys", "create"], "keys create needs --name NAME"),
            (["keys", "create", "--name", "x"], "keys create needs --scope"),
            (["keys", "create", "--name", "x", "--scope", "owner"], "--scope: read, write or admin, not 'owner'"),
            (["keys", "create", "--name", "x", "--scope", "read", "--expires", "tomorrow"], "--expires: an RFC 3339 time"),
            (["keys", "create", "--name", "x", "--scope", "read", "--library", "a,,b"], "--library: library ids"),
            (["keys", "update", "bl_aaaaaaaa"], "keys update needs --name"),
            (["keys", "update", "bl_aaaaaaaa", "--library", "a", "--all-libraries"], "not both"),
            (["keys", "update", "bl_aaaaaaaa", "--expires", "2099-01-01T00:00:00Z", "--no-expiry"], "not both"),
            (["keys", "show"], "keys show needs a key id"),
            (["keys", "list", "--data-dir", "/nonexistent"], "only 'keys create' works on the database directly"),
            (["keys", "frobnicate"], "unknown keys command"),
            (["keys", "list", "--bogus"], "try 'bluelibrary keys --help'"),
        ]
        for (arguments, message) in mistakes {
            let mistake = try run(arguments)
            #expect(mistake.status == 2 && mistake.stderr.contains(message), "\(arguments): \(mistake.status) \(mistake.stderr)")
        }
    }

    @Test func aKeyIsCreatedUsedChangedAndRevokedOverHTTP() throws {
        let created = try run(["keys", "create", "--name", "family", "--scope", "read"])
        #expect(created.status == 0, "\(created.stderr)")
        // The secret alone on stdout (for `> file`); what was made on stderr.
        let secret = String(created.stdout.dropLast())
        #expect(created.stdout.hasSuffix("\n") && secret.count == 55 && secret.hasPrefix("bl_") && !secret.contains("\n"))
        #expect(created.stderr.contains("created key \(id(of: secret)) (\"family\"; scopes read; libraries all; expires never)"))
        #expect(created.stderr.contains("only time its secret is shown"))

        let list = try run(["keys", "list"])
        #expect(list.status == 0 && list.lines.first?.hasPrefix("ID") == true)
        #expect(list.lines.dropFirst().compactMap { $0.split(separator: " ").first.map(String.init) }.sorted() == [id(of: secret), "token"].sorted())
        #expect(!list.stdout.contains(secret))
        let listed = try #require(try json(try run(["keys", "list", "--json"]).stdout)["keys"] as? [[String: Any]])
        #expect(listed.count == 2 && listed.allSatisfy { $0["secret"] == nil && $0["createdAt"] is String })

        // With the key: reads work, writes and key management are 403 (exit 5), who-am-I says why.
        #expect(try run(["albums", "list"], key: secret).status == 0)
        let write = try run(["albums", "add", "--title", "No", "--artist", "Scope"], key: secret)
        #expect(write.status == 5 && write.stderr.contains("(403)") && write.stderr.contains("keys self"), "\(write.stderr)")
        #expect(try run(["keys", "list"], key: secret).status == 5)
        let me = try run(["keys", "self"], key: secret)
        #expect(me.status == 0 && me.stdout.contains("Key: \(id(of: secret)) (\"family\")") && me.stdout.contains("Scopes: read\n"))
        #expect(me.stdout.contains("Libraries: all\n") && me.stdout.contains("Lock: on\n"))
        let meJSON = try json(try run(["keys", "self", "--json"], key: secret).stdout)
        #expect(meJSON["scopes"] as? [String] == ["read"] && meJSON["locked"] as? Bool == true)

        // Changed field by field.
        let updated = try run(["keys", "update", id(of: secret), "--scope", "read,write", "--library", "default", "--expires", "2099-01-01T00:00:00Z"])
        #expect(updated.status == 0, "\(updated.stderr)")
        #expect(updated.stdout == "Updated key \(id(of: secret)) (\"family\"; scopes read,write; libraries default; expires 2099-01-01T00:00:00.000Z).\n")
        #expect(try run(["albums", "add", "--title", "Yes", "--artist", "Scope"], key: secret).status == 0)
        let opened = try json(try run(["keys", "update", id(of: secret), "--all-libraries", "--no-expiry", "--name", "all of us", "--json"]).stdout)
        #expect(opened["libraries"] is NSNull && opened["expiresAt"] is NSNull && opened["name"] as? String == "all of us")
        let shown = try run(["keys", "show", id(of: secret)])
        #expect(shown.status == 0 && shown.lines.count == 2 && shown.lines[1].contains("all of us"))

        // The last admin key stays; a revoked key is 401 (exit 3).
        let last = try run(["keys", "delete", "token"])
        #expect(last.status == 1 && last.stderr.contains("admin key"), "\(last.stderr)")
        let deleted = try run(["keys", "delete", id(of: secret)])
        #expect(deleted.status == 0 && deleted.stdout == "Deleted key \(id(of: secret)); it no longer works.\n")
        let revoked = try run(["albums", "list"], key: secret)
        #expect(revoked.status == 3 && revoked.stderr.contains("(401)"))
        #expect(try run(["keys", "show", id(of: secret)]).status == 1)
    }

    @Test func aSyncWithAReadKeyKeepsTheQueueAndExits5() throws {
        let secret = try #require(try server.client.createKey(name: "reader", scopes: [.read]).secret)
        let replica = TestApp.temporaryDirectory() + "/replica.sqlite"
        let created = try run(["sync", "--replica", replica], key: secret)
        #expect(created.status == 0, "\(created.stderr)")
        #expect(try run(["albums", "add", "--title", "Queued", "--artist", "Offline", "--replica", replica]).status == 0)
        let refused = try run(["sync", "--replica", replica], key: secret)
        #expect(refused.status == 5 && refused.stderr.hasPrefix("bluelibrary: sync stopped: the key does not allow this (403)"), "\(refused.stderr)")
        #expect(refused.stderr.hasSuffix("; 1 queued change stays in \(replica) for the next sync\n"), "\(refused.stderr)")
        let synced = try run(["sync", "--replica", replica])
        #expect(synced.status == 0, "\(synced.stderr)")
        #expect(try server.allAlbums().last?.title == "Queued")
    }

    @Test func anOfflineCreateWritesTheKeyIntoTheDataDirectoryAndTurnsTheLockOnForAnAdminKey() throws {
        let directory = TestApp.temporaryDirectory()
        func create(_ arguments: [String]) throws -> CommandRun {
            try CommandRun.bluelibrary(["keys", "create", "--data-dir", directory] + arguments, environment: [:])
        }
        // A read key leaves the lock off (and says so).
        let reader = try create(["--name", "family", "--scope", "read", "--library", "default"])
        #expect(reader.status == 0, "\(reader.stderr)")
        let readKey = String(reader.stdout.dropLast())
        #expect(readKey.count == 55 && reader.stderr.contains("in the database") && reader.stderr.contains("the lock stays off"))
        // An admin key for every library turns it on.
        let admin = try create(["--name", "owner", "--scope", "admin", "--json"])
        #expect(admin.status == 0, "\(admin.stderr)")
        let adminKey = try #require(try json(admin.stdout)["secret"] as? String)
        #expect(admin.stderr.contains("the lock is now on"))
        let again = try create(["--name", "backup", "--scope", "write", "--expires", "2099-01-01T00:00:00Z"])
        #expect(again.status == 0 && again.stderr.contains("the lock was already on"))

        // Bad fields are refused before the database is touched; server options do not mix in.
        let bad = try create(["--name", " ", "--scope", "read"])
        #expect(bad.status == 2 && bad.stderr.contains("name"), "\(bad.stderr)")
        let past = try create(["--name", "old", "--scope", "read", "--expires", "2001-01-01T00:00:00Z"])
        #expect(past.status == 2 && past.stderr.contains("expiresAt must be in the future"), "\(past.stderr)")
        let mixed = try create(["--name", "x", "--scope", "read", "--url", "http://127.0.0.1:1"])
        #expect(mixed.status == 2 && mixed.stderr.contains("--url is for a key made by the server"))
        let notPostgres = try CommandRun.bluelibrary(["keys", "create", "--database-url", "mysql://h/db", "--name", "x", "--scope", "read"], environment: [:])
        #expect(notPostgres.status == 2 && notPostgres.stderr.contains("--database-url: database URL must start with postgres://"))

        // A server on the directory knows the keys and the lock.
        let app = try TestApp.make { $0.dataDirectory = directory }
        app.start()
        defer { app.shutdown() }
        let url = "http://127.0.0.1:\(app.port)"
        func client(_ arguments: [String], key: String?) throws -> CommandRun {
            var environment = ["BLUELIBRARY_URL": url]
            if let key { environment["BLUELIBRARY_CLIENT_TOKEN"] = key }
            return try CommandRun.bluelibrary(arguments, environment: environment)
        }
        let listed = try #require(try json(try client(["keys", "list", "--json"], key: adminKey).stdout)["keys"] as? [[String: Any]])
        #expect(Set(listed.compactMap { $0["name"] as? String }) == ["family", "owner", "backup"])
        let me = try client(["keys", "self"], key: readKey)
        #expect(me.stdout.contains("Scopes: read\n") && me.stdout.contains("Libraries: default\n") && me.stdout.contains("Lock: on\n"))
        #expect(try client(["albums", "add", "--title", "T", "--artist", "A"], key: readKey).status == 5)
        #expect(try client(["albums", "add", "--title", "T", "--artist", "A"], key: nil).status == 3)
        #expect(try client(["albums", "add", "--title", "T", "--artist", "A"], key: adminKey).status == 0)
    }

    @Test func aRunningServerLearnsAnAdminKeyCreatedOffline() throws {
        let directory = TestApp.temporaryDirectory()
        let app = try TestApp.make { $0.dataDirectory = directory }
        app.start()
        defer { app.shutdown() }
        func add(_ key: String?) throws -> Int {
            try RawHTTPClient.request(
                port: app.port, method: "POST", path: "/albums",
                headers: ["Content-Type": "application/json"].merging(key.map { ["Authorization": "Bearer \($0)"] } ?? [:]) { a, _ in a },
                body: Array(#"{"title": "T", "artist": "A"}"#.utf8)).status
        }
        #expect(try add(nil) == 201)

        let created = try CommandRun.bluelibrary(["keys", "create", "--data-dir", directory, "--name", "owner", "--scope", "admin"], environment: [:])
        #expect(created.status == 0, "\(created.stderr)")
        let key = String(created.stdout.dropLast())
        // The lock comes into force without a restart (waited for, not timed).
        #expect(try eventually(timeout: .seconds(10), pollingEvery: .milliseconds(50)) { try add(nil) == 401 })
        #expect(try add(key) == 201)
    }
}
