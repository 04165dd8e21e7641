import BlueLibraryServer
import Foundation

/// `bluelibrary migrate [--from DIR] [--to URL] [--force]`: copies a SQLite data directory into a
/// PostgreSQL database, in one transaction, verified before it commits. Without the flags, the
/// data directory and the URL (and its password file) come from the environment, as for `serve`.
enum MigrateCommand {
    static let help = """
        Usage: bluelibrary migrate [--from DATA_DIR] [--to POSTGRES_URL] [--force]

        Copies everything in DATA_DIR/bluelibrary.sqlite (libraries with their display names,
        versions and deleted ones, albums in order, undo, saved states, the change feed, views,
        settings, the token hash and lockouts, idempotency keys, secrets) into the PostgreSQL
        database at POSTGRES_URL (e.g. postgres://user@host:5432/bluelibrary), creating
        its schema first. One transaction: on any error nothing is written. Before committing,
        every table's row count and each library's album count, version and order checksum
        are read back from PostgreSQL and compared with the source's. A target that already
        holds data is refused unless --force is given, which replaces it; --force is refused
        while other sessions are connected to the target database (stop the instances
        first), and a library the target held gets versions above its old one (a version
        never goes down). Stop the server on DATA_DIR first (writes made during the copy are
        not copied). The SQLite data stays (an older file is first upgraded to the current
        SQLite schema, as a server start would).

        Read from the environment as 'bluelibrary serve' reads it (a flag wins over its
        variable), so no password needs to be on the command line:
          --from   BLUELIBRARY_DATA_DIR (default ./data)
          --to     BLUELIBRARY_DATABASE_URL (required, one way or the other)
          the password: BLUELIBRARY_DATABASE_PASSWORD_FILE, a file holding it (any character,
          @ / : included; the URL then has none), or in the URL (percent-encoded), or libpq's
          PGPASSFILE / ~/.pgpass.
        Exit codes: 0 copied, 1 the copy was refused or failed (nothing written), 2 a bad
        command line or environment.
        """

    static func run(_ arguments: [String]) -> Never {
        let environment = ProcessInfo.processInfo.environment
        var source = environment["BLUELIBRARY_DATA_DIR"].flatMap { $0.isEmpty ? nil : $0 } ?? "./data"
        var target: String?
        if let value = environment["BLUELIBRARY_DATABASE_URL"], !value.trimmingCharacters(in: .whitespaces).isEmpty {
            target = checkedURL(value, from: "BLUELIBRARY_DATABASE_URL")
        }
        var force = false
        var words = arguments[...]
        while let word = words.popFirst() {
            switch word {
            case "--help", "-h", "help":
                print(help)
                exit(0)
            case "--from":
                guard let value = words.popFirst() else { fail("--from needs a data directory") }
                source = value
            case let w where w.hasPrefix("--from="):
                source = String(w.dropFirst("--from=".count))
            case "--to":
                guard let value = words.popFirst() else { fail("--to needs a PostgreSQL URL") }
                target = checkedURL(value, from: "--to")
            case let w where w.hasPrefix("--to="):
                target = checkedURL(String(w.dropFirst("--to=".count)), from: "--to")
            case "--force":
                force = true
            default:
                fail("unknown migrate option '\(word)'; try 'bluelibrary migrate --help'")
            }
        }
        guard let target else {
            fail("no PostgreSQL database to copy into: give --to POSTGRES_URL or set BLUELIBRARY_DATABASE_URL "
                + "(usage: bluelibrary migrate [--from DATA_DIR] [--to POSTGRES_URL] [--force])")
        }
        let password: SecretFile?
        do {
            password = try ServeConfiguration.databasePassword(environment: environment, databaseURL: target)
        } catch {
            fail(error.message)
        }
        if let warning = password?.warning { FileHandle.standardError.write(Data("bluelibrary: warning: \(warning)\n".utf8)) }
        do {
            print(try PostgresMigration.run(dataDirectory: source, url: target, password: password?.value, force: force))
        } catch {
            fail(error.message, code: 1)
        }
        exit(0)
    }

    /// A PostgreSQL URL, checked as `serve` checks `--database-url` (never repeated in a message).
    private static func checkedURL(_ value: String, from name: String) -> String {
        do {
            guard let url = try ServeConfiguration.databaseURL(value) else {
                fail("\(name) is empty: migrate copies into a PostgreSQL database (postgres://user@host:5432/db)")
            }
            return url
        } catch {
            fail("\(name): \(error.message)")
        }
    }
}
