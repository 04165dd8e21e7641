#if canImport(Glibc)
import Glibc
#endif
import BlueLibraryTestSupport
import Foundation
import HTTPTestSupport
import TestThreads
import Testing

@testable import BlueLibraryServer

/// Secrets from files, as Compose secrets give them (`BLUELIBRARY_TOKEN_FILE`,
/// `BLUELIBRARY_DATABASE_PASSWORD_FILE`): the rules (``ServeConfiguration/parse``), then real
/// processes, on a real PostgreSQL that demands the password (scram-sha-256) of a role whose
/// password holds `@`, `/`, `:` and a `%2F` that must not be decoded: `serve`, `migrate` and
/// `token set` read the password file alike, and `migrate` takes everything from the
/// environment, as `serve` does.
@Suite(.serialized, .timeLimit(.minutes(3)), .ownThreads) struct SecretFileTests {
    static let token = "file-token-0123456789"
    static let password = "p@ss/w:rd%2F with space"

    static func write(_ text: String, to path: String, mode: mode_t = 0o400) throws {
        try Data(text.utf8).write(to: URL(fileURLWithPath: path))
        chmod(path, mode)
    }

    static func message(_ environment: [String: String], _ arguments: [String] = []) -> String? {
        do {
            _ = try ServeConfiguration.parse(arguments: arguments, environment: environment)
            return nil
        } catch {
            return error.message
        }
    }

    @Test func theRulesOfSecretFiles() throws {
        let directory = try TemporaryDirectory()
        let tokenFile = directory.file("token"), passwordFile = directory.file("password")
        try Self.write(Self.token + "\n", to: tokenFile)
        try Self.write(Self.password + "\r\n", to: passwordFile)
        let url = "postgres://walker@db:5432/library"

        // The file's content, its trailing newline dropped, nothing else trimmed; no warning at 0400.
        let config = try ServeConfiguration.parse(arguments: [], environment: [
            "BLUELIBRARY_TOKEN_FILE": tokenFile, "BLUELIBRARY_DATABASE_URL": url, "BLUELIBRARY_DATABASE_PASSWORD_FILE": passwordFile,
        ])
        #expect(config.token?.value == Self.token)
        #expect(config.databasePassword == Self.password)
        #expect(config.databaseURL == url && config.warnings.isEmpty)
        // The password goes with a URL given by flag too.
        #expect(try ServeConfiguration.parse(arguments: ["--database-url", url], environment: ["BLUELIBRARY_DATABASE_PASSWORD_FILE": passwordFile])
            .databasePassword == Self.password)
        // Empty variables mean unset.
        #expect(try ServeConfiguration.parse(arguments: [], environment: ["BLUELIBRARY_TOKEN_FILE": "", "BLUELIBRARY_DATABASE_PASSWORD_FILE": ""]).token == nil)

        // Conflicts and mistakes stop start-up, naming the variable, never repeating the secret.
        let both = Self.message(["BLUELIBRARY_TOKEN": Self.token, "BLUELIBRARY_TOKEN_FILE": tokenFile])
        #expect(both?.contains("BLUELIBRARY_TOKEN and BLUELIBRARY_TOKEN_FILE are both set") == true, "\(both ?? "")")
        let missing = Self.message(["BLUELIBRARY_TOKEN_FILE": directory.file("absent")])
        #expect(missing?.hasPrefix("BLUELIBRARY_TOKEN_FILE: cannot read \(directory.file("absent")): No such file") == true, "\(missing ?? "")")
        #expect(Self.message(["BLUELIBRARY_TOKEN_FILE": directory.path])?.contains("is not a file") == true)
        try Self.write("\n", to: directory.file("blank"))
        #expect(Self.message(["BLUELIBRARY_TOKEN_FILE": directory.file("blank")])?.contains("is empty") == true)
        try Self.write("short\n", to: directory.file("weak"))
        #expect(Self.message(["BLUELIBRARY_TOKEN_FILE": directory.file("weak")])?.contains("at least 12 characters") == true)
        let sqlite = Self.message(["BLUELIBRARY_DATABASE_PASSWORD_FILE": passwordFile])
        #expect(sqlite?.contains("there is no database URL") == true, "\(sqlite ?? "")")
        let twice = Self.message(["BLUELIBRARY_DATABASE_URL": "postgres://walker:hunter2@db/library", "BLUELIBRARY_DATABASE_PASSWORD_FILE": passwordFile])
        #expect(twice?.contains("holds a password") == true && twice?.contains("hunter2") == false, "\(twice ?? "")")
        #expect(Self.message(["BLUELIBRARY_DATABASE_URL": "postgres://walker@db/library?password=x", "BLUELIBRARY_DATABASE_PASSWORD_FILE": passwordFile]) != nil)

        // A file every user may read works, with a warning that says what to do.
        try Self.write(Self.token, to: directory.file("open"), mode: 0o644)
        let open = try ServeConfiguration.parse(arguments: [], environment: ["BLUELIBRARY_TOKEN_FILE": directory.file("open")])
        #expect(open.token?.value == Self.token)
        #expect(open.warnings.count == 1 && open.warnings[0].contains("mode 644") && open.warnings[0].contains("chmod 0400"), "\(open.warnings)")
        #expect(ServeConfiguration.helpText.contains("BLUELIBRARY_TOKEN_FILE") && ServeConfiguration.helpText.contains("BLUELIBRARY_DATABASE_PASSWORD_FILE"))
    }

    @Test func aTokenFileLocksTheServer() throws {
        let directory = try TemporaryDirectory()
        try Self.write(Self.token + "\n", to: directory.file("token"), mode: 0o644)
        let server = try ServerProcess(environment: ["BLUELIBRARY_TOKEN_FILE": directory.file("token")], dataDirectory: directory.file("data"))
        let album = Array(#"{"title": "Locked", "artist": "Filed"}"#.utf8)
        #expect(try RawHTTPClient.request(port: server.port, method: "POST", path: "/albums", headers: ["Content-Type": "application/json"], body: album).status == 401)
        #expect(try RawHTTPClient.request(port: server.port, method: "POST", path: "/albums",
                                          headers: ["Content-Type": "application/json", "Authorization": "Bearer \(Self.token)"], body: album).status == 201)
        #expect(server.logLines().contains { $0.contains("\"level\":\"warning\"") && $0.contains("chmod 0400") }, "the open file is warned about")
        #expect(!server.logText.contains(Self.token), "the token is never logged")
        let (status, output) = try ServerProcess.run(["serve", "--port", "0", "--data-dir", directory.file("data2")],
                                                     environment: ["BLUELIBRARY_TOKEN": Self.token, "BLUELIBRARY_TOKEN_FILE": directory.file("token")])
        #expect(status == 2 && output.contains("both set"), "\(output)")
    }

    /// A PostgreSQL role that must give its password, and a database of its own.
    static func passwordRole(on server: PostgresServer, database: String) throws -> String {
        let psql = PostgresServer.binDirectory + "/psql"
        let environment = ChildProcess.environment(dropping: { $0.hasPrefix("PG") }, adding: [:])
        let created = try ChildProcess.run(
            psql, ["-X", "-q", "-v", "ON_ERROR_STOP=1", "-v", "pw=\(password)", "-d", server.url()], environment: environment,
            input: Array("CREATE ROLE walker LOGIN PASSWORD :'pw';\nCREATE DATABASE \(database) OWNER walker;\n".utf8), mergeStderr: true)
        try #require(created.status == 0, "\(String(decoding: created.stdout, as: UTF8.self))")
        // The role's connections must authenticate (the cluster trusts every other one).
        let hba = server.dataDirectory + "/pg_hba.conf"
        let rules = try String(contentsOfFile: hba, encoding: .utf8)
        try ("host all walker 127.0.0.1/32 scram-sha-256\n" + rules).write(toFile: hba, atomically: false, encoding: .utf8)
        _ = try ChildProcess.run(psql, ["-X", "-q", "-d", server.url(), "-c", "SELECT pg_reload_conf()"], environment: environment)
        let url = "postgresql://walker@127.0.0.1:\(server.port)/\(database)"
        let refused = eventually(timeout: .seconds(10), pollingEvery: .milliseconds(100)) {
            (try? ChildProcess.run(psql, ["-X", "-w", "-d", url, "-c", "SELECT 1"], environment: environment).status) != 0
        }
        try #require(refused, "the role now needs its password")
        return url
    }

    @Test func thePasswordFileReachesPostgreSQLFromServeMigrateAndTokenSet() throws {
        let postgres = try PostgresServer()
        let url = try Self.passwordRole(on: postgres, database: "walk")
        let directory = try TemporaryDirectory()
        let passwordFile = directory.file("password")
        try Self.write(Self.password + "\n", to: passwordFile)

        // A SQLite library to migrate: the five tutorial albums and one more.
        let sqlite = directory.file("sqlite")
        let source = try ServerProcess(dataDirectory: sqlite)
        #expect(try RawHTTPClient.request(port: source.port, method: "POST", path: "/albums", headers: ["Content-Type": "application/json"],
                                          body: Array(#"{"title": "Migrated", "artist": "From SQLite"}"#.utf8)).status == 201)
        source.signal(SIGTERM)
        #expect(source.waitForExit(timeout: 20) == 0)

        // migrate from the environment alone: no data directory, URL or password on its command line.
        let environment = ["BLUELIBRARY_DATA_DIR": sqlite, "BLUELIBRARY_DATABASE_URL": url, "BLUELIBRARY_DATABASE_PASSWORD_FILE": passwordFile]
        let (migrated, migration) = try ServerProcess.run(["migrate"], environment: environment)
        #expect(migrated == 0 && migration.contains("Copied \(sqlite)/bluelibrary.sqlite into PostgreSQL"), "\(migration)")
        #expect(!migration.contains(Self.password))

        // serve on it, the password from the file.
        let server = try ServerProcess(environment: ["BLUELIBRARY_DATABASE_URL": url, "BLUELIBRARY_DATABASE_PASSWORD_FILE": passwordFile],
                                       dataDirectory: directory.file("covers"))
        #expect(try RawHTTPClient.request(port: server.port, path: "/readyz").status == 200)
        let listed = try RawHTTPClient.request(port: server.port, path: "/albums?limit=100&count=true")
        #expect(listed.text.contains("\"Migrated\"") && listed.text.contains("\"total\":6"), "\(listed.text.prefix(300))")
        #expect(!server.logText.contains(Self.password))

        // token set finds the database the same way; the running instance locks within seconds.
        let set = try ChildProcess.run(ServerProcess.executableURL.path, ["token", "set"],
                                       environment: ChildProcess.environment(dropping: { $0.hasPrefix("BLUELIBRARY_") }, adding: environment),
                                       input: Array(Self.token.utf8), mergeStderr: true)
        #expect(set.status == 0, "\(String(decoding: set.stdout, as: UTF8.self))")
        let album = Array(#"{"title": "Locked", "artist": "Out"}"#.utf8)
        #expect(eventually(timeout: .seconds(10), pollingEvery: .milliseconds(100)) {
            (try? RawHTTPClient.request(port: server.port, method: "POST", path: "/albums", headers: ["Content-Type": "application/json"], body: album).status) == 401
        })

        // The same password percent-encoded in the URL works too (libpq decodes it).
        let encoded = Self.password.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? ""
        let inURL = try ServerProcess(environment: ["BLUELIBRARY_DATABASE_URL": url.replacingOccurrences(of: "walker@", with: "walker:\(encoded)@")],
                                      dataDirectory: directory.file("covers2"))
        #expect(try RawHTTPClient.request(port: inURL.port, path: "/readyz").status == 200)

        // Without the file the database refuses; with a URL password and the file both, start-up does.
        let (refused, refusal) = try ServerProcess.run(["serve", "--port", "0", "--data-dir", directory.file("covers3")],
                                                       environment: ["BLUELIBRARY_DATABASE_URL": url])
        #expect(refused == 2 && refusal.contains("no password supplied"), "\(refusal)")
        let (twice, twiceText) = try ServerProcess.run(["migrate"], environment: environment.merging(
            ["BLUELIBRARY_DATABASE_URL": url.replacingOccurrences(of: "walker@", with: "walker:\(encoded)@")]) { $1 })
        #expect(twice == 2 && twiceText.contains("holds a password") && !twiceText.contains(encoded), "\(twiceText)")
        let (none, noneText) = try ServerProcess.run(["migrate", "--from", sqlite], environment: [:])
        #expect(none == 2 && noneText.contains("BLUELIBRARY_DATABASE_URL"), "\(noneText)")
    }
}
