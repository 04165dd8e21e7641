import BlueLibraryServer
import Foundation

/// `bluelibrary migrate --from DIR --to URL [--force]`: copies a SQLite data directory into a
/// PostgreSQL database, in one transaction, verified before it commits.
enum MigrateCommand {
    static let help = """
        Usage: bluelibrary migrate --from DATA_DIR --to POSTGRES_URL [--force]

        Copies everything in DATA_DIR/bluelibrary.sqlite (libraries with their display names,
        versions and deleted ones, albums in order, undo, saved states, the change feed, views,
        settings, the token hash and lockouts, idempotency keys, secrets) into the PostgreSQL
        database at POSTGRES_URL (e.g. postgres://user:pass@host:5432/bluelibrary), creating
        its schema first. One transaction: on any error nothing is written. Before committing,
        every table's row count and each library's album count, version and order checksum
        are read back from PostgreSQL and compared with the source's. A target that already
        holds data is refused unless --force is given, which replaces it; --force is refused
        while other sessions are connected to the target database (stop the instances
        first), and a library the target held gets versions above its old one (a version
        never goes down). Stop the server on DATA_DIR first (writes made during the copy are
        not copied). The SQLite data stays (an older file is first upgraded to the current
        SQLite schema, as a server start would).
        """

    static func run(_ arguments: [String]) -> Never {
        var source: String?
        var target: String?
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
                target = value
            case let w where w.hasPrefix("--to="):
                target = String(w.dropFirst("--to=".count))
            case "--force":
                force = true
            default:
                fail("unknown migrate option '\(word)'; try 'bluelibrary migrate --help'")
            }
        }
        guard let source, let target else { fail("usage: bluelibrary migrate --from DATA_DIR --to POSTGRES_URL [--force]") }
        do {
            print(try PostgresMigration.run(dataDirectory: source, url: target, force: force))
        } catch {
            fail(error.message, code: 1)
        }
        exit(0)
    }
}
